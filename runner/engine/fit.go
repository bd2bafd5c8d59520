package engine

import (
	"context"
	"fmt"
	"math"
	"sort"
	"sync"

	"halu/localmodels"
	"halu/runner/rundir"
)

// calibrationText is what the engine sends a model once to learn how many
// of its tokens a cl100k token is: plain scientific English, as the
// prompts that need fitting hold.
const calibrationText = "Calibration passage. Retrieved abstracts describe how a chemical compound changes the expression of a gene " +
	"in cultured human cells: treatment with 10 µM of the inhibitor lowered messenger RNA levels by 40% after 24 hours (p < 0.01), " +
	"while the related receptor was unaffected. The authors propose that the pathway is regulated by phosphorylation, and they " +
	"discuss dose-response curves, knockout mice, clinical cohorts (n = 1,204) and limitations of the assay in three paragraphs."

// fitMargin covers what an estimate from cl100k counts may miss: the
// model's tokenizer on other text than the calibration's, and the chat
// template's tokens around each message.
const (
	fitMargin   = 1.15
	fitTemplate = 48
)

// tokenRatios are a model's tokens per cl100k token and per byte of text.
// Neither alone bounds every text: cl100k packs technical text (numbers,
// gene names) into fewer tokens than English, while a character-level
// tokenizer spends one token per character whatever the text. Fit takes
// the larger estimate.
type tokenRatios struct{ perCL100K, perByte float64 }

// tokenRatio returns model's tokenRatios, measured once per engine by a
// one-token generation on calibrationText (a cached call, logged under
// stage "calibrate"): Ollama reports the prompt's tokens.
func (c *Calls) tokenRatio(ctx context.Context, model string) (tokenRatios, error) {
	e := c.e
	key := localmodels.CanonicalName(model)
	if v, ok := e.ratios.Load(key); ok {
		return v.(tokenRatios), nil
	}
	if c.plan != nil && c.plan.calibrated(key) {
		return planRatios, nil
	}
	if c.plan == nil {
		// Items that need the ratio at once wait for one calibration.
		mu, _ := e.calibMu.LoadOrStore(key, new(sync.Mutex))
		mu.(*sync.Mutex).Lock()
		defer mu.(*sync.Mutex).Unlock()
		if v, ok := e.ratios.Load(key); ok {
			return v.(tokenRatios), nil
		}
	}
	resp, err := c.Chat(ctx, "calibrate", localmodels.ChatRequest{
		Model:    model,
		Messages: []localmodels.Message{{Role: "user", Content: calibrationText}},
		Options:  localmodels.Options{Temperature: localmodels.Float(0), Seed: localmodels.Int(0), NumPredict: localmodels.Int(1)},
	}, 0)
	if err != nil {
		return tokenRatios{}, fmt.Errorf("calibrate %s's tokenizer: %w", model, err)
	}
	n, err := e.Tokens().Count(calibrationText)
	if err != nil {
		return tokenRatios{}, err
	}
	if c.plan != nil && resp.PromptEvalCount == 0 {
		// A dry run's empty reply, planned once per plan. It is not kept
		// in the engine: the progress estimate plans on the engine of the
		// real run, which must still measure.
		return planRatios, nil
	}
	r := planRatios
	if resp.PromptEvalCount > 0 && n > 0 {
		r = tokenRatios{perCL100K: float64(resp.PromptEvalCount) / float64(n), perByte: float64(resp.PromptEvalCount) / float64(len(calibrationText))}
	}
	e.ratios.Store(key, r)
	return r, nil
}

// planRatios stand in for a ratio a dry run cannot measure: a byte-level
// tokenizer's worst case.
var planRatios = tokenRatios{perCL100K: 4, perByte: 1}

// Fit returns how many of parts, taken in order, a prompt to model can
// hold beside the rest of its text (fixed: every message's text without
// the parts) while leaving numPredict tokens for the reply, in the model's
// effective context window (num_ctx capped by its trained context).
// Ollama would otherwise cut the prompt's beginning silently — the system
// prompt and the instructions first. A text's tokens are estimated from
// its cl100k count and from its bytes, each scaled by the model's measured
// ratio, the larger taken, with a margin; with no window known, every part
// fits. fixedFits is false when even the fixed text does not fit.
func (c *Calls) Fit(ctx context.Context, model, fixed string, parts []string, numPredict int) (n int, fixedFits bool, err error) {
	e := c.e
	info, err := e.ModelInfo(ctx, model)
	if err != nil {
		return 0, false, err
	}
	asked := e.Config.NumCtx
	window := EffectiveNumCtx(asked, info)
	if window <= 0 {
		return len(parts), true, nil
	}
	est, err := c.estimator(ctx, model)
	if err != nil {
		return 0, false, err
	}
	used, err := est(fixed)
	if err != nil {
		return 0, false, err
	}
	used += fitTemplate + numPredict
	if used > window {
		return 0, false, nil
	}
	for i, p := range parts {
		k, err := est(p + "\n")
		if err != nil {
			return 0, false, err
		}
		if used+k > window {
			return i, true, nil
		}
		used += k
	}
	return len(parts), true, nil
}

// estimator estimates a text's tokens for model: its cl100k count and its
// bytes, each scaled by the model's measured ratio, the larger taken, with
// a margin.
func (c *Calls) estimator(ctx context.Context, model string) (func(string) (int, error), error) {
	ratio, err := c.tokenRatio(ctx, model)
	if err != nil {
		return nil, err
	}
	return func(s string) (int, error) {
		k, err := c.e.tok.countPrompt(s)
		t := max(float64(k)*ratio.perCL100K, float64(len(s))*ratio.perByte)
		return int(math.Ceil(t * fitMargin)), err
	}, nil
}

// Need is the context window a prompt to model needs to hold fixed (every
// message's text but the parts) and every one of parts whole, leaving
// numPredict tokens for the reply: the estimate Fit makes, summed.
func (c *Calls) Need(ctx context.Context, model, fixed string, parts []string, numPredict int) (int, error) {
	est, err := c.estimator(ctx, model)
	if err != nil {
		return 0, err
	}
	need, err := est(fixed)
	if err != nil {
		return 0, err
	}
	need += fitTemplate + numPredict
	for _, p := range parts {
		k, err := est(p + "\n")
		if err != nil {
			return 0, err
		}
		need += k
	}
	return need, nil
}

// sizeWindow raises the run's context window to what a suite's prompts
// need (Suite.Window), before any model is described (fingerprints and
// the serving record carry the window the run uses). A suite whose
// prompts must hold content the paper shows whole (hypo's 32 documents)
// returns the window they need (0: none beyond the engine's), or an
// error, before the first item, when a model cannot hold them. The
// engine asks for that window (num_ctx) on every call of the run — one
// window, so the server does not reload the model between calls.
func (e *Engine) sizeWindow(ctx context.Context, s Suite) error {
	if s.Window == nil {
		return nil
	}
	need, err := s.Window(ctx, e.NewCalls("window"))
	if err != nil {
		return err
	}
	if need > e.Config.NumCtx {
		fmt.Fprintf(e.Log, "%s: the paper's prompts need a context window of %d tokens: num_ctx %d for the run (was %d)\n", s.Name, need, need, e.Config.NumCtx)
		e.Config.NumCtx = need
	}
	return nil
}

// WindowNeed is what one model's prompts need of the context window: the
// most tokens any of them needs, the item that needs them, what the prompt
// holds whole there, and what a user can do when the model's context is
// too short.
type WindowNeed struct {
	Tokens      int
	Item, Holds string
	Remedy      string
}

// WindowFor is the run's one context window for needs (by model): the
// largest need rounded up to a multiple of 1,024 tokens; or, before any
// item, an input error naming a model whose context (its trained context,
// or the window its server fixes) cannot hold its need. A model whose
// context is not known is not refused.
func WindowFor(ctx context.Context, c *Calls, needs map[string]WindowNeed) (int, error) {
	most := 0
	models := make([]string, 0, len(needs))
	for m := range needs {
		models = append(models, m)
	}
	sort.Strings(models)
	for _, model := range models {
		n := needs[model]
		info, err := c.e.ModelInfo(ctx, model)
		if err != nil {
			return 0, err
		}
		if limit := info.ContextLength; limit > 0 && n.Tokens > limit {
			what := "trained context"
			if info.FixedContext {
				what = "context window (fixed by its server)"
			}
			return 0, rundir.BadInput("--models", 0, "%s's %s is %d tokens, but the paper's prompts need up to %d (item %s: %s): %s",
				model, what, limit, n.Tokens, n.Item, n.Holds, n.Remedy)
		}
		most = max(most, n.Tokens)
	}
	if most == 0 {
		return 0, nil
	}
	return (most + 1023) / 1024 * 1024, nil
}
