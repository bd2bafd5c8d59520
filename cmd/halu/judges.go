package main

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"halu/runner/judgeval"
)

// newJudgesCmd is `halu judges`: measuring the judges themselves.
func newJudgesCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "judges", Short: "Measure the judges: agreement with people's labels", Args: cobra.NoArgs}
	var rc runControl
	var resume string
	v := suiteCmd(g, judgeval.Declaration, "validate --judges J1,J2 [--set halueval|FILE] [--limit N]",
		"Run each judge, with a suite's own prompt, over responses people labelled; report accuracy, κ, TPR/FPR and unscored share per judge and for the panel", &rc, &resume)
	v.Long = `Each judge is asked, with the prompt and reading a hic run uses (HIC-Bench's judge and its
"Hallucination: Yes/No"), about responses people labelled hallucinated or faithful. The run reports,
per judge and for the panel's majority, accuracy, Cohen's κ, TPR (responses people call hallucinated
that the judge flags), FPR (responses people call faithful that it flags) and the share it gave no
verdict on, each with its 95% interval and n. Sets: halueval (shipped: HaluEval general, 4,507
ChatGPT responses, MIT), a FELM file (read from its path, CC BY-NC-SA; a response is hallucinated
when any segment is labelled wrong), or a JSONL file of {"id", "question", "response",
"hallucinated": true|false}. The run is a run like any other: cached, resumable, and read by
halu report.`
	rc.bind(v.Flags())
	v.Flags().StringVar(&resume, "resume", "", "resume the validation run in DIR")
	g.eng.Settings().Bind(v.Flags())
	cmd.AddCommand(v, newJudgesSheetCmd(), newJudgesImportCmd())
	return cmd
}

func newJudgesSheetCmd() *cobra.Command {
	var opt judgeval.SheetOptions
	cmd := &cobra.Command{
		Use:   "sheet RUN_DIR [--n 200] [--quantity STAGE/NAME] [--show-verdict]",
		Short: "Write a sample of a run's judged texts for people to label (RUN_DIR/labels/sheet.csv and .jsonl)",
		Long: `Draws a seeded sample of the units the run's judges judged, stratified by judged model and the
panel's verdict, and writes it as RUN_DIR/labels/sheet.csv and sheet.jsonl: each row the judged text,
the prompt the model answered (context) and an empty label column. People fill in the label (yes/no
for a yes/no quantity such as hallucination, a number for a score); halu judges import reads it back.
The judges' verdict is left out unless --show-verdict. Needs no server.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if opt.N < 1 {
				return usagef("judges sheet: --n must be at least 1")
			}
			sf, err := judgeval.Sheet(args[0], opt)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "sheet: %d units of %s/%s (%s) in %s\n", len(sf.Rows), sf.Stage, sf.Name,
				map[bool]string{true: "label yes or no", false: "label a number"}[sf.Binary], filepath.Join(args[0], judgeval.LabelsDir, "sheet.csv"))
			return nil
		},
	}
	cmd.Flags().IntVar(&opt.N, "n", 200, "units on the sheet")
	cmd.Flags().IntVar(&opt.Seed, "seed", 1, "seed of the draw")
	cmd.Flags().StringVar(&opt.Quantity, "quantity", "", "the judged quantity to label, STAGE/NAME or NAME (default: the first yes/no one, e.g. judge/hallucination)")
	cmd.Flags().BoolVar(&opt.ShowVerdict, "show-verdict", false, "show the judges' verdict on the sheet")
	return cmd
}

func newJudgesImportCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "import RUN_DIR LABELS.csv|LABELS.jsonl",
		Short: "Read people's labels of a run's sheet: the judges' accuracy on the run's own texts, and its figures corrected for judge error",
		Long: `Reads the filled-in sheet (errors name file:line), measures each judge and the panel against
people's labels on the run's own texts, and corrects the panel's figure per judged model by
prediction-powered inference (Angelopoulos et al., Science 2023), beside the uncorrected figure.
The findings go to RUN_DIR/labels/import.json, which halu report shows with the run. Needs no server.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			sum, err := judgeval.Import(args[0], args[1])
			if err != nil {
				return err
			}
			sum.Print(cmd.OutOrStdout())
			return nil
		},
	}
}
