package metrics

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"sync"
	"testing"
)

// AlphaCI is seeded (the same data, the same interval), contains α, and
// AlphaWarning names what an interval rests on when it is too little.
func TestAlphaCIAndWarning(t *testing.T) {
	var yes, rare [][]float64
	for i := range 120 {
		a, b := float64(i%2), float64(i%2)
		if i%10 == 0 {
			b = 1 - a
		}
		yes = append(yes, []float64{a, b})
		r := 0.0
		if i < 3 {
			r = 1 // the coders agree on "1" in 3 units only
		}
		rare = append(rare, []float64{r, r})
	}
	rare = append(rare, []float64{1, 0}, []float64{0, 1})
	a, _ := KrippendorffNominal(yes)
	lo1, hi1, ok1 := AlphaCI(AlphaNominal, yes, 0.95)
	lo2, hi2, ok2 := AlphaCI(AlphaNominal, yes, 0.95)
	if !ok1 || !ok2 || lo1 != lo2 || hi1 != hi2 || !(lo1 < a && a < hi1) {
		t.Errorf("α %.3f: interval [%v, %v] then [%v, %v]", a, lo1, hi1, lo2, hi2)
	}
	for _, tc := range []struct {
		m    AlphaMetric
		data [][]float64
		want string
	}{
		{AlphaNominal, yes, ""},
		{AlphaNominal, yes[:99], "α rests on 99 pairable units"},
		{AlphaNominal, rare, "coders agreed on the value 1 in 3 units"},
		{AlphaInterval, rare, ""}, // the floor is nominal data's
		{AlphaNominal, append(yes, []float64{1, math.NaN()}), ""},
	} {
		got := AlphaWarning(tc.m, tc.data)
		if (tc.want == "") != (got == "") || len(tc.want) > len(got) || got[:len(tc.want)] != tc.want {
			t.Errorf("%s, %d units: warning %q, want %q…", tc.m, len(tc.data), got, tc.want)
		}
	}
	if _, _, ok := AlphaCI(AlphaNominal, [][]float64{{1, 1}, {1, 1}}, 0.95); ok {
		t.Error("an interval where α is not defined (no variation)")
	}
}

// alphaCell is one regime's coverage at one size: among the draws
// AlphaWarning lets through, over every draw, and the plain percentile
// interval (the one halu showed before) over every draw.
type alphaCell struct {
	line                                string
	shown, cover, pcShown, all, bca, pc int
}

// coverAlpha draws runs data sets of n units from gen and counts how often
// α's intervals contain truth. Both intervals read the same resamples.
func coverAlpha(rng *rand.Rand, m AlphaMetric, n, runs int, truth float64, gen func(*rand.Rand, int) [][]float64) alphaCell {
	var c alphaCell
	for range runs {
		data := gen(rng, n)
		warned := AlphaWarning(m, data) != ""
		if n < AlphaMinUnits {
			// Never shown: no interval is computed (the report computes
			// none either).
			c.all++
			continue
		}
		lo, hi, ok := AlphaCI(m, data, 0.95)
		if !ok {
			continue
		}
		c.all++
		in := lo <= truth && truth <= hi
		if in {
			c.bca++
		}
		inPc := false
		if _, boot, ok := pairable(data).bootstrap(m); ok {
			at := func(q float64) float64 { return boot[int(math.Round(q*float64(len(boot)-1)))] }
			inPc = at(0.025) <= truth && truth <= at(0.975)
		}
		if inPc {
			c.pc++
		}
		if !warned {
			c.shown++
			if in {
				c.cover++
			}
			if inPc {
				c.pcShown++
			}
		}
	}
	return c
}

// α's interval where labels are rare: two coders of a yes/no label, each
// flagging with the regime's TPR and TNR against a hidden truth (the κ
// simulations' regimes: prevalence 0.05–0.5, accuracy 0.6–0.95, coders
// that under- and over-flag), labels 20–500, 1,000 draws a regime
// (seeded); then two coders of a 1–5 score (ordinal), agreeing on a
// uniform or a skewed scale with noise. It prints, per regime, AlphaCI's
// coverage among the draws AlphaWarning lets through, beside its coverage
// and the plain percentile interval's over every draw; where at least 300
// draws are shown, coverage must be 0.925–0.98 (1,000 draws read a
// coverage of 95% within about ±1.4%). (test-slow; a minute on two cores)
func TestAlphaCoverageWhereLabelsAreRare(t *testing.T) {
	if testing.Short() {
		t.Skip("a simulation: make test-slow")
	}
	const runs = 1000
	type job struct {
		m     AlphaMetric
		n     int
		truth float64
		what  string
		gen   func(*rand.Rand, int) [][]float64
	}
	var jobs []job
	for _, r := range rareLabelRegimes() {
		q := r.prev*r.tpr + (1-r.prev)*(1-r.tnr) // each coder's share of "yes"
		dis := 2 * (r.prev*r.tpr*(1-r.tpr) + (1-r.prev)*(1-r.tnr)*r.tnr)
		truth := 1 - dis/(2*q*(1-q)) // α over infinitely many units
		gen := func(rng *rand.Rand, n int) [][]float64 {
			out := make([][]float64, n)
			for i := range out {
				p := 1 - r.tnr
				if rng.Float64() < r.prev {
					p = r.tpr
				}
				a, b := 0.0, 0.0
				if rng.Float64() < p {
					a = 1
				}
				if rng.Float64() < p {
					b = 1
				}
				out[i] = []float64{a, b}
			}
			return out
		}
		for _, n := range []int{20, 50, 100, 200, 500} {
			jobs = append(jobs, job{AlphaNominal, n, truth, fmt.Sprintf("yes/no, prevalence %.2f, TPR %.2f, TNR %.2f", r.prev, r.tpr, r.tnr), gen})
		}
	}
	for _, sc := range []struct {
		weights []float64 // of the true score 1–5
		noise   float64   // chance a coder gives a neighbouring score
	}{{[]float64{1, 1, 1, 1, 1}, 0.3}, {[]float64{1, 1, 1, 1, 1}, 0.6}, {[]float64{0.02, 0.03, 0.1, 0.45, 0.4}, 0.3}} {
		gen := func(rng *rand.Rand, n int) [][]float64 {
			out := make([][]float64, n)
			for i := range out {
				u, s := rng.Float64()*sum(sc.weights), 0
				for s < 4 && u > sc.weights[s] {
					u -= sc.weights[s]
					s++
				}
				coder := func() float64 {
					v := s + 1
					if rng.Float64() < sc.noise {
						v += 2*rng.IntN(2) - 1
					}
					return float64(min(5, max(1, v)))
				}
				out[i] = []float64{coder(), coder()}
			}
			return out
		}
		truth, _ := Krippendorff(AlphaOrdinal, gen(rand.New(rand.NewPCG(5, 5)), 200000))
		for _, n := range []int{100, 200, 500} {
			jobs = append(jobs, job{AlphaOrdinal, n, truth, fmt.Sprintf("1–5 score, weights %v, noise %.1f", sc.weights, sc.noise), gen})
		}
	}
	cells := make([]alphaCell, len(jobs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for i, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			c := coverAlpha(rand.New(rand.NewPCG(13, uint64(i))), j.m, j.n, runs, j.truth, j.gen)
			c.line = fmt.Sprintf("n %3d, %s, α %.3f", j.n, j.what, j.truth)
			cells[i] = c
		}()
	}
	wg.Wait()
	var shownCov, shownPc, allB, allP []float64
	for _, c := range cells {
		line := c.line
		if c.shown == 0 {
			t.Logf("%s: warned on every draw", line)
			continue
		}
		cv := float64(c.cover) / float64(c.shown)
		line += fmt.Sprintf(": without a warning %.3f (percentile %.3f; %d of %d shown); every draw BCa %.3f, percentile %.3f", cv, float64(c.pcShown)/float64(c.shown), c.shown, c.all, float64(c.bca)/float64(c.all), float64(c.pc)/float64(c.all))
		if c.all > 0 {
			allB, allP = append(allB, float64(c.bca)/float64(c.all)), append(allP, float64(c.pc)/float64(c.all))
		}
		if c.shown >= 300 {
			shownCov, shownPc = append(shownCov, cv), append(shownPc, float64(c.pcShown)/float64(c.shown))
			if cv < 0.925 || cv > 0.98 {
				t.Errorf("%s: outside 0.925–0.98", line)
			}
		}
		t.Log(line)
	}
	span := func(xs []float64) string {
		if len(xs) == 0 {
			return "–"
		}
		sort.Float64s(xs)
		return fmt.Sprintf("%.3f–%.3f", xs[0], xs[len(xs)-1])
	}
	t.Logf("coverage without a warning (%d regimes with 300 draws shown): BCa %s, the percentile interval %s; over every draw from %d units: BCa %s, percentile %s",
		len(shownCov), span(shownCov), span(shownPc), AlphaMinUnits, span(allB), span(allP))
}

func sum(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s
}
