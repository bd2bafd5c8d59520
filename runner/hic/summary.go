package hic

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"

	"halu/embed"
	"halu/metrics"
	"halu/runner/engine"
	"halu/runner/rundir"
	"halu/runner/summary"
)

// Group is one row of the paper's Table 2: a model under one strategy at one
// temperature, with every figure the suite reports.
type Group struct {
	Model       string  `json:"model"`
	Strategy    string  `json:"strategy"`
	Temperature float64 `json:"temperature"`

	Answers  int `json:"answers"`
	Scored   int `json:"scored"`
	Unscored int `json:"unscored"`
	Ties     int `json:"panel_ties"`

	Or, Fe, Va float64
	IH, DH     int
	Overlap    int `json:"ih_and_dh"` // answers counted as both IH and DH
	IHRatio    float64
	DHRatio    float64
	Neutral    float64
	IFS        float64 // w1 = 0.6
	IIFS, RIFS float64

	Flu        float64 // mean pairwise similarity within a question, per domain then over domains
	FluAcross  float64 // Table 9: across questions
	FluIH      float64 // Table 9: among IH answers
	FluDH      float64 // Table 9: among DH answers
	Fle        float64 // population variance of per-question mean Originality
	KwPrec     float64
	KwPrecN    int
	Over70     float64 // share of answers over 70 cl100k tokens
	Over70Eval float64 // share over 70 by Ollama's eval count

	Domains     []DomainRow     `json:"domains"`
	perQuestion map[int]float64 // IH ratio per question, for the permutation test
	// or, fe, va, ifs (the IFS term of each answer), ih and dh are the
	// answers' tallies, which the figures rest on; ihVecs and dhVecs the
	// embeddings of IH and DH answers (Table 9).
	or, fe, va, ifs, ih, dh summary.Tally
	ihVecs, dhVecs          [][]float32
	AlphaOr                 float64          `json:"alpha_originality"`
	AlphaFe                 float64          `json:"alpha_feasibility"`
	AlphaVa                 float64          `json:"alpha_value"`
	AlphaHalluc             float64          `json:"alpha_hallucination"`
	HumanCompare            *HumanComparison `json:"human,omitempty"`
}

// DomainRow is one domain's figures (paper Figs. 3 and 5).
type DomainRow struct {
	Field   string  `json:"field"`
	Or      float64 `json:"or"`
	Fe      float64 `json:"fe"`
	Va      float64 `json:"va"`
	IHRatio float64 `json:"ih"`
	DHRatio float64 `json:"dh"`
	N       int     `json:"n"`
}

// HumanComparison is the paper's Table 8 check: precision and recall of the
// automatic IH and DH labels against human ones.
type HumanComparison struct {
	N                     int
	IHPrecision, IHRecall float64
	DHPrecision, DHRecall float64
}

// AnswerID names an answer for human labels: model/strategy/T<t>/q<id>/a<index>.
func AnswerID(model, strategy string, temp float64, q, a int) string {
	return fmt.Sprintf("%s/%s/T%g/q%03d/a%d", model, strategy, temp, q, a)
}

type scoredAnswer struct {
	q     QuestionResult
	a     Answer
	panel Panel
}

// groupKey names a Table 2 row: a model, strategy and temperature.
type groupKey struct {
	m, s string
	t    float64
}

// Summarize computes every HIC-Bench figure per (model, strategy,
// temperature).
func (s *Suite) Summarize(recs *rundir.Records) (*summary.Summary, error) {
	groups := map[groupKey][]ItemResult{}
	decoded, err := rundir.DecodeSorted[ItemResult](recs, nil)
	if err != nil {
		return nil, err
	}
	for _, ir := range decoded {
		k := groupKey{ir.Model, ir.Strategy, ir.Temperature}
		groups[k] = append(groups[k], ir)
	}
	var keys []groupKey
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.m != b.m {
			return a.m < b.m
		}
		if a.s != b.s {
			return strategyRank(a.s) < strategyRank(b.s)
		}
		return a.t > b.t
	})
	sum := &summary.Summary{Suite: "hic", Metrics: map[string]float64{}, Glossary: []summary.Term{
		{Abbr: "IH", Meaning: "intelligent hallucination — a share of answers the judges find original (Or ≥ 4), valuable (Va ≥ 4) and feasible (Fe ≥ 3)"},
		{Abbr: "DH", Meaning: "defective hallucination — a share of answers the judge panel's majority finds hallucinated"},
		{Abbr: "IFS", Meaning: "intelligent fidelity score, w1·IH + (1 − w1)·(1 − DH − IH) (eq. 3); IIFS, BIFS, RIFS its presets w1 = 0.9, 0.6, 0.1"},
		{Abbr: "Or, Fe, Va", Meaning: "originality, feasibility, value: the judges' 1–5 scores"},
		{Abbr: "Flu", Meaning: "fluency — mean embedding similarity of a question's answers (lower: more varied)"},
		{Abbr: "Fle", Meaning: "flexibility — variance over questions of their mean originality"},
		{Abbr: "kwPrec", Meaning: "keyword precision against the question's knowledge text (halu's word overlap)"},
		{Abbr: "P, T", Meaning: "prompting strategy (SCP, CoT, RAG, RCP, DHP) and temperature"},
	}}
	var rows []*Group
	for _, k := range keys {
		g := s.group(groups[k])
		g.Model, g.Strategy, g.Temperature = k.m, k.s, k.t
		rows = append(rows, g)
		addFigures(sum, g)
	}
	tables, th := s.tables(rows)
	sum.Tables = append(sum.Tables, tables...)
	obs := judgeScores(keys, groups)
	sum.Tables = append(sum.Tables, summary.JudgeTable("Judges: parse failures, mean score and leniency (score = mean of Or, Fe, Va; 1–5)", "(1–5)", obs))
	sum.Charts = append(sum.Charts, hicCharts(rows)...)
	if th.Title != "" {
		sum.Tables = append(sum.Tables, th)
	}
	if sig := significance(rows); len(sig.Rows) > 0 {
		sum.Tables = append(sum.Tables, sig)
	}
	rule := "a panel tie on hallucination counts as hallucinated"
	if !s.cfg.TieHallucinated {
		rule = "a panel tie on hallucination counts as not hallucinated"
	}
	sum.Notes = append(sum.Notes,
		"IH: panel-mean Originality ≥ 4, Value ≥ 4, Feasibility ≥ 3 (as the authors' code, IH ignores the hallucination verdict; IH∩DH counts answers that are both). DH: panel majority says hallucinated; "+rule+".",
		"IFS = w1·IH + (1−w1)·(1 − DH − IH) (eq. 3); ratios are over scored answers. A judge whose reply never parsed abstains; an answer no judge scored is unscored and left out.",
		answersNote(decoded, s.cfg),
		"Bars show 95% Wilson intervals over scored answers.",
		fluNote(s.cfg.EmbedModel),
		"kwPrec is halu's word-overlap keyword precision against the question's knowledge text, not UHGEval's LLM-extracted keywords; it is not comparable with published kwPrec.")
	if n, over := overCap(rows); n > 0 && over > 0 {
		sum.Notes = append(sum.Notes, fmt.Sprintf("%d of %d answers (%.1f%%) exceed the prompt's 70-token limit (cl100k tokens); the generation cap is %d tokens, as the authors' code, so the limit is the model's to keep.",
			over, n, 100*float64(over)/float64(n), s.cfg.MaxTokens))
	}
	if slices.ContainsFunc(s.cfg.Strategies, isDHP) {
		sum.Notes = append(sum.Notes, dhpNote(s.cfg.DHPPositive))
	}
	sum.Notes = append(sum.Notes, summary.PanelWarnings(s.cfg.Models, s.cfg.Judges)...)
	if n := s.unmatchedHuman(decoded); n > 0 {
		sum.Notes = append(sum.Notes, fmt.Sprintf("%d of %d human labels (--human) name no answer of this run (an answer index it did not make, or items not run yet): they are not in Table 8.", n, len(s.human)))
	}
	var conf []summary.ConfidenceGroup
	var n confidenceCounts
	for _, k := range keys {
		conf = append(conf, summary.ConfidenceGroup{Model: k.m, Setting: fmt.Sprintf("%s T%g", strings.ToUpper(k.s), k.t), Units: s.confidenceUnits(groups[k], &n)})
	}
	sum.AddConfidence("the panel's verdicts (an answer right where the panel does not judge it hallucinated: judge-made truth, see the judge card)", conf)
	if t, ok := expectedScores(decoded); ok {
		sum.Tables = append(sum.Tables, t)
	}
	if s.cfg.PTrue {
		sum.Notes = append(sum.Notes, fmt.Sprintf("P(True) (--p-true; Kadavath et al. 2022, Farquhar et al.'s zero-shot prompt): asked of %d answers, one call each; %s.", n.pTrueAsked, n.pTrueUnknowns()))
	}
	if s.cfg.Entailment != "" {
		sum.Notes = append(sum.Notes, fmt.Sprintf("semantic sets (--entailment %s; Kuhn et al. 2023's Algorithm 1, strict bidirectional entailment, Farquhar et al. 2024's prompt): %d of %d questions with two answers or more sorted; %d left unsorted because an entailment reply did not read (not guessed neutral, as the authors' code would). Semantic entropy (discrete, and probability-weighted where every answer's log-probabilities are known) is divided by ln k, k a question's answers (%d by --answers).",
			s.cfg.Entailment, n.questions-n.unsorted, n.questions, n.unsorted, s.cfg.Answers))
	}
	return sum, nil
}

// tables are the summary's tables of the groups: Table 2's layout, the
// IFS presets and counts, Table 9's similarities, the panel's agreement
// and the domains; th is Table 8's human comparison (no title when no
// group has human labels).
func (s *Suite) tables(rows []*Group) (tables []summary.Table, th summary.Table) {
	pct := func(x float64) string {
		if math.IsNaN(x) {
			return "–"
		}
		return fmt.Sprintf("%.2f%%", 100*x)
	}
	f2 := func(x float64) string {
		if math.IsNaN(x) {
			return "–"
		}
		return fmt.Sprintf("%.2f", x)
	}
	t2 := summary.Table{Title: "HIC-Bench Table 2 layout: creativity and hallucination per model and strategy",
		Columns: []string{"LLM", "P", "T", "Or↑", "Fe↑", "Va↑", "Flu↓ (" + s.cfg.EmbedModel + ")", "Fle↓", "IH↑", "DH↓", "IFS↑"}}
	t2b := summary.Table{Title: "IFS presets, overlap and counts",
		Columns: []string{"LLM", "P", "T", "IIFS (w1 .9)", "BIFS (w1 .6)", "RIFS (w1 .1)", "IH∩DH", "answers", "scored", "unscored", "panel ties", "kwPrec (word overlap)", ">70 tok (cl100k)", ">70 tok (eval)"}}
	t9 := summary.Table{Title: "Table 9 layout: similarity of answers (embedding cosine)",
		Columns: []string{"LLM", "P", "T", "within question (Flu)", "all answers (across questions)", "IH", "DH"}}
	tag := summary.Table{Title: "Judge-panel agreement (Krippendorff's α; needs ≥ 2 judges)",
		Columns: []string{"LLM", "P", "T", "α Or (interval)", "α Fe (interval)", "α Va (interval)", "α hallucination (nominal)"}}
	td := summary.Table{Title: "Per domain (paper Figs. 3 and 5)", Columns: []string{"LLM", "P", "T", "domain", "Or", "Fe", "Va", "IH", "DH", "answers"}}
	for _, g := range rows {
		id := []string{g.Model, strings.ToUpper(g.Strategy), fmt.Sprintf("%g", g.Temperature)}
		t2.Rows = append(t2.Rows, append(id, f2(g.Or), f2(g.Fe), f2(g.Va), pct(g.Flu), f2(g.Fle), pct(g.IHRatio), pct(g.DHRatio), pct(g.IFS)))
		t2b.Rows = append(t2b.Rows, append(append([]string(nil), id...), pct(g.IIFS), pct(g.IFS), pct(g.RIFS), fmt.Sprint(g.Overlap),
			fmt.Sprint(g.Answers), fmt.Sprint(g.Scored), fmt.Sprint(g.Unscored), fmt.Sprint(g.Ties),
			fmt.Sprintf("%s (n=%d)", pct(g.KwPrec), g.KwPrecN), pct(g.Over70), pct(g.Over70Eval)))
		t9.Rows = append(t9.Rows, append(append([]string(nil), id...), pct(g.Flu), pct(g.FluAcross), pct(g.FluIH), pct(g.FluDH)))
		tag.Rows = append(tag.Rows, append(append([]string(nil), id...), f2(g.AlphaOr), f2(g.AlphaFe), f2(g.AlphaVa), f2(g.AlphaHalluc)))
		for _, d := range g.Domains {
			td.Rows = append(td.Rows, append(append([]string(nil), id...), d.Field, f2(d.Or), f2(d.Fe), f2(d.Va), pct(d.IHRatio), pct(d.DHRatio), fmt.Sprint(d.N)))
		}
		if h := g.HumanCompare; h != nil {
			if th.Title == "" {
				th = summary.Table{Title: "Automatic vs human labels (paper Table 8, Appendix C)", Columns: []string{"LLM", "P", "T", "labelled", "IH precision", "IH recall", "DH precision", "DH recall"}}
			}
			th.Rows = append(th.Rows, append(append([]string(nil), id...), fmt.Sprint(h.N), pct(h.IHPrecision), pct(h.IHRecall), pct(h.DHPrecision), pct(h.DHRecall)))
		}
	}
	return []summary.Table{t2, t2b, t9, tag, td}, th
}

// ExpectedTitle heads the table of the judges' G-Eval expected scores.
const ExpectedTitle = "Judges' expected scores beside the scores read (G-Eval: each 1–5 score weighted by its probability at the score's token; --logprobs; not a headline)"

// expectedScores is, per judge and score, the mean score read and, over
// the judgements whose expected score is known, the mean expected score
// beside the mean read on those same judgements (paired: the difference is
// what weighting by probability changes). No table when none is known.
func expectedScores(decoded []ItemResult) (summary.Table, bool) {
	type acc struct {
		n, known       int
		read, pairRead float64
		expected       float64
	}
	by := map[[2]string]*acc{}
	seen := false
	for _, ir := range decoded {
		for _, q := range ir.Questions {
			for _, a := range q.Answers {
				for _, j := range a.Judgements {
					if !j.Scored || j.Verdict == nil {
						continue
					}
					for _, sc := range j.Verdict.Scores() {
						k := [2]string{j.Judge, sc.Name}
						if by[k] == nil {
							by[k] = &acc{}
						}
						x := by[k]
						x.n++
						x.read += float64(sc.Value)
						if e, ok := j.Expected[sc.Name]; ok {
							seen = true
							x.known++
							x.pairRead += float64(sc.Value)
							x.expected += e
						}
					}
				}
			}
		}
	}
	if !seen {
		return summary.Table{}, false
	}
	t := summary.Table{Title: ExpectedTitle, Columns: []string{"judge", "score", "judgements read", "mean read", "expected known", "mean expected", "mean read, same judgements"}}
	keys := slices.SortedFunc(maps.Keys(by), func(a, b [2]string) int {
		if a[0] != b[0] {
			return strings.Compare(a[0], b[0])
		}
		return strings.Compare(a[1], b[1])
	})
	for _, k := range keys {
		x := by[k]
		exp, pair := "–", "–"
		if x.known > 0 {
			exp, pair = fmt.Sprintf("%.2f", x.expected/float64(x.known)), fmt.Sprintf("%.2f", x.pairRead/float64(x.known))
		}
		t.Rows = append(t.Rows, []string{k[0], k[1], fmt.Sprint(x.n), fmt.Sprintf("%.2f", x.read/float64(x.n)), fmt.Sprint(x.known), exp, pair})
	}
	return t, true
}

// confidenceCounts are what the summary's notes say of the answers'
// confidence: questions with two answers or more and those whose sets
// were left out (an entailment reply that did not read); answers asked
// P(True) and those whose P(True) is not known, by cause.
type confidenceCounts struct {
	questions, unsorted     int
	pTrueAsked, pTrueUnread int
	pTrueWhy                map[string]int
}

// pTrueUnknowns says how many P(True) values are not known and why, the
// causes in a fixed order ("" where none is).
func (n confidenceCounts) pTrueUnknowns() string {
	if n.pTrueUnread == 0 {
		return "0 not known"
	}
	var parts []string
	for _, why := range []string{engine.PTrueNoLogprobs, engine.PTrueNoAlternative, engine.PTrueNoLetter, ""} {
		if k := n.pTrueWhy[why]; k > 0 {
			if why == "" {
				why = "cause not recorded (a record made before causes were kept)"
			}
			parts = append(parts, fmt.Sprintf("%d %s", k, why))
		}
	}
	return fmt.Sprintf("%d not known — %s — left out, not guessed", n.pTrueUnread, strings.Join(parts, "; "))
}

// confidenceUnits are a group's answers the panel scored, checked against
// its verdict, with the confidence scores each has: its generation's tokens
// (--logprobs; not for DHP answers cut from one reply), its P(True)
// (--p-true) and its question's semantic sets (--entailment): minus their
// semantic entropy and the share of the answers in its own set. A
// question's answers are one cluster (they share the question and its
// sample scores): their AUROC's interval is the clustered one. It adds
// the group's answers and questions to n.
func (s *Suite) confidenceUnits(items []ItemResult, n *confidenceCounts) (units []summary.ConfidenceUnit) {
	for _, ir := range items {
		for _, q := range ir.Questions {
			if len(q.Answers) >= 2 {
				n.questions++
				if q.SetsUnread > 0 {
					n.unsorted++
				}
			}
			sorted := len(q.Sets) == len(q.Answers) && len(q.Sets) >= 2
			for i, a := range q.Answers {
				if a.PTrue != nil || a.PTrueUnread {
					n.pTrueAsked++
				}
				if a.PTrueUnread {
					n.pTrueUnread++
					if n.pTrueWhy == nil {
						n.pTrueWhy = map[string]int{}
					}
					n.pTrueWhy[a.PTrueUnknown]++
				}
				pan := Aggregate(a.Judgements, s.cfg.TieHallucinated)
				if !pan.Scored {
					continue
				}
				u := summary.ConfidenceUnit{Correct: !pan.Hallucination, Scores: summary.TokenScores(a.Confidence), Cluster: fmt.Sprint(q.ID)}
				if u.Scores == nil {
					u.Scores = map[string]float64{}
				}
				if a.PTrue != nil {
					u.Scores[summary.ScorePTrue.Key] = *a.PTrue
				}
				if sorted {
					u.Scores[summary.ScoreNegSemanticEntropy.Key] = -metrics.NormalizedSemanticEntropy(q.Sets)
					lps := make([]float64, len(q.Answers))
					for j, b := range q.Answers {
						lps[j] = summary.MeanLogprob(b.Confidence)
					}
					if w := metrics.WeightedSemanticEntropy(q.Sets, lps); !math.IsNaN(w) {
						u.Scores[summary.ScoreNegWeightedSemanticEntropy.Key] = -w
					}
					same := 0
					for _, set := range q.Sets {
						if set == q.Sets[i] {
							same++
						}
					}
					u.Scores[summary.ScoreAgreement.Key] = float64(same) / float64(len(q.Sets))
				}
				units = append(units, u)
			}
		}
	}
	return units
}

// unmatchedHuman counts the human labels that name no answer of items.
func (s *Suite) unmatchedHuman(items []ItemResult) int {
	if len(s.human) == 0 {
		return 0
	}
	made := map[string]bool{}
	for _, ir := range items {
		for _, q := range ir.Questions {
			for _, a := range q.Answers {
				made[AnswerID(ir.Model, ir.Strategy, ir.Temperature, q.ID, a.Index)] = true
			}
		}
	}
	n := 0
	for id := range s.human {
		if !made[id] {
			n++
		}
	}
	return n
}

// addFigures adds a group's figures: Or, Fe, Va (means of 1–5), IH and DH
// (shares) and IFS, over its scored answers, and the other metrics.
func addFigures(sum *summary.Summary, g *Group) {
	prefix := fmt.Sprintf("%s/%s/T%g.", g.Model, g.Strategy, g.Temperature)
	for name, v := range map[string]float64{"iifs": g.IIFS, "rifs": g.RIFS, "flu": g.Flu, "fle": g.Fle, "kwprec": g.KwPrec, "over70": g.Over70} {
		sum.Metrics[prefix+name] = v
	}
	grp := fmt.Sprintf("%s T%g", strings.ToUpper(g.Strategy), g.Temperature)
	for _, t := range []struct {
		name string
		t    summary.Tally
	}{{"Or", g.or}, {"Fe", g.fe}, {"Va", g.va}} {
		sum.AddFigure(t.t.Mean(g.Model, grp, t.name, prefix+strings.ToLower(t.name)).Clip(1, 5))
	}
	ihf := g.ih.Share(g.Model, grp, "IH", prefix+"ih")
	dhf := g.dh.Share(g.Model, grp, "DH", prefix+"dh")
	dhf.Lower = true
	ifs := g.ifs.Mean(g.Model, grp, "IFS", prefix+"ifs").Clip(0, 1)
	ifs.Percent = true
	// The mean of the per-answer terms is eq. 3 of the ratios up to
	// rounding; Table 2 prints the figure's value, so the two pages
	// agree to the last digit.
	g.IFS = float64(ifs.Estimate)
	for _, f := range []summary.Figure{ihf, dhf, ifs} {
		f.Headline = true
		sum.AddFigure(f)
	}
	for _, name := range []string{"or", "fe", "va", "ih", "dh", "ifs", "iifs", "rifs", "fle"} {
		sum.SetSupport(prefix+name, g.Scored, g.Unscored)
	}
	sum.SetSupport(prefix+"over70", g.Answers, 0)
	sum.SetSupport(prefix+"kwprec", g.KwPrecN, 0)
}

// judgeScores are every judgement of every answer as a judge's score (the
// mean of Or, Fe and Va) for the judge table.
func judgeScores(keys []groupKey, groups map[groupKey][]ItemResult) []metrics.JudgeScore {
	var obs []metrics.JudgeScore
	for _, k := range keys {
		for _, ir := range groups[k] {
			for _, q := range ir.Questions {
				for _, a := range q.Answers {
					id := AnswerID(k.m, k.s, k.t, q.ID, a.Index)
					for _, j := range a.Judgements {
						o := metrics.JudgeScore{Item: id, Judge: j.Judge, Scored: j.Scored && j.Verdict != nil}
						if o.Scored {
							o.Score = float64(j.Verdict.Originality+j.Verdict.Feasibility+j.Verdict.Value) / 3
						}
						obs = append(obs, o)
					}
				}
			}
		}
	}
	return obs
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// hicCharts are the IH and DH ratios per model and strategy, and per domain
// (paper Figs. 3 and 5), with 95% Wilson intervals.
func hicCharts(rows []*Group) []summary.Chart {
	bars := summary.Chart{Kind: "bars", Title: "IH and DH ratio per model, strategy and temperature (95% Wilson CI)", Y: "share of scored answers"}
	ih := summary.Series{Name: "IH ↑"}
	dh := summary.Series{Name: "DH ↓"}
	for _, g := range rows {
		bars.Groups = append(bars.Groups, fmt.Sprintf("%s %s T%g", g.Model, strings.ToUpper(g.Strategy), g.Temperature))
		ih.AddProportion(g.IH, g.Scored)
		dh.AddProportion(g.DH, g.Scored)
	}
	bars.Series = []summary.Series{ih, dh}
	out := []summary.Chart{bars}
	for _, g := range rows {
		if len(g.Domains) == 0 {
			continue
		}
		c := summary.Chart{Kind: "bars", Title: fmt.Sprintf("Per domain: IH and DH ratio — %s %s T%g", g.Model, strings.ToUpper(g.Strategy), g.Temperature), Y: "share of scored answers"}
		dih := summary.Series{Name: "IH ↑"}
		ddh := summary.Series{Name: "DH ↓"}
		for _, d := range g.Domains {
			c.Groups = append(c.Groups, d.Field)
			dih.Values = append(dih.Values, summary.Num(d.IHRatio))
			ddh.Values = append(ddh.Values, summary.Num(d.DHRatio))
		}
		c.Series = []summary.Series{dih, ddh}
		out = append(out, c)
	}
	return out
}

func strategyRank(s string) int {
	for i, x := range Strategies {
		if x == s {
			return i
		}
	}
	return len(Strategies)
}

// group computes one Table 2 row from the items of one model, strategy
// and temperature.
func (s *Suite) group(items []ItemResult) *Group {
	g := &Group{perQuestion: map[int]float64{}}
	all, byQuestion, qOrder, qField := s.scoreAnswers(items)
	g.count(all, s.knowledge)
	g.fluency(qOrder, byQuestion, qField)
	g.domains(all)
	g.agreement(all, len(s.cfg.Judges))
	if s.human != nil && len(items) > 0 {
		g.HumanCompare = s.humanComparison(items[0], all)
	}
	return g
}

// scoreAnswers aggregates each answer's panel verdict, listing the answers
// in order and by question.
func (s *Suite) scoreAnswers(items []ItemResult) (all []scoredAnswer, byQuestion map[int][]scoredAnswer, qOrder []int, qField map[int]string) {
	byQuestion, qField = map[int][]scoredAnswer{}, map[int]string{}
	for _, ir := range items {
		for _, q := range ir.Questions {
			if _, ok := byQuestion[q.ID]; !ok {
				qOrder = append(qOrder, q.ID)
			}
			qField[q.ID] = q.Field
			for _, a := range q.Answers {
				sa := scoredAnswer{q: q, a: a, panel: Aggregate(a.Judgements, s.cfg.TieHallucinated)}
				all = append(all, sa)
				byQuestion[q.ID] = append(byQuestion[q.ID], sa)
			}
		}
	}
	sort.Ints(qOrder)
	return all, byQuestion, qOrder, qField
}

// count tallies the answers: every answer for length and kwPrec, each
// scored one (the panel scored it) for Or, Fe, Va, IH, DH and IFS, each
// unscored one counted as such; then the ratios and IFS presets.
func (g *Group) count(all []scoredAnswer, knowledge func(q int) string) {
	var kw []float64
	over, overEval := 0, 0
	for _, sa := range all {
		g.Answers++
		if sa.a.TokensCL100K > 70 {
			over++
		}
		if sa.a.EvalCount > 70 {
			overEval++
		}
		if k, err := metrics.KwPrec(sa.a.Text, knowledge(sa.q.ID)); err == nil {
			kw = append(kw, k)
		}
		if !sa.panel.Scored {
			for _, t := range g.tallies() {
				t.Skip()
			}
			continue
		}
		if sa.panel.Tie {
			g.Ties++
		}
		ih := metrics.IsIH(sa.panel.Originality, sa.panel.Feasibility, sa.panel.Value)
		g.or.Add(sa.panel.Originality)
		g.fe.Add(sa.panel.Feasibility)
		g.va.Add(sa.panel.Value)
		g.ifs.Add(metrics.IFS(b2f(ih), b2f(sa.panel.Hallucination), metrics.BIFSWeight))
		g.ih.Hit(ih)
		g.dh.Hit(sa.panel.Hallucination)
		if ih {
			g.ihVecs = append(g.ihVecs, sa.a.Embedding)
		}
		if sa.panel.Hallucination {
			g.dhVecs = append(g.dhVecs, sa.a.Embedding)
		}
		if ih && sa.panel.Hallucination {
			g.Overlap++
		}
	}
	g.Scored, g.Unscored, g.IH, g.DH = g.or.N(), g.or.Unscored, g.ih.Hits(), g.dh.Hits()
	nan := math.NaN()
	if g.Scored > 0 {
		n := float64(g.Scored)
		g.Or, g.Fe, g.Va = g.or.Sum()/n, g.fe.Sum()/n, g.va.Sum()/n
	} else {
		g.Or, g.Fe, g.Va = nan, nan, nan
	}
	g.IHRatio = metrics.Ratio(g.IH, g.Scored)
	g.DHRatio = metrics.Ratio(g.DH, g.Scored)
	g.Neutral = 1 - g.IHRatio - g.DHRatio
	g.IFS = metrics.IFS(g.IHRatio, g.DHRatio, metrics.BIFSWeight)
	g.IIFS = metrics.IFS(g.IHRatio, g.DHRatio, metrics.IIFSWeight)
	g.RIFS = metrics.IFS(g.IHRatio, g.DHRatio, metrics.RIFSWeight)
	g.KwPrec, g.KwPrecN = metrics.Mean(kw), len(kw)
	g.Over70 = metrics.Ratio(over, g.Answers)
	g.Over70Eval = metrics.Ratio(overEval, g.Answers)
}

// tallies are the group's per-answer tallies, each answer a unit of all.
func (g *Group) tallies() []*summary.Tally {
	return []*summary.Tally{&g.or, &g.fe, &g.va, &g.ifs, &g.ih, &g.dh}
}

// fluency is Flu (per question, then per domain, then over domains),
// Table 9's similarities, Fle and the per-question IH ratios.
func (g *Group) fluency(qOrder []int, byQuestion map[int][]scoredAnswer, qField map[int]string) {
	domainFlu := map[string][]float64{}
	var qMeansOr []float64
	var groupsVecs [][][]float32
	for _, qid := range qOrder {
		var vecs [][]float32
		var ors []float64
		var ih summary.Tally
		for _, sa := range byQuestion[qid] {
			vecs = append(vecs, sa.a.Embedding)
			if sa.panel.Scored {
				ors = append(ors, sa.panel.Originality)
				ih.Hit(metrics.IsIH(sa.panel.Originality, sa.panel.Feasibility, sa.panel.Value))
			}
		}
		groupsVecs = append(groupsVecs, vecs)
		if sim := embed.MeanPairwise(vecs); sim.Defined() {
			domainFlu[qField[qid]] = append(domainFlu[qField[qid]], sim.Mean)
		}
		if len(ors) > 0 {
			qMeansOr = append(qMeansOr, metrics.Mean(ors))
		}
		if ih.N() > 0 {
			g.perQuestion[qid] = metrics.Ratio(ih.Hits(), ih.N())
		}
	}
	var domMeans []float64
	var fields []string
	for f := range domainFlu {
		fields = append(fields, f)
	}
	sort.Strings(fields)
	for _, f := range fields {
		domMeans = append(domMeans, metrics.Mean(domainFlu[f]))
	}
	g.Flu = metrics.Mean(domMeans)
	g.FluAcross = simOrNaN(embed.MeanAcross(groupsVecs))
	g.FluIH = simOrNaN(embed.MeanPairwise(g.ihVecs))
	g.FluDH = simOrNaN(embed.MeanPairwise(g.dhVecs))
	g.Fle = metrics.PopulationVariance(qMeansOr)
}

// domains are the per-domain figures (paper Figs. 3 and 5) over scored
// answers.
func (g *Group) domains(all []scoredAnswer) {
	type dacc struct{ or, fe, va, n, ih, dh float64 }
	dom := map[string]*dacc{}
	for _, sa := range all {
		if !sa.panel.Scored {
			continue
		}
		d := dom[sa.q.Field]
		if d == nil {
			d = &dacc{}
			dom[sa.q.Field] = d
		}
		d.n++
		d.or += sa.panel.Originality
		d.fe += sa.panel.Feasibility
		d.va += sa.panel.Value
		if metrics.IsIH(sa.panel.Originality, sa.panel.Feasibility, sa.panel.Value) {
			d.ih++
		}
		if sa.panel.Hallucination {
			d.dh++
		}
	}
	var dnames []string
	for f := range dom {
		dnames = append(dnames, f)
	}
	sort.Strings(dnames)
	for _, f := range dnames {
		d := dom[f]
		g.Domains = append(g.Domains, DomainRow{Field: f, Or: d.or / d.n, Fe: d.fe / d.n, Va: d.va / d.n, IHRatio: d.ih / d.n, DHRatio: d.dh / d.n, N: int(d.n)})
	}
}

// agreement is the panel's Krippendorff α per score (interval) and for
// the hallucination verdict (nominal); NaN with fewer than two judges.
func (g *Group) agreement(all []scoredAnswer, judges int) {
	nan := math.NaN()
	g.AlphaOr, g.AlphaFe, g.AlphaVa, g.AlphaHalluc = nan, nan, nan, nan
	if judges < 2 {
		return
	}
	var or, fe, va, ha [][]float64
	for _, sa := range all {
		uo, uf, uv, uh := make([]float64, judges), make([]float64, judges), make([]float64, judges), make([]float64, judges)
		for i := range uo {
			uo[i], uf[i], uv[i], uh[i] = nan, nan, nan, nan
		}
		for i, j := range sa.a.Judgements {
			if i < len(uo) && j.Scored && j.Verdict != nil {
				uo[i], uf[i], uv[i] = float64(j.Verdict.Originality), float64(j.Verdict.Feasibility), float64(j.Verdict.Value)
				uh[i] = 0
				if j.Verdict.Hallucination {
					uh[i] = 1
				}
			}
		}
		or, fe, va, ha = append(or, uo), append(fe, uf), append(va, uv), append(ha, uh)
	}
	g.AlphaOr, _ = metrics.KrippendorffInterval(or)
	g.AlphaFe, _ = metrics.KrippendorffInterval(fe)
	g.AlphaVa, _ = metrics.KrippendorffInterval(va)
	g.AlphaHalluc, _ = metrics.KrippendorffNominal(ha)
}

// humanComparison is Table 8's check of the automatic labels against the
// human ones given (nil when no scored answer has one); first names the
// group.
func (s *Suite) humanComparison(first ItemResult, all []scoredAnswer) *HumanComparison {
	h := &HumanComparison{}
	var tpIH, fpIH, fnIH, tpDH, fpDH, fnDH int
	for _, sa := range all {
		lab, ok := s.human[AnswerID(first.Model, first.Strategy, first.Temperature, sa.q.ID, sa.a.Index)]
		if !ok || !sa.panel.Scored {
			continue
		}
		h.N++
		autoIH := metrics.IsIH(sa.panel.Originality, sa.panel.Feasibility, sa.panel.Value)
		count(autoIH, lab == "IH", &tpIH, &fpIH, &fnIH)
		count(sa.panel.Hallucination, lab == "DH", &tpDH, &fpDH, &fnDH)
	}
	if h.N == 0 {
		return nil
	}
	h.IHPrecision, h.IHRecall = metrics.Ratio(tpIH, tpIH+fpIH), metrics.Ratio(tpIH, tpIH+fnIH)
	h.DHPrecision, h.DHRecall = metrics.Ratio(tpDH, tpDH+fpDH), metrics.Ratio(tpDH, tpDH+fnDH)
	return h
}

func count(auto, human bool, tp, fp, fn *int) {
	switch {
	case auto && human:
		*tp++
	case auto && !human:
		*fp++
	case !auto && human:
		*fn++
	}
}

func simOrNaN(s embed.Similarity) float64 {
	if !s.Defined() {
		return math.NaN()
	}
	return s.Mean
}

func (s *Suite) knowledge(id int) string {
	for _, q := range s.questions {
		if q.ID == id {
			return q.Knowledge
		}
	}
	return ""
}

// significance runs the paired sign-flip test (Appendix B.3) on per-question
// IH ratios for every pair of rows that share questions.
func significance(rows []*Group) summary.Table {
	t := summary.Table{Title: "Paired permutation test of IH ratios (two-sided, 10,000 sign flips, seed 1; Appendix B.3)",
		Columns: []string{"A", "B", "questions", "mean IH diff (A−B)", "SE", "p"}}
	// All pairs of many groups would be a long table of mostly
	// meaningless contrasts: above 8 groups only pairs that differ in one
	// respect are tested (same model, or same strategy and temperature).
	limited := len(rows) > 8
	if limited {
		t.Title += fmt.Sprintf(" — %d groups: only pairs with the same model, or the same strategy and temperature", len(rows))
	}
	name := func(g *Group) string {
		return fmt.Sprintf("%s/%s/T%g", g.Model, strings.ToUpper(g.Strategy), g.Temperature)
	}
	for i := 0; i < len(rows); i++ {
		for j := i + 1; j < len(rows); j++ {
			a, b := rows[i], rows[j]
			if limited && a.Model != b.Model && (a.Strategy != b.Strategy || a.Temperature != b.Temperature) {
				continue
			}
			var d []float64
			var qs []int
			for q := range rows[i].perQuestion {
				if _, ok := rows[j].perQuestion[q]; ok {
					qs = append(qs, q)
				}
			}
			sort.Ints(qs)
			for _, q := range qs {
				d = append(d, rows[i].perQuestion[q]-rows[j].perQuestion[q])
			}
			if len(d) < 2 {
				continue
			}
			r, err := metrics.SignFlipTest(d, 10000, 1)
			if err != nil {
				continue
			}
			t.Rows = append(t.Rows, []string{name(rows[i]), name(rows[j]), fmt.Sprint(len(d)), fmt.Sprintf("%+.4f", r.MeanDiff), fmt.Sprintf("%.4f", r.SE), fmt.Sprintf("%.4f", r.P)})
		}
	}
	return t
}

// answersNote says how replies became answers, as the authors' code does:
// an SCP, CoT, RAG or RCP reply is one answer judged whole (though every
// prompt says "There is a blank line between the answers", so a reply may
// hold several), and a DHP reply is cut at blank lines (--dhp-answers
// split). It counts both.
func answersNote(items []ItemResult, cfg Config) string {
	whole, multi, splitReplies, splitAnswers, empty := 0, 0, 0, 0, 0
	for _, ir := range items {
		for _, q := range ir.Questions {
			if q.Split {
				splitReplies++
				splitAnswers += len(q.Answers)
				empty += q.EmptyParts
				continue
			}
			for _, a := range q.Answers {
				whole++
				if strings.Contains(a.Text, "\n\n") {
					multi++
				}
			}
		}
	}
	note := fmt.Sprintf("Replies judged whole, one answer each (the authors' code for SCP, CoT, RAG and RCP, sampled independently with seed + answer index): %d, of which %d hold blank-line-separated parts (every prompt says \"There is a blank line between the answers\").", whole, multi)
	if splitReplies > 0 {
		note += fmt.Sprintf(" DHP replies cut at blank lines into answers, as the authors' code: %d replies gave %d answers (%d empty parts left out).", splitReplies, splitAnswers, empty)
	}
	return note
}

// fluNote names the encoder behind Flu and the similarity columns, and says
// when it is not the paper's.
func fluNote(model string) string {
	if strings.Contains(strings.ToLower(model), "simcse") {
		return "Similarities (Flu, Table 9) use " + model + ", a SimCSE encoder as the paper (sup-simcse-bert-base-uncased, pooler output); Flu averages per question, then per domain, then over domains."
	}
	return "Similarities (Flu, Table 9) use " + model + ", not the paper's SimCSE (sup-simcse-bert-base-uncased): Flu is not comparable with Table 2's; import a SimCSE encoder as an embedding model and pass --embed-model to compare. Flu averages per question, then per domain, then over domains."
}

// overCap counts answers and those over the prompt's 70-token limit.
func overCap(rows []*Group) (n, over int) {
	for _, g := range rows {
		if g.Answers > 0 {
			n += g.Answers
			over += int(math.Round(g.Over70 * float64(g.Answers)))
		}
	}
	return n, over
}

// Flag marks a record for the sample browser: an answer the panel judged
// hallucinated (DH), judges that disagree on hallucination.
func (s *Suite) Flag(rec rundir.Record) (summary.Flags, error) {
	var f summary.Flags
	ir, err := rundir.Decode[ItemResult](rec)
	if err != nil {
		return f, err
	}
	for _, q := range ir.Questions {
		for _, a := range q.Answers {
			p := Aggregate(a.Judgements, s.cfg.TieHallucinated)
			f.Hallucinated = f.Hallucinated || p.Scored && p.Hallucination
			f.Unscored = f.Unscored || !p.Scored
			seen := map[bool]bool{}
			for _, j := range a.Judgements {
				if j.Scored && j.Verdict != nil {
					seen[j.Verdict.Hallucination] = true
				}
			}
			f.Disagree = f.Disagree || len(seen) > 1
		}
	}
	return f, nil
}

// OtherReading puts in place, in each judgement whose reply the two
// readers read differently, the verdict of the reader that did not decide
// (engine.Suite.OtherReading).
func (s *Suite) OtherReading(recs *rundir.Records) *rundir.Records {
	return rundir.MapRecords(recs, func(ir *ItemResult) {
		for qi := range ir.Questions {
			for ai := range ir.Questions[qi].Answers {
				for ji, j := range ir.Questions[qi].Answers[ai].Judgements {
					if j.Other == nil && !j.OtherUnread {
						continue
					}
					ir.Questions[qi].Answers[ai].Judgements[ji] = Judgement{Judge: j.Judge, Scored: !j.OtherUnread, Verdict: j.Other, Other: j.Verdict, OtherUnread: !j.Scored}
				}
			}
		}
	})
}

// MethodDepartures are where HIC-Bench's method is not the paper's
// whatever the settings (engine.Suite.Departures).
func (s *Suite) MethodDepartures() []string {
	return []string{"Flu: the paper's SimCSE similarity is BERT's pooler output; an embedding model served by Ollama or an OpenAI-compatible server returns pooled token embeddings without BERT's pooler layer, so Flu can be close to the paper's, not equal"}
}

// dhpNote names how DHP's examples were chosen, where the paper and the
// authors' code differ.
func dhpNote(positive string) string {
	const judge = " DHP answers are judged with dhp.py's own system prompt (EVALUATION_SYSTEM_PROMPT's words without line breaks), as the authors' DHP code."
	if positive == "question" {
		return "DHP: the positive example is the best answer (Or ≥ 4, Fe ≥ 3, Va ≥ 4, by Or+Fe+Va) of the latest question that had one, as the authors' dhp.py (--dhp-positive question); Algorithm 1 of the paper keeps the best so far over all questions (--dhp-positive running)." + judge
	}
	return "DHP: the positive example is the best answer so far over all questions (Or ≥ 4, Fe ≥ 3, Va ≥ 4, by Or+Fe+Va), as Algorithm 1 of the paper reads (--dhp-positive running); the authors' dhp.py starts afresh at each question (--dhp-positive question)." + judge
}
