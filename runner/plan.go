package runner

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"

	"halu/localmodels"
)

// Plan is what a run would do (halu run … --dry-run): per stage and model,
// the calls it would make, those the cache already answers, and the tokens
// they would cost. It is worked out by running every item with empty
// replies in place of model calls. Suites plan the calls that follow a
// usable reply as if every reply were usable (ideas' critics and fluency
// judgements, the answers a DHP reply is cut into; see Calls.Planning);
// calls whose number depends on what a model says (one check per claim,
// repair turns) are counted once per item at most. For smoke, hic and
// ideas the plan equals the calls a run makes on well-formed replies
// (TestDryRunCountsTheCallsARunMakes); elsewhere it is a lower bound.
type Plan struct {
	Items int
	// Stopped counts items whose processing ended early on an empty reply.
	Stopped int
	Rows    []PlanRow
}

// PlanRow is one stage and model of a plan.
type PlanRow struct {
	Stage, Kind, Model string
	Calls, Cached      int
	// PromptTokens are counted with the engine's tokenizer (cl100k_base),
	// an estimate of the model's own count; MaxOutputTokens sums num_predict
	// (0 where a call sets none).
	PromptTokens, MaxOutputTokens int
}

type planner struct {
	mu   sync.Mutex
	rows map[[3]string]*PlanRow
	// noTokens skips counting prompt tokens (a progress estimate needs
	// only the calls).
	noTokens bool
}

func (p *planner) add(stage, kind, model string, cached bool, prompt, out int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := [3]string{stage, kind, model}
	r := p.rows[k]
	if r == nil {
		r = &PlanRow{Stage: stage, Kind: kind, Model: model}
		p.rows[k] = r
	}
	if cached {
		r.Cached++
		return
	}
	r.Calls++
	r.PromptTokens += prompt
	r.MaxOutputTokens += out
}

// planChat counts a chat call the dry run would make.
func (c *Calls) planChat(stage, kind string, req localmodels.ChatRequest, hit bool) {
	n := 0
	if !c.plan.noTokens {
		var text strings.Builder
		for _, m := range req.Messages {
			text.WriteString(m.Content)
			text.WriteString("\n")
		}
		n, _ = c.e.tok.Count(text.String())
	}
	out := 0
	if req.Options.NumPredict != nil {
		out = *req.Options.NumPredict
	}
	c.plan.add(stage, kind, req.Model, hit, n, out)
}

// dryRun works out s's plan without calling a model or writing anything.
// The server is still asked for its models: a missing one is an error
// before a real run too.
func (e *Engine) dryRun(ctx context.Context, s Suite) (*Plan, error) {
	if _, err := e.ServerVersion(ctx); err != nil {
		return nil, err
	}
	for _, name := range uniqueSorted(s.Models()) {
		if _, err := e.ModelInfo(ctx, name); err != nil {
			return nil, err
		}
	}
	items, err := s.Items(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: items: %w", s.Name(), err)
	}
	p := &planner{rows: map[[3]string]*PlanRow{}}
	plan := &Plan{Items: len(items)}
	for _, it := range items {
		c := &Calls{e: e, item: it.ID, plan: p}
		if err := planItem(ctx, s, c, it); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			plan.Stopped++
		}
	}
	if cl, ok := s.(io.Closer); ok {
		cl.Close()
	}
	for _, r := range p.rows {
		plan.Rows = append(plan.Rows, *r)
	}
	sort.Slice(plan.Rows, func(i, j int) bool {
		a, b := plan.Rows[i], plan.Rows[j]
		if a.Model != b.Model {
			return a.Model < b.Model
		}
		if a.Stage != b.Stage {
			return a.Stage < b.Stage
		}
		return a.Kind < b.Kind
	})
	return plan, nil
}

// planItem processes one item on empty replies; a suite that cannot go on
// from them (an error, or a panic on a placeholder) ends the item early.
func planItem(ctx context.Context, s Suite, c *Calls, it Item) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("item %s: %v", it.ID, r)
		}
	}()
	_, err = s.Process(ctx, c, it)
	return err
}

// Print writes the plan as a table.
func (p *Plan) Print(w io.Writer) {
	fmt.Fprintf(w, "plan: %d items\n", p.Items)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "model\tstage\tkind\tcalls\tcached\tprompt tokens (est.)\tmax output tokens")
	var calls, cached, in, out int
	for _, r := range p.Rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\n", r.Model, r.Stage, r.Kind, r.Calls, r.Cached, r.PromptTokens, r.MaxOutputTokens)
		calls, cached, in, out = calls+r.Calls, cached+r.Cached, in+r.PromptTokens, out+r.MaxOutputTokens
	}
	fmt.Fprintf(tw, "total\t\t\t%d\t%d\t%d\t%d\n", calls, cached, in, out)
	tw.Flush()
	fmt.Fprintln(w, "Calls whose number depends on a model's reply (per-claim checks, repair turns) are counted at most once per item: a lower bound there.")
	if p.Stopped > 0 {
		fmt.Fprintf(w, "%d items stopped early on an empty reply in the plan; their later calls are not counted.\n", p.Stopped)
	}
}
