package summary

import (
	"fmt"
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
	tab, charts, ok := ConfidenceCheck("the gold labels", []ConfidenceGroup{{Model: "m", Setting: "kg", Units: units}, {Model: "m", Setting: "lit", Units: ten}})
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
	if _, _, ok := ConfidenceCheck("x", []ConfidenceGroup{{Model: "m", Units: []ConfidenceUnit{{Correct: true}}}}); ok {
		t.Error("a table of units without scores")
	}
	// A score the same for every unit (identical samples: agreement 1
	// everywhere) ranks nothing: no AUROC, no AURC, no chart — where a
	// ranking of ties would print 0.500 [0.298, 0.702].
	var same []ConfidenceUnit
	for i := 0; i < 12; i++ {
		same = append(same, ConfidenceUnit{Correct: i%2 == 0, Scores: map[string]float64{ScoreAgreement.Key: 1}})
	}
	tab, charts, _ = ConfidenceCheck("x", []ConfidenceGroup{{Model: "m", Setting: "s", Units: same}})
	if got := strings.Join(tab.Rows[0], " | "); got != "m | s | samples agreeing with the answer | 12 | 0 | 6 | – (the same score for every unit: it ranks nothing) | – (0.500) | –" || len(charts) != 0 {
		t.Errorf("a constant score: %s; %d charts", got, len(charts))
	}
}
