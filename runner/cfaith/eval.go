package cfaith

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"halu/localmodels"
	"halu/metrics"
	"halu/runner/engine"
	"halu/runner/judging"
	"halu/runner/rundir"
	"halu/runner/setting"
	"halu/runner/summary"
)

// Formats are the three QA formats (§3.3).
var Formats = []string{"generative", "choice", "truefalse"}

// Config is the evaluation's settings (declared in Settings).
type Config struct {
	Data    string
	Models  []string
	Judge   string
	Formats []string
	// Limit draws N items of each format (0: all): a seeded sample that
	// keeps each hallucination type's share (Sample "stratified") or the
	// file's first N (Sample "first", run format 2's only way).
	Limit  int
	Sample string
	// Protocol is "paper" (the paper's decoding) or "halu".
	Protocol string
	// Temperature and TopP are the paper's decoding settings (1, 0.7).
	Temperature    float64
	TopP           float64
	MaxTokens      int
	Seed           int
	JudgeFormat    string
	JudgeMaxTokens int
	// AnswerFormat is how single-choice and true/false answers are asked
	// for: "free" (the paper's prompts and a free reply, read for its
	// letter or verdict) or "labels" (structured output holds the reply to
	// {"answer": LABEL}).
	AnswerFormat string
}

// Settings declares the evaluation's settings.
func (c *Config) Settings() setting.List {
	return setting.List{
		setting.String("data", &c.Data, "dataset directory (halu build cfaith --out)").As(setting.Data).Path().Required(),
		setting.Strings("models", &c.Models, "models under test").As(setting.Subject).Models().Required(),
		setting.String("judges", &c.Judge, "judge of generative answers (conflict with the correct answer); one model").
			As(setting.Instrument).Models().Deprecated("judge").Check(func() error {
			if strings.Contains(c.Judge, ",") {
				return errors.New("this suite takes one judge (the paper's setting); run once per judge and compare")
			}
			return nil
		}),
		setting.Choices("formats", &c.Formats, "formats: generative, choice, truefalse", Formats...).As(setting.Subject).Required(),
		setting.Int("limit", &c.Limit, "items per format (0: all, the paper's)").As(setting.Data).Paper("0").Min(0),
		setting.Choice("sample", &c.Sample, "how --limit draws: stratified (seeded, each hallucination type keeps its share) or first (the files' first items)", "stratified", "first").As(setting.Data),
		setting.Float("temperature", &c.Temperature, "decoding temperature (the paper: 1)").Paper("1").Min(0),
		setting.Float("top-p", &c.TopP, "decoding top_p (the paper: 0.7)").Paper("0.7").Min(0),
		setting.Int("max-tokens", &c.MaxTokens, "answer cap (num_predict)").Min(1).Assumed("the paper states no answer cap"),
		setting.Int("seed", &c.Seed, "sampling seed (answers, and the --limit sample)").As(setting.Draw),
		judging.FormatSetting(&c.JudgeFormat, "json (structured output) or text; the generative judge's prompt is halu's (the authors published none)"),
		setting.Int("judge-max-tokens", &c.JudgeMaxTokens, "judge reply cap").Min(1),
		setting.Choice("answer-format", &c.AnswerFormat, "single-choice and true/false answers: free (the paper: its prompt and a free reply, read for its letter or verdict) or labels (structured output holds the reply to {\"answer\": LABEL}, LABEL one of the item's letters, or true/false: every reply states one and none reasons; for models that do not follow the prompt's format)", "free", "labels").
			Paper("free").When(func() bool { return slices.Contains(c.Formats, "choice") || slices.Contains(c.Formats, "truefalse") }),
		setting.Protocol(&c.Protocol, "the same decoding; halu's additions are the judge and its format"),
	}
}

// MarshalJSON encodes the config by its settings.
func (c Config) MarshalJSON() ([]byte, error) { return c.Settings().MarshalJSON() }

// UnmarshalJSON reads a config MarshalJSON wrote.
func (c *Config) UnmarshalJSON(b []byte) error { return c.Settings().UnmarshalJSON(b) }

// DefaultConfig has the paper's decoding settings.
func DefaultConfig() Config {
	return Config{Formats: Formats, Temperature: 1, TopP: 0.7, MaxTokens: 256, Seed: 1, JudgeFormat: "json", JudgeMaxTokens: 200,
		Sample: "stratified", Protocol: setting.ProtocolPaper, AnswerFormat: "free"}
}

// paper is the publication the suite implements (engine.Suite.Paper).
const paper = "\"C-FAITH: A Chinese Fine-Grained Benchmark for Automated Hallucination Evaluation\" (HaluAgent; anonymous ACL submission); the authors' code: github.com/pkulcwmzx/C-FAITH"

// suiteName is the suite's name: its declaration's and its Task's.
const suiteName = "cfaith"

// Declaration declares the evaluation to the registry.
var Declaration = engine.Declare(suiteName, "C-FAITH: hallucination rates on a HaluAgent-built dataset (generative, single-choice, true/false; per type)",
	DefaultConfig, New, migrate)

// migrate brings a config of run format 1 up to date: the judge was
// "judge".
func migrate(format int, cfg map[string]json.RawMessage) error {
	if format < 2 {
		engine.Rename(cfg, "judge", "judges")
	}
	if format < 3 {
		// Format 2 took the first items and had no protocol.
		engine.DefaultTo(cfg, "sample", `"first"`)
	}
	return nil
}

// Suite evaluates models on a built dataset.
type Suite struct {
	cfg  Config
	ds   Dataset
	info DatasetInfo
}

// New checks cfg and reads the dataset.
func New(cfg Config) (*Suite, error) {
	if err := cfg.Settings().Validate(); err != nil {
		return nil, fmt.Errorf("cfaith: %w", err)
	}
	for _, f := range cfg.Formats {
		if f == "generative" && cfg.Judge == "" {
			return nil, errors.New("cfaith: the generative format needs --judges (one judge model)")
		}
	}
	ds, info, err := ReadDataset(cfg.Data)
	if err != nil {
		return nil, err
	}
	return &Suite{cfg: cfg, ds: ds, info: info}, nil
}

// Task is C-FAITH as the engine runs it: every part it has.
func (s *Suite) Task() engine.Suite {
	return engine.Suite{
		Name:        suiteName,
		Paper:       paper,
		Models:      s.Models,
		Items:       s.Items,
		Process:     s.Process,
		Summarize:   s.Summarize,
		Prompts:     s.Prompts,
		Datasets:    s.Datasets,
		Departures:  s.MethodDepartures,
		Sample:      s.Sample,
		MetricNames: s.MetricNames,
		Flag:        s.Flag,
		Outcomes:    s.Outcomes,
	}
}

// MetricNames are the last parts of the summary's keys (engine.Suite.MetricNames):
// MODEL/FORMAT, MODEL/overall and MODEL/truefalse/{fn,fp}_rate.
func (s *Suite) MetricNames() []string {
	return append(append([]string(nil), Formats...), "overall", "fn_rate", "fp_rate")
}

func (s *Suite) Models() []string {
	m := append([]string(nil), s.cfg.Models...)
	if s.cfg.Judge != "" {
		m = append(m, s.cfg.Judge)
	}
	return m
}

func (s *Suite) Prompts() map[string]rundir.PromptInfo {
	out := map[string]rundir.PromptInfo{}
	for _, n := range []string{"eval_single_choice", "eval_true_false", "judge_generative"} {
		t := tmpl(s.info.Lang, n)
		src := "halu"
		if n == "eval_single_choice" {
			src = "github.com/pkulcwmzx/C-FAITH single_choice_qa.jsonl template"
		}
		out[s.info.Lang+"/"+n] = rundir.PromptInfo{Source: src, Text: t}
	}
	return out
}

func (s *Suite) Datasets() []string {
	var out []string
	for _, f := range []string{infoFile, genFile, choiceFile, tfFile} {
		p := filepath.Join(s.cfg.Data, f)
		if _, err := os.Stat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}

type evalPayload struct {
	model, format string
	gen           *GenItem
	choice        *ChoiceItem
	tf            *TFItem
}

// draw is the --limit sample of one format's items: every item with no
// limit, the first n (--sample first), or a seeded sample keeping each
// hallucination type's share.
func draw[T any](xs []T, cfg Config, typeOf func(T) string) []T {
	switch {
	case cfg.Limit <= 0 || len(xs) <= cfg.Limit:
		return xs
	case cfg.Sample == "first":
		return xs[:cfg.Limit]
	}
	return engine.StratifiedSample(xs, cfg.Limit, cfg.Seed, typeOf)
}

// Sample lists the drawn items of a run on a sample (--limit).
func (s *Suite) Sample() []string {
	if s.cfg.Limit <= 0 {
		return nil
	}
	var out []string
	for _, it := range draw(s.ds.Generative, s.cfg, func(g GenItem) string { return g.HaluType }) {
		out = append(out, "gen/"+it.ID)
	}
	for _, it := range draw(s.ds.Choice, s.cfg, func(c ChoiceItem) string { return c.HaluType }) {
		out = append(out, "choice/"+it.ID)
	}
	for _, it := range draw(s.ds.TrueFalse, s.cfg, func(t TFItem) string { return t.HaluType }) {
		out = append(out, "tf/"+it.ID)
	}
	return out
}

func (s *Suite) Items(context.Context) ([]engine.Item, error) {
	var items []engine.Item
	for _, m := range s.cfg.Models {
		for _, f := range s.cfg.Formats {
			switch f {
			case "generative":
				for _, it := range draw(s.ds.Generative, s.cfg, func(g GenItem) string { return g.HaluType }) {
					it := it
					items = append(items, engine.Item{ID: m + "/gen/" + it.ID, Payload: evalPayload{model: m, format: f, gen: &it}, Group: m})
				}
			case "choice":
				for _, it := range draw(s.ds.Choice, s.cfg, func(c ChoiceItem) string { return c.HaluType }) {
					it := it
					items = append(items, engine.Item{ID: m + "/choice/" + it.ID, Payload: evalPayload{model: m, format: f, choice: &it}, Group: m})
				}
			case "truefalse":
				for _, it := range draw(s.ds.TrueFalse, s.cfg, func(t TFItem) string { return t.HaluType }) {
					it := it
					items = append(items, engine.Item{ID: m + "/tf/" + it.ID, Payload: evalPayload{model: m, format: f, tf: &it}, Group: m})
				}
			}
		}
	}
	if len(items) == 0 {
		return nil, errors.New("cfaith: the dataset has no item in the chosen formats")
	}
	return items, nil
}

// Answer is one model answer, scored.
type Answer struct {
	Model    string `json:"model"`
	Format   string `json:"format"`
	ID       string `json:"id"`
	HaluType string `json:"halu_type"`
	Response string `json:"response"`
	// Scored is false when the answer could not be read (no option letter,
	// no true/false word) or the judge's reply never parsed.
	Scored       bool   `json:"scored"`
	Hallucinated bool   `json:"hallucinated"`
	Statement    *bool  `json:"statement_true,omitempty"` // true/false items
	JudgedTrue   *bool  `json:"judged_true,omitempty"`
	Choice       string `json:"choice,omitempty"`
}

func (s *Suite) Process(ctx context.Context, c *engine.Calls, it engine.Item) (any, error) {
	p := it.Payload.(evalPayload)
	lang := s.info.Lang
	ask := func(content string, format json.RawMessage) (string, error) {
		r, err := c.Chat(ctx, "generate", localmodels.ChatRequest{Model: p.model,
			Messages: []localmodels.Message{{Role: "user", Content: content}},
			Options: localmodels.Options{Temperature: localmodels.Float(s.cfg.Temperature), TopP: localmodels.Float(s.cfg.TopP),
				Seed: localmodels.Int(s.cfg.Seed), NumPredict: localmodels.Int(s.cfg.MaxTokens)},
			Format: format}, 0)
		return r.Content, err
	}
	labels := s.cfg.AnswerFormat == "labels"
	a := Answer{Model: p.model, Format: p.format}
	var err error
	switch p.format {
	case "generative":
		a.ID, a.HaluType = p.gen.ID, p.gen.HaluType
		if a.Response, err = ask(p.gen.Question, nil); err != nil {
			return nil, err
		}
		req := localmodels.ChatRequest{Model: s.cfg.Judge,
			Messages: []localmodels.Message{{Role: "user", Content: JudgePrompt(lang, p.gen.Question, p.gen.CorrectAnswer, a.Response)}},
			Options:  localmodels.Options{Temperature: localmodels.Float(0), Seed: localmodels.Int(s.cfg.Seed), NumPredict: localmodels.Int(s.cfg.JudgeMaxTokens)}}
		v, ok, err := judging.JudgeWith(ctx, c, "judge", req, judging.Schema(s.cfg.JudgeFormat, conflictSchema), func() judging.Reader[Conflict] {
			r := ConflictReader(lang, a.Response)
			r.Subject = p.model
			return r
		}())
		if err != nil {
			return nil, err
		}
		a.Scored, a.Hallucinated = ok, ok && v.Conflict
	case "choice":
		a.ID, a.HaluType = p.choice.ID, p.choice.HaluType
		prompt := p.choice.Prompt
		if prompt == "" {
			prompt = SingleChoicePrompt(lang, p.choice.Question, p.choice.Options)
		}
		var format json.RawMessage
		if labels {
			format = AnswerSchema(ChoiceLetters)
		}
		if a.Response, err = ask(prompt, format); err != nil {
			return nil, err
		}
		read := ParseChoice
		if labels {
			read = func(r string) (string, bool) { return ParseAnswerLabel(r, ChoiceLetters) }
		}
		letter, ok := read(a.Response)
		a.Choice, a.Scored, a.Hallucinated = letter, ok, ok && letter != p.choice.CorrectOption
	case "truefalse":
		a.ID, a.HaluType = p.tf.ID, p.tf.HaluType
		var format json.RawMessage
		if labels {
			format = AnswerSchema(TrueFalseLabels)
		}
		if a.Response, err = ask(TrueFalsePrompt(lang, p.tf.Question, p.tf.Statement), format); err != nil {
			return nil, err
		}
		read := ParseTrueFalse
		if labels {
			read = func(r string) (bool, bool) {
				l, ok := ParseAnswerLabel(r, TrueFalseLabels)
				return l == "true", ok
			}
		}
		jt, ok := read(a.Response)
		st := p.tf.True
		a.Statement, a.Scored = &st, ok
		if ok {
			a.JudgedTrue, a.Hallucinated = &jt, jt != st
		}
	}
	return a, nil
}

// formatMetric names each question format's hallucination rate as the
// leaderboard's columns show it.
var formatMetric = map[string]string{"generative": "HR generative", "choice": "HR choice", "truefalse": "HR true/false"}

// table6Row is a model's Table 6 row: its generative hallucination rate,
// then the rate per hallucination type ("–" for a type it was not asked).
func table6Row(m string, gen summary.Tally, byType map[string]*summary.Tally) []string {
	row := []string{m, fmt.Sprintf("%.2f", 100*metrics.HallucinationRate(gen.Hits(), gen.N()))}
	for _, t := range Types {
		if byType[t].N() == 0 {
			row = append(row, "–")
		} else {
			row = append(row, fmt.Sprintf("%.2f (n=%d)", 100*metrics.HallucinationRate(byType[t].Hits(), byType[t].N()), byType[t].N()))
		}
	}
	return row
}

// trueFalseRow is a model's Figure 5 row: the share of hallucinated
// statements it accepted (false negatives) and of correct ones it rejected
// (false positives); a rate over no statement of its kind is "–", never 0.
func trueFalseRow(sum *summary.Summary, m string, statements, judged []bool) []string {
	e := metrics.TrueFalseErrorRates(statements, judged)
	fn, fp := "–", "–"
	if e.Hallucinated > 0 {
		fn = fmt.Sprintf("%.2f", 100*e.FalseNegativeRate)
		sum.Metrics[m+"/truefalse/fn_rate"] = e.FalseNegativeRate
	}
	if e.Correct > 0 {
		fp = fmt.Sprintf("%.2f", 100*e.FalsePositiveRate)
		sum.Metrics[m+"/truefalse/fp_rate"] = e.FalsePositiveRate
	}
	return []string{m, fn, fp, fmt.Sprint(e.Hallucinated), fmt.Sprint(e.Correct)}
}

// Summarize gives Table 5 (rate per format and overall), Table 6
// (generative rate per hallucination type) and Figure 5 (true/false false
// negatives and positives).
func (s *Suite) Summarize(rs *rundir.Records) (*summary.Summary, error) {
	recs, err := rs.Sorted()
	if err != nil {
		return nil, err
	}
	by := map[string][]Answer{}
	var models []string
	decoded, err := rundir.DecodeRecords[Answer](recs)
	if err != nil {
		return nil, err
	}
	for _, a := range decoded {
		if _, ok := by[a.Model]; !ok {
			models = append(models, a.Model)
		}
		by[a.Model] = append(by[a.Model], a)
	}
	sort.Strings(models)
	sum := &summary.Summary{Suite: "cfaith", Metrics: map[string]float64{}, Glossary: []summary.Term{
		{Abbr: "HR", Meaning: "hallucination rate: the share of scored answers that are wrong (generative: the judge finds a conflict with the correct answer)"},
		{Abbr: "Gen., Choice., True/False., Ova.", Meaning: "the generative, single-choice and true/false formats, and their mean"},
		{Abbr: "FN, FP", Meaning: "true/false errors: a hallucinated statement accepted, a correct one rejected"},
		{Abbr: "EntErr, …", Meaning: "C-FAITH's six hallucination types, each a kind of error written into a response"},
	}}
	t5 := summary.Table{Title: "C-FAITH Table 5 — hallucination rate (%) per format; overall = mean of the three",
		Columns: []string{"model", "Gen.", "Choice.", "True/False.", "Ova.", "unscored answers (answer or judge reply not read)"}}
	t6 := summary.Table{Title: "C-FAITH Table 6 — generative QA hallucination rate (%) per hallucination type",
		Columns: append([]string{"model", "Overall"}, Types...)}
	f5 := summary.Table{Title: "C-FAITH Figure 5 — true/false errors: false negative (hallucinated statement accepted) and false positive (correct statement rejected) rates (%)",
		Columns: []string{"model", "FN rate", "FP rate", "hallucinated statements", "correct statements"}}
	rateBars := summary.Chart{Kind: "bars", Title: "Hallucination rate per format (95% Wilson CI)", Y: "hallucination rate", Groups: Formats}
	typeBars := summary.Chart{Kind: "bars", Title: "Generative QA hallucination rate per hallucination type (95% Wilson CI)", Y: "hallucination rate", Groups: Types}
	for _, m := range models {
		byFormat, byType, st, jt := tallies(by[m])
		unscored := 0
		for _, tf := range byFormat {
			unscored += tf.Unscored
		}
		rs, ts := summary.Series{Name: m}, summary.Series{Name: m}
		for _, f := range Formats {
			rs.AddProportion(byFormat[f].Hits(), byFormat[f].N())
		}
		for _, t := range Types {
			ts.AddProportion(byType[t].Hits(), byType[t].N())
		}
		rateBars.Series = append(rateBars.Series, rs)
		typeBars.Series = append(typeBars.Series, ts)
		row := []string{m}
		var rates []float64
		scored := 0
		for _, f := range Formats {
			tf := byFormat[f]
			fig := tf.Share(m, "", formatMetric[f], m+"/"+f)
			fig.Lower, fig.Headline = true, true
			sum.AddFigure(fig)
			scored += tf.N()
			if tf.N() == 0 {
				row = append(row, "–")
				continue
			}
			r := metrics.HallucinationRate(tf.Hits(), tf.N())
			rates = append(rates, r)
			row = append(row, fmt.Sprintf("%.2f (n=%d)", 100*r, tf.N()))
		}
		ova := "–"
		overall := summary.IntervalFigure(m, "", "Overall HR", m+"/overall",
			metrics.Interval{Estimate: math.NaN(), Low: math.NaN(), High: math.NaN()}, unscored, "")
		if len(rates) == 3 {
			o := metrics.OverallHallucinationRate(rates[0], rates[1], rates[2])
			overall.Estimate, overall.N = summary.Num(o), scored
			ova = fmt.Sprintf("%.2f", 100*o)
		}
		overall.Percent, overall.Lower, overall.Headline = true, true, true
		sum.AddFigure(overall)
		t5.Rows = append(t5.Rows, append(row, ova, fmt.Sprint(unscored)))
		if g := byFormat["generative"]; g.N() > 0 {
			t6.Rows = append(t6.Rows, table6Row(m, *g, byType))
		}
		if len(st) > 0 {
			f5.Rows = append(f5.Rows, trueFalseRow(sum, m, st, jt))
		}
	}
	if len(f5.Rows) == 0 {
		f5.Empty = "no true/false answer of the run was scored (its data holds none, or none was read)"
	}
	sum.Tables = append(sum.Tables, t5, t6, f5)
	sum.Charts = append(sum.Charts, rateBars, typeBars)
	sum.AddConfidence("C-FAITH's truth (choice and true/false: the item's gold answer; generative: the judge's conflict verdict, judge-made truth) — the answer's own token scores (--logprobs)", confidenceGroups(models, decoded, recs))
	sum.Notes = append(sum.Notes,
		"unscored: a choice reply with no A–D letter, a true/false reply with neither word, or a judge reply that never parsed; excluded from the rates",
		fmt.Sprintf("dataset %s: language %s, built by %s, verified by %s", s.cfg.Data, s.info.Lang, s.info.Agent, s.info.Verifier))
	if s.info.Agent == releasedSource {
		sum.Notes = append(sum.Notes, "released C-FAITH layout: generative items from generative_qa.jsonl (reason read as evidence, ent as the document); "+
			"single-choice prompts sent as the file gives them; true/false items derived from each generative record (correct_answer true, halu_answer false), as §3.3 builds them — the release has no true/false file")
	}
	return sum, nil
}

// tallies are the units of each format's rate and of each type's
// generative rate among answers (an answer, scored or not), and the true/
// false answers' statements (true: correct) beside what was judged of them.
func tallies(answers []Answer) (byFormat, byType map[string]*summary.Tally, st, jt []bool) {
	byFormat, byType = map[string]*summary.Tally{}, map[string]*summary.Tally{}
	for _, f := range Formats {
		byFormat[f] = &summary.Tally{}
	}
	for _, t := range Types {
		byType[t] = &summary.Tally{}
	}
	for _, a := range answers {
		if byFormat[a.Format] == nil {
			byFormat[a.Format] = &summary.Tally{}
		}
		if !a.Scored {
			byFormat[a.Format].Skip()
			continue
		}
		byFormat[a.Format].Hit(a.Hallucinated)
		if a.Format == "generative" {
			if byType[a.HaluType] == nil {
				byType[a.HaluType] = &summary.Tally{}
			}
			byType[a.HaluType].Hit(a.Hallucinated)
		}
		if a.Format == "truefalse" && a.JudgedTrue != nil {
			st, jt = append(st, *a.Statement), append(jt, *a.JudgedTrue)
		}
	}
	return byFormat, byType, st, jt
}

// confidenceGroups are the scored answers per model and format, each
// right where it is not hallucinated, with the token scores of the call
// that made it (the last "generate" call of its model in its record: nil
// where --logprobs was not asked, or the reply was held to a schema).
func confidenceGroups(models []string, decoded []Answer, recs []rundir.Record) []summary.ConfidenceGroup {
	units := map[[2]string][]summary.ConfidenceUnit{}
	for i, a := range decoded {
		if !a.Scored {
			continue
		}
		k := [2]string{a.Model, a.Format}
		units[k] = append(units[k], summary.ConfidenceUnit{Correct: !a.Hallucinated, Scores: summary.ReplyScores(recs[i].Calls, "generate", a.Model)})
	}
	var out []summary.ConfidenceGroup
	for _, m := range models {
		for _, f := range Formats {
			if us := units[[2]string{m, f}]; len(us) > 0 {
				out = append(out, summary.ConfidenceGroup{Model: m, Setting: f, Units: us})
			}
		}
	}
	return out
}

// Flag marks a record for the sample browser: an answer scored as
// hallucinated, one that could not be read.
func (s *Suite) Flag(rec rundir.Record) (summary.Flags, error) {
	a, err := rundir.Decode[Answer](rec)
	return summary.Flags{Hallucinated: a.Scored && a.Hallucinated, Unscored: !a.Scored}, err
}

// MethodDepartures are where the C-FAITH evaluation is not the paper's
// whatever the settings (engine.Suite.Departures).
func (s *Suite) MethodDepartures() []string {
	return []string{"the generative judge's prompt and the true/false prompt are halu's: the authors published neither"}
}

// ChoiceLetters and TrueFalseLabels are the labels --answer-format labels
// holds single-choice and true/false replies to.
var (
	ChoiceLetters   = []string{"A", "B", "C", "D"}
	TrueFalseLabels = []string{"true", "false"}
)

// AnswerSchema is the structured output of --answer-format labels: an
// object whose one field "answer" is one of labels.
func AnswerSchema(labels []string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{
		"type":       "object",
		"properties": map[string]any{"answer": map[string]any{"type": "string", "enum": labels}},
		"required":   []string{"answer"},
	})
	return b
}

// ParseAnswerLabel reads a reply held to AnswerSchema: its answer, one of
// labels, read by the judges' JSON reader (judging.DecodeJSON: fences and
// reasoning around the object tolerated, two different objects or a field
// stated twice refused). ok is false — never a guess — for a reply with no
// such object (cut at the token cap before it closed, or prose from a
// server that ignored the schema) or an answer not among labels.
func ParseAnswerLabel(reply string, labels []string) (string, bool) {
	var v struct {
		Answer string `json:"answer"`
	}
	if err := judging.DecodeJSON(reply, &v); err != nil || !slices.Contains(labels, v.Answer) {
		return "", false
	}
	return v.Answer, true
}
