package intent

import (
	"context"
	"fmt"

	"halu/runner/engine"
)

// Window is the context window the run's prompts need to hold each query
// whole — the task with its articles, which come first in a long prompt
// and are what a server cuts when a prompt is longer than its window —
// beside the reply's cap; the judges' prompts hold the query, the response
// (up to --max-tokens) and their own reply (engine.Suite.Window). A model whose
// context cannot hold them is refused before the first item, or, under
// --too-long skip, the items it cannot hold are left out (unscored,
// counted): the query is never left for the server to cut.
func (s *Suite) Window(ctx context.Context, c *engine.Calls) (int, error) {
	limit := func(model string) (int, error) {
		info, err := c.Engine().ModelInfo(ctx, model)
		return info.ContextLength, err
	}
	judgeLimit, err := limit(s.cfg.Judge)
	if err != nil {
		return 0, err
	}
	judgeTemplates := []string{
		engine.Fill(prompt("constraint_scoring"), map[string]string{"constraints": "", "response": ""}),
		prompt("judge_baseline") + "\n" + engine.Fill(prompt("baseline_scale"), map[string]string{"response": ""}),
		engine.Fill(prompt("fact_check"), map[string]string{"response": ""}),
		engine.Fill(prompt("missing_content_check"), map[string]string{"missing": "", "response": ""}),
	}
	judgeHolds := fmt.Sprintf("a judge prompt with the query whole, a response of up to --max-tokens %d and --judge-max-tokens %d for the verdict", s.cfg.MaxTokens, s.cfg.JudgeMaxTokens)
	judgeNeed := map[string]int{} // by input ID
	for _, in := range s.inputs {
		for _, t := range judgeTemplates {
			full := engine.Fill(t, map[string]string{"query": in.Prompt(), "task": in.Prompt()})
			n, err := c.Need(ctx, s.cfg.Judge, full, nil, s.cfg.JudgeMaxTokens+s.cfg.MaxTokens)
			if err != nil {
				return 0, err
			}
			judgeNeed[in.ID] = max(judgeNeed[in.ID], n)
		}
	}
	needs := map[string]engine.WindowNeed{}
	add := func(model, item, holds string, n int) {
		if n > needs[model].Tokens {
			needs[model] = engine.WindowNeed{Tokens: n, Item: item, Holds: holds,
				Remedy: "choose a model with a longer context, lower --max-tokens / --judge-max-tokens, or pass --too-long skip to leave such items out (unscored, counted; a named departure)"}
		}
	}
	s.tooLong = map[string]string{}
	for _, m := range s.cfg.Models {
		genLimit, err := limit(m)
		if err != nil {
			return 0, err
		}
		for _, in := range s.inputs {
			id := m + "/" + in.ID
			n, err := c.Need(ctx, m, in.Prompt(), nil, s.cfg.MaxTokens)
			if err != nil {
				return 0, err
			}
			if s.cfg.TooLong == "skip" {
				switch {
				case genLimit > 0 && n > genLimit:
					s.tooLong[id] = fmt.Sprintf("the query does not fit %s's context (%d tokens needed, %d held; --too-long skip)", m, n, genLimit)
					continue
				case judgeLimit > 0 && judgeNeed[in.ID] > judgeLimit:
					s.tooLong[id] = fmt.Sprintf("the judge's prompt does not fit %s's context (%d tokens needed, %d held; --too-long skip)", s.cfg.Judge, judgeNeed[in.ID], judgeLimit)
					continue
				}
			}
			add(m, id, fmt.Sprintf("the query with its articles whole, and --max-tokens %d for the response", s.cfg.MaxTokens), n)
			add(s.cfg.Judge, in.ID, judgeHolds, judgeNeed[in.ID])
		}
	}
	return engine.WindowFor(ctx, c, needs)
}
