package summary

import (
	"math"
	"strings"
	"testing"

	"halu/metrics"
	"halu/runner/rundir"
)

// A low α is warned of only where it was measured: on at least
// minAlphaUnits pairable units, or when its bootstrap interval lies wholly
// below the tentative threshold. Three disagreeing pairs of a 1–5 score
// warn of nothing; thirty do.
func TestLowAlphaWarnedOnlyWhenMeasured(t *testing.T) {
	pairs := func(n int) [][]float64 {
		var out [][]float64
		for i := range n {
			out = append(out, []float64{float64(1 + i%5), float64(1 + (i+2)%5)})
		}
		return out
	}
	for _, tc := range []struct {
		n    int
		warn bool
	}{{3, false}, {30, true}} {
		a, err := metrics.KrippendorffInterval(pairs(tc.n))
		if err != nil {
			t.Fatal(err)
		}
		_, hi, ok := alphaCI(metrics.KrippendorffInterval, pairs(tc.n))
		if !ok {
			hi = math.NaN()
		}
		if got := lowAlpha(a, hi, tc.n); got != tc.warn {
			t.Errorf("%d pairs, α %.2f, upper %.2f: warned %v, want %v", tc.n, a, hi, got, tc.warn)
		}
	}
	// The interval is seeded: the same data, the same interval.
	lo1, hi1, _ := alphaCI(metrics.KrippendorffInterval, pairs(30))
	lo2, hi2, _ := alphaCI(metrics.KrippendorffInterval, pairs(30))
	if lo1 != lo2 || hi1 != hi2 || !(lo1 < hi1) {
		t.Errorf("interval [%v, %v] then [%v, %v]", lo1, hi1, lo2, hi2)
	}
}

// The cost table counts each judge's calls in the records — repair turns
// and the card's checks apart, the checks' share — and its tokens.
func TestJudgeCostFromRecords(t *testing.T) {
	recs := []rundir.Record{{Calls: []rundir.CallLog{
		{Stage: "generate", Kind: "chat", Model: "gen", PromptTokens: 5, EvalTokens: 9},
		{Stage: "judge", Kind: "judge", Model: "j1", PromptTokens: 100, EvalTokens: 10},
		{Stage: "judge", Kind: "repair", Model: "j1", PromptTokens: 150, EvalTokens: 12},
		{Stage: "judge-retest", Kind: "judge", Model: "j1", PromptTokens: 100, EvalTokens: 10},
		{Stage: "judge", Kind: "judge", Model: "j2", PromptTokens: 90, EvalTokens: 8},
	}}}
	tb, ok := costTable(recs)
	if !ok || len(tb.Rows) != 2 {
		t.Fatalf("table %+v", tb)
	}
	if got := strings.Join(tb.Rows[0], "|"); got != "j1|3|1|1|33.3%|350|32" {
		t.Errorf("j1: %s", got)
	}
	if got := strings.Join(tb.Rows[1], "|"); got != "j2|1|0|0|0.0%|90|8" {
		t.Errorf("j2: %s", got)
	}
	if _, ok := costTable([]rundir.Record{{Calls: []rundir.CallLog{{Kind: "chat"}}}}); ok {
		t.Error("a cost table for a run with no judge")
	}
}
