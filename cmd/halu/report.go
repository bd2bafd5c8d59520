package main

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/spf13/cobra"

	"halu/localmodels"
	"halu/runner/engine"
	"halu/runner/registry"
	"halu/runner/report"
	"halu/runner/rundir"
	"halu/runner/summary"
)

// rebuild makes the suite a run used from its manifest, with no model
// call: for a report's summary and for compare's outcomes.
func rebuild(m *rundir.Manifest) (engine.Suite, error) {
	def, ok := registry.Find(m.Suite)
	if !ok {
		return engine.Suite{}, fmt.Errorf("unknown suite %q", m.Suite)
	}
	return def.Build(m.Config, m.Format)
}

func newReportCmd() *cobra.Command {
	var htmlOut, csvDir, longOut, samplesOut string
	var md, status bool
	cmd := &cobra.Command{
		Use:   "report RUN_DIR... [--html FILE] [--md] [--status] [--csv DIR] [--long FILE.csv] [--samples FILE.jsonl]",
		Short: "Write the tables and charts of runs as one self-contained HTML file, Markdown or CSV",
		Long: `halu report reads run directories (manifest.json and records.jsonl) and regenerates every
table and chart from them, offline and without a model call. The HTML file has no script and
loads nothing: charts are inline SVG. The same runs give byte-identical output.
The page opens with a leaderboard per suite (every model of every run given, the
paper's headline figures with 95% intervals, n and unscored counts, and the published
numbers where the runs used the paper's protocol) and ends with a sample browser.
--long writes every figure as one CSV row (numbers as numbers) and --samples every
record as one JSON line (prompt, answers, judges' replies and verdicts, flags).
Without --md, --csv, --long or --samples, the HTML goes to report.html.`,
		Args: usageArgs(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			runs, err := report.LoadAll(args, rebuild)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if status {
				if err := report.Status(w, runs); err != nil {
					return err
				}
			}
			if htmlOut == "" && !md && !status && csvDir == "" && longOut == "" && samplesOut == "" {
				htmlOut = "report.html"
			}
			if htmlOut != "" {
				if err := rundir.WriteAtomic(htmlOut, func(w io.Writer) error { return report.HTML(w, runs) }); err != nil {
					return err
				}
				abs, _ := filepath.Abs(htmlOut)
				fmt.Fprintf(cmd.ErrOrStderr(), "report: %s (%d runs)\n", abs, len(runs))
			}
			if csvDir != "" {
				paths, err := report.CSV(csvDir, runs)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "report: %d CSV tables in %s\n", len(paths), csvDir)
			}
			for _, out := range []struct {
				path, what string
				write      func(io.Writer, []*report.Run) error
			}{{longOut, "long CSV", report.WriteLong}, {samplesOut, "samples", report.WriteSamples}} {
				if out.path == "" {
					continue
				}
				if err := rundir.WriteAtomic(out.path, func(w io.Writer) error { return out.write(w, runs) }); err != nil {
					return fmt.Errorf("report: %s: %w", out.what, err)
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "report: %s in %s\n", out.what, out.path)
			}
			if md {
				return report.Markdown(w, runs)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&htmlOut, "html", "", "write the HTML report to FILE")
	cmd.Flags().BoolVar(&md, "md", false, "print every table as Markdown")
	cmd.Flags().BoolVar(&status, "status", false, "print one line per run: its status by what it measured, items done, headline figures measured, unscored judgements (and what measured nothing, with the fix)")
	cmd.Flags().StringVar(&csvDir, "csv", "", "write one CSV file per table into DIR")
	cmd.Flags().StringVar(&longOut, "long", "", "write every figure as one CSV row to FILE (run, suite, model, group, metric: estimate, lo, hi, n, unscored)")
	cmd.Flags().StringVar(&samplesOut, "samples", "", "write every record as one JSON line to FILE (inputs, outputs, verdicts, flags)")
	return cmd
}

func newCompareCmd() *cobra.Command {
	var asJSON bool
	var models []string
	cmd := &cobra.Command{
		Use:   "compare RUN_A RUN_B | compare RUN --models A,B",
		Short: "Paired tests of two runs, or of two models of one run, on the units they share (permutation, paired t, Wilcoxon, McNemar) with effect sizes",
		Args:  usageArgs(cobra.RangeArgs(1, 2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			var outs [2][]summary.Outcome
			names := [2]string{}
			switch {
			case len(args) == 2 && len(models) == 0:
				var suite string
				for i, dir := range args {
					m, o, err := runOutcomes(dir)
					if err != nil {
						return err
					}
					if i == 1 && m.Suite != suite {
						return usagef("compare: %s is a %s run and %s a %s run", args[0], suite, dir, m.Suite)
					}
					suite, outs[i], names[i] = m.Suite, o, dir
				}
			case len(args) == 1 && len(models) == 2:
				// Two models of one run: each model's outcomes stand for
				// a run of its own.
				_, o, err := runOutcomes(args[0])
				if err != nil {
					return err
				}
				found := [2]bool{}
				for _, x := range o {
					for i, m := range models {
						if x.Model == m || x.Model == localmodels.CanonicalName(m) {
							outs[i], found[i] = append(outs[i], x), true
						}
					}
				}
				for i, m := range models {
					if !found[i] {
						return usagef("compare: run %s has no outcome of model %s", args[0], m)
					}
					names[i] = args[0] + " (" + m + ")"
				}
			default:
				return usagef("compare: give two runs, or one run and --models A,B")
			}
			cs, err := report.Compare(outs[0], outs[1])
			if err != nil {
				return err
			}
			if len(cs) == 0 {
				return fmt.Errorf("compare: the runs share no scored unit")
			}
			if asJSON {
				return report.WriteComparisonsJSON(cmd.OutOrStdout(), names[0], names[1], cs)
			}
			report.PrintComparisons(cmd.OutOrStdout(), names[0], names[1], cs)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "write the comparisons as JSON (numbers as numbers; null where a figure could not be computed)")
	cmd.Flags().StringSliceVar(&models, "models", nil, "A,B: compare two models of the one run given")
	return cmd
}

// runOutcomes reads a run and its per-unit outcomes (from its records
// without their transcripts, one at a time: no outcome reads them).
func runOutcomes(dir string) (*rundir.Manifest, []summary.Outcome, error) {
	m, err := rundir.ReadManifest(dir)
	if err != nil {
		return nil, nil, err
	}
	s, err := rebuild(m)
	if err != nil {
		return nil, nil, fmt.Errorf("run %s: %w", dir, err)
	}
	if s.Outcomes == nil {
		return nil, nil, usagef("compare: suite %s has no per-unit outcomes", m.Suite)
	}
	o, err := s.Outcomes(rundir.RecordsIn(filepath.Join(dir, rundir.RecordsFile)))
	if err != nil {
		return nil, nil, fmt.Errorf("run %s: %w", dir, err)
	}
	return m, o, nil
}

// usageArgs makes an argument check's error a usage error (exit 2).
func usageArgs(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := check(cmd, args); err != nil {
			return usageError{err}
		}
		return nil
	}
}
