package summary

import (
	"math/rand/v2"
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
	// The interval is seeded: the same data, the same interval.
	lo1, hi1, _ := alphaCI(metrics.KrippendorffInterval, pairs(120))
	lo2, hi2, _ := alphaCI(metrics.KrippendorffInterval, pairs(120))
	if lo1 != lo2 || hi1 != hi2 || !(lo1 < hi1) {
		t.Errorf("interval [%v, %v] then [%v, %v]", lo1, hi1, lo2, hi2)
	}
}

// TestAlphaCoverage simulates α's bootstrap interval (alphaCI) for two
// coders of a yes/no label: prevalence 0.2–0.5, agreement 0.6–0.95 (α
// 0.20–0.85, the truth from 200,000 units), at minAlphaInterval and 200
// units, 300 runs a regime (seeded): where the card shows the interval, it
// must cover 92–97.5%. (At 50 units it covered as little as 87.7%, at 20
// 57%: the card shows no interval there.) Slow under -race: make test-slow
// runs it.
func TestAlphaCoverage(t *testing.T) {
	if testing.Short() {
		t.Skip("slow (seconds; a minute under -race): make test-slow runs it, and CI")
	}
	rng := rand.New(rand.NewPCG(9, 9))
	gen := func(n int, prev, agree float64) [][]float64 {
		out := make([][]float64, n)
		for i := range out {
			a := 0.0
			if rng.Float64() < prev {
				a = 1
			}
			b := a
			if rng.Float64() > agree {
				b = 1 - a
			}
			out[i] = []float64{a, b}
		}
		return out
	}
	for _, c := range []struct{ prev, agree float64 }{{0.5, 0.9}, {0.3, 0.8}, {0.2, 0.95}, {0.5, 0.6}} {
		truth, _ := metrics.KrippendorffNominal(gen(200000, c.prev, c.agree))
		for _, n := range []int{minAlphaInterval, 200} {
			cover, runs := 0, 300
			for range runs {
				if lo, hi, ok := alphaCI(metrics.KrippendorffNominal, gen(n, c.prev, c.agree)); ok && lo <= truth && truth <= hi {
					cover++
				}
			}
			cv := float64(cover) / float64(runs)
			t.Logf("prevalence %.1f, agreement %.2f (α %.2f), %d units: coverage %.3f", c.prev, c.agree, truth, n, cv)
			if cv < 0.92 || cv > 0.975 {
				t.Errorf("α %.2f, %d units: coverage %.3f outside 0.92–0.975", truth, n, cv)
			}
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
