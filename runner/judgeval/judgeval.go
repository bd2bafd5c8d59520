// Package judgeval measures judges against people's labels, offline: each
// judge is asked, with the very prompt and reading a suite's run uses,
// about responses people labelled hallucinated or not, and the run reports
// per judge its accuracy, Cohen's κ, the rates at which it calls the
// labelled-hallucinated and the labelled-faithful responses hallucinated
// (TPR, FPR), the share it gave no verdict on — each with its 95%
// interval and the count it rests on — and the same for the panel's
// majority. `halu judges validate` runs it; its runs are runs like any
// other (cached, resumable, reported).
//
// The prompt is HIC-Bench's judge (question + answer → "Hallucination:
// Yes/No", hicjudge.Judge): the response-level hallucination flag. Sets: the
// shipped HaluEval general set (MIT), a FELM file from the user's path
// (CC BY-NC-SA; read at response level), or a user's own labelled JSONL.
package judgeval

import (
	"context"
	"fmt"
	"math"
	"strings"

	"halu/metrics"
	"halu/runner/engine"
	"halu/runner/hic/hicjudge"
	"halu/runner/judging"
	"halu/runner/rundir"
	"halu/runner/setting"
	"halu/runner/summary"
)

// Config is the suite's settings (declared in Settings).
type Config struct {
	Judges         []string
	Set            string
	Limit          int
	Seed           int
	JudgeFormat    string
	JudgeMaxTokens int
}

// Settings declares the suite's settings.
func (c *Config) Settings() setting.List {
	return setting.List{
		setting.Strings("judges", &c.Judges, "judge models to validate").As(setting.Instrument).Models().Required(),
		setting.String("set", &c.Set, "labelled set: halueval (shipped) or a JSONL file (HaluEval, FELM, or {id, question, response, hallucinated})").As(setting.Data),
		setting.Int("limit", &c.Limit, "units drawn from the set, stratified by label and seeded (0: all)").As(setting.Data).Min(0),
		setting.Int("seed", &c.Seed, "sampling seed (the draw and the judges' seed)").As(setting.Draw),
		judging.FormatSetting(&c.JudgeFormat, "text (HIC-Bench's one-line format, as a hic run asks) or json (structured output)"),
		setting.Int("judge-max-tokens", &c.JudgeMaxTokens, "judge reply cap (a hic run's value: 200)").Min(1),
	}
}

// MarshalJSON encodes the config by its settings.
func (c Config) MarshalJSON() ([]byte, error) { return c.Settings().MarshalJSON() }

// UnmarshalJSON reads a config MarshalJSON wrote.
func (c *Config) UnmarshalJSON(b []byte) error { return c.Settings().UnmarshalJSON(b) }

// DefaultConfig holds the defaults: 200 HaluEval units, HIC-Bench's judge
// as a default hic run asks it.
func DefaultConfig() Config {
	return Config{Set: HaluEval, Limit: 200, Seed: 1, JudgeFormat: "text", JudgeMaxTokens: 200}
}

// suiteName is the suite's name: its declaration's and its Task's.
const suiteName = "judges"

// Declaration declares the suite; `halu judges validate` runs it.
var Declaration = engine.Declare(suiteName, "Validate judges against people's hallucination labels (halu judges validate)",
	DefaultConfig, New, nil).NotRun()

// Suite is judge validation.
type Suite struct {
	cfg Config
	set Set
}

// New reads the set (errors name file and line) and returns the suite.
func New(cfg Config) (*Suite, error) {
	if err := cfg.Settings().Validate(); err != nil {
		return nil, fmt.Errorf("judges: %w", err)
	}
	set, err := LoadSet(cfg.Set)
	if err != nil {
		return nil, err
	}
	return &Suite{cfg: cfg, set: set}, nil
}

// Task is judge validation as the engine runs it: every part it has.
func (s *Suite) Task() engine.Suite {
	return engine.Suite{
		Name:        suiteName,
		Models:      s.Models,
		Items:       s.Items,
		Process:     s.Process,
		Summarize:   s.Summarize,
		Prompts:     s.Prompts,
		Datasets:    s.Datasets,
		MetricNames: s.MetricNames,
		Flag:        s.Flag,
	}
}

// Models are the judges.
func (s *Suite) Models() []string { return append([]string(nil), s.cfg.Judges...) }

// MetricNames are the last parts of the summary's keys.
func (s *Suite) MetricNames() []string {
	return []string{"accuracy", "kappa", "tpr", "fpr", "unscored"}
}

// Prompts records HIC-Bench's judge prompt.
func (s *Suite) Prompts() map[string]rundir.PromptInfo {
	out := map[string]rundir.PromptInfo{}
	for k, v := range hicjudge.Templates() {
		if strings.Contains(k, "evaluation") {
			out[k] = rundir.PromptInfo{Source: "HIC-Bench (github.com/chujiguangniao/HIC-bench, HIC/evaluator.py)", Text: v}
		}
	}
	return out
}

// Datasets is the set's file (the shipped one is part of the binary).
func (s *Suite) Datasets() []string {
	if s.cfg.Set == HaluEval {
		return nil
	}
	return []string{s.cfg.Set}
}

// Units are the units the run judges: a seeded sample stratified by label.
func (s *Suite) Units() []Unit {
	return engine.StratifiedSample(s.set.Units, s.limit(), s.cfg.Seed, func(u Unit) string { return fmt.Sprint(u.Hallucinated) })
}

func (s *Suite) limit() int {
	if s.cfg.Limit <= 0 {
		return len(s.set.Units)
	}
	return s.cfg.Limit
}

// Items are the sampled units, one item each (every judge judges it).
func (s *Suite) Items(context.Context) ([]engine.Item, error) {
	var items []engine.Item
	for _, u := range s.Units() {
		items = append(items, engine.Item{ID: u.ID, Payload: u})
	}
	return items, nil
}

// Result is the record of one unit: people's label, its response's length,
// and each judge's verdict (read carefully, and by the authors' rule
// beside it, as a hic run keeps them).
type Result struct {
	Unit       string               `json:"unit"`
	Human      bool                 `json:"human_hallucinated"`
	Chars      int                  `json:"response_chars"`
	Judgements []hicjudge.Judgement `json:"judgements"`
}

// Process asks every judge about the unit's response.
func (s *Suite) Process(ctx context.Context, c *engine.Calls, it engine.Item) (any, error) {
	u := it.Payload.(Unit)
	res := Result{Unit: u.ID, Human: u.Hallucinated, Chars: len([]rune(u.Response))}
	for _, j := range s.cfg.Judges {
		jd, err := hicjudge.Judge(ctx, c, hicjudge.Spec{Seed: s.cfg.Seed, MaxTokens: s.cfg.JudgeMaxTokens, Format: s.cfg.JudgeFormat}, j, u.Question, u.Response)
		if err != nil {
			return nil, err
		}
		res.Judgements = append(res.Judgements, jd)
	}
	return res, nil
}

// Flag marks a unit for the sample browser: people's label (Labelled),
// judged hallucinated by a judge, a judge whose verdict differs from
// people's label (AgainstPeople: the disagreements behind its κ), a judge's
// reply that never read (unscored). The headline reading decides, as in
// the tables.
func (s *Suite) Flag(rec rundir.Record) (summary.Flags, error) {
	r, err := rundir.Decode[Result](rec)
	f := summary.Flags{Labelled: true}
	for _, j := range r.Judgements {
		if !j.Scored || j.Verdict == nil {
			f.Unscored = true
			continue
		}
		f.Hallucinated = f.Hallucinated || j.Verdict.Hallucination
		f.AgainstPeople = f.AgainstPeople || j.Verdict.Hallucination != r.Human
	}
	return f, err
}

// verdicts are each judge's verdicts on the units, in record order, under
// the careful reading (other false) or the authors' rule (other true).
func verdicts(decoded []Result, other bool) map[string][]metrics.LabelledVerdict {
	out := map[string][]metrics.LabelledVerdict{}
	for _, r := range decoded {
		for _, j := range r.Judgements {
			v := metrics.LabelledVerdict{Human: r.Human, Unscored: !j.Scored || j.Verdict == nil}
			if !v.Unscored {
				v.Judged = j.Verdict.Hallucination
			}
			if other {
				switch {
				case j.OtherUnread:
					v = metrics.LabelledVerdict{Human: r.Human, Unscored: true}
				case j.Other != nil:
					v = metrics.LabelledVerdict{Human: r.Human, Judged: j.Other.Hallucination}
				}
			}
			out[j.Judge] = append(out[j.Judge], v)
		}
	}
	return out
}

// panel is the panel's majority per unit (nil for a single judge).
func panel(decoded []Result, judges []string) []metrics.LabelledVerdict {
	if len(judges) < 2 {
		return nil
	}
	by := verdicts(decoded, false)
	units := make([][]metrics.LabelledVerdict, len(decoded))
	for _, j := range judges {
		for u, v := range by[j] {
			if u < len(units) {
				units[u] = append(units[u], v)
			}
		}
	}
	return metrics.PanelMajority(units)
}

// Threshold below which a judge's κ with people is called low: Landis and
// Koch's (1977) "moderate" starts at 0.41; below 0.4 a judge's verdicts
// agree with people's little beyond chance.
const lowKappa = 0.4

// Summarize reports each judge's (and the panel majority's) agreement
// with people's labels.
func (s *Suite) Summarize(rs *rundir.Records) (*summary.Summary, error) {
	recs, err := rs.Sorted()
	if err != nil {
		return nil, err
	}
	decoded, err := rundir.DecodeRecords[Result](recs)
	if err != nil {
		return nil, err
	}
	sum := &summary.Summary{Suite: "judges", Metrics: map[string]float64{}}
	t := summary.Table{Title: "Can these judges be trusted? Agreement with people's hallucination labels (95% intervals)",
		Columns: []string{"judge", "units", "unscored", "accuracy", "Cohen's κ", "TPR (flags hallucinated)", "FPR (flags faithful)", "judge yes / people yes, judge yes / people no, judge no / people yes, judge no / people no", "authors' rule: accuracy", "readings differ"}}
	careful, authors := verdicts(decoded, false), verdicts(decoded, true)
	rows := append([]string(nil), s.cfg.Judges...)
	pm := panel(decoded, s.cfg.Judges)
	if pm != nil {
		rows = append(rows, "panel majority")
		careful["panel majority"] = pm
	}
	var low []string
	scored, units := 0, 0
	for _, j := range rows {
		a := metrics.Agreement(careful[j], 0.95)
		if j != "panel majority" {
			scored += a.Accuracy.N
			units += a.Units
		}
		kw := metrics.KappaWarning(a.TP, a.FN, a.FP, a.TN)
		kc := cell(a.Kappa, false)
		if kw != "" && !math.IsNaN(a.Kappa.Estimate) {
			kc += " (" + kw + ")"
		}
		tw, fw := metrics.RateWarning(a.TP+a.FN, "hallucinated"), metrics.RateWarning(a.FP+a.TN, "faithful")
		warned := func(iv metrics.Interval, w string) string {
			if w != "" && !math.IsNaN(iv.Estimate) {
				return cell(iv, true) + " (" + w + ")"
			}
			return cell(iv, true)
		}
		row := []string{j, fmt.Sprint(a.Units), cell(a.Unscored, true), cell(a.Accuracy, true), kc, warned(a.TPR, tw), warned(a.FPR, fw),
			fmt.Sprintf("%d, %d, %d, %d", a.TP, a.FP, a.FN, a.TN), "–", "–"}
		if av, ok := authors[j]; ok {
			row[8] = cell(metrics.Agreement(av, 0.95).Accuracy, true)
			row[9] = fmt.Sprint(differ(careful[j], av))
		}
		t.Rows = append(t.Rows, row)
		un := a.Units - a.Accuracy.N
		for _, f := range []summary.Figure{
			summary.IntervalFigure(j, "", "accuracy", j+".accuracy", a.Accuracy, un, "Wilson"),
			summary.IntervalFigure(j, "", "κ", j+".kappa", a.Kappa, un, "Fleiss–Cohen–Everitt variance, Wilson score"),
			summary.IntervalFigure(j, "", "TPR", j+".tpr", a.TPR, 0, "Wilson"),
			summary.IntervalFigure(j, "", "FPR", j+".fpr", a.FPR, 0, "Wilson"),
		} {
			f.Percent = f.Metric != "κ"
			f.Lower = f.Metric == "FPR"
			f.Headline = f.Metric == "accuracy" || f.Metric == "κ"
			switch f.Metric {
			case "κ":
				f.Warning = kw
			case "TPR":
				f.Warning = tw
			case "FPR":
				f.Warning = fw
			}
			sum.AddFigure(f)
		}
		sum.Metrics[j+".unscored"] = float64(un)
		if !math.IsNaN(a.Kappa.Estimate) && a.Kappa.Estimate < lowKappa {
			low = append(low, fmt.Sprintf("%s (κ %.2f)", j, a.Kappa.Estimate))
		}
	}
	sum.Tables = append(sum.Tables, t)
	if scored == 0 {
		sum.Nothing = fmt.Sprintf("the validation measured nothing: none of the judges' %d verdicts on the %d units could be read (every reply unscored; the raw replies are in the records) — a judge that does not write \"Hallucination: Yes/No\" may read with --judge-format json", units, len(decoded))
	}
	if a, ok := panelAlpha(decoded, s.cfg.Judges); ok {
		sum.Notes = append(sum.Notes, a)
	}
	hum := 0
	for _, r := range decoded {
		if r.Human {
			hum++
		}
	}
	sum.Notes = append(sum.Notes,
		fmt.Sprintf("set: %s — %s; licence %s; %d of its %d units drawn (stratified by label, seed %d), %d labelled hallucinated by people", s.cfg.Set, s.set.Source, s.set.Licence, len(decoded), len(s.set.Units), s.cfg.Seed, hum),
		"prompt: HIC-Bench's judge (hic run's system and user prompts, greedy), its \"Hallucination: Yes/No\" read as a hic run reads it; TPR is the share of the responses people labelled hallucinated that the judge flags, FPR the share of those they labelled faithful that it flags; κ is agreement beyond chance (0: none, 1: perfect); an unscored verdict (no verdict stated) is counted, not guessed",
		"the authors'-rule column reads the same replies by HIC-Bench's code (tokens split on white space); \"readings differ\" counts units the two readings do not agree on")
	if s.set.Skipped > 0 {
		sum.Notes = append(sum.Notes, fmt.Sprintf("%d records of the set left out: %s", s.set.Skipped, s.set.Why))
	}
	if s.set.Renamed > 0 {
		sum.Notes = append(sum.Notes, fmt.Sprintf("%d records of the set repeat an earlier record's id; each is kept, named id@line", s.set.Renamed))
	}
	if len(low) > 0 {
		sum.Notes = append(sum.Notes, fmt.Sprintf("warning: low agreement with people (κ < %.2f, Landis and Koch's \"moderate\" starts at 0.41): %s — figures these judges make carry their error", lowKappa, strings.Join(low, ", ")))
	}
	sum.AddConfidence("people's labels (a judge right where its verdict agrees with them; the score: its confidence in its reply)", s.judgeConfidence(recs, decoded))
	return sum, nil
}

// judgeConfidence is each judge's scored verdicts checked against people's
// labels, with the confidence of the reply that gave the verdict (its
// tokens' log-probabilities: --logprobs N).
func (s *Suite) judgeConfidence(recs []rundir.Record, decoded []Result) []summary.ConfidenceGroup {
	var groups []summary.ConfidenceGroup
	for _, j := range s.cfg.Judges {
		g := summary.ConfidenceGroup{Model: j, Setting: "judge reply"}
		for i, r := range decoded {
			for _, jd := range r.Judgements {
				if jd.Judge != j || !jd.Scored || jd.Verdict == nil {
					continue
				}
				u := summary.ConfidenceUnit{Correct: jd.Verdict.Hallucination == r.Human,
					Scores: summary.TokenScores(summary.VerdictCall(recs[i].Calls, hicjudge.Stage, j))}
				if jd.VerdictProb != nil {
					if u.Scores == nil {
						u.Scores = map[string]float64{}
					}
					u.Scores[summary.ScoreVerdictProb.Key] = *jd.VerdictProb
				}
				g.Units = append(g.Units, u)
			}
		}
		groups = append(groups, g)
	}
	return groups
}

// differ counts units two readings of the same replies disagree on.
func differ(a, b []metrics.LabelledVerdict) int {
	n := 0
	for i := range a {
		if i < len(b) && (a[i].Unscored != b[i].Unscored || (!a[i].Unscored && a[i].Judged != b[i].Judged)) {
			n++
		}
	}
	return n
}

// panelAlpha is Krippendorff's α (nominal) of the panel's verdicts, with
// how many independent judges the panel is worth, as a note.
func panelAlpha(decoded []Result, judges []string) (string, bool) {
	if len(judges) < 2 {
		return "", false
	}
	idx := map[string]int{}
	for i, j := range judges {
		idx[j] = i
	}
	var data [][]float64
	for _, r := range decoded {
		row := make([]float64, len(judges))
		for i := range row {
			row[i] = math.NaN()
		}
		for _, j := range r.Judgements {
			if i, ok := idx[j.Judge]; ok && j.Scored && j.Verdict != nil {
				row[i] = b2f(j.Verdict.Hallucination)
			}
		}
		data = append(data, row)
	}
	a, err := metrics.KrippendorffNominal(data)
	if err != nil {
		return fmt.Sprintf("panel agreement: Krippendorff's α (nominal) – (%v)", err), true
	}
	worth := metrics.EffectiveJudges(len(judges), a)
	if math.IsNaN(worth) {
		return fmt.Sprintf("panel agreement on the hallucination flag: Krippendorff's α (nominal) %.2f over %d units — below chance: the %d judges disagree more than judges who guess, so what they are worth together is not defined",
			a, len(data), len(judges)), true
	}
	return fmt.Sprintf("panel agreement on the hallucination flag: Krippendorff's α (nominal) %.2f over %d units; the %d judges are worth about %.1f independent ones (Spearman–Brown with α as their mean agreement)",
		a, len(data), len(judges), worth), true
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// cell prints an interval as a table cell: "–" when nothing was measured.
func cell(iv metrics.Interval, percent bool) string {
	if iv.N == 0 || math.IsNaN(iv.Estimate) {
		return "–"
	}
	f := func(x float64) string {
		if percent {
			return fmt.Sprintf("%.1f%%", 100*x)
		}
		return fmt.Sprintf("%.2f", x)
	}
	s := f(iv.Estimate)
	if !math.IsNaN(iv.Low) {
		s += " [" + f(iv.Low) + ", " + f(iv.High) + "]"
	}
	return s + fmt.Sprintf(" n=%d", iv.N)
}
