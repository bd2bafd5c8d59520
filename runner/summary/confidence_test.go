package summary

import (
	"fmt"
	"halu/metrics"
	"math"
	"strings"
	"testing"
)

// Rows computed by hand: four answers whose mean log-probability orders
// the right ones (−0.1, −0.3) above the wrong (−0.5, −0.9): AUROC 1 (too
// few of each kind for an interval), risk at coverage 1…4 is 0, 0,
// 1/3, 2/4 — AURC 0.208 beside the error rate 0.5 — and the most confident
// tenth (1 answer) is right. A score measured on one kind only has no
// AUROC; a score no unit has makes no row, and no score at all no table.
func TestConfidenceTable(t *testing.T) {
	units := []ConfidenceUnit{
		{Correct: true, Scores: map[string]float64{ScoreMeanLogprob.Key: -0.1, ScoreAgreement.Key: 1}},
		{Correct: false, Scores: map[string]float64{ScoreMeanLogprob.Key: -0.5}},
		{Correct: true, Scores: map[string]float64{ScoreMeanLogprob.Key: -0.3, ScoreNegEntropy.Key: math.NaN()}},
		{Correct: false, Scores: map[string]float64{ScoreMeanLogprob.Key: -0.9}},
	}
	// Ten answers, scores 1…10, the five highest right: AUROC 1, taken as
	// 0.98 for its interval: Hanley–McNeil var 0.0023976, logit se 2.49827,
	// logit(0.98) = 3.89182 ± 1.96·se gives (0.268, 1.000); risk 0 five
	// times, then 1/6, 2/7, 3/8, 4/9, 5/10: AURC 0.177.
	var ten []ConfidenceUnit
	for i := 1; i <= 10; i++ {
		ten = append(ten, ConfidenceUnit{Correct: i > 5, Scores: map[string]float64{ScoreMinLogprob.Key: float64(i)}})
	}
	tab, charts, figs, ok := ConfidenceCheck("the gold labels", []ConfidenceGroup{{Model: "m", Setting: "kg", Units: units}, {Model: "m", Setting: "lit", Units: ten}})
	if !ok || len(tab.Rows) != 3 {
		t.Fatalf("ok %v, rows %v", ok, tab.Rows)
	}
	want := [][]string{
		{"m", "kg", "mean token log-prob", "4", "0", "2", "1.000 (no interval: 2 right, 2 wrong; it needs 5 of each)", "0.208 (0.500)", "0% of 1"},
		{"m", "kg", "samples agreeing with the answer", "1", "3", "0", "– (one class only)", "0.000 (0.000)", "0% of 1"},
		{"m", "lit", "least token log-prob", "10", "0", "5", "1.000 [0.268, 1.000]", "0.177 (0.500)", "0% of 1"},
	}
	for i := range want {
		if strings.Join(tab.Rows[i], " | ") != strings.Join(want[i], " | ") {
			t.Errorf("row %d:\n got %v\nwant %v", i, tab.Rows[i], want[i])
		}
	}
	if len(charts) != 2 || len(charts[0].Series) != 1 || fmt.Sprint(charts[0].Series[0].X, charts[0].Series[0].Values) != "[0 0 0 0.5 1] [0 0.5 1 1 1]" {
		t.Errorf("ROC chart %+v", charts)
	}
	// The same figures as the long export's rows: each row's AUROC (its
	// interval only where the table shows one, else why not), AURC and
	// confident-wrong share, with n and the units not known.
	wantFigs := []string{
		"m kg AUROC (mean token log-prob) m/kg.confidence.mean_logprob.auroc 1.000 [–, –] n=4 unscored=0 no interval: 2 right, 2 wrong; it needs 5 of each",
		"m kg AURC (mean token log-prob) m/kg.confidence.mean_logprob.aurc 0.208 [–, –] n=4 unscored=0 ",
		"m kg confident-wrong (mean token log-prob) m/kg.confidence.mean_logprob.confident_wrong 0.000 [–, –] n=4 unscored=0 ",
		"m kg AUROC (samples agreeing with the answer) m/kg.confidence.agreement.auroc – [–, –] n=1 unscored=3 one class only: every unit right, or every one wrong",
		"m kg AURC (samples agreeing with the answer) m/kg.confidence.agreement.aurc 0.000 [–, –] n=1 unscored=3 ",
		"m kg confident-wrong (samples agreeing with the answer) m/kg.confidence.agreement.confident_wrong 0.000 [–, –] n=1 unscored=3 ",
		"m lit AUROC (least token log-prob) m/lit.confidence.min_logprob.auroc 1.000 [0.268, 1.000] n=10 unscored=0 ",
		"m lit AURC (least token log-prob) m/lit.confidence.min_logprob.aurc 0.177 [–, –] n=10 unscored=0 ",
		"m lit confident-wrong (least token log-prob) m/lit.confidence.min_logprob.confident_wrong 0.000 [–, –] n=10 unscored=0 ",
	}
	num := func(x Num) string {
		if math.IsNaN(float64(x)) {
			return "–"
		}
		return fmt.Sprintf("%.3f", float64(x))
	}
	if len(figs) != len(wantFigs) {
		t.Fatalf("%d figures, want %d", len(figs), len(wantFigs))
	}
	for i, f := range figs {
		got := fmt.Sprintf("%s %s %s %s %s [%s, %s] n=%d unscored=%d %s", f.Model, f.Group, f.Metric, f.Key, num(f.Estimate), num(f.Lo), num(f.Hi), f.N, f.Unscored, f.Warning)
		if got != wantFigs[i] {
			t.Errorf("figure %d:\n got %s\nwant %s", i, got, wantFigs[i])
		}
		if f.Headline {
			t.Errorf("%s: a confidence figure is no headline", f.Key)
		}
	}
	if _, _, _, ok := ConfidenceCheck("x", []ConfidenceGroup{{Model: "m", Units: []ConfidenceUnit{{Correct: true}}}}); ok {
		t.Error("a table of units without scores")
	}
	// A score the same for every unit (identical samples: agreement 1
	// everywhere) ranks nothing: no AUROC, no AURC, no chart — where a
	// ranking of ties would print 0.500 [0.298, 0.702].
	var same []ConfidenceUnit
	for i := 0; i < 12; i++ {
		same = append(same, ConfidenceUnit{Correct: i%2 == 0, Scores: map[string]float64{ScoreAgreement.Key: 1}})
	}
	tab, charts, figs, _ = ConfidenceCheck("x", []ConfidenceGroup{{Model: "m", Setting: "s", Units: same}})
	if len(figs) != 1 || !math.IsNaN(float64(figs[0].Estimate)) || figs[0].Warning == "" {
		t.Errorf("a constant score's figures: %+v", figs)
	}
	if got := strings.Join(tab.Rows[0], " | "); got != "m | s | samples agreeing with the answer | 12 | 0 | 6 | – (the same score for every unit: it ranks nothing) | – (0.500) | –" || len(charts) != 0 {
		t.Errorf("a constant score: %s; %d charts", got, len(charts))
	}
}

// Answers that share questions (Cluster) get the clustered interval
// (metrics.ClusteredAUROCInterval, hand-checked there), marked "by
// question" and named in the long export; under metrics.MinClusters
// questions they get none, with the reason; units of their own keep
// Hanley–McNeil's.
func TestConfidenceClusteredByQuestion(t *testing.T) {
	group := func(questions int, clustered bool) []ConfidenceGroup {
		var units []ConfidenceUnit
		for q := range questions {
			for a := range 4 {
				u := ConfidenceUnit{Correct: a%2 == 0, Scores: map[string]float64{ScoreMeanLogprob.Key: float64(q%3) + float64(a)/3}}
				if clustered {
					u.Cluster = fmt.Sprint(q)
				}
				units = append(units, u)
			}
		}
		return []ConfidenceGroup{{Model: "m", Setting: "SCP", Units: units}}
	}
	cell := func(g []ConfidenceGroup) (string, Figure) {
		tb, _, figs, ok := ConfidenceCheck("truth", g)
		if !ok || len(tb.Rows) != 1 {
			t.Fatalf("table %+v", tb)
		}
		return tb.Rows[0][6], figs[0]
	}
	got, f := cell(group(20, true))
	var conf []float64
	var correct []bool
	var cl []string
	for _, u := range group(20, true)[0].Units {
		conf, correct, cl = append(conf, u.Scores[ScoreMeanLogprob.Key]), append(correct, u.Correct), append(cl, "cluster "+u.Cluster)
	}
	a, lo, hi := metrics.ClusteredAUROCInterval(conf, correct, cl, 0.95)
	if want := fmt.Sprintf("%.3f [%.3f, %.3f] by question", a, lo, hi); got != want || f.Interval != "Obuchowski, clustered by question, logit" || float64(f.Lo) != lo {
		t.Errorf("20 questions: %q (%s), want %q", got, f.Interval, want)
	}
	if got, f := cell(group(19, true)); !strings.Contains(got, "no interval: answers share 19 questions; the clustered interval needs 20") || f.Warning == "" {
		t.Errorf("19 questions: %q, warning %q", got, f.Warning)
	}
	if got, f := cell(group(20, false)); strings.Contains(got, "by question") || f.Interval != "Hanley–McNeil, logit" {
		t.Errorf("units of their own: %q (%s)", got, f.Interval)
	}
}

// Answers clustered by question whose score separates right from wrong
// (AUROC 1) get no interval, with the reason — never a zero-width one.
func TestConfidenceClusteredSeparation(t *testing.T) {
	var units []ConfidenceUnit
	for q := range 20 {
		units = append(units,
			ConfidenceUnit{Correct: true, Scores: map[string]float64{ScoreMeanLogprob.Key: 1 + float64(q)/100}, Cluster: fmt.Sprint(q)},
			ConfidenceUnit{Correct: false, Scores: map[string]float64{ScoreMeanLogprob.Key: -1 - float64(q)/100}, Cluster: fmt.Sprint(q)})
	}
	tb, _, figs, ok := ConfidenceCheck("truth", []ConfidenceGroup{{Model: "m", Setting: "SCP", Units: units}})
	if !ok || len(tb.Rows) != 1 || !strings.HasPrefix(tb.Rows[0][6], "1.000 (no interval: the clustered variance is zero") || figs[0].Warning == "" || !math.IsNaN(float64(figs[0].Lo)) {
		t.Errorf("row %v, figure %+v", tb.Rows, figs[0])
	}
}
