package main

import (
	"github.com/spf13/cobra"

	"halu/runner/cfaith"
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
			if _, err := suiteConfig(cmd.Flags(), &cfg); err != nil {
				return err
			}
			if err := cfg.Settings().Validate(); err != nil {
				return usagef("build cfaith: %v", err)
			}
			rs, err := cfaith.LoadRules(cfg.Lang, opt.Rules)
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
			_, err = cfaith.BuildDataset(cmd.Context(), e, cfg, opt, cmd.OutOrStdout())
			return err
		},
	}
	cfg.Settings().Bind(cf.Flags())
	opt.Settings().Bind(cf.Flags())
	g.eng.Settings().Bind(cf.Flags())
	cmd.AddCommand(cf)
	return cmd
}
