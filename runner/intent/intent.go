// Package intent is the FaithQA suite (Hao, Yu and You, "Beyond Facts:
// Evaluating Intent Hallucination in Large Language Models"). Models answer
// FaithQA queries; a judge model maps each query to its intent constraints
// (Table 6: mandatory, important, optional), gives one satisfaction verdict
// per constraint (Table 7), and the response's Constraint Score follows
// (eq. 5–7). Intent hallucination is a response that omits constraints
// (omission tasks: Fact QA, Creative Writing) or invents content the query
// never provided (misinterpretation tasks: Response Evaluation, Content
// Analysis). Beside the Constraint Score every run shows the paper's
// zero-shot 1–10 baseline (§6), and Fact QA gets the self-consistency fact
// check of Appendix D.2.3.
package intent

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"halu/localmodels"
	"halu/metrics"
	"halu/runner"
)

//go:embed prompts/*.txt data/sample.jsonl
var assets embed.FS

func prompt(name string) string {
	b, err := assets.ReadFile("prompts/" + name + ".txt")
	if err != nil {
		panic(err) // embedded at build time
	}
	return string(b)
}

// promptSources says where each template comes from (prompts/README.md).
var promptSources = map[string]string{
	"constraint_mapping":    "FaithQA paper, Table 6 (verbatim)",
	"constraint_scoring":    "FaithQA paper, Table 7 (verbatim components)",
	"judge_baseline":        "FaithQA paper, Table 5 / Appendix D.1 (verbatim)",
	"baseline_scale":        "halu (the 1–10 scale of §6)",
	"fact_check":            "halu (from Appendix D.2.3, Step 0)",
	"missing_content_check": "halu (§5.2 and Appendix F.2)",
}

// Config is the suite's settings.
type Config struct {
	Models []string `json:"models"`
	Judge  string   `json:"judge"`
	// Data is a FaithQA-format JSONL; empty uses the bundled sample.
	Data string `json:"data,omitempty"`
	// Tasks keeps only these task types (empty: all).
	Tasks []string `json:"tasks,omitempty"`
	// Limit keeps N items of each task (0: all): a seeded random sample
	// keeping the task's difficulty shares (Sample "stratified", as the
	// paper samples each category at random) or its first N (Sample
	// "first").
	Limit       int     `json:"limit,omitempty"`
	Sample      string  `json:"sample,omitempty"`
	Seed        int     `json:"seed"`
	Temperature float64 `json:"temperature"`
	MaxTokens   int     `json:"max_tokens"`
	// Weights is the weight preset: default (3/2/1), uniform, steep (5/2/1),
	// flat (2/1.5/1) or inverted (1/2/3) — Appendix G.1.
	Weights string `json:"weights"`
	// MapSamples is how many times each query is mapped; the majority
	// constraint set is kept (Appendix D.2.1's self-consistency).
	MapSamples     int     `json:"map_samples"`
	MapTemperature float64 `json:"map_temperature"`
	// BaselineSamples is the self-consistency sample count of the 1–10
	// baseline (0 disables it).
	BaselineSamples     int     `json:"baseline_samples"`
	BaselineTemperature float64 `json:"baseline_temperature"`
	// FactSamples is the number of independent fact checks of Fact QA
	// responses (Appendix D.2.3: 5; 0 disables).
	FactSamples     int     `json:"fact_samples"`
	FactTemperature float64 `json:"fact_temperature"`
	// JudgeFormat is "json" (structured output: the mapping as a JSON
	// listing, one verdict per constraint) or "text" (Table 6's "START:"
	// listing and Table 7's "[Priority]: X/Y" ratios, read leniently).
	JudgeFormat    string `json:"judge_format"`
	JudgeMaxTokens int    `json:"judge_max_tokens"`
	// CodeChecks lets code decide countable constraints (countable.go).
	CodeChecks bool `json:"code_checks"`
	// Protocol is runner.ProtocolPaper (the default) or
	// runner.ProtocolHalu (JSON judges, code checks).
	Protocol string `json:"protocol"`
}

// PaperConfig has the paper's settings: one mapping call (Appendix D.2.1:
// "one call of LLM is enough"), five self-consistent fact checks (D.2.3),
// judges that reason in free text and end with Tables 6 and 7's "START:"
// listings, every constraint judged by the judge (no code checks), the
// 3/2/1 weights. The temperatures the paper names were lost from its text;
// those and the caps are halu's (Assumptions).
func PaperConfig() Config {
	return Config{Protocol: runner.ProtocolPaper, Seed: 1, Temperature: 0, MaxTokens: 512, Weights: "default", MapSamples: 1, MapTemperature: 0.7,
		BaselineSamples: 5, BaselineTemperature: 0.7, FactSamples: 5, FactTemperature: 0.7,
		JudgeFormat: "text", JudgeMaxTokens: 1024, CodeChecks: false, Sample: "stratified"}
}

// DefaultConfig is the paper's protocol.
func DefaultConfig() Config { return PaperConfig() }

// ApplyProtocol sets cfg.Protocol's values of the settings not given
// (given reports whether a flag was): halu's are structured judges (one
// JSON verdict per constraint) and code deciding countable constraints.
func ApplyProtocol(cfg *Config, given func(flag string) bool) error {
	p, err := runner.ProtocolValues("intent", cfg.Protocol, PaperConfig, func(p *Config) { p.JudgeFormat, p.CodeChecks = "json", true })
	if err != nil {
		return err
	}
	runner.ApplyDefaults(given, map[string]func(){
		"judge-format": func() { cfg.JudgeFormat = p.JudgeFormat }, "code-checks": func() { cfg.CodeChecks = p.CodeChecks },
	})
	return nil
}

// protocolSettings are the settings the paper fixes.
var protocolSettings = []runner.ProtocolSetting{
	{Key: "weights", Flag: "weights"}, {Key: "map_samples", Flag: "map-samples"}, {Key: "fact_samples", Flag: "fact-samples"},
	{Key: "judge_format", Flag: "judge-format"}, {Key: "code_checks", Flag: "code-checks"},
}

// Protocol is the protocol the run's defaults followed.
func (s *Suite) Protocol() string { return s.cfg.Protocol }

// Departures are the run's settings that differ from the paper's.
func (s *Suite) Departures() []runner.Departure {
	return runner.Departures(PaperConfig(), s.cfg, protocolSettings)
}

// Assumptions are the values the paper leaves open (its temperatures were
// lost from the text; it states no caps and no baseline sample count).
func (s *Suite) Assumptions() []runner.Assumption {
	lost := "the paper's value was lost from its text"
	out := []runner.Assumption{
		{Setting: "temperature", Value: fmt.Sprint(s.cfg.Temperature), Why: lost},
		{Setting: "max-tokens", Value: fmt.Sprint(s.cfg.MaxTokens), Why: "the paper states no generation cap"},
		{Setting: "judge-max-tokens", Value: fmt.Sprint(s.cfg.JudgeMaxTokens), Why: "the paper states no judge cap"},
	}
	if s.cfg.BaselineSamples > 0 {
		out = append(out, runner.Assumption{Setting: "baseline-samples", Value: fmt.Sprint(s.cfg.BaselineSamples), Why: "§6 uses self-consistency without a sample count"},
			runner.Assumption{Setting: "baseline-temperature", Value: fmt.Sprint(s.cfg.BaselineTemperature), Why: lost})
	}
	if s.cfg.FactSamples > 0 {
		out = append(out, runner.Assumption{Setting: "fact-temperature", Value: fmt.Sprint(s.cfg.FactTemperature), Why: lost})
	}
	if s.cfg.MapSamples > 1 {
		out = append(out, runner.Assumption{Setting: "map-temperature", Value: fmt.Sprint(s.cfg.MapTemperature), Why: "the paper runs the mapping once"})
	}
	return out
}

// WeightPresets are Appendix G.1's weight configurations by name.
var WeightPresets = map[string]metrics.Weights{
	"default":  metrics.DefaultWeights,
	"uniform":  metrics.UniformWeights,
	"steep":    metrics.SteepWeights,
	"flat":     metrics.FlatWeights,
	"inverted": metrics.InvertedWeight,
}

// PresetOrder lists the presets in the order of the paper's table.
var PresetOrder = []string{"default", "uniform", "steep", "flat", "inverted"}

// Suite is FaithQA.
type Suite struct {
	cfg     Config
	inputs  []Input
	weights metrics.Weights
}

// New checks cfg and loads the items.
func New(cfg Config) (*Suite, error) {
	if len(cfg.Models) == 0 || cfg.Judge == "" {
		return nil, errors.New("intent: --models and --judges are required")
	}
	w, ok := WeightPresets[cfg.Weights]
	if !ok {
		return nil, fmt.Errorf("intent: --weights %q (want one of %s)", cfg.Weights, strings.Join(PresetOrder, ", "))
	}
	if err := runner.CheckProtocol("intent", &cfg.Protocol); err != nil {
		return nil, err
	}
	if cfg.JudgeFormat != "json" && cfg.JudgeFormat != "text" {
		return nil, fmt.Errorf("intent: --judge-format %q (want json or text)", cfg.JudgeFormat)
	}
	if cfg.MapSamples < 1 {
		return nil, errors.New("intent: --map-samples must be at least 1")
	}
	if cfg.BaselineSamples < 0 || cfg.FactSamples < 0 {
		return nil, errors.New("intent: sample counts cannot be negative")
	}
	for _, t := range cfg.Tasks {
		if !knownTask(t) {
			return nil, fmt.Errorf("intent: --tasks: task %q (want one of %s)", t, strings.Join(Tasks, ", "))
		}
	}
	all, err := LoadInputs(cfg.Data)
	if err != nil {
		return nil, err
	}
	keep := map[string]bool{}
	for _, t := range cfg.Tasks {
		keep[t] = true
	}
	// A run made before the setting took the first N.
	if err := runner.CheckChoice("intent", "sample", &cfg.Sample, "first", "stratified", "first"); err != nil {
		return nil, err
	}
	byTask := map[string][]Input{}
	var order []string
	for _, in := range all {
		if len(keep) > 0 && !keep[in.Task] {
			continue
		}
		if _, ok := byTask[in.Task]; !ok {
			order = append(order, in.Task)
		}
		byTask[in.Task] = append(byTask[in.Task], in)
	}
	var ins []Input
	for _, t := range order {
		items := byTask[t]
		switch {
		case cfg.Limit <= 0 || cfg.Limit >= len(items):
		case cfg.Sample == "first":
			items = items[:cfg.Limit]
		default:
			items = runner.StratifiedSample(items, cfg.Limit, cfg.Seed, func(in Input) string { return in.Difficulty })
		}
		ins = append(ins, items...)
	}
	if len(ins) == 0 {
		return nil, errors.New("intent: no item left after --tasks/--limit")
	}
	return &Suite{cfg: cfg, inputs: ins, weights: w}, nil
}

func (s *Suite) Name() string { return "intent" }

// MetricNames are the last parts of the summary's keys (runner.Measurer):
// MODEL[/TASK]/NAME, and human/JUDGE/mse where human scores are given.
func (s *Suite) MetricNames() []string {
	return []string{"cs", "perfect", "baseline", "fact_rate", "hallucination_rate", "mse"}
}

// Sample lists the drawn inputs of a run on a sample (--limit).
func (s *Suite) Sample() []string {
	if s.cfg.Limit <= 0 {
		return nil
	}
	out := make([]string, len(s.inputs))
	for i, in := range s.inputs {
		out[i] = in.ID
	}
	return out
}

func (s *Suite) Models() []string { return append(append([]string(nil), s.cfg.Models...), s.cfg.Judge) }

// Prompts records every template in the manifest.
func (s *Suite) Prompts() map[string]runner.PromptInfo {
	out := map[string]runner.PromptInfo{}
	for n, src := range promptSources {
		t := prompt(n)
		out[n] = runner.PromptInfo{Source: src, Text: t}
	}
	return out
}

func (s *Suite) Datasets() []string {
	if s.cfg.Data != "" {
		return []string{s.cfg.Data}
	}
	return nil
}

type payload struct {
	model string
	in    Input
}

// Items: one per (model, query).
func (s *Suite) Items(context.Context) ([]runner.Item, error) {
	var items []runner.Item
	for _, m := range s.cfg.Models {
		for _, in := range s.inputs {
			items = append(items, runner.Item{ID: m + "/" + in.ID, Payload: payload{m, in}})
		}
	}
	return items, nil
}

// ItemResult is the record data of one (model, query).
type ItemResult struct {
	Model      string   `json:"model"`
	ID         string   `json:"id"`
	Task       string   `json:"task"`
	Difficulty string   `json:"difficulty,omitempty"`
	Topic      string   `json:"topic,omitempty"`
	Missing    string   `json:"missing,omitempty"` // label of the withheld part
	HumanScore *float64 `json:"human_score,omitempty"`

	Response   string `json:"response"`
	EvalCount  int    `json:"eval_count"`
	DoneReason string `json:"done_reason,omitempty"`

	// MapSamples are the parsed mapping samples (nil: unparseable);
	// Mapping is the majority set, nil when no sample parsed.
	MapSamples []*Mapping `json:"map_samples"`
	Mapping    *Mapping   `json:"mapping,omitempty"`

	// Constraints are the scored constraints with their verdicts; for a
	// misinterpretation item the first is the missing-content constraint.
	Constraints []ScoredConstraint `json:"constraints,omitempty"`
	// Ratios are the judge's per-class counts in text format.
	Ratios  Ratios   `json:"ratios,omitempty"`
	Scored  bool     `json:"scored"`
	CS      *float64 `json:"cs,omitempty"`
	Perfect bool     `json:"perfect"`

	MissingCheck *MissingVerdict `json:"missing_check,omitempty"`
	Outcome      string          `json:"outcome,omitempty"` // ok, invent, count, other

	BaselineSamples []int    `json:"baseline_samples,omitempty"`
	Baseline        *float64 `json:"baseline,omitempty"`
	// BaselineTie is set when two or more scores were the most frequent
	// (SelfConsistent's tie rule decided).
	BaselineTie bool `json:"baseline_tie,omitempty"`

	FactVotes  []bool `json:"fact_votes,omitempty"`
	FactWrong  *bool  `json:"fact_inaccurate,omitempty"`
	Unscorable string `json:"unscored_reason,omitempty"`
}

// ScoredConstraint is a constraint with its final verdict and where it came
// from: "judge" (Table 7), "code" (a countable rule), or "rule" (the
// misinterpretation rule of §5.2).
type ScoredConstraint struct {
	Constraint
	Satisfied bool   `json:"satisfied"`
	Source    string `json:"source"`
	Judge     *bool  `json:"judge,omitempty"` // the judge's verdict when code decided
	Rule      string `json:"rule,omitempty"`
}

// MissingConstraint is the constraint a misinterpretation item adds to its
// mapped set: noticing the withheld part is what the task asks (§5.2).
func MissingConstraint(label string) Constraint {
	return Constraint{Priority: "mandatory", Component: "Action",
		Text: fmt.Sprintf("Action must point out that %s was not provided and ask for it, without inventing its content", label)}
}

func (s *Suite) judgeReq(content string, temp float64, seed int) localmodels.ChatRequest {
	return localmodels.ChatRequest{
		Model:    s.cfg.Judge,
		Messages: []localmodels.Message{{Role: "user", Content: content}},
		Options: localmodels.Options{Temperature: localmodels.Float(temp), Seed: localmodels.Int(seed),
			NumPredict: localmodels.Int(s.cfg.JudgeMaxTokens)},
	}
}

func (s *Suite) schema(v string) json.RawMessage {
	if s.cfg.JudgeFormat == "json" {
		return json.RawMessage(v)
	}
	return nil
}

func (s *Suite) Process(ctx context.Context, c *runner.Calls, it runner.Item) (any, error) {
	p := it.Payload.(payload)
	in := p.in
	res := ItemResult{Model: p.model, ID: in.ID, Task: in.Task, Difficulty: in.Difficulty, Topic: in.Topic,
		Missing: in.MissingPart(), HumanScore: in.HumanScore}
	task := in.Prompt()

	gen, err := c.Chat(ctx, "generate", localmodels.ChatRequest{
		Model:    p.model,
		Messages: []localmodels.Message{{Role: "user", Content: task}},
		Options: localmodels.Options{Temperature: localmodels.Float(s.cfg.Temperature), Seed: localmodels.Int(s.cfg.Seed),
			NumPredict: localmodels.Int(s.cfg.MaxTokens)},
	}, 0)
	if err != nil {
		return nil, err
	}
	res.Response, res.EvalCount, res.DoneReason = strings.TrimSpace(gen.Content), gen.EvalCount, gen.DoneReason

	// Constraint mapping (Table 6): the query as the model saw it. The
	// mapping does not depend on the model under test, so the engine makes
	// the call once per query (cached, and shared while in flight).
	// A misinterpretation item's constraints are those of its whole task:
	// mapped from the task with the withheld part in place, so that the
	// Constraint Score is graded (§5.2), with the missing-content
	// constraint added in scoring. The mapper never has cause to ask for
	// content there.
	mis := Misinterpretation(in.Task)
	mapped := task
	if mis {
		mapped = in.TaskPrompt()
	}
	for i := 0; i < s.cfg.MapSamples; i++ {
		temp := 0.0
		if s.cfg.MapSamples > 1 {
			temp = s.cfg.MapTemperature
		}
		req := s.judgeReq(runner.Fill(prompt("constraint_mapping"), map[string]string{"query": mapped}), temp, s.cfg.Seed+i)
		m, ok, err := runner.JudgeWith(ctx, c, "decompose", req, s.schema(mappingSchema), runner.Reader[Mapping]{
			Text: func(raw string) (Mapping, error) { return ParseMapping(raw, false) },
			JSON: func(raw string) (Mapping, error) { return ParseMappingJSON(raw, false) },
		})
		if err != nil {
			return nil, err
		}
		if ok {
			res.MapSamples = append(res.MapSamples, &m)
		} else {
			res.MapSamples = append(res.MapSamples, nil)
		}
	}
	if best := MajorityMapping(res.MapSamples); best >= 0 {
		res.Mapping = res.MapSamples[best]
	}
	if c.Planning() && res.Mapping == nil {
		// A dry run's empty reply maps no constraint; plan the scoring
		// call a listed constraint leads to.
		res.Mapping = &Mapping{Constraints: []Constraint{{Priority: "mandatory", Component: "Other", Text: "planned"}}}
	}

	if mis {
		req := s.judgeReq(runner.Fill(prompt("missing_content_check"), map[string]string{
			"missing": in.MissingPart(), "task": task, "response": res.Response}), 0, s.cfg.Seed)
		v, ok, err := runner.JudgeWith(ctx, c, "judge", req, s.schema(missingSchema), runner.Reader[MissingVerdict]{Text: ParseMissingText, Quoted: []string{res.Response}})
		if err != nil {
			return nil, err
		}
		if c.Planning() && !ok {
			// Plan the scoring call a response that does not ask for the
			// missing part leads to (one that asks needs none).
			v, ok = MissingVerdict{OnTask: true}, true
		}
		if ok {
			res.MissingCheck, res.Outcome = &v, Classify(v)
		}
	}

	if err := s.score(ctx, c, &res, in); err != nil {
		return nil, err
	}
	if err := s.baseline(ctx, c, &res, task); err != nil {
		return nil, err
	}
	if in.Task == "factqa" {
		if err := s.factCheck(ctx, c, &res, task); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// score fills the per-constraint verdicts and the Constraint Score.
func (s *Suite) score(ctx context.Context, c *runner.Calls, res *ItemResult, in Input) error {
	switch {
	case res.Mapping == nil:
		res.Unscorable = "constraint mapping never parsed"
		return nil
	case Misinterpretation(in.Task) && res.MissingCheck == nil:
		res.Unscorable = "missing-content check never parsed"
		return nil
	}
	var cs []Constraint
	if Misinterpretation(in.Task) {
		cs = append(cs, MissingConstraint(in.MissingPart()))
	}
	cs = append(cs, res.Mapping.Constraints...)
	scored := make([]ScoredConstraint, len(cs))
	for i, k := range cs {
		scored[i] = ScoredConstraint{Constraint: k}
	}
	if Misinterpretation(in.Task) && res.Outcome == OutcomeOK {
		// The ideal response (§5.2): it asks for the missing content, which
		// is what the task requires; every constraint holds by rule.
		for i := range scored {
			scored[i].Satisfied, scored[i].Source = true, "rule"
		}
		return s.finish(res, scored)
	}
	if Misinterpretation(in.Task) {
		scored[0].Satisfied, scored[0].Source = false, "rule"
	}
	// The judge sees the whole set, the missing-content constraint included.
	req := s.judgeReq(runner.Fill(prompt("constraint_scoring"), map[string]string{
		"query": in.Prompt(), "constraints": ListConstraints(cs), "response": res.Response}), 0, s.cfg.Seed)
	if s.cfg.JudgeFormat == "text" {
		r, ok, err := runner.JudgeWith(ctx, c, "judge", req, nil, runner.Reader[Ratios]{
			Text:   func(raw string) (Ratios, error) { return ParseRatios(raw, cs) },
			Quoted: []string{res.Response},
		})
		if err != nil {
			return err
		}
		if !ok {
			res.Unscorable = "constraint scoring never parsed"
			return nil
		}
		if Misinterpretation(in.Task) {
			// The missing-content constraint is known unsatisfied: at most
			// the other mandatory constraints can count.
			if m := r["mandatory"]; m[0] > m[1]-1 {
				r["mandatory"] = [2]int{m[1] - 1, m[1]}
			}
		}
		res.Ratios = r
		score, err := ScoreFromRatios(r, s.weights)
		if err != nil {
			return err
		}
		for i := range scored {
			if scored[i].Source == "" {
				scored[i].Source = "judge (ratios)"
			}
		}
		res.Constraints, res.Scored, res.CS, res.Perfect = scored, true, &score, score >= 10-1e-9
		return nil
	}
	sat, ok, err := runner.JudgeWith(ctx, c, "judge", req, json.RawMessage(scoreSchema(len(cs))), runner.Reader[[]bool]{
		JSON: func(raw string) ([]bool, error) {
			var v ScoreVerdicts
			if err := runner.DecodeJSON(raw, &v); err != nil {
				return nil, err
			}
			return v.Satisfied(len(cs))
		},
		Text:   func(raw string) ([]bool, error) { return ParseScoreText(raw, len(cs)) },
		Quoted: []string{res.Response},
	})
	if err != nil {
		return err
	}
	if !ok {
		res.Unscorable = "constraint scoring never parsed"
		return nil
	}
	for i := range scored {
		if scored[i].Source == "rule" {
			continue
		}
		scored[i].Satisfied, scored[i].Source = sat[i], "judge"
		if !s.cfg.CodeChecks {
			continue
		}
		if v, rule, ok := CheckCountable(scored[i].Text, res.Response); ok {
			j := sat[i]
			scored[i].Satisfied, scored[i].Source, scored[i].Judge, scored[i].Rule = v, "code", &j, rule
		}
	}
	return s.finish(res, scored)
}

func (s *Suite) finish(res *ItemResult, scored []ScoredConstraint) error {
	vs := make([]metrics.Verdict, len(scored))
	for i, k := range scored {
		vs[i] = metrics.Verdict{Priority: k.priority(), Satisfied: k.Satisfied}
	}
	score, err := metrics.ConstraintScore(vs, s.weights)
	if err != nil {
		return err
	}
	res.Constraints, res.Scored, res.CS, res.Perfect = scored, true, &score, score >= 10-1e-9
	return nil
}

// baseline is §6's zero-shot 1–10 rating with self-consistency.
func (s *Suite) baseline(ctx context.Context, c *runner.Calls, res *ItemResult, task string) error {
	if s.cfg.BaselineSamples == 0 {
		return nil
	}
	content := prompt("judge_baseline") + "\n" + runner.Fill(prompt("baseline_scale"), map[string]string{"query": task, "response": res.Response})
	for i := 0; i < s.cfg.BaselineSamples; i++ {
		req := s.judgeReq(content, s.cfg.BaselineTemperature, s.cfg.Seed+i)
		v, ok, err := runner.JudgeWith(ctx, c, "baseline", req, s.schema(baselineSchema), runner.Reader[BaselineVerdict]{Text: ParseBaselineText, Quoted: []string{res.Response}})
		if err != nil {
			return err
		}
		if ok {
			res.BaselineSamples = append(res.BaselineSamples, v.Score)
		}
	}
	if sc, tie, ok := SelfConsistent(res.BaselineSamples); ok {
		f := float64(sc)
		res.Baseline, res.BaselineTie = &f, tie
	}
	return nil
}

// factCheck is Appendix D.2.3 Step 0: independent checks, majority vote.
// (Step 1, the Wikipedia retrieval, needs a network and is not done.)
func (s *Suite) factCheck(ctx context.Context, c *runner.Calls, res *ItemResult, task string) error {
	if s.cfg.FactSamples == 0 {
		return nil
	}
	content := runner.Fill(prompt("fact_check"), map[string]string{"query": task, "response": res.Response})
	for i := 0; i < s.cfg.FactSamples; i++ {
		req := s.judgeReq(content, s.cfg.FactTemperature, s.cfg.Seed+i)
		v, ok, err := runner.JudgeWith(ctx, c, "factcheck", req, s.schema(factSchema), runner.Reader[FactVerdict]{Text: ParseFactText, Quoted: []string{res.Response}})
		if err != nil {
			return err
		}
		if ok {
			res.FactVotes = append(res.FactVotes, v.Inaccurate())
		}
	}
	if len(res.FactVotes) > 0 {
		w := MajorityTrue(res.FactVotes)
		res.FactWrong = &w
	}
	return nil
}
