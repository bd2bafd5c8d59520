package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"halu/runner"
	"halu/runner/cfaith"
)

func bindCFaith(fs *pflag.FlagSet, cfg *cfaith.Config) func() error {
	fs.StringVar(&cfg.Data, "data", "", "dataset directory (halu build cfaith --out)")
	bindModels(fs, &cfg.Models, "models under test")
	judge := bindOneJudge(fs, "cfaith", &cfg.Judge, "judge of generative answers (conflict with the correct answer)")
	fs.StringSliceVar(&cfg.Formats, "formats", cfg.Formats, "formats: generative, choice, truefalse")
	fs.IntVar(&cfg.Limit, "limit", 0, "items per format (0: all)")
	fs.Float64Var(&cfg.Temperature, "temperature", cfg.Temperature, "decoding temperature (the paper: 1)")
	fs.Float64Var(&cfg.TopP, "top-p", cfg.TopP, "decoding top_p (the paper: 0.7)")
	fs.IntVar(&cfg.MaxTokens, "max-tokens", cfg.MaxTokens, "answer cap (num_predict)")
	fs.IntVar(&cfg.Seed, "seed", cfg.Seed, "sampling seed")
	fs.StringVar(&cfg.JudgeFormat, "judge-format", cfg.JudgeFormat, "json (structured output) or text")
	fs.IntVar(&cfg.JudgeMaxTokens, "judge-max-tokens", cfg.JudgeMaxTokens, "judge reply cap")
	return judge
}

func newBuildCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "build", Short: "Build benchmark datasets", Args: cobra.NoArgs}
	cfg := cfaith.DefaultBuildConfig()
	var out, rules, optimizer string
	var optimize bool
	var rounds, train, val, candidates int
	var threshold float64
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
			if cfg.Docs == "" || out == "" {
				return usagef("build cfaith: --docs and --out are required")
			}
			rs, err := loadRules(cfg.Lang, rules)
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
			if optimize {
				docs, err := cfaith.ReadDocs(cfg.Docs)
				if err != nil {
					return err
				}
				tr, va := cfaith.Split(docs, train, val, uint64(cfg.Seed))
				o := cfaith.Optimizer{Engine: e, Base: cfg, Dir: filepath.Join(out, "optimize"), Train: tr, Val: va,
					Candidates: candidates, Optimizer: optimizer}
				final, table, err := o.Loop(rounds).Run(ctx, cfg.Rules)
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
			m, recs, err := runner.ReadRun(res.Dir)
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
			ds := cfaith.Aggregate(docs, uint64(cfg.Seed), threshold)
			info := cfaith.DatasetInfo{Lang: cfg.Lang, Agent: cfg.Agent, Verifier: b.Models()[1], Digests: map[string]string{},
				Rules: cfg.Rules, Seed: cfg.Seed, Threshold: threshold, EmbedModel: cfg.EmbedModel, BuildRun: res.Dir, Prompts: map[string]string{}}
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
	f := cf.Flags()
	f.StringVar(&cfg.Docs, "docs", "", "knowledge documents: directory, JSONL or CSV")
	f.StringVar(&out, "out", "", "dataset directory to write")
	f.StringVar(&cfg.Lang, "lang", cfg.Lang, "prompt language: zh (the authors' prompts) or en")
	f.StringVar(&cfg.Agent, "agent", "", "generation agents' model")
	f.StringVar(&cfg.Verifier, "verifier", "", "verification module's model (default: the agent)")
	f.StringSliceVar(&cfg.Types, "types", cfg.Types, "hallucination types to generate: "+strings.Join(cfaith.Types, ", "))
	f.StringVar(&rules, "rules", "original", "generation rules: original, optimized (the paper's Figure 7), or a rules JSON file from --optimize")
	f.IntVar(&cfg.MaxQuestions, "max-questions", 0, "questions kept per document and type (the prompts ask for 3; 0 keeps all)")
	f.IntVar(&cfg.Responses, "responses", cfg.Responses, "hallucinated responses per question")
	f.IntVar(&cfg.Seed, "seed", cfg.Seed, "seed for sampling, the train/validation split and option shuffling")
	f.StringVar(&cfg.Format, "format", cfg.Format, "json (structured output) or text (the authors' formats)")
	f.IntVar(&cfg.MaxTokens, "max-tokens", cfg.MaxTokens, "reply cap for agents and verifier")
	f.StringVar(&cfg.EmbedModel, "embed-model", "", "embedding model for near-duplicate single-choice options (default: exact text only)")
	f.Float64Var(&threshold, "dedup-threshold", 0.9, "cosine similarity at or above which two options are near-duplicates")
	f.BoolVar(&optimize, "optimize", false, "optimise the generation rules first (§3.2)")
	f.IntVar(&rounds, "rounds", 5, "most optimisation rounds")
	f.IntVar(&train, "train", 60, "training documents for optimisation")
	f.IntVar(&val, "val", 20, "validation documents for optimisation")
	f.IntVar(&candidates, "candidates", 3, "candidate prompts per round")
	f.StringVar(&optimizer, "optimizer", "", "optimisation agent's model (default: the agent)")
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
