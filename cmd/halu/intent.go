package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"halu/runner/intent"
	"halu/runner/rundir"
)

func newIntentCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "intent",
		Short: "FaithQA tools",
		Args:  cobra.NoArgs,
	}
	var o intent.MakeOptions
	var articles, out string
	mk := &cobra.Command{
		Use:   "make --articles FILE.jsonl --out ITEMS.jsonl",
		Short: "Build misinterpretation items (relationship, summary, response evaluation) from an article set",
		Long: `Groups articles in threes by shared terms and writes FaithQA Content Analysis items
(relationship and summary) with one article withheld, and Response Evaluation items (from
articles with a question and an answer) with one of Query, Article, Response withheld.
Input JSONL: id (or pmid), title, text (or abstract), optional question and answer (or long_answer).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if articles == "" || out == "" {
				return usagef("intent make: --articles and --out are required")
			}
			arts, err := intent.ReadArticles(articles)
			if err != nil {
				return err
			}
			items := intent.Make(arts, o)
			if err := rundir.WriteJSONL(out, items); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%d items from %d articles written to %s\n", len(items), len(arts), out)
			return nil
		},
	}
	mk.Flags().StringVar(&articles, "articles", "", "article JSONL")
	mk.Flags().StringVar(&out, "out", "", "items JSONL to write")
	mk.Flags().Uint64Var(&o.Seed, "seed", 1, "seed for grouping order and the withheld part")
	mk.Flags().IntVar(&o.MinShared, "min-shared", 3, "distinct terms an article must share with each other article of its group")
	mk.Flags().IntVar(&o.Groups, "groups", 0, "most three-article groups (0: all)")
	mk.Flags().IntVar(&o.ResponseEval, "response-eval", 0, "most Response Evaluation items (0: all)")
	mk.Flags().StringVar(&o.Topic, "topic", "", "topic recorded on every item")
	cmd.AddCommand(mk)
	return cmd
}
