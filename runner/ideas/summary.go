package ideas

import (
	"fmt"
	"math"
	"sort"

	"halu/metrics"
	"halu/runner/rundir"
	"halu/runner/summary"
)

// ModelScores are one model's LiveIdeaBench figures, on the leaderboard's
// names and 1–10 scale.
type ModelScores struct {
	Model       string           `json:"model"`
	Originality metrics.Interval `json:"originality"`
	Feasibility metrics.Interval `json:"feasibility"`
	Clarity     metrics.Interval `json:"clarity"`
	Fluency     metrics.Interval `json:"fluency"`
	Flexibility metrics.Interval `json:"flexibility"` // bootstrap CI
	// Average is the Dec-2024 leaderboard's: mean of fluency, feasibility,
	// originality and flexibility. Average5 adds clarity (current release).
	Average, Average5 float64
	Ideas, Refused    int
	RefusedTwice      int
	Excluded          int
	// Critiques (counted by their originality) and FluencyPairs (by their
	// grade's score) are the judgements the scores rest on, scored or not.
	Critiques      summary.Tally
	FluencyPairs   summary.Tally
	MeanWords      float64
	LengthSpearman metrics.TestResult
	Categories     map[string]float64
}

// Summarize computes the per-model scores, the category heatmap data, the
// length–quality correlation and, with --external, the Pearson correlation
// against an external benchmark.
func (s *Suite) Summarize(recs *rundir.Records) (*summary.Summary, error) {
	byModel := map[string][]ItemResult{}
	decoded, err := rundir.DecodeSorted[ItemResult](recs, nil)
	if err != nil {
		return nil, err
	}
	for _, ir := range decoded {
		byModel[ir.Model] = append(byModel[ir.Model], ir)
	}
	var models []string
	for m := range byModel {
		models = append(models, m)
	}
	sort.Strings(models)
	sum := &summary.Summary{Suite: "ideas", Metrics: map[string]float64{}, Glossary: []summary.Term{
		{Abbr: "originality, feasibility, clarity", Meaning: "the critics' 1–10 scores of an idea"},
		{Abbr: "fluency", Meaning: "the grade of how many distinct ideas a model gives for one keyword (0–10)"},
		{Abbr: "flexibility", Meaning: "the 30th percentile over keywords of the mean of the four scores: how well a model does on its weaker keywords"},
	}}
	var all []ModelScores
	cats := map[string]bool{}
	for _, m := range models {
		ms := score(m, byModel[m], uint64(s.cfg.Seed), s.cfg.Scoring == "first-release")
		all = append(all, ms)
		for c := range ms.Categories {
			cats[c] = true
		}
		for k, v := range map[string]float64{"average5": ms.Average5, "refusal_rate": metrics.Ratio(ms.Refused, ms.Ideas)} {
			sum.Metrics[m+"."+k] = v
		}
		addFigures(sum, m, ms)
		sum.SetSupport(m+".refusal_rate", ms.Ideas, 0)
	}
	ci := func(iv metrics.Interval) string {
		if math.IsNaN(iv.Estimate) {
			return "–"
		}
		if math.IsNaN(iv.Low) {
			return fmt.Sprintf("%.3f", iv.Estimate)
		}
		return fmt.Sprintf("%.3f [%.3f, %.3f]", iv.Estimate, iv.Low, iv.High)
	}
	// The leaderboard ranks by Average, best first; a model without one
	// (nothing scored) comes last, unranked.
	sort.SliceStable(all, func(i, j int) bool {
		a, b := all[i].Average, all[j].Average
		if math.IsNaN(a) != math.IsNaN(b) {
			return !math.IsNaN(a)
		}
		return a > b
	})
	lb := summary.Table{Title: "LiveIdeaBench leaderboard layout, ranked by Average (1–10; 95% CI: t for means, bootstrap for flexibility)",
		Columns: []string{"Rank", "Model", "Fluency", "Feasibility", "Originality", "Flexibility", "Average", "Clarity", "Average (5 dims)"}}
	cnt := summary.Table{Title: "Ideas, refusals, exclusions, unscored judgements, length",
		Columns: []string{"Model", "ideas", "refused (then fallback)", "refused twice (scored)", "excluded (length)", "unscored critiques", "unscored fluency", "critics: ideas with fewer than asked", "mean words", "Spearman(words, quality)"}}
	for i, ms := range all {
		rank, avg, avg5 := fmt.Sprint(i+1), fmt.Sprintf("%.3f", ms.Average), fmt.Sprintf("%.3f", ms.Average5)
		if math.IsNaN(ms.Average) {
			rank, avg = "–", "–"
		}
		if math.IsNaN(ms.Average5) {
			avg5 = "–"
		}
		lb.Rows = append(lb.Rows, []string{rank, ms.Model, ci(ms.Fluency), ci(ms.Feasibility), ci(ms.Originality), ci(ms.Flexibility),
			avg, ci(ms.Clarity), avg5})
		sp := "n/a"
		if ms.LengthSpearman.N > 2 && !math.IsNaN(ms.LengthSpearman.Statistic) {
			sp = fmt.Sprintf("ρ %.3f (p %.3f, n %d)", ms.LengthSpearman.Statistic, ms.LengthSpearman.P, ms.LengthSpearman.N)
		}
		cnt.Rows = append(cnt.Rows, []string{ms.Model, fmt.Sprint(ms.Ideas), fmt.Sprint(ms.Refused), fmt.Sprint(ms.RefusedTwice), fmt.Sprint(ms.Excluded),
			fmt.Sprint(ms.Critiques.Unscored), fmt.Sprint(ms.FluencyPairs.Unscored), fmt.Sprint(fewerCritics(byModel[ms.Model], s.cfg.CriticsPerIdea)), fmt.Sprintf("%.1f", ms.MeanWords), sp})
	}
	var catNames []string
	for c := range cats {
		catNames = append(catNames, c)
	}
	sort.Strings(catNames)
	heat := summary.Table{Title: "Per category (paper Fig. 3 heatmap data): mean per-keyword composite", Columns: append([]string{"Model"}, catNames...)}
	for _, ms := range all {
		row := []string{ms.Model}
		for _, c := range catNames {
			if v, ok := ms.Categories[c]; ok {
				row = append(row, fmt.Sprintf("%.2f", v))
			} else {
				row = append(row, "")
			}
		}
		heat.Rows = append(heat.Rows, row)
	}
	sum.Tables = append(sum.Tables, lb, cnt, heat)
	obs := criticScores(models, byModel)
	sum.Tables = append(sum.Tables, summary.JudgeTable("Critics: parse failures, mean score and leniency (score = mean of originality, feasibility, clarity; 1–10)", "(1–10)", obs))
	sum.Charts = append(sum.Charts, ideasCharts(all, catNames)...)
	if s.external != nil {
		sum.Tables = append(sum.Tables, s.externalTable(all))
	}
	s.notes(sum, decoded)
	return sum, nil
}

// addFigures adds a model's figures: each rests on judgements — critiques
// for the three critic scores, compared pairs for fluency — while the
// intervals are over ideas.
func addFigures(sum *summary.Summary, m string, ms ModelScores) {
	for _, f := range []struct {
		name, key   string
		iv          metrics.Interval
		n, unscored int
		method      string
	}{
		{"Originality", "originality", ms.Originality, ms.Critiques.N(), ms.Critiques.Unscored, "t over ideas"},
		{"Feasibility", "feasibility", ms.Feasibility, ms.Critiques.N(), ms.Critiques.Unscored, "t over ideas"},
		{"Clarity", "clarity", ms.Clarity, ms.Critiques.N(), ms.Critiques.Unscored, "t over ideas"},
		{"Fluency", "fluency", ms.Fluency, ms.FluencyPairs.N(), ms.FluencyPairs.Unscored, "t over keywords"},
		{"Flexibility", "flexibility", ms.Flexibility, ms.Flexibility.N, ms.Critiques.Unscored, "bootstrap over ideas"},
		{"Average", "average", metrics.Interval{Estimate: ms.Average, Low: math.NaN(), High: math.NaN(), N: ms.Flexibility.N}, ms.Flexibility.N, ms.Critiques.Unscored, ""},
	} {
		iv := f.iv
		iv.N = f.n
		fig := summary.IntervalFigure(m, "", f.name, m+"."+f.key, iv, f.unscored, f.method)
		switch f.key {
		case "originality", "feasibility", "clarity":
			fig = fig.Clip(1, 10) // the critics' 1–10 scale
		case "fluency":
			fig = fig.Clip(0, 10) // the grades' scores, 0 (or 1) to 10
		}
		fig.Headline = f.key != "clarity"
		sum.AddFigure(fig)
	}
}

// criticScores are every critique as a judge's score (the mean of its
// three scores) for the judge table.
func criticScores(models []string, byModel map[string][]ItemResult) []metrics.JudgeScore {
	var obs []metrics.JudgeScore
	for _, m := range models {
		for _, ir := range byModel[m] {
			for _, idea := range ir.Ideas {
				id := fmt.Sprintf("%s/%s/%d", m, ir.Keyword, idea.Index)
				for _, cr := range idea.Critiques {
					obs = append(obs, metrics.JudgeScore{Item: id, Judge: cr.Judge, Scored: cr.Scored,
						Score: float64(cr.Originality+cr.Feasibility+cr.Clarity) / 3})
				}
			}
		}
	}
	return obs
}

// externalTable is the Pearson correlation of the models' Average with the
// external benchmark's scores (--external).
func (s *Suite) externalTable(all []ModelScores) summary.Table {
	var x, y []float64
	for _, ms := range all {
		if v, ok := s.external[ms.Model]; ok {
			x, y = append(x, ms.Average), append(y, v)
		}
	}
	t := summary.Table{Title: "Correlation with the external benchmark (" + s.cfg.External + ")", Columns: []string{"models", "Pearson r", "p"}}
	if r, err := metrics.Pearson(x, y); err == nil {
		t.Rows = append(t.Rows, []string{fmt.Sprint(r.N), fmt.Sprintf("%.3f", r.Statistic), fmt.Sprintf("%.3f", r.P)})
	} else {
		t.Rows = append(t.Rows, []string{fmt.Sprint(len(x)), "n/a", err.Error()})
	}
	return t
}

// notes say how the scores were made: the panel, the critics per idea,
// flexibility's dimensions, the average, the idea filter and extraction.
func (s *Suite) notes(sum *summary.Summary, decoded []ItemResult) {
	if s.panel != nil {
		sum.Notes = append(sum.Notes, s.panel.Notes...)
	}
	flex := "originality, feasibility, clarity and fluency (the paper; current release)"
	board := "The December 2024 leaderboard (LiveIdeaBench-202412.csv) used the first release's scoring: its Fluency, Flexibility and Average are not comparable with these columns (--scoring first-release computes them its way)."
	if s.cfg.Scoring == "first-release" {
		flex = "originality, feasibility and fluency (first release)"
		board = "Scoring first-release: Fluency (A–D = 10/6.67/3.33/0), Flexibility and Average follow the December 2024 leaderboard (LiveIdeaBench-202412.csv); Clarity and Average (5 dims) are the current release's columns."
	}
	sum.Notes = append(sum.Notes,
		fmt.Sprintf("Scores per idea are the mean of its scored critics (%d sampled from the eligible panel); a critic whose reply never parsed abstains. Flexibility = 30th percentile (linear interpolation) over keywords of the mean of %s.", s.cfg.CriticsPerIdea, flex),
		"Average is the mean of fluency, feasibility, originality and flexibility (the December 2024 leaderboard's four); Average (5 dims) adds clarity (the current release). "+board,
		fmt.Sprintf("Ideas are scored when over %d and under %d characters and under %d words (the authors' filter); a reply refused twice is scored as written, as the authors' code does. \"Final Idea\" extraction: %s.",
			MinChars, MaxChars, MaxWords, map[string]string{"qwq": "only for qwq models, whose prompt asks for it (the authors' code)", "all": "every model, after a line that starts with a Final Idea marker"}[s.cfg.FinalIdea]))
	if u := capNotApplied(decoded, s.cfg.FamilyCap); u != "" {
		sum.Unapplied = append(sum.Unapplied, u)
		sum.Notes = append(sum.Notes, u)
	}
	if n := fewerCritics(decoded, s.cfg.CriticsPerIdea); n > 0 {
		sum.Notes = append(sum.Notes, fmt.Sprintf("%d scored ideas got fewer than %d critics (fewer eligible judges than asked; see the \"critics\" column)", n, s.cfg.CriticsPerIdea))
	}
}

// capNotApplied says, from the records, on how many items the panel's
// organisation cap was not applied and why ("" when it was on every one).
func capNotApplied(decoded []ItemResult, famCap float64) string {
	n, why := 0, ""
	for _, r := range decoded {
		if r.CapNotApplied != "" {
			n++
			why = r.CapNotApplied
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("--family-cap %g not applied on %d of %d items: %s", famCap, n, len(decoded), why)
}

// ideasCharts are the leaderboard's dimensions with their CIs, the
// originality–feasibility plane with its Pareto front (the paper's Fig. 4)
// and the per-category heatmap (Fig. 3).
func ideasCharts(all []ModelScores, cats []string) []summary.Chart {
	bars := summary.Chart{Kind: "bars", Title: "LiveIdeaBench dimensions per model (95% CI)", Y: "score (1–10)"}
	dims := []struct {
		name string
		get  func(ModelScores) metrics.Interval
	}{
		{"Fluency", func(m ModelScores) metrics.Interval { return m.Fluency }},
		{"Feasibility", func(m ModelScores) metrics.Interval { return m.Feasibility }},
		{"Originality", func(m ModelScores) metrics.Interval { return m.Originality }},
		{"Flexibility", func(m ModelScores) metrics.Interval { return m.Flexibility }},
		{"Clarity", func(m ModelScores) metrics.Interval { return m.Clarity }},
	}
	for _, ms := range all {
		bars.Groups = append(bars.Groups, ms.Model)
	}
	for _, d := range dims {
		se := summary.Series{Name: d.name}
		for _, ms := range all {
			se.AddInterval(d.get(ms))
		}
		bars.Series = append(bars.Series, se)
	}
	var xs, ys []float64
	for _, ms := range all {
		xs, ys = append(xs, ms.Originality.Estimate), append(ys, ms.Feasibility.Estimate)
	}
	front := metrics.ParetoFront(xs, ys)
	sc := summary.Chart{Kind: "scatter", Title: "Originality vs feasibility, Pareto front joined (paper Fig. 4)", X: "originality", Y: "feasibility"}
	for i, ms := range all {
		sc.Points = append(sc.Points, summary.Point{Label: ms.Model, X: summary.Num(xs[i]), Y: summary.Num(ys[i]), Front: front[i]})
	}
	heat := summary.Chart{Kind: "heatmap", Title: "Mean per-keyword composite by category (paper Fig. 3)", Groups: cats}
	for _, ms := range all {
		heat.Rows = append(heat.Rows, ms.Model)
		row := make([]summary.Num, len(cats))
		for i, c := range cats {
			row[i] = summary.Num(math.NaN())
			if v, ok := ms.Categories[c]; ok {
				row[i] = summary.Num(v)
			}
		}
		heat.Cells = append(heat.Cells, row)
	}
	return []summary.Chart{bars, sc, heat}
}

// score computes a model's LiveIdeaBench figures. firstRelease uses the
// first release's fluency scale and three-dimension flexibility.
func score(model string, items []ItemResult, seed uint64, firstRelease bool) ModelScores {
	ms := ModelScores{Model: model, Categories: map[string]float64{}}
	var or, fe, cl, flu, composites, words, quality []float64
	catComp := map[string][]float64{}
	var allWords []float64
	for _, ir := range items {
		var kor, kfe, kcl []float64
		for _, idea := range ir.Ideas {
			ms.Ideas++
			if idea.Refused != "" {
				ms.Refused++
			}
			if idea.Refusal2 != "" {
				ms.RefusedTwice++
			}
			if idea.Excluded != "" {
				ms.Excluded++
				continue
			}
			allWords = append(allWords, float64(idea.Words))
			var o, f, c []float64
			for _, cr := range idea.Critiques {
				if !cr.Scored {
					ms.Critiques.Skip()
					continue
				}
				ms.Critiques.Add(float64(cr.Originality))
				o, f, c = append(o, float64(cr.Originality)), append(f, float64(cr.Feasibility)), append(c, float64(cr.Clarity))
			}
			if len(o) == 0 {
				continue
			}
			io, ifv, ic := metrics.Mean(o), metrics.Mean(f), metrics.Mean(c)
			or, fe, cl = append(or, io), append(fe, ifv), append(cl, ic)
			kor, kfe, kcl = append(kor, io), append(kfe, ifv), append(kcl, ic)
			words = append(words, float64(idea.Words))
			quality = append(quality, (io+ifv+ic)/3)
		}
		var kflu []float64
		for _, fp := range ir.Fluency {
			if !fp.Scored {
				ms.FluencyPairs.Skip()
				continue
			}
			v := fp.Score
			if firstRelease {
				v, _ = metrics.FirstReleaseFluencyScore(fp.Grade)
			}
			ms.FluencyPairs.Add(v)
			kflu = append(kflu, v)
		}
		if len(kflu) > 0 {
			flu = append(flu, metrics.Mean(kflu))
		}
		if len(kor) > 0 && len(kflu) > 0 {
			comp := metrics.IdeaComposite(metrics.Mean(kor), metrics.Mean(kfe), metrics.Mean(kcl), metrics.Mean(kflu))
			if firstRelease {
				comp = metrics.IdeaComposite(metrics.Mean(kor), metrics.Mean(kfe), metrics.Mean(kflu))
			}
			composites = append(composites, comp)
			if ir.Category != "" {
				catComp[ir.Category] = append(catComp[ir.Category], comp)
			}
		}
	}
	ms.Originality = metrics.MeanCI(or, 0.95)
	ms.Feasibility = metrics.MeanCI(fe, 0.95)
	ms.Clarity = metrics.MeanCI(cl, 0.95)
	ms.Fluency = metrics.MeanCI(flu, 0.95)
	ms.Flexibility = metrics.BootstrapCI(composites, metrics.Flexibility, 2000, seed, 0.95)
	if len(composites) == 0 {
		ms.Flexibility = metrics.Interval{Estimate: math.NaN(), Low: math.NaN(), High: math.NaN()}
	}
	ms.Average = metrics.LeaderboardAverage(ms.Fluency.Estimate, ms.Feasibility.Estimate, ms.Originality.Estimate, ms.Flexibility.Estimate)
	ms.Average5 = metrics.Mean([]float64{ms.Originality.Estimate, ms.Feasibility.Estimate, ms.Clarity.Estimate, ms.Fluency.Estimate, ms.Flexibility.Estimate})
	ms.MeanWords = metrics.Mean(allWords)
	ms.LengthSpearman = metrics.TestResult{Statistic: math.NaN(), N: len(words)}
	if r, err := metrics.Spearman(words, quality); err == nil {
		ms.LengthSpearman = r
	}
	for c, v := range catComp {
		ms.Categories[c] = metrics.Mean(v)
	}
	return ms
}

// fewerCritics counts the scored ideas that got fewer critics than asked.
func fewerCritics(items []ItemResult, asked int) int {
	n := 0
	for _, ir := range items {
		for _, idea := range ir.Ideas {
			if idea.Excluded == "" && len(idea.Critiques) < asked {
				n++
			}
		}
	}
	return n
}

// Flag marks a record for the sample browser: an idea refused, critics
// whose originality scores lie 3 or more apart on the 1–10 scale.
func (s *Suite) Flag(rec rundir.Record) (summary.Flags, error) {
	var f summary.Flags
	ir, err := rundir.Decode[ItemResult](rec)
	if err != nil {
		return f, err
	}
	for _, idea := range ir.Ideas {
		f.Refused = f.Refused || idea.Refused != ""
		lo, hi := 11, 0
		for _, c := range idea.Critiques {
			if !c.Scored {
				f.Unscored = true
				continue
			}
			lo, hi = min(lo, c.Originality), max(hi, c.Originality)
		}
		f.Disagree = f.Disagree || hi-lo >= 3
	}
	return f, nil
}

// OtherReading puts in place, in each critique and fluency grading whose
// reply the two readers read differently, what the reader that did not
// decide read (engine.Suite.OtherReading).
func (s *Suite) OtherReading(recs *rundir.Records) *rundir.Records {
	return rundir.MapRecords(recs, func(ir *ItemResult) {
		for i := range ir.Ideas {
			for ci, c := range ir.Ideas[i].Critiques {
				if c.Other == nil && !c.OtherUnread {
					continue
				}
				o := Critique{Judge: c.Judge, Scored: !c.OtherUnread, Analysis: c.Analysis, OtherUnread: !c.Scored}
				if c.Other != nil {
					o.Originality, o.Feasibility, o.Clarity = c.Other.Originality, c.Other.Feasibility, c.Other.Clarity
				}
				if c.Scored {
					o.Other = &Scores{Originality: c.Originality, Feasibility: c.Feasibility, Clarity: c.Clarity}
				}
				ir.Ideas[i].Critiques[ci] = o
			}
		}
		for fi, f := range ir.Fluency {
			if f.OtherGrade == "" && !f.OtherUnread {
				continue
			}
			o := FluencyPair{A: f.A, B: f.B, Judge: f.Judge, Scored: !f.OtherUnread, Grade: f.OtherGrade, OtherGrade: f.Grade, OtherUnread: !f.Scored}
			if o.Scored {
				o.Score, _ = metrics.FluencyScore(o.Grade)
			}
			ir.Fluency[fi] = o
		}
	})
}
