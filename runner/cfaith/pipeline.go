package cfaith

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"halu/localmodels"
	"halu/runner/engine"
	"halu/runner/judging"
	"halu/runner/rundir"
	"halu/runner/summary"
)

// BuildDataset is HaluAgent end to end (halu build cfaith): with
// opt.Optimize, the generation rules are first optimised on the
// verifier's feedback (§3.2); then the construction runs over every
// document, and its verified data are aggregated into generative,
// single-choice and true/false items written to opt.Out. Every stage's
// model calls — the optimisation agent's included — go through engine
// runs under opt.Out: cached, resumable, and recorded with their
// transcripts. w receives the tables as they are made.
func BuildDataset(ctx context.Context, e *engine.Engine, cfg BuildConfig, opt BuildOptions, w io.Writer) (Dataset, error) {
	if opt.Optimize {
		cfg.Optimized = true
		final, err := optimizeRules(ctx, e, cfg, opt, w)
		if err != nil {
			return Dataset{}, err
		}
		cfg.Rules = final
	}
	b, err := NewBuilder(cfg)
	if err != nil {
		return Dataset{}, err
	}
	res, err := RunOrResume(ctx, e, b.Task(), filepath.Join(opt.Out, "run"), &cfg)
	if res != nil && res.Summary != nil {
		res.Summary.Print(w)
	}
	if err != nil {
		return Dataset{}, err
	}
	m, recs, err := engine.ReadRun(res.Dir)
	if err != nil {
		return Dataset{}, err
	}
	docs, err := decodeDocs(recs)
	if err != nil {
		return Dataset{}, err
	}
	ds := Aggregate(docs, uint64(cfg.Seed), opt.Dedup)
	info := DatasetInfo{Lang: cfg.Lang, Agent: cfg.Agent, Verifier: b.cfg.Verifier, Digests: map[string]string{},
		Rules: cfg.Rules, Seed: cfg.Seed, Threshold: opt.Dedup, EmbedModel: cfg.EmbedModel, BuildRun: res.Dir, Prompts: map[string]string{}}
	for _, mi := range m.Models {
		info.Digests[mi.Name] = mi.Digest
	}
	for k, p := range m.Prompts {
		info.Prompts[k] = p.SHA256
	}
	if err := WriteDataset(opt.Out, ds, info); err != nil {
		return ds, err
	}
	fmt.Fprintf(w, "\ndataset %s: %d generative, %d single-choice, %d true/false items", opt.Out, len(ds.Generative), len(ds.Choice), len(ds.TrueFalse))
	for k, n := range ds.Dropped {
		fmt.Fprintf(w, "; %d single-choice dropped: %s", n, k)
	}
	fmt.Fprintln(w)
	return ds, nil
}

// optimizeRules runs the optimisation loop from cfg's rules and writes its
// rounds (Table 3's layout, and rounds.json) and the final rules
// (optimized_rules.json, for later builds' --rules).
func optimizeRules(ctx context.Context, e *engine.Engine, cfg BuildConfig, opt BuildOptions, w io.Writer) (RuleSet, error) {
	docs, err := ReadDocs(cfg.Docs)
	if err != nil {
		return cfg.Rules, err
	}
	tr, va := Split(docs, opt.Train, opt.Val, uint64(cfg.Seed))
	o := Optimizer{Engine: e, Base: cfg, Dir: filepath.Join(opt.Out, "optimize"), Train: tr, Val: va,
		Candidates: opt.Candidates, Optimizer: opt.Optimizer}
	final, table, err := o.Loop(opt.Rounds).Run(ctx, cfg.Rules)
	if len(table) > 0 {
		PrintRounds(w, table, len(tr), len(va))
		b, _ := json.MarshalIndent(table, "", "  ")
		if werr := rundir.WriteFileAtomic(filepath.Join(opt.Out, "optimize", "rounds.json"), append(b, '\n')); werr != nil && err == nil {
			err = werr
		}
	}
	if err != nil {
		return final, err
	}
	b, _ := json.MarshalIndent(final, "", "  ")
	rulesPath := filepath.Join(opt.Out, "optimized_rules.json")
	if err := rundir.WriteFileAtomic(rulesPath, append(b, '\n')); err != nil {
		return final, err
	}
	fmt.Fprintf(w, "final prompt rules (%s) written to %s; later builds use them with --rules %s\n", final.Name, rulesPath, rulesPath)
	return final, nil
}

// LoadRules is the rule set --rules names: the paper's original or
// optimized rules (Figure 7) in lang, or a rules JSON file (an
// optimisation's optimized_rules.json).
func LoadRules(lang, spec string) (RuleSet, error) {
	if spec == "original" || spec == "optimized" {
		return BuiltinRules(lang, spec)
	}
	b, err := os.ReadFile(spec)
	if err != nil {
		return RuleSet{}, fmt.Errorf("--rules: %w", err)
	}
	var rs RuleSet
	if err := json.Unmarshal(b, &rs); err != nil {
		return rs, fmt.Errorf("--rules %s: %w", spec, err)
	}
	return rs, rs.Validate()
}

// PrintRounds writes the optimisation's rounds in the layout of C-FAITH's
// Table 3: the validation pass rates of the rules kept after each round.
func PrintRounds(w io.Writer, rounds []Round, train, val int) {
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

// proposer is one round's optimisation proposals as an engine suite: an
// item per candidate, each asking the optimisation agent to revise one
// part of the current rules from the verifier's feedback on the round's
// training build, so that every proposal is cached, resumable and
// recorded with its transcript like any model call.
type proposer struct {
	model, lang string
	seed        int
	round       int
	rules       RuleSet
	parts       []Part
	training    []DocResult
	// corrector is "authors" (their corrector's instructions, one failed
	// check each, a whole prompt rewritten) or "json" (halu's optimiser:
	// one part revised as JSON from every failure that blames it).
	corrector string
}

// Proposal is one candidate's record: the part it revised and the rules
// it proposed (nil when the agent's reply never read).
type Proposal struct {
	Part  Part     `json:"part"`
	Rules *RuleSet `json:"rules,omitempty"`
	// NoFeedback is true when the authors' corrector had no failed check
	// of the part to correct from (it corrects only what failed).
	NoFeedback bool `json:"no_feedback,omitempty"`
}

// Task is the proposer as the engine runs it.
func (p *proposer) Task() engine.Suite {
	return engine.Suite{Name: "cfaith-optimize", Models: p.Models, Items: p.Items, Process: p.Process, Summarize: p.Summarize}
}

func (p *proposer) Models() []string { return []string{p.model} }

func (p *proposer) Items(context.Context) ([]engine.Item, error) {
	items := make([]engine.Item, len(p.parts))
	for k := range p.parts {
		items[k] = engine.Item{ID: fmt.Sprintf("candidate%03d", k+1), Payload: k}
	}
	return items, nil
}

func (p *proposer) Process(ctx context.Context, c *engine.Calls, it engine.Item) (any, error) {
	k := it.Payload.(int)
	part := p.parts[k]
	name := fmt.Sprintf("round%d-candidate%d", p.round, k+1)
	req, read, ok := p.request(k, name)
	if !ok {
		return Proposal{Part: part, NoFeedback: true}, nil
	}
	rs, ok, err := judging.JudgeAs(ctx, c, "optimize", req, nil, read)
	if err != nil {
		return nil, err
	}
	out := Proposal{Part: part}
	if ok {
		out.Rules = &rs
	}
	return out, nil
}

// request is candidate k's request to the optimisation agent and the
// reader of its reply; ok is false when there is nothing to ask.
//
// Under the authors' corrector: the j-th failed check of the candidate's
// part (j counting the candidates before it that revise the same part),
// shown with the part's prompt, in free text with their corrector's
// payload (their agents' sampling, a 2,048-token cap); the rewritten
// prompt is read back into rules (Part.ReadCorrection). A part with no
// failed check has nothing to correct. Under halu's optimiser: every
// failure that blames the part, one part revised as JSON (Part.Apply).
func (p *proposer) request(k int, name string) (localmodels.ChatRequest, func(string) (RuleSet, error), bool) {
	part := p.parts[k]
	if p.corrector != "authors" {
		req := localmodels.ChatRequest{Model: p.model,
			Messages: []localmodels.Message{{Role: "user", Content: OptimizerPrompt(p.lang, p.rules, part, Feedback(p.training, part, 40))}},
			Options: localmodels.Options{Temperature: localmodels.Float(0.7), TopP: localmodels.Float(0.7), Seed: localmodels.Int(p.seed + k),
				NumPredict: localmodels.Int(2048)},
			Format: json.RawMessage(part.schema()),
		}
		return req, func(raw string) (RuleSet, error) { return part.Apply(p.rules, raw, name) }, true
	}
	j := 0
	for _, q := range p.parts[:k] {
		if q == part {
			j++
		}
	}
	f, ok := failureFor(p.training, part, j)
	if !ok {
		return localmodels.ChatRequest{}, nil, false
	}
	req := localmodels.ChatRequest{Model: p.model, Options: authorsOptions(p.seed+k, 2048),
		Messages: []localmodels.Message{{Role: "user", Content: CorrectorPrompt(p.lang, p.rules, part, f)}}}
	return req, CorrectionReader(p.lang, p.rules, part, name), true
}

func (p *proposer) Summarize(recs *rundir.Records) (*summary.Summary, error) {
	parsed := 0
	ps, err := rundir.DecodeSorted[Proposal](recs, nil)
	if err != nil {
		return nil, err
	}
	for _, x := range ps {
		if x.Rules != nil {
			parsed++
		}
	}
	return &summary.Summary{Suite: "cfaith-optimize", Metrics: map[string]float64{},
		Notes: []string{fmt.Sprintf("round %d: %d of %d proposals read", p.round, parsed, len(ps))}}, nil
}

// propose runs one round's proposals into dir and returns the candidates
// whose reply read, in order.
func (o Optimizer) propose(ctx context.Context, dir, model string, round int, rs RuleSet, training []DocResult) ([]Candidate, error) {
	p := &proposer{model: model, lang: o.Base.Lang, seed: o.Base.Seed, round: round, rules: rs,
		parts: Targets(training, o.Base.Types, o.Candidates), training: training, corrector: o.Base.Corrector}
	cfg := map[string]any{"round": round, "model": model, "rules": rs.Name, "candidates": o.Candidates, "corrector": o.Base.Corrector}
	if _, err := RunOrResume(ctx, o.Engine, p.Task(), dir, cfg); err != nil {
		return nil, err
	}
	_, recs, err := engine.ReadRun(dir)
	if err != nil {
		return nil, err
	}
	ps, err := rundir.DecodeRecords[Proposal](recs)
	if err != nil {
		return nil, err
	}
	var out []Candidate
	for _, x := range ps {
		if x.Rules != nil {
			out = append(out, Candidate{Part: x.Part, Rules: *x.Rules})
		}
	}
	return out, nil
}
