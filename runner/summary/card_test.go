package summary

import (
	"math"
	"testing"

	"halu/metrics"
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
