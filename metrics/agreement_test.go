package metrics

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

func TestCohenKappa(t *testing.T) {
	// Two raters, 50 units: yes/yes 20, yes/no 5, no/yes 10, no/no 15.
	// p_o = 35/50 = 0.7; p_e = (25/50)(30/50) + (25/50)(20/50) = 0.5;
	// κ = 0.2/0.5 = 0.4. Fleiss–Cohen–Everitt, by hand: cells .4 .1 .2 .3,
	// rater a's marginals .5 .5, rater b's .6 .4; Σ pᵢᵢ(1 − (pᵢ.+p.ᵢ)(1−κ))²
	// = .4·.34² + .3·.46² = .10972; (1−κ)² Σ pᵢⱼ(p.ᵢ+pⱼ.)² = .36·(.1·1.1² +
	// .2·.9²) = .10188; (κ − p_e(1−κ))² = .01; var = .2016/12.5 = .016128,
	// se = .126996; n_eff = .21/(se·.5)² = 52.0833; Wilson for p_o = .7 at
	// n_eff: [.565375, .807149]; mapped to κ: [0.130751, 0.614297].
	var a, b []string
	add := func(x, y string, n int) {
		for range n {
			a, b = append(a, x), append(b, y)
		}
	}
	add("yes", "yes", 20)
	add("yes", "no", 5)
	add("no", "yes", 10)
	add("no", "no", 15)
	k := CohenKappa(a, b, 0.95)
	near(t, "kappa", k.Estimate, 0.4, 1e-12)
	near(t, "kappa low", k.Low, 0.130751, 1e-5)
	near(t, "kappa high", k.High, 0.614297, 1e-5)
	if k.N != 50 {
		t.Errorf("n = %d", k.N)
	}
	// Perfect agreement on a varied set: κ = 1. One label only: undefined.
	near(t, "perfect", CohenKappa([]string{"a", "b", "a"}, []string{"a", "b", "a"}, 0.95).Estimate, 1, 1e-12)
	if !math.IsNaN(CohenKappa([]string{"a", "a"}, []string{"a", "a"}, 0.95).Estimate) {
		t.Error("one label only must be NaN")
	}
	if !math.IsNaN(CohenKappa(nil, nil, 0.95).Estimate) {
		t.Error("n = 0 must be NaN")
	}
}

func TestAgreement(t *testing.T) {
	// 10 units: TP 3, FN 1, FP 2, TN 3, and one unscored.
	var vs []LabelledVerdict
	add := func(j, h bool, n int) {
		for range n {
			vs = append(vs, LabelledVerdict{Judged: j, Human: h})
		}
	}
	add(true, true, 3)
	add(false, true, 1)
	add(true, false, 2)
	add(false, false, 3)
	vs = append(vs, LabelledVerdict{Unscored: true, Human: true})
	a := Agreement(vs, 0.95)
	if a.Units != 10 || a.TP != 3 || a.FN != 1 || a.FP != 2 || a.TN != 3 {
		t.Fatalf("%+v", a)
	}
	near(t, "unscored", a.Unscored.Estimate, 0.1, 1e-12)
	near(t, "accuracy", a.Accuracy.Estimate, 6.0/9, 1e-12)
	if a.Accuracy.N != 9 {
		t.Errorf("accuracy rests on %d units, want the 9 scored", a.Accuracy.N)
	}
	near(t, "tpr", a.TPR.Estimate, 0.75, 1e-12)
	near(t, "fpr", a.FPR.Estimate, 0.4, 1e-12)
	// κ by hand: p_o = 6/9; judge yes 5/9, people yes 4/9;
	// p_e = (5/9)(4/9) + (4/9)(5/9) = 40/81; κ = (54/81 − 40/81)/(41/81) = 14/41.
	near(t, "kappa", a.Kappa.Estimate, 14.0/41, 1e-12)
	// No units: every figure NaN, none invented.
	z := Agreement(nil, 0.95)
	if !math.IsNaN(z.Accuracy.Estimate) || !math.IsNaN(z.Kappa.Estimate) || !math.IsNaN(z.TPR.Estimate) {
		t.Errorf("empty: %+v", z)
	}
}

func TestPPIMean(t *testing.T) {
	// By hand: f on 4 unlabelled units 1,0,1,1 (mean 0.75, variance 0.25);
	// on 3 labelled units f = 1,1,0 against labels 1,0,0: rectifier 0,1,0
	// (mean 1/3, variance 1/3). θ̂ = 0.75 − 1/3 = 0.416667;
	// half-width 1.959964·√(0.25/4 + (1/3)/3) = 1.959964·0.416667 = 0.816652.
	iv := PPIMean([]float64{1, 0, 1, 1}, []float64{1, 1, 0}, []float64{1, 0, 0}, 0.95)
	near(t, "theta", iv.Estimate, 0.75-1.0/3, 1e-12)
	near(t, "low", iv.Low, 0.75-1.0/3-0.816652, 1e-5)
	near(t, "high", iv.High, 0.75-1.0/3+0.816652, 1e-5)
	if !math.IsNaN(PPIMean([]float64{1}, []float64{1, 0}, []float64{1, 0}, 0.95).Estimate) {
		t.Error("one unlabelled unit must be NaN")
	}
}

// TestPPICalibration simulates a judge of known error rates on a known
// truth: 30% of units hallucinated; the judge flags 80% of those and 15%
// of the rest (so its own figure is 0.345, not 0.30). Over 1,000 runs of
// 2,000 judged units of which 200 were labelled, the 95% PPI interval
// must cover the truth 93–97% of the time; the uncorrected interval's
// coverage is printed beside it (it covers almost never: the judge's bias
// is not in it).
func TestPPICalibration(t *testing.T) {
	const (
		truth, tpr, fpr = 0.30, 0.80, 0.15
		runs, N, n      = 1000, 2000, 200
	)
	rng := rand.New(rand.NewPCG(7, 11))
	unit := func() (pred, y float64) {
		h := rng.Float64() < truth
		p := fpr
		if h {
			p = tpr
		}
		if h {
			y = 1
		}
		if rng.Float64() < p {
			pred = 1
		}
		return pred, y
	}
	var ppiCover, naiveCover int
	for range runs {
		unl := make([]float64, N-n)
		for i := range unl {
			unl[i], _ = unit()
		}
		lp, ly := make([]float64, n), make([]float64, n)
		for i := range lp {
			lp[i], ly[i] = unit()
		}
		if iv := PPIMean(unl, lp, ly, 0.95); iv.Low <= truth && truth <= iv.High {
			ppiCover++
		}
		if iv := NaiveMean(append(append([]float64(nil), unl...), lp...), 0.95); iv.Low <= truth && truth <= iv.High {
			naiveCover++
		}
	}
	ppi, naive := float64(ppiCover)/runs, float64(naiveCover)/runs
	t.Logf("95%% interval coverage over %d simulated runs: PPI %.3f, uncorrected %.3f", runs, ppi, naive)
	if ppi < 0.93 || ppi > 0.97 {
		t.Errorf("PPI coverage %.3f outside 0.93–0.97", ppi)
	}
	if naive > 0.5 {
		t.Errorf("uncorrected coverage %.3f: the simulated judge's bias should show", naive)
	}
}

func TestEffectiveJudges(t *testing.T) {
	near(t, "independent", EffectiveJudges(3, 0), 3, 1e-12)
	near(t, "identical", EffectiveJudges(3, 1), 1, 1e-12)
	// 3 / (1 + 2·0.5) = 1.5.
	near(t, "half", EffectiveJudges(3, 0.5), 1.5, 1e-12)
	if w := EffectiveJudges(2, -0.3); !math.IsNaN(w) {
		t.Errorf("negative r: worth %v judges, want not defined", w)
	}
}

func TestPanelMajority(t *testing.T) {
	y := LabelledVerdict{Judged: true, Human: true}
	n := LabelledVerdict{Judged: false, Human: true}
	u := LabelledVerdict{Unscored: true, Human: true}
	got := PanelMajority([][]LabelledVerdict{{y, n, n}, {y, n, u}, {u, u, u}, {y, y, n}})
	want := []LabelledVerdict{{Judged: false, Human: true}, {Judged: true, Human: true}, {Unscored: true, Human: true}, {Judged: true, Human: true}}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("unit %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestSlope(t *testing.T) {
	// x 1,2,3,4; y 2,4,5,8: x̄ 2.5, ȳ 4.75; Sxx = 5; Sxy = 9.5; b = 1.9.
	// Residuals: 2−(4.75−2.85)=0.1, 4−3.8=0.2, 5−5.7=−0.7, 8−7.6=0.4;
	// Σr² = 0.01+0.04+0.49+0.16 = 0.7; se = √(0.35/5) = 0.264575;
	// t_{0.975, 2} = 4.302653: 1.9 ± 1.138382.
	iv := Slope([]float64{1, 2, 3, 4}, []float64{2, 4, 5, 8}, 0.95)
	near(t, "slope", iv.Estimate, 1.9, 1e-12)
	near(t, "low", iv.Low, 1.9-1.138382, 1e-5)
	near(t, "high", iv.High, 1.9+1.138382, 1e-5)
	if !math.IsNaN(Slope([]float64{1, 1, 1}, []float64{1, 2, 3}, 0.95).Estimate) {
		t.Error("no spread in x must be NaN")
	}
}

// Clip bounds an interval to the parameter's range, NaN kept.
func TestIntervalClip(t *testing.T) {
	got := Interval{Estimate: -0.02, Low: -0.105, High: 1.069, N: 3}.Clip(0, 1)
	if got.Estimate != 0 || got.Low != 0 || got.High != 1 || got.N != 3 {
		t.Errorf("clipped %+v", got)
	}
	if nan := (Interval{Estimate: math.NaN(), Low: math.NaN(), High: math.NaN()}).Clip(0, 1); !math.IsNaN(nan.Low) {
		t.Errorf("NaN clipped to %v", nan.Low)
	}
}

// TestPPICoverageAcrossRegimes simulates the corrected interval of a share
// (PPIShare) over labels 20, 50, 100, 200; judge accuracy 0.6–0.95;
// prevalence 0.1 and 0.5; symmetric judges and under-flagging ones (TPR
// 0.3 below their accuracy): 1,000 unlabelled units, 2,000 runs a regime
// (seeded). From PPIMinLabels labels on — where halu shows the interval
// without a warning — every regime's coverage must lie in 93–97%; the
// table (PPI beside the uncorrected interval) is printed with -v.
func TestPPICoverageAcrossRegimes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const N, runs = 1000, 2000
	type regime struct {
		prev, acc float64
		under     bool
	}
	var regimes []regime
	for _, prev := range []float64{0.1, 0.5} {
		for _, acc := range []float64{0.6, 0.75, 0.9, 0.95} {
			for _, under := range []bool{false, true} {
				regimes = append(regimes, regime{prev, acc, under})
			}
		}
	}
	for _, n := range []int{20, 50, PPIMinLabels, 200} {
		lo, hi, nlo, nhi := 1.0, 0.0, 1.0, 0.0
		for _, r := range regimes {
			tpr, fpr := r.acc, 1-r.acc
			if r.under {
				tpr, fpr = math.Max(0.05, r.acc-0.3), (1-r.acc)/3
			}
			unit := func() (pred, y float64) {
				h := rng.Float64() < r.prev
				p := fpr
				if h {
					p, y = tpr, 1
				}
				if rng.Float64() < p {
					pred = 1
				}
				return pred, y
			}
			cover, naive := 0, 0
			for range runs {
				unl := make([]float64, N)
				for i := range unl {
					unl[i], _ = unit()
				}
				lp, ly := make([]float64, n), make([]float64, n)
				for i := range lp {
					lp[i], ly[i] = unit()
				}
				if iv := PPIShare(unl, lp, ly, 0.95); iv.Low <= r.prev && r.prev <= iv.High {
					cover++
				}
				if iv := NaiveMean(append(unl, lp...), 0.95).Clip(0, 1); iv.Low <= r.prev && r.prev <= iv.High {
					naive++
				}
			}
			c, u := float64(cover)/runs, float64(naive)/runs
			lo, hi, nlo, nhi = math.Min(lo, c), math.Max(hi, c), math.Min(nlo, u), math.Max(nhi, u)
			if n >= PPIMinLabels && (c < 0.93 || c > 0.97) {
				t.Errorf("%d labels, prevalence %.1f, accuracy %.2f, under-flagging %v: coverage %.3f outside 93–97%%", n, r.prev, r.acc, r.under, c)
			}
		}
		t.Logf("%3d labels: corrected coverage %.3f–%.3f; uncorrected %.3f–%.3f", n, lo, hi, nlo, nhi)
	}
}

// TestKappaCoverage simulates CohenKappa's 95% interval for a judge
// against people's yes/no labels over sizes 50–1,000, prevalence 0.1–0.5
// and κ from 0.1 to 0.9 (2,000 runs a regime, seeded): its coverage must
// lie in 0.92–0.97 (Cohen's simple standard error gave 0.835 at κ 0.91,
// n = 50, and 0.985 at κ 0.16, n = 1,000). Printed with -v.
func TestKappaCoverage(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, c := range []struct {
		n              int
		prev, tpr, fpr float64
	}{{50, 0.3, 0.95, 0.03}, {50, 0.3, 0.8, 0.15}, {50, 0.5, 0.6, 0.4}, {200, 0.3, 0.95, 0.03}, {200, 0.1, 0.6, 0.1},
		{100, 0.5, 0.75, 0.25}, {1000, 0.5, 0.56, 0.43}, {1000, 0.2, 0.3, 0.15}, {1000, 0.3, 0.95, 0.03}} {
		p11, p01 := c.prev*c.tpr, (1-c.prev)*c.fpr
		po := p11 + (1-c.prev)*(1-c.fpr)
		judged := p11 + p01
		pe := judged*c.prev + (1-judged)*(1-c.prev)
		truth := (po - pe) / (1 - pe)
		cover, runs := 0, 2000
		a, b := make([]string, c.n), make([]string, c.n)
		for range runs {
			for i := range a {
				h := rng.Float64() < c.prev
				p := c.fpr
				if h {
					p = c.tpr
				}
				a[i], b[i] = fmt.Sprint(rng.Float64() < p), fmt.Sprint(h)
			}
			if iv := CohenKappa(a, b, 0.95); iv.Low <= truth && truth <= iv.High {
				cover++
			}
		}
		cv := float64(cover) / float64(runs)
		t.Logf("n %4d, prevalence %.1f, κ %.2f: coverage %.3f", c.n, c.prev, truth, cv)
		if cv < 0.92 || cv > 0.97 {
			t.Errorf("n %d, κ %.2f: coverage %.3f outside 0.92–0.97", c.n, truth, cv)
		}
	}
}

// κ's interval where labels are rare, and what "validated" may claim:
// a seeded simulation over labels 20–500, prevalence 0.05–0.5, judges of
// accuracy 0.6–0.95 and judges biased to either label (2,000 draws a
// regime). It prints, per regime, the coverage of the 95% interval among
// the draws KappaWarning lets through beside its coverage over every draw
// (the interval as shown before the warning), and the share of validations
// a judge whose true κ is below 0.41 passes — validated being κ's lower
// 95% bound at least 0.41 with no warning. (test-slow)
func TestKappaCoverageWhereLabelsAreRare(t *testing.T) {
	if testing.Short() {
		t.Skip("a simulation of 260,000 draws: make test-slow")
	}
	rng := rand.New(rand.NewPCG(7, 8))
	regs := rareLabelRegimes()
	lo, hi := 1.0, 0.0
	for _, n := range []int{20, 50, 100, 200, 500} {
		weak, weakValidated, weakReached := 0, 0, 0
		for _, r := range regs {
			p11, p01 := r.prev*r.tpr, (1-r.prev)*(1-r.tnr)
			po := p11 + (1-r.prev)*r.tnr
			judged := p11 + p01
			pe := judged*r.prev + (1-judged)*(1-r.prev)
			truth := (po - pe) / (1 - pe)
			const runs = 2000
			cover, shown, coverAll, all := 0, 0, 0, 0
			a, b := make([]string, n), make([]string, n)
			for range runs {
				var tp, fn, fp, tn int
				for i := range a {
					h := rng.Float64() < r.prev
					p := 1 - r.tnr
					if h {
						p = r.tpr
					}
					j := rng.Float64() < p
					a[i], b[i] = yes(j), yes(h)
					switch {
					case h && j:
						tp++
					case h:
						fn++
					case j:
						fp++
					default:
						tn++
					}
				}
				iv := CohenKappa(a, b, 0.95)
				if math.IsNaN(iv.Low) {
					continue
				}
				in := iv.Low <= truth && truth <= iv.High
				all++
				if in {
					coverAll++
				}
				warned := KappaWarning(tp, fn, fp, tn) != ""
				if !warned {
					shown++
					if in {
						cover++
					}
				}
				if truth < 0.41 {
					weak++
					if !warned && iv.Low >= 0.41 {
						weakValidated++
					}
					if iv.High >= 0.41 {
						weakReached++ // the rule before: the interval reaching 0.41
					}
				}
			}
			line := fmt.Sprintf("n %3d, prevalence %.2f, TPR %.2f, TNR %.2f, κ %.3f: every draw %.3f", n, r.prev, r.tpr, r.tnr, truth, float64(coverAll)/float64(max(all, 1)))
			if shown >= 200 {
				cv := float64(cover) / float64(shown)
				lo, hi = math.Min(lo, cv), math.Max(hi, cv)
				line += fmt.Sprintf("; without a warning %.3f (%d of %d shown)", cv, shown, all)
				// 2,000 draws: a coverage of 95% is read ±1% (two
				// standard errors); conditioning on the classes' sizes
				// over-covers a little where they are near the threshold.
				if cv < 0.925 || cv > 0.98 {
					t.Errorf("%s: outside 0.925–0.98", line)
				}
			} else {
				line += fmt.Sprintf("; warned on %d of %d draws", all-shown, all)
			}
			t.Log(line)
		}
		share := float64(weakValidated) / float64(max(weak, 1))
		t.Logf("n %3d: judges with κ below 0.41 validated in %.2f%% of %d validations (by an interval merely reaching 0.41: %.1f%%)", n, 100*share, weak, 100*float64(weakReached)/float64(max(weak, 1)))
		if share > 0.05 {
			t.Errorf("n %d: weak judges validated %.1f%% of the time, more than 5%%", n, 100*share)
		}
	}
	t.Logf("coverage without a warning: %.3f–%.3f", lo, hi)
}

// regime is a judge against people: the share of units people label
// hallucinated, and the judge's TPR and TNR.
type regime struct{ prev, tpr, tnr float64 }

// rareLabelRegimes are the coverage simulations' regimes: prevalence 0.05,
// 0.1, 0.2 and 0.5; symmetric judges of accuracy 0.6–0.95; a judge that
// under-flags (TPR 0.3, TNR 0.9), one that over-flags (0.9, 0.6) and a
// near-perfect one (0.98, 0.9).
func rareLabelRegimes() []regime {
	var regs []regime
	for _, prev := range []float64{0.05, 0.1, 0.2, 0.5} {
		for _, acc := range []float64{0.6, 0.75, 0.9, 0.95} {
			regs = append(regs, regime{prev, acc, acc})
		}
		regs = append(regs, regime{prev, 0.3, 0.9}, regime{prev, 0.9, 0.6}, regime{prev, 0.98, 0.9})
	}
	return regs
}

// TPR's and FPR's Wilson intervals where labels are rare: the same regimes
// as κ's (2,000 draws each); coverage among the draws RateWarning lets
// through, beside every draw's. (test-slow)
func TestRateCoverageWhereLabelsAreRare(t *testing.T) {
	if testing.Short() {
		t.Skip("a simulation: make test-slow")
	}
	rng := rand.New(rand.NewPCG(11, 12))
	regs := rareLabelRegimes()
	lo, hi, allLo := 1.0, 0.0, 1.0
	for _, n := range []int{20, 50, 100, 200, 500} {
		for _, r := range regs {
			for _, which := range []string{"TPR", "FPR"} {
				truth := r.tpr
				if which == "FPR" {
					truth = 1 - r.tnr
				}
				cover, shown, coverAll, all := 0, 0, 0, 0
				for range 2000 {
					var vs []LabelledVerdict
					for range n {
						h := rng.Float64() < r.prev
						p := 1 - r.tnr
						if h {
							p = r.tpr
						}
						vs = append(vs, LabelledVerdict{Judged: rng.Float64() < p, Human: h})
					}
					a := Agreement(vs, 0.95)
					iv, m, what := a.TPR, a.TP+a.FN, "hallucinated"
					if which == "FPR" {
						iv, m, what = a.FPR, a.FP+a.TN, "faithful"
					}
					if m == 0 {
						continue
					}
					in := iv.Low <= truth && truth <= iv.High
					all++
					if in {
						coverAll++
					}
					if RateWarning(m, what) == "" {
						shown++
						if in {
							cover++
						}
					}
				}
				if all >= 200 {
					allLo = math.Min(allLo, float64(coverAll)/float64(all))
				}
				if shown < 200 {
					continue
				}
				cv := float64(cover) / float64(shown)
				lo, hi = math.Min(lo, cv), math.Max(hi, cv)
				line := fmt.Sprintf("n %3d, prevalence %.2f, TPR %.2f, TNR %.2f: %s %.2f covered %.3f without a warning (%d shown), %.3f over every draw",
					n, r.prev, r.tpr, r.tnr, which, truth, cv, shown, float64(coverAll)/float64(all))
				t.Log(line)
				if cv < 0.925 || cv > 0.98 {
					t.Errorf("%s: outside 0.925–0.98", line)
				}
			}
		}
	}
	t.Logf("coverage without a warning: %.3f–%.3f (over every draw, as low as %.3f)", lo, hi, allLo)
}
