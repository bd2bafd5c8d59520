package main

import (
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
	cmd.AddCommand(v)
	return cmd
}
