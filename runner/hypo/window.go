package hypo

import (
	"context"
	"fmt"
	"strings"

	"halu/index"
	"halu/runner/engine"
)

// kgLineBound stands in, when the window is sized, for one KG line the
// entity step has not found yet (it needs a model call): the authors'
// rendering with long mentions and ids. Real lines that are longer are
// still fitted, and any left out recorded.
const kgLineBound = `Chemical 2,3,7,8-tetrachlorodibenzo-para-dioxin derivative (MESH:D000000000) has the relation "positive_correlate" with Gene aryl hydrocarbon receptor nuclear translocator like 2 (Gene:000000000)`

// Window is the context window the run's hypothesis prompts need to show
// what the paper shows — the 32 retrieved documents whole, and room for 32
// KG lines — beside the instructions and the reply's cap (engine.Suite.Window).
// A model whose trained context cannot hold them is refused before the
// first item; --knowledge-fit drop (a named departure) instead leaves out
// what does not fit the window asked. A parametric prompt, which shows no
// knowledge, still needs its instructions and the reply's cap: without
// them, a reply runs past the window and the server drops the prompt's
// beginning while it generates.
func (s *Suite) Window(ctx context.Context, c *engine.Calls) (int, error) {
	drop := s.cfg.KnowledgeFit == "drop"
	items, err := s.Items(ctx)
	if err != nil {
		return 0, err
	}
	docs := map[string][]string{} // by background: the documents, rendered one by one
	needs := map[string]engine.WindowNeed{}
	for _, it := range items {
		p := it.Payload.(payload)
		lit, kg := strings.Contains(p.setting, "lit"), strings.Contains(p.setting, "kg")
		if (lit || kg) && drop {
			continue // fitted by leaving out what does not fit
		}
		background := p.background()
		var parts []string
		if lit {
			d, ok := docs[background]
			if !ok {
				hits, err := s.lit.Search(ctx, background, index.SearchOptions{K: litK, BelowPMID: s.cfg.BelowPMID, BM25: s.bm25()})
				if err != nil {
					return 0, err
				}
				for i := range hits {
					d = append(d, renderDocs(hits[i:i+1]))
				}
				docs[background] = d
			}
			parts = append(parts, d...)
		}
		if kg {
			for range maxKGEdges {
				parts = append(parts, kgLineBound)
			}
		}
		fixed := s.prompts.System + "\n" + fill(s.prompts.User[p.setting], map[string]string{"background": background, "knowledge": "", "document": ""})
		n, err := c.Need(ctx, p.model, fixed, parts, s.cfg.MaxTokens)
		if err != nil {
			return 0, err
		}
		if n > needs[p.model].Tokens {
			need := engine.WindowNeed{Tokens: n, Item: it.ID,
				Holds:  fmt.Sprintf("the instructions, %d retrieved documents and %d KG lines whole, and --max-tokens %d for the reply", litK, maxKGEdges, s.cfg.MaxTokens),
				Remedy: "choose a model with a longer context, lower --max-tokens, or pass --knowledge-fit drop to leave out what does not fit (a named departure)"}
			if !lit && !kg {
				need.Holds = fmt.Sprintf("the instructions and --max-tokens %d for the reply", s.cfg.MaxTokens)
				need.Remedy = "choose a model with a longer context, or lower --max-tokens"
			}
			needs[p.model] = need
		}
	}
	return engine.WindowFor(ctx, c, needs)
}
