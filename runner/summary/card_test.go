package summary

import (
	"regexp"
	"strings"
	"testing"

	"halu/metrics"
	"halu/runner/rundir"
)

// A low α is warned of only where it was measured: on at least
// minAlphaUnits pairable units. Three disagreeing pairs of a 1–5 score warn
// of nothing; thirty do.
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
		if got := lowAlpha(a, tc.n); got != tc.warn {
			t.Errorf("%d pairs, α %.2f: warned %v, want %v", tc.n, a, got, tc.warn)
		}
	}
}

// A panel α's cell shows its interval only where metrics.AlphaWarning lets
// it: from 100 pairable units, each label agreed on in 5 or more; from
// 100 units with a label agreed on in 3, α and why there is no interval;
// under 100 units, α alone.
func TestAlphaCellShowsTheIntervalOnlyWhereItHolds(t *testing.T) {
	panel := func(n, rareAgreed int) [][]float64 {
		var out [][]float64
		for i := range n {
			v := 0.0
			if i < rareAgreed {
				v = 1
			}
			out = append(out, []float64{v, v})
		}
		return append(out, []float64{1, 0}, []float64{0, 1}, []float64{1, 0})
	}
	for _, tc := range []struct {
		n, rare int
		want    string
	}{
		{120, 20, `^0\.\d\d \[-?\d\.\d\d, -?\d\.\d\d\] \(123 units\)$`},
		{120, 3, `^0\.\d\d \(123 units; no interval: coders agreed on the value 1 in 3 units`},
		{60, 20, `^0\.\d\d \(63 units\)$`},
	} {
		data := panel(tc.n, tc.rare)
		a, n, err := alphaN(metrics.AlphaNominal, data)
		if err != nil {
			t.Fatal(err)
		}
		if got := alphaWithCI(metrics.AlphaNominal, data, a, n, "units"); !regexp.MustCompile(tc.want).MatchString(got) {
			t.Errorf("%d units, the rare label agreed on in %d: %q, want %s", n, tc.rare, got, tc.want)
		}
	}
}

// The cost table counts each judge's calls in the records — repair turns
// and the card's checks apart, the checks' share — and its tokens.
func TestJudgeCostFromRecords(t *testing.T) {
	recs := []rundir.Record{{Calls: []rundir.CallLog{
		{Stage: "generate", Kind: "chat", Model: "gen", PromptTokens: 5, EvalTokens: 9},
		{Stage: "judge", Kind: "judge", Model: "j1", PromptTokens: 100, EvalTokens: 10, Confidence: &metrics.TokenConfidence{Tokens: 10, MeanLogprob: -0.2}},
		{Stage: "judge", Kind: "repair", Model: "j1", PromptTokens: 150, EvalTokens: 12, Confidence: &metrics.TokenConfidence{Tokens: 12, MeanLogprob: -0.6}},
		{Stage: "judge-retest", Kind: "judge", Model: "j1", PromptTokens: 100, EvalTokens: 10},
		{Stage: "judge", Kind: "judge", Model: "j2", PromptTokens: 90, EvalTokens: 8},
	}}}
	// j1's calls were made in a session (two of them; the third came from
	// the cache); j2's all came from the cache.
	tb, ok := costTable(recs, map[string]rundir.JudgeTime{"j1": {Calls: 2, Seconds: 3.25, ServerSeconds: 2.5}})
	if !ok || len(tb.Rows) != 2 {
		t.Fatalf("table %+v", tb)
	}
	if got := strings.Join(tb.Rows[0], "|"); got != "j1|3|1|1|33.3%|350|32|2|3.2 (2.5)|0.670 (2)" {
		t.Errorf("j1: %s", got)
	}
	if got := strings.Join(tb.Rows[1], "|"); got != "j2|1|0|0|0.0%|90|8|0|–|–" {
		t.Errorf("j2: %s", got)
	}
	if _, ok := costTable([]rundir.Record{{Calls: []rundir.CallLog{{Kind: "chat"}}}}, nil); ok {
		t.Error("a cost table for a run with no judge")
	}
}
