package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"

	"halu/localmodels"
	"halu/runner/rundir"
)

// Plan is what a run would do (halu run … --dry-run): per stage and model,
// the calls it would make, those the cache already answers, and the tokens
// they would cost. It is worked out by running every item with empty
// replies in place of model calls, or the cached reply where the cache has
// one. Suites plan the calls that follow a usable reply as if every reply
// were usable (ideas' critics and fluency judgements, the answers a DHP
// reply is cut into, intent's constraint scoring; see Calls.Planning).
// Where the number of calls depends on what a model says and no cached
// reply tells it, the suite plans at a stated count (hypo: one check per
// claim, at the authors' cap of claims) and the plan lists that
// assumption. Repair turns, asked only when a judge's reply cannot be
// read, are not planned. On well-formed replies the plan equals the calls
// a run makes, per stage (TestDryRunCountsTheCallsARunMakes).
type Plan struct {
	Items int
	// Stopped counts items whose processing ended early on an empty reply.
	Stopped int
	Rows    []PlanRow
	// Assumptions are the counts a suite planned at without knowing them.
	Assumptions []string
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
	mu      sync.Mutex
	rows    map[[3]string]*PlanRow
	assumed map[string]bool
	// calib holds the models whose tokenizer calibration is planned.
	calib map[string]bool
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

// calibrated reports whether model's calibration call is already planned,
// and marks it planned.
func (p *planner) calibrated(model string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.calib[model] {
		return true
	}
	if p.calib == nil {
		p.calib = map[string]bool{}
	}
	p.calib[model] = true
	return false
}

// PlanAssumes records, in a dry run, a count the suite planned at without
// knowing it (printed once under the plan); outside a dry run it does
// nothing.
func (c *Calls) PlanAssumes(format string, args ...any) {
	if c.plan == nil {
		return
	}
	c.plan.mu.Lock()
	defer c.plan.mu.Unlock()
	if c.plan.assumed == nil {
		c.plan.assumed = map[string]bool{}
	}
	c.plan.assumed[fmt.Sprintf(format, args...)] = true
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
func (e *Engine) dryRun(ctx context.Context, s Suite, shard *rundir.Shard, cfg any) (*Plan, error) {
	if _, err := e.reach(ctx, &rundir.Manifest{}, uniqueSorted(s.Models())); err != nil {
		return nil, err
	}
	var missing []string
	var said error // what the server said of the first
	for _, name := range uniqueSorted(s.Models()) {
		if _, err := e.ModelInfo(ctx, name); errors.Is(err, localmodels.ErrModelNotFound) {
			missing = append(missing, name)
			if said == nil {
				said = err
			}
		} else if err != nil {
			return nil, err
		}
	}
	if len(missing) > 0 {
		return nil, missingModels(e.Client.Host(), missing, cfg, said)
	}
	items, err := s.Items(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: items: %w", s.Name, err)
	}
	items = shardOf(shard, items)
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
	s.close()
	for _, r := range p.rows {
		plan.Rows = append(plan.Rows, *r)
	}
	for a := range p.assumed {
		plan.Assumptions = append(plan.Assumptions, a)
	}
	sort.Strings(plan.Assumptions)
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
	fmt.Fprintln(w, "Repair turns (asked only when a judge's reply cannot be read) are not planned.")
	for _, a := range p.Assumptions {
		fmt.Fprintf(w, "Assumed: %s.\n", a)
	}
	if p.Stopped > 0 {
		fmt.Fprintf(w, "%d items stopped early on an empty reply in the plan; their later calls are not counted.\n", p.Stopped)
	}
}
