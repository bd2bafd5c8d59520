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
	"halu/runner/engine"
	"halu/runner/judging"
	"halu/runner/rundir"
	"halu/runner/setting"
)

//go:embed prompts/*.txt data/sample.jsonl
var assets embed.FS

func prompt(name string) string { return engine.Embedded(assets, "prompts/"+name+".txt") }

// promptSources says where each template comes from (prompts/README.md).
var promptSources = map[string]string{
	"constraint_mapping":    "FaithQA paper, Table 6 (verbatim)",
	"constraint_scoring":    "FaithQA paper, Table 7 (verbatim components)",
	"judge_baseline":        "FaithQA paper, Table 5 / Appendix D.1 (verbatim)",
	"baseline_scale":        "halu (the 1–10 scale of §6)",
	"fact_check":            "halu (from Appendix D.2.3, Step 0)",
	"missing_content_check": "halu (§5.2 and Appendix F.2)",
}

// Config is the suite's settings (declared in Settings).
type Config struct {
	Models []string
	// Judge is the one judge model (the paper's setting), given as
	// --judges.
	Judge string
	// Data is a FaithQA-format JSONL; empty uses the bundled sample.
	Data string
	// Tasks keeps only these task types (empty: all).
	Tasks []string
	// Limit keeps N items of each task (0: all): a seeded random sample
	// keeping the task's difficulty shares (Sample "stratified", as the
	// paper samples each category at random) or its first N (Sample
	// "first").
	Limit       int
	Sample      string
	Seed        int
	Temperature float64
	MaxTokens   int
	// Weights is the weight preset: default (3/2/1), uniform, steep (5/2/1),
	// flat (2/1.5/1) or inverted (1/2/3) — Appendix G.1.
	Weights string
	// MapSamples is how many times each query is mapped; the majority
	// constraint set is kept (Appendix D.2.1's self-consistency).
	MapSamples     int
	MapTemperature float64
	// BaselineSamples is the self-consistency sample count of the 1–10
	// baseline (0 disables it).
	BaselineSamples     int
	BaselineTemperature float64
	// FactSamples is the number of independent fact checks of Fact QA
	// responses (Appendix D.2.3: 5; 0 disables).
	FactSamples     int
	FactTemperature float64
	// JudgeFormat is "json" (structured output: the mapping as a JSON
	// listing, one verdict per constraint) or "text" (Table 6's "START:"
	// listing and Table 7's "[Priority]: X/Y" ratios, read leniently).
	JudgeFormat    string
	JudgeMaxTokens int
	// TooLong is what a query a model's context cannot hold does: "refuse"
	// (the run stops before its first call) or "skip" (the item is left
	// out, unscored and counted). Never is it left to the server, which
	// cuts a prompt's beginning — the query.
	TooLong string
	// CodeChecks lets code decide countable constraints (countable.go).
	CodeChecks bool
	// Protocol is setting.ProtocolPaper (the default) or
	// setting.ProtocolHalu (JSON judges, code checks).
	Protocol string
}

// Settings declares the suite's settings, with the paper's values: one
// mapping call (Appendix D.2.1: "one call of LLM is enough"), five
// self-consistent fact checks (D.2.3), judges that reason in free text and
// end with Tables 6 and 7's "START:" listings, every constraint judged by
// the judge (no code checks), the 3/2/1 weights. The temperatures the
// paper names were lost from its text; those and the caps are halu's
// (Assumed).
func (c *Config) Settings() setting.List {
	const lost = "the paper's value was lost from its text"
	return setting.List{
		setting.Strings("models", &c.Models, "models under test").As(setting.Subject).Models().Required(),
		setting.String("judges", &c.Judge, "judge model (one model): maps constraints, scores them, rates the baseline, checks facts").
			As(setting.Instrument).Models().Required().Deprecated("judge").Check(func() error {
			if strings.Contains(c.Judge, ",") {
				return errors.New("this suite takes one judge (the paper's setting); run once per judge and compare")
			}
			return nil
		}),
		setting.String("data", &c.Data, "FaithQA-format JSONL (default: the bundled sample; see halu intent make)").As(setting.Data).Path().
			Unset("the bundled 10-item sample (3 of the paper's example queries, 1 story written for halu, 6 items made from PubMedQA abstracts; none from the FaithQA test set)"),

		setting.Choices("tasks", &c.Tasks, "task types to keep: "+strings.Join(Tasks, ", "), Tasks...).As(setting.Data).Unset("all"),
		setting.Int("limit", &c.Limit, "items per task (0: all): a seeded random sample keeping the task's difficulty shares, listed in the manifest").As(setting.Data).Min(0),
		setting.Choice("sample", &c.Sample, "how --limit draws: stratified (seeded, as the paper samples each category) or first (the file's first items)", "stratified", "first").As(setting.Data),
		setting.Int("seed", &c.Seed, "sampling seed (sample i of a judge call uses seed+i; the --limit sample)").As(setting.Draw),
		setting.Float("temperature", &c.Temperature, "generation temperature of the models under test").Min(0).Assumed(lost),
		setting.Int("max-tokens", &c.MaxTokens, "generation cap (num_predict)").Min(1).Assumed("the paper states no generation cap"),
		setting.Choice("weights", &c.Weights, "constraint weights: default (3/2/1), uniform, steep (5/2/1), flat (2/1.5/1), inverted (1/2/3)", PresetOrder...).Paper("default"),
		setting.Int("map-samples", &c.MapSamples, "constraint mappings per query; the majority set is kept").Paper("1").Min(1),
		setting.Float("map-temperature", &c.MapTemperature, "mapping temperature when --map-samples > 1").Min(0).
			Assumed("the paper runs the mapping once").When(func() bool { return c.MapSamples > 1 }),
		setting.Int("baseline-samples", &c.BaselineSamples, "self-consistency samples of the 1–10 baseline (0: no baseline)").Min(0).
			Assumed("§6 uses self-consistency without a sample count").When(func() bool { return c.BaselineSamples > 0 }),
		setting.Float("baseline-temperature", &c.BaselineTemperature, "baseline sampling temperature").Min(0).
			Assumed(lost).When(func() bool { return c.BaselineSamples > 0 }),
		setting.Int("fact-samples", &c.FactSamples, "independent fact checks of Fact QA responses (0: none)").Paper("5").Min(0),
		setting.Float("fact-temperature", &c.FactTemperature, "fact-check sampling temperature").Min(0).
			Assumed(lost).When(func() bool { return c.FactSamples > 0 }),
		judging.FormatSetting(&c.JudgeFormat, "text (the paper: Tables 6 and 7, reasoning then a START: listing of X/Y ratios) or json (one structured verdict per constraint)").Paper("text").Halu("json"),
		setting.Int("judge-max-tokens", &c.JudgeMaxTokens, "judge reply cap").Min(1).Assumed("the paper states no judge cap"),
		setting.Choice("too-long", &c.TooLong, "a query a model's context cannot hold whole (with the reply's cap): refuse (the paper: every query whole; the run stops before its first call) or skip (those items are left out, unscored and counted)", "refuse", "skip").Paper("refuse"),
		setting.Bool("code-checks", &c.CodeChecks, "let code decide countable constraints (word/line/stanza counts, required or forbidden words); the paper's judge decides all").Paper("false").Halu("true"),
		setting.Protocol(&c.Protocol, "JSON judges, code checks"),
	}
}

// MarshalJSON encodes the config by its settings.
func (c Config) MarshalJSON() ([]byte, error) { return c.Settings().MarshalJSON() }

// UnmarshalJSON reads a config MarshalJSON wrote.
func (c *Config) UnmarshalJSON(b []byte) error { return c.Settings().UnmarshalJSON(b) }

// DefaultConfig is the paper's protocol.
func DefaultConfig() Config {
	return Config{Protocol: setting.ProtocolPaper, Seed: 1, Temperature: 0, MaxTokens: 512, Weights: "default", MapSamples: 1, MapTemperature: 0.7,
		BaselineSamples: 5, BaselineTemperature: 0.7, FactSamples: 5, FactTemperature: 0.7,
		JudgeFormat: "text", JudgeMaxTokens: 1024, CodeChecks: false, Sample: "stratified", TooLong: "refuse"}
}

// paper is the publication the suite implements (engine.Suite.Paper).
const paper = "Hao, Yu and You, \"Beyond Facts: Evaluating Intent Hallucination in Large Language Models\" (FaithQA, Constraint Score); the authors' code is not available offline: the paper's text alone"

// suiteName is the suite's name: its declaration's and its Task's.
const suiteName = "intent"

// Declaration declares the suite to the registry.
var Declaration = engine.Declare(suiteName, "FaithQA: intent hallucination (omission, misinterpretation) scored by the Constraint Score, beside a 1–10 judge baseline",
	DefaultConfig, New, migrate)

// migrate brings a config of run format 1 up to date: the judge was
// "judge", and a run recorded before protocols (or the sample setting)
// existed reads as the paper's protocol taking the first N items.
func migrate(format int, cfg map[string]json.RawMessage) error {
	if format < 2 {
		engine.Rename(cfg, "judge", "judges")
		engine.DefaultTo(cfg, "protocol", `"paper"`)
		engine.DefaultTo(cfg, "sample", `"first"`)
	}
	return nil
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
	// tooLong are the items (by ID) whose prompts a model's context cannot
	// hold, with why, under --too-long skip (set by Window before the
	// first item, read-only after).
	tooLong map[string]string
}

// New checks cfg and loads the items.
func New(cfg Config) (*Suite, error) {
	if err := cfg.Settings().Validate(); err != nil {
		return nil, fmt.Errorf("intent: %w", err)
	}
	w := WeightPresets[cfg.Weights]
	all, err := LoadInputs(cfg.Data)
	if err != nil {
		return nil, err
	}
	keep := map[string]bool{}
	for _, t := range cfg.Tasks {
		keep[t] = true
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
			items = engine.StratifiedSample(items, cfg.Limit, cfg.Seed, func(in Input) string { return in.Difficulty })
		}
		ins = append(ins, items...)
	}
	if len(ins) == 0 {
		return nil, errors.New("intent: no item left after --tasks/--limit")
	}
	return &Suite{cfg: cfg, inputs: ins, weights: w}, nil
}

// Task is FaithQA's intent hallucination as the engine runs it: every part it has.
func (s *Suite) Task() engine.Suite {
	return engine.Suite{
		Name:            suiteName,
		Paper:           paper,
		Models:          s.Models,
		Items:           s.Items,
		Process:         s.Process,
		Summarize:       s.Summarize,
		Prompts:         s.Prompts,
		Datasets:        s.Datasets,
		Departures:      s.MethodDepartures,
		DepartureScopes: s.MethodScopes,
		Sample:          s.Sample,
		Window:          s.Window,
		MetricNames:     s.MetricNames,
		Flag:            s.Flag,
		Outcomes:        s.Outcomes,
	}
}

// MetricNames are the last parts of the summary's keys (engine.Suite.MetricNames):
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
func (s *Suite) Prompts() map[string]rundir.PromptInfo {
	out := map[string]rundir.PromptInfo{}
	for n, src := range promptSources {
		t := prompt(n)
		out[n] = rundir.PromptInfo{Source: src, Text: t}
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
func (s *Suite) Items(context.Context) ([]engine.Item, error) {
	var items []engine.Item
	for _, m := range s.cfg.Models {
		for _, in := range s.inputs {
			items = append(items, engine.Item{ID: m + "/" + in.ID, Payload: payload{m, in}, Group: m})
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
	// TooLong marks an item left out under --too-long skip (no call made):
	// counted from this field, never from the reason's words.
	TooLong bool `json:"too_long,omitempty"`
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

func (s *Suite) schema(v string) json.RawMessage { return judging.Schema(s.cfg.JudgeFormat, v) }

func (s *Suite) Process(ctx context.Context, c *engine.Calls, it engine.Item) (any, error) {
	p := it.Payload.(payload)
	in := p.in
	res := ItemResult{Model: p.model, ID: in.ID, Task: in.Task, Difficulty: in.Difficulty, Topic: in.Topic,
		Missing: in.MissingPart(), HumanScore: in.HumanScore}
	if why, ok := s.tooLong[it.ID]; ok {
		res.Unscorable, res.TooLong = why, true // --too-long skip: no call is made
		return res, nil
	}
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
		req := s.judgeReq(engine.Fill(prompt("constraint_mapping"), map[string]string{"query": mapped}), temp, s.cfg.Seed+i)
		m, ok, err := judging.JudgeWith(ctx, c, "decompose", req, s.schema(mappingSchema), MappingReader(false))
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
		req := s.judgeReq(engine.Fill(prompt("missing_content_check"), map[string]string{
			"missing": in.MissingPart(), "task": task, "response": res.Response}), 0, s.cfg.Seed)
		v, ok, err := judging.JudgeWith(ctx, c, "judge", req, s.schema(missingSchema), subjectOf(MissingReader(res.Response), res.Model))
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
func (s *Suite) score(ctx context.Context, c *engine.Calls, res *ItemResult, in Input) error {
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
	req := s.judgeReq(engine.Fill(prompt("constraint_scoring"), map[string]string{
		"query": in.Prompt(), "constraints": ListConstraints(cs), "response": res.Response}), 0, s.cfg.Seed)
	if s.cfg.JudgeFormat == judging.FormatText {
		// Table 7's format: a ratio per priority; structured output asks
		// for a verdict per constraint instead.
		r, ok, err := judging.JudgeWith(ctx, c, "judge", req, nil, RatiosReader(cs, res.Response))
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
	sat, ok, err := judging.JudgeWith(ctx, c, "judge", req, json.RawMessage(scoreSchema(len(cs))), ScoreReader(len(cs), res.Response))
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
func (s *Suite) baseline(ctx context.Context, c *engine.Calls, res *ItemResult, task string) error {
	if s.cfg.BaselineSamples == 0 {
		return nil
	}
	content := prompt("judge_baseline") + "\n" + engine.Fill(prompt("baseline_scale"), map[string]string{"query": task, "response": res.Response})
	for i := 0; i < s.cfg.BaselineSamples; i++ {
		req := s.judgeReq(content, s.cfg.BaselineTemperature, s.cfg.Seed+i)
		v, ok, err := judging.JudgeWith(ctx, c, "baseline", req, s.schema(baselineSchema), subjectOf(BaselineReader(res.Response), res.Model))
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
func (s *Suite) factCheck(ctx context.Context, c *engine.Calls, res *ItemResult, task string) error {
	if s.cfg.FactSamples == 0 {
		return nil
	}
	content := engine.Fill(prompt("fact_check"), map[string]string{"query": task, "response": res.Response})
	for i := 0; i < s.cfg.FactSamples; i++ {
		req := s.judgeReq(content, s.cfg.FactTemperature, s.cfg.Seed+i)
		v, ok, err := judging.JudgeWith(ctx, c, "factcheck", req, s.schema(factSchema), subjectOf(FactReader(res.Response), res.Model))
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

// The readers of the suite's judge replies, each used by a run and by the
// reply corpus (runner/judging's TestReplyCorpus): one reading path.

// MissingReader reads a missing-content check of response.
func MissingReader(response string) judging.Reader[MissingVerdict] {
	return judging.Reader[MissingVerdict]{Text: ParseMissingText, Quoted: []string{response}, Check: true, Schema: json.RawMessage(missingSchema)}
}

// BaselineReader reads a zero-shot 1–10 rating of response.
func BaselineReader(response string) judging.Reader[BaselineVerdict] {
	return judging.Reader[BaselineVerdict]{Text: ParseBaselineText, Quoted: []string{response}, Check: true, Schema: json.RawMessage(baselineSchema)}
}

// FactReader reads a fact check of response.
func FactReader(response string) judging.Reader[FactVerdict] {
	return judging.Reader[FactVerdict]{Text: ParseFactText, Quoted: []string{response}, Check: true, Schema: json.RawMessage(factSchema)}
}

// MappingReader reads a constraint mapping; clarify: content was withheld.
func MappingReader(clarify bool) judging.Reader[Mapping] {
	return judging.Reader[Mapping]{
		Text: func(raw string) (Mapping, error) { return ParseMapping(raw, clarify) },
		JSON: func(raw string) (Mapping, error) { return ParseMappingJSON(raw, clarify) },
	}
}

// RatiosReader reads Table 7's ratios per priority for constraints cs.
func RatiosReader(cs []Constraint, response string) judging.Reader[Ratios] {
	return judging.Reader[Ratios]{Text: func(raw string) (Ratios, error) { return ParseRatios(raw, cs) }, Quoted: []string{response}}
}

// ScoreReader reads a verdict per constraint (n of them).
func ScoreReader(n int, response string) judging.Reader[[]bool] {
	return judging.Reader[[]bool]{
		JSON: func(raw string) ([]bool, error) {
			var v ScoreVerdicts
			if err := judging.DecodeJSON(raw, &v); err != nil {
				return nil, err
			}
			return v.Satisfied(n)
		},
		Text:   func(raw string) ([]bool, error) { return ParseScoreText(raw, n) },
		Quoted: []string{response},
	}
}

// subjectOf is r judging model's text (the judge card's self-preference).
func subjectOf[T any](r judging.Reader[T], model string) judging.Reader[T] {
	r.Subject = model
	return r
}
