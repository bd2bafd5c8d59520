package intent

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"

	"halu/metrics"
	"halu/runner/judging"
	"halu/runner/rundir"
	"halu/runner/summary"
)

// taskNames are the paper's names for the task types.
var taskNames = map[string]string{
	"factqa": "Fact QA", "story": "Creative Writing (Story)", "poem": "Creative Writing (Poem)",
	"response_eval": "Response Evaluation", "relationship": "Content Analysis (Relationship)", "summary": "Content Analysis (Summary)",
}

func taskRank(t string) int {
	for i, x := range Tasks {
		if x == t {
			return i
		}
	}
	return len(Tasks)
}

func f2(x float64) string {
	if math.IsNaN(x) {
		return "–"
	}
	return fmt.Sprintf("%.2f", x)
}

// csFigures are the Constraint Score (mean of eq. 7) and Perfect share
// (CS = 10) of one model over one group of items.
func csFigures(model, group, key string, cs summary.Tally, headline bool) (summary.Figure, summary.Figure) {
	c := cs.Mean(model, group, "CS", key+"/cs").Clip(0, 10)
	perfect := 0
	for _, x := range cs.Values {
		if x >= 10-1e-9 {
			perfect++
		}
	}
	p := summary.ProportionFigure(model, group, "Perfect", key+"/perfect", perfect, cs.N(), cs.Unscored)
	p.Percent = false // FaithQA's tables print Perfect as a share
	c.Headline, p.Headline = headline, headline
	return c, p
}

// ci formats a mean with its 95% t-interval, clipped to the score's range
// [lo, hi] (a t-interval of few values can reach past the scale).
func ci(iv metrics.Interval, lo, hi float64) string {
	if iv.N < 2 {
		return f2(iv.Estimate)
	}
	return fmt.Sprintf("%.2f [%.2f, %.2f]", iv.Estimate, math.Max(lo, iv.Low), math.Min(hi, iv.High))
}

func rate(num, den int) string {
	if den == 0 {
		return "–"
	}
	return f2(float64(num) / float64(den))
}

// rescore recomputes a scored response's Constraint Score under weights w
// (Appendix G.1); ok is false for unscored responses.
func rescore(r ItemResult, w metrics.Weights) (float64, bool) {
	if !r.Scored {
		return 0, false
	}
	if r.Ratios != nil {
		s, err := ScoreFromRatios(r.Ratios, w)
		return s, err == nil
	}
	vs := make([]metrics.Verdict, len(r.Constraints))
	for i, k := range r.Constraints {
		vs[i] = metrics.Verdict{Priority: k.priority(), Satisfied: k.Satisfied}
	}
	s, err := metrics.ConstraintScore(vs, w)
	return s, err == nil
}

// Summarize builds the paper's tables per model: Table 3 (Perfect and CS by
// task and difficulty, with the baseline beside), Table 4 (Fact QA Perfect
// and Factual Verifiable Hallucination Rate), Table 10 (misinterpretation
// by missing part), Table 11 (Count / Invent / Other), Figure 4 (violated
// constraint categories), Appendix G.1 (weight presets) and, with human
// scores, §7's MSE and mean deviation.
func (s *Suite) Summarize(all *rundir.Records) (*summary.Summary, error) {
	recs, err := all.Sorted()
	if err != nil {
		return nil, err
	}
	var rs []ItemResult
	for _, rec := range recs {
		var r ItemResult
		if err := json.Unmarshal(rec.Data, &r); err != nil {
			return nil, fmt.Errorf("record %s: %w", rec.Item, err)
		}
		rs = append(rs, r)
	}
	sort.Slice(rs, func(i, j int) bool {
		a, b := rs[i], rs[j]
		if a.Model != b.Model {
			return a.Model < b.Model
		}
		if a.Task != b.Task {
			return taskRank(a.Task) < taskRank(b.Task)
		}
		if a.Difficulty != b.Difficulty {
			return a.Difficulty < b.Difficulty
		}
		return a.ID < b.ID
	})
	models := []string{}
	byModel := map[string][]ItemResult{}
	for _, r := range rs {
		if _, ok := byModel[r.Model]; !ok {
			models = append(models, r.Model)
		}
		byModel[r.Model] = append(byModel[r.Model], r)
	}
	sum := &summary.Summary{Suite: "intent", Metrics: map[string]float64{}, Scopes: scopes(rs), Glossary: []summary.Term{
		{Abbr: "CS", Meaning: "Constraint Score — the query's constraints a response satisfies, weighted by priority (mandatory 3, important 2, optional 1), on 0–10 (§4.2, eq. 7)"},
		{Abbr: "Perfect", Meaning: "the share of responses that satisfy every constraint (CS = 10)"},
		{Abbr: "baseline", Meaning: "the zero-shot 1–10 judge rating the paper sets beside CS (§6)"},
		{Abbr: "Fact %", Meaning: "of the hallucinated Fact QA responses, the share the fact check finds inaccurate — §7's reading (fewer for larger models, which make fewer factual errors); §6's definition says \"factually accurate\", which §7 contradicts"},
	}}
	table3(sum, models, byModel)
	sum.Charts = append(sum.Charts, intentCharts(models, byModel)...)
	table4(sum, models, byModel)
	misinterpretationTables(sum, models, byModel)
	figure4(sum, models, byModel)
	appendixG1(sum, models, byModel)
	s.humanTables(sum, rs)
	codeAgreement(sum, rs)
	s.notes(sum, rs)
	return sum, nil
}

// table3 is Table 3 in long form, one row per model, task and difficulty:
// Perfect and CS over the scored responses (the unscored counted), with
// the baseline beside.
func table3(sum *summary.Summary, models []string, byModel map[string][]ItemResult) {
	// Table 3, long form: one row per (model, task, difficulty).
	t3 := summary.Table{Title: "FaithQA Table 3 — Perfect and Constraint Score (CS, 95% CI clipped to the scale) by task, with the zero-shot 1–10 baseline (§6)",
		Columns: []string{"model", "task", "difficulty", "n", "unscored", "Perfect", "CS", "baseline"}}
	type cell struct{ task, diff string }
	for _, m := range models {
		groups := map[cell][]ItemResult{}
		var cells []cell
		for _, r := range byModel[m] {
			k := cell{r.Task, r.Difficulty}
			if _, ok := groups[k]; !ok {
				cells = append(cells, k)
			}
			groups[k] = append(groups[k], r)
		}
		var allCS summary.Tally
		var allBase []float64
		for _, k := range cells {
			var cs summary.Tally
			var base []float64
			for _, r := range groups[k] {
				if r.Scored {
					cs.Add(*r.CS)
				} else {
					cs.Skip()
				}
				if r.Baseline != nil {
					base = append(base, *r.Baseline)
				}
			}
			allCS.Merge(cs)
			allBase = append(allBase, base...)
			key := m + "/" + k.task
			if k.diff != "" {
				key += "/" + k.diff
			}
			cf, pf := csFigures(m, strings.TrimPrefix(key, m+"/"), key, cs, false)
			sum.AddFigure(cf)
			sum.AddFigure(pf)
			diff := k.diff
			if diff == "" {
				diff = "–"
			}
			row := []string{m, taskNames[k.task], diff, fmt.Sprint(len(groups[k])), fmt.Sprint(cs.Unscored), "–", "–", "–"}
			if cs.N() > 0 {
				row[5], row[6] = f2(metrics.PerfectRate(cs.Values)), ci(metrics.MeanCI(cs.Values, 0.95), 0, 10)
			}
			if len(base) > 0 {
				row[7] = ci(metrics.MeanCI(base, 0.95), 1, 10)
			}
			t3.Rows = append(t3.Rows, row)
		}
		cf, pf := csFigures(m, "all tasks", m, allCS, true)
		sum.AddFigure(cf)
		sum.AddFigure(pf)
		if len(allBase) > 0 {
			sum.Metrics[m+"/baseline"] = metrics.Mean(allBase)
		}
	}
	sum.Tables = append(sum.Tables, t3)
}

// table4 is Table 4: Fact QA Perfect and Fact (%), by topic and difficulty.
func table4(sum *summary.Summary, models []string, byModel map[string][]ItemResult) {
	t4 := summary.Table{Title: "FaithQA Table 4 — Fact QA: Perfect and Factual Verifiable Hallucination Rate (Fact, % of hallucinated responses, CS < 10, that the fact check finds inaccurate)",
		Columns: []string{"model", "topic", "difficulty", "n", "Perfect", "hallucinated", "fact-checked", "Fact %"}}
	for _, m := range models {
		type tk struct{ topic, diff string }
		g := map[tk][]ItemResult{}
		var order []tk
		for _, r := range byModel[m] {
			if r.Task != "factqa" || !r.Scored {
				continue
			}
			k := tk{r.Topic, r.Difficulty}
			if _, ok := g[k]; !ok {
				order = append(order, k)
			}
			g[k] = append(g[k], r)
		}
		sort.Slice(order, func(i, j int) bool {
			if order[i].topic != order[j].topic {
				return order[i].topic < order[j].topic
			}
			return order[i].diff < order[j].diff
		})
		hallAll, wrongAll := 0, 0
		for _, k := range order {
			var cs []float64
			hall, checked, wrong := 0, 0, 0
			for _, r := range g[k] {
				cs = append(cs, *r.CS)
				if !r.Perfect {
					hall++
					if r.FactWrong != nil {
						checked++
						if *r.FactWrong {
							wrong++
						}
					}
				}
			}
			hallAll += checked
			wrongAll += wrong
			fact := "–"
			if checked > 0 {
				fact = fmt.Sprintf("%.1f", 100*float64(wrong)/float64(checked))
			}
			t4.Rows = append(t4.Rows, []string{m, orDash(k.topic), orDash(k.diff), fmt.Sprint(len(g[k])),
				f2(metrics.PerfectRate(cs)), fmt.Sprint(hall), fmt.Sprint(checked), fact})
		}
		if hallAll > 0 {
			sum.Metrics[m+"/factqa/fact_rate"] = float64(wrongAll) / float64(hallAll)
		}
	}
	if len(t4.Rows) > 0 {
		sum.Tables = append(sum.Tables, t4)
	}
}

// misinterpretationTables are Table 10 (the misinterpretation
// hallucination rate by missing part) and Table 11 (Response Evaluation's
// types of hallucination).
func misinterpretationTables(sum *summary.Summary, models []string, byModel map[string][]ItemResult) {
	t10 := summary.Table{Title: "FaithQA Table 10 — misinterpretation tasks: intent hallucination rate by missing part (responses that do not ask for the missing content)",
		Columns: []string{"model", "task", "topic", "missing", "n", "hallucination rate"}}
	t11 := summary.Table{Title: "FaithQA Table 11 — Response Evaluation: types of hallucination (shares of hallucinated responses)",
		Columns: []string{"model", "topic", "hallucinated", "Count", "Invent", "Other"}}
	for _, m := range models {
		type mk struct{ task, topic, kind string }
		g := map[mk][2]int{}
		var order []mk
		types := map[string]map[string]int{}
		var topics []string
		hall, n := 0, 0
		for _, r := range byModel[m] {
			if !Misinterpretation(r.Task) || r.Outcome == "" {
				continue
			}
			k := mk{r.Task, r.Topic, trailingNum.ReplaceAllString(r.Missing, "")}
			if _, ok := g[k]; !ok {
				order = append(order, k)
			}
			x := g[k]
			x[1]++
			n++
			if r.Outcome != OutcomeOK {
				x[0]++
				hall++
			}
			g[k] = x
			if r.Task == "response_eval" && r.Outcome != OutcomeOK {
				if types[r.Topic] == nil {
					types[r.Topic] = map[string]int{}
					topics = append(topics, r.Topic)
				}
				types[r.Topic][r.Outcome]++
			}
		}
		sort.Slice(order, func(i, j int) bool {
			a, b := order[i], order[j]
			if a.task != b.task {
				return taskRank(a.task) < taskRank(b.task)
			}
			if a.topic != b.topic {
				return a.topic < b.topic
			}
			return a.kind < b.kind
		})
		for _, k := range order {
			t10.Rows = append(t10.Rows, []string{m, taskNames[k.task], orDash(k.topic), k.kind, fmt.Sprint(g[k][1]), rate(g[k][0], g[k][1])})
		}
		if n > 0 {
			sum.Metrics[m+"/misinterpretation/hallucination_rate"] = float64(hall) / float64(n)
		}
		sort.Strings(topics)
		for _, tp := range topics {
			c := types[tp]
			tot := c[OutcomeCount] + c[OutcomeInvent] + c[OutcomeOther]
			t11.Rows = append(t11.Rows, []string{m, orDash(tp), fmt.Sprint(tot), rate(c[OutcomeCount], tot), rate(c[OutcomeInvent], tot), rate(c[OutcomeOther], tot)})
		}
	}
	if len(t10.Rows) > 0 {
		sum.Tables = append(sum.Tables, t10)
	}
	if len(t11.Rows) > 0 {
		sum.Tables = append(sum.Tables, t11)
	}
}

// figure4 is Figure 4: the share of responses violating at least one
// constraint of each component (independent rates: a response may violate
// several).
func figure4(sum *summary.Summary, models []string, byModel map[string][]ItemResult) {
	f4 := summary.Table{Title: "FaithQA Figure 4 — violated constraint categories (share of scored responses with a violated constraint of that component)",
		Columns: append([]string{"model", "n"}, Components...)}
	for _, m := range models {
		n := 0
		viol := map[string]int{}
		for _, r := range byModel[m] {
			if !r.Scored || r.Ratios != nil {
				continue
			}
			n++
			hit := map[string]bool{}
			for _, k := range r.Constraints {
				if !k.Satisfied && k.Source != "rule" {
					hit[k.Component] = true
				}
			}
			for c := range hit {
				viol[c]++
			}
		}
		if n == 0 {
			continue
		}
		row := []string{m, fmt.Sprint(n)}
		for _, c := range Components {
			row = append(row, rate(viol[c], n))
		}
		f4.Rows = append(f4.Rows, row)
	}
	if len(f4.Rows) > 0 {
		sum.Tables = append(sum.Tables, f4)
	}
}

// appendixG1 is Appendix G.1: the mean CS under each weight preset.
func appendixG1(sum *summary.Summary, models []string, byModel map[string][]ItemResult) {
	g1 := summary.Table{Title: "FaithQA Appendix G.1 — mean Constraint Score under each weight preset (mandatory/important/optional)",
		Columns: []string{"model"}}
	for _, p := range PresetOrder {
		w := WeightPresets[p]
		g1.Columns = append(g1.Columns, fmt.Sprintf("%s (%g,%g,%g)", p, w.Mandatory, w.Important, w.Optional))
	}
	for _, m := range models {
		row := []string{m}
		for _, p := range PresetOrder {
			var xs []float64
			for _, r := range byModel[m] {
				if x, ok := rescore(r, WeightPresets[p]); ok {
					xs = append(xs, x)
				}
			}
			if len(xs) == 0 {
				row = append(row, "–")
			} else {
				row = append(row, f2(metrics.Mean(xs)))
			}
		}
		g1.Rows = append(g1.Rows, row)
	}
	sum.Tables = append(sum.Tables, g1)
}

// codeAgreement shows the countable constraints code decided beside the
// judge's verdicts on them.
func codeAgreement(sum *summary.Summary, rs []ItemResult) {
	type agree struct{ n, same int }
	byRule := map[string]*agree{}
	for _, r := range rs {
		for _, k := range r.Constraints {
			if k.Source != "code" || k.Judge == nil {
				continue
			}
			a := byRule[k.Rule]
			if a == nil {
				a = &agree{}
				byRule[k.Rule] = a
			}
			a.n++
			if *k.Judge == k.Satisfied {
				a.same++
			}
		}
	}
	if len(byRule) > 0 {
		tc := summary.Table{Title: "Countable constraints decided by code: agreement of the judge's verdict with the code's",
			Columns: []string{"rule", "constraints", "judge agrees"}}
		var rules []string
		for k := range byRule {
			rules = append(rules, k)
		}
		sort.Strings(rules)
		for _, k := range rules {
			tc.Rows = append(tc.Rows, []string{k, fmt.Sprint(byRule[k].n), rate(byRule[k].same, byRule[k].n)})
		}
		sum.Tables = append(sum.Tables, tc)
	}
}

// notes say what the run's tables rest on: the misinterpretation design,
// unscored responses and why, mapping failures, the baseline's ties.
func (s *Suite) notes(sum *summary.Summary, rs []ItemResult) {
	for _, r := range rs {
		if Misinterpretation(r.Task) {
			sum.Notes = append(sum.Notes, "misinterpretation items: constraints are mapped from the whole task (Table 6, with the withheld part in its place) and scored beside a mandatory missing-content constraint, so the Constraint Score is graded; a response that asks for the missing part satisfies every constraint (§5.2)")
			break
		}
	}
	reasons := map[string]int{}
	mapFail, clar, tooLong := 0, 0, 0
	for _, r := range rs {
		switch {
		case r.TooLong:
			tooLong++
		case r.Unscorable != "":
			reasons[r.Unscorable]++
		}
		for _, ms := range r.MapSamples {
			if ms == nil {
				mapFail++
			} else if ms.Clarification {
				clar++
			}
		}
	}
	var rk []string
	for k := range reasons {
		rk = append(rk, k)
	}
	sort.Strings(rk)
	for _, k := range rk {
		sum.Notes = append(sum.Notes, fmt.Sprintf("%d responses unscored: %s (excluded from CS and Perfect; raw replies in the records)", reasons[k], k))
	}
	if tooLong > 0 {
		sum.Notes = append(sum.Notes, fmt.Sprintf("%d items left out, no call made: their query (or a judge's prompt holding it) does not fit a model's context window whole (--too-long skip; each record says which and by how much); excluded from CS and Perfect", tooLong))
	}
	if mapFail > 0 {
		sum.Notes = append(sum.Notes, fmt.Sprintf("%d constraint-mapping samples never parsed (abstained from the majority)", mapFail))
	}
	if clar > 0 {
		sum.Notes = append(sum.Notes, fmt.Sprintf("%d mapping samples asked for the missing content instead of listing constraints (Table 6, step 0)", clar))
	}
	ties, rated, capped := 0, 0, 0
	for _, r := range rs {
		if s.cfg.JudgeFormat == judging.FormatJSON && r.Mapping != nil && len(r.Mapping.Constraints) >= maxMapped {
			capped++
		}
		if r.Baseline != nil {
			rated++
			if r.BaselineTie {
				ties++
			}
		}
	}
	if capped > 0 {
		sum.Notes = append(sum.Notes, fmt.Sprintf("%d structured mappings reached the schema's cap of %d constraints: any beyond it were not listed (the paper's queries have at most 11)", capped, maxMapped))
	}
	if ties > 0 {
		sum.Notes = append(sum.Notes, fmt.Sprintf("baseline: %d of %d self-consistent ratings were ties between equally frequent scores, decided by halu's rule (the tied score nearest the samples' median, then the lower; the paper names none)", ties, rated))
	}
	sum.Notes = append(sum.Notes,
		fmt.Sprintf("CS weights: %s; a misinterpretation response that asks for the missing content satisfies every constraint by rule (§5.2); one that does not fails the added missing-content constraint", s.cfg.Weights),
		"Fact: Appendix D.2.3 step 0 only (self-consistency over the local judge); the Wikipedia retrieval of step 1 needs a network and is not done")
}

func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

// humanTables adds §7's comparison with human Constraint Scores: MSE and
// mean deviation of CS and of the baseline, and the weight presets'
// correlations with the human scores (Appendix G.1's table).
func (s *Suite) humanTables(sum *summary.Summary, rs []ItemResult) {
	var human, cs, hb, base []float64
	for _, r := range rs {
		if r.HumanScore == nil {
			continue
		}
		if r.Scored {
			human, cs = append(human, *r.HumanScore), append(cs, *r.CS)
		}
		if r.Baseline != nil {
			hb, base = append(hb, *r.HumanScore), append(base, *r.Baseline)
		}
	}
	if len(human) == 0 && len(hb) == 0 {
		return
	}
	t := summary.Table{Title: "FaithQA §7 — agreement with human scores", Columns: []string{"method", "n", "MSE", "mean deviation"}}
	add := func(name string, pred, ref []float64) {
		mse, err1 := metrics.MSE(pred, ref)
		dev, err2 := metrics.MeanDeviation(pred, ref)
		if err1 != nil || err2 != nil {
			return
		}
		t.Rows = append(t.Rows, []string{name, fmt.Sprint(len(pred)), f2(mse), f2(dev)})
		sum.Metrics["human/"+strings.ToLower(strings.Fields(name)[0])+"/mse"] = mse
	}
	add("Constraint Score", cs, human)
	add("Baseline (1–10, self-consistency)", base, hb)
	sum.Tables = append(sum.Tables, t)

	corr := summary.Table{Title: "FaithQA Appendix G.1 — correlation of each weight preset's CS with human scores",
		Columns: []string{"weights", "n", "Pearson r (p)", "Spearman ρ (p)"}}
	for _, p := range PresetOrder {
		var x, y []float64
		for _, r := range rs {
			if r.HumanScore == nil {
				continue
			}
			if v, ok := rescore(r, WeightPresets[p]); ok {
				x, y = append(x, v), append(y, *r.HumanScore)
			}
		}
		pr, err1 := metrics.Pearson(x, y)
		sr, err2 := metrics.Spearman(x, y)
		if err1 != nil || err2 != nil {
			continue
		}
		corr.Rows = append(corr.Rows, []string{p, fmt.Sprint(len(x)), fmt.Sprintf("%.2f (%.3f)", pr.Statistic, pr.P), fmt.Sprintf("%.2f (%.3f)", sr.Statistic, sr.P)})
	}
	if len(corr.Rows) > 0 {
		sum.Tables = append(sum.Tables, corr)
	}
}

// intentCharts are the Constraint Score distribution per model (0–10, one
// bin per point) and the mean CS by task with its 95% CI.
func intentCharts(models []string, byModel map[string][]ItemResult) []summary.Chart {
	hist := summary.Chart{Kind: "histogram", Title: "Constraint Score distribution (0–10)", X: "Constraint Score", Y: "responses", Bins: 10, Min: 0, Max: 10}
	bars := summary.Chart{Kind: "bars", Title: "Mean Constraint Score by task (95% t CI)", Y: "CS (0–10)"}
	present := map[string]bool{}
	for _, m := range models {
		for _, r := range byModel[m] {
			present[r.Task] = true
		}
	}
	for _, t := range Tasks {
		if present[t] {
			bars.Groups = append(bars.Groups, taskNames[t])
		}
	}
	for _, m := range models {
		hs := summary.Series{Name: m}
		byTask := map[string][]float64{}
		for _, r := range byModel[m] {
			if r.Scored && r.CS != nil {
				hs.Values = append(hs.Values, summary.Num(*r.CS))
				byTask[r.Task] = append(byTask[r.Task], *r.CS)
			}
		}
		hist.Series = append(hist.Series, hs)
		bs := summary.Series{Name: m}
		for _, t := range Tasks {
			if !present[t] {
				continue
			}
			iv := metrics.MeanCI(byTask[t], 0.95)
			iv.Low, iv.High = math.Max(0, iv.Low), math.Min(10, iv.High) // the CS scale
			bs.AddInterval(iv)
		}
		bars.Series = append(bars.Series, bs)
	}
	return []summary.Chart{hist, bars}
}

// Flag marks a record for the sample browser: a response below the
// perfect Constraint Score (an intent hallucination, §4), one not scored.
func (s *Suite) Flag(rec rundir.Record) (summary.Flags, error) {
	r, err := rundir.Decode[ItemResult](rec)
	return summary.Flags{Hallucinated: r.Scored && !r.Perfect, Unscored: !r.Scored}, err
}

// MethodDepartures are where intent's method is not the paper's whatever
// its settings (engine.Suite.Departures).
func (s *Suite) MethodDepartures() []string {
	out := []string{methodMisinterpretation}
	if s.cfg.FactSamples > 0 {
		out = append(out, methodFactChecks)
	}
	return out
}

// The method departures of intent, each touching the items of one scope
// (MethodScopes): a run whose records hold none of them is not touched.
const (
	methodMisinterpretation = "misinterpretation scoring is halu's design (the paper publishes none): the constraints mapped from the task with the withheld part in its place, an added missing-content constraint, halu's own missing-content prompt, and CS = 10 by rule when the model asks for the missing part"
	methodFactChecks        = "fact checks: Appendix D.2.3's step 1 (Wikipedia retrieval) needs a network and is not done offline; step 0 (self-consistency over the local judge) decides alone"
	// ScopeMisinterpretation and ScopeFactQA are the summary's scopes:
	// the misinterpretation tasks' items and the Fact QA items.
	ScopeMisinterpretation = "misinterpretation"
	ScopeFactQA            = "factqa"
)

// MethodScopes says which items each method departure touches
// (engine.MethodScopes).
func (s *Suite) MethodScopes() map[string]string {
	return map[string]string{methodMisinterpretation: ScopeMisinterpretation, methodFactChecks: ScopeFactQA}
}

// scopes counts the records' items of each scope a method departure
// touches (summary.Summary.Scopes).
func scopes(rs []ItemResult) map[string]int {
	out := map[string]int{ScopeMisinterpretation: 0, ScopeFactQA: 0}
	for _, r := range rs {
		if Misinterpretation(r.Task) {
			out[ScopeMisinterpretation]++
		}
		if r.Task == "factqa" {
			out[ScopeFactQA]++
		}
	}
	return out
}
