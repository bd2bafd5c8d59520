package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"halu/runner/cfaith"
	"halu/runner/engine"
)

func newBuildCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "build", Short: "Build benchmark datasets", Args: cobra.NoArgs}
	cfg := cfaith.DefaultBuildConfig()
	opt := cfaith.DefaultBuildOptions()
	cf := &cobra.Command{
		Use:   "cfaith --docs DIR|FILE --out DATASET --agent MODEL",
		Short: "HaluAgent: build a C-FAITH-style QA hallucination dataset from knowledge documents",
		Long: `Generation agents write questions, correct answers, hallucinated responses and labels from each
document; the verification module checks correctness, hallucination and label and drops what
fails or is uncertain; the verified data become generative, single-choice and true/false items.
--optimize first refines the generation rules on the verifier's feedback (§3.2).
Documents: a directory of .txt/.md files, JSONL (id|ent|pmid, knowledge|text|abstract), or a
CSV with a "Knowledge Base" column.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opt.Settings().Validate(); err != nil {
				return usagef("build cfaith: %v", err)
			}
			if err := cfg.Settings().Validate(); err != nil {
				return usagef("build cfaith: %v", err)
			}
			out := opt.Out
			rs, err := loadRules(cfg.Lang, opt.Rules)
			if err != nil {
				return usageError{err}
			}
			cfg.Rules = rs
			if _, err := cfaith.NewBuilder(cfg); err != nil {
				return usageError{err}
			}
			e, err := g.engine()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			w := cmd.OutOrStdout()
			if opt.Optimize {
				docs, err := cfaith.ReadDocs(cfg.Docs)
				if err != nil {
					return err
				}
				tr, va := cfaith.Split(docs, opt.Train, opt.Val, uint64(cfg.Seed))
				o := cfaith.Optimizer{Engine: e, Base: cfg, Dir: filepath.Join(out, "optimize"), Train: tr, Val: va,
					Candidates: opt.Candidates, Optimizer: opt.Optimizer}
				final, table, err := o.Loop(opt.Rounds).Run(ctx, cfg.Rules)
				if len(table) > 0 {
					printRounds(w, table, len(tr), len(va))
					b, _ := json.MarshalIndent(table, "", "  ")
					os.WriteFile(filepath.Join(out, "optimize", "rounds.json"), append(b, '\n'), 0o644)
				}
				if err != nil {
					return err
				}
				b, _ := json.MarshalIndent(final, "", "  ")
				rulesPath := filepath.Join(out, "optimized_rules.json")
				if err := os.WriteFile(rulesPath, append(b, '\n'), 0o644); err != nil {
					return err
				}
				fmt.Fprintf(w, "final prompt rules (%s) written to %s; later builds use them with --rules %s\n", final.Name, rulesPath, rulesPath)
				cfg.Rules = final
			}
			b, err := cfaith.NewBuilder(cfg)
			if err != nil {
				return usageError{err}
			}
			res, err := cfaith.RunOrResume(ctx, e, b, filepath.Join(out, "run"), cfg)
			if res != nil && res.Summary != nil {
				res.Summary.Print(w)
			}
			if err != nil {
				return err
			}
			m, recs, err := engine.ReadRun(res.Dir)
			if err != nil {
				return err
			}
			var docs []cfaith.DocResult
			for _, r := range recs {
				var d cfaith.DocResult
				if err := json.Unmarshal(r.Data, &d); err != nil {
					return fmt.Errorf("record %s: %w", r.Item, err)
				}
				docs = append(docs, d)
			}
			ds := cfaith.Aggregate(docs, uint64(cfg.Seed), opt.Dedup)
			info := cfaith.DatasetInfo{Lang: cfg.Lang, Agent: cfg.Agent, Verifier: b.Models()[1], Digests: map[string]string{},
				Rules: cfg.Rules, Seed: cfg.Seed, Threshold: opt.Dedup, EmbedModel: cfg.EmbedModel, BuildRun: res.Dir, Prompts: map[string]string{}}
			for _, mi := range m.Models {
				info.Digests[mi.Name] = mi.Digest
			}
			for k, p := range m.Prompts {
				info.Prompts[k] = p.SHA256
			}
			if err := cfaith.WriteDataset(out, ds, info); err != nil {
				return err
			}
			fmt.Fprintf(w, "\ndataset %s: %d generative, %d single-choice, %d true/false items", out, len(ds.Generative), len(ds.Choice), len(ds.TrueFalse))
			for k, n := range ds.Dropped {
				fmt.Fprintf(w, "; %d single-choice dropped: %s", n, k)
			}
			fmt.Fprintln(w)
			return nil
		},
	}
	cfg.Settings().Bind(cf.Flags())
	opt.Settings().Bind(cf.Flags())
	g.eng.Settings().Bind(cf.Flags())
	cmd.AddCommand(cf)
	return cmd
}

func loadRules(lang, spec string) (cfaith.RuleSet, error) {
	if spec == "original" || spec == "optimized" {
		return cfaith.BuiltinRules(lang, spec)
	}
	b, err := os.ReadFile(spec)
	if err != nil {
		return cfaith.RuleSet{}, fmt.Errorf("--rules: %w", err)
	}
	var rs cfaith.RuleSet
	if err := json.Unmarshal(b, &rs); err != nil {
		return rs, fmt.Errorf("--rules %s: %w", spec, err)
	}
	return rs, rs.Validate()
}

func printRounds(w interface{ Write([]byte) (int, error) }, rounds []cfaith.Round, train, val int) {
	fmt.Fprintf(w, "\nPrompt optimisation: validation pass rates per round (C-FAITH Table 3 layout; %d training, %d validation documents)\n", train, val)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "Iteration\tCorr.\tHalu.\tLabel\tOverall\tkept\tcandidates (part revised: overall)")
	for _, r := range rounds {
		kept := "yes"
		switch {
		case r.NoCandidate:
			kept = "no proposal parsed: stop"
		case r.Stopped:
			kept = "no (worse: stop)"
		}
		var cands []string
		for i, c := range r.Candidates {
			cands = append(cands, fmt.Sprintf("%s: %.2f%%", r.Revised[i], 100*c.Overall))
		}
		if r.Iteration == 0 {
			kept = "start (" + r.Rules.Name + ")"
		}
		fmt.Fprintf(tw, "%d\t%.2f%%\t%.2f%%\t%.2f%%\t%.2f%%\t%s\t%s\n", r.Iteration, 100*r.Rates.Corr, 100*r.Rates.Halu, 100*r.Rates.Label, 100*r.Rates.Overall, kept, strings.Join(cands, "; "))
	}
	tw.Flush()
}
