package metrics

import (
	"math"
	"testing"
)

func near(t *testing.T, name string, got, want, tol float64) {
	t.Helper()
	if math.IsNaN(got) || math.Abs(got-want) > tol {
		t.Errorf("%s = %.10g, want %.10g (±%g)", name, got, want, tol)
	}
}

// tCDF4 is Student's t CDF for 4 degrees of freedom in closed form:
// F(t) = ½ + (3/8)·u·(1 − u²/12), u = t/√(1+t²/4). It checks gonum's
// distribution independently.
func tCDF4(t float64) float64 {
	u := t / math.Sqrt(1+t*t/4)
	return 0.5 + 3.0/8*u*(1-u*u/12)
}

func TestPercentileLinear(t *testing.T) {
	// numpy.percentile([1,2,3,4], 30): h = 3·0.3 = 0.9 → 1 + 0.9·1 = 1.9.
	near(t, "p30", Percentile([]float64{4, 1, 3, 2}, 30), 1.9, 1e-12)
	near(t, "p0", Percentile([]float64{4, 1, 3, 2}, 0), 1, 0)
	near(t, "p100", Percentile([]float64{4, 1, 3, 2}, 100), 4, 0)
	// Flexibility of composites 7, 8, 5, 9, 6: sorted 5..9, h = 1.2 → 6.2.
	near(t, "flexibility", Flexibility([]float64{7, 8, 5, 9, 6}), 6.2, 1e-12)
}

func TestMeanCI(t *testing.T) {
	// 1..5: mean 3, s = √2.5, se = √0.5; t_{0.975,4} = 2.7764451 (tables).
	iv := MeanCI([]float64{1, 2, 3, 4, 5}, 0.95)
	h := 2.7764451 * math.Sqrt(0.5)
	near(t, "mean", iv.Estimate, 3, 1e-12)
	near(t, "low", iv.Low, 3-h, 1e-6)
	near(t, "high", iv.High, 3+h, 1e-6)
	if one := MeanCI([]float64{2}, 0.95); !math.IsNaN(one.Low) {
		t.Error("one value must give no interval")
	}
}

func TestBootstrapCI(t *testing.T) {
	xs := []float64{5, 6, 7, 8, 9, 7.5, 6.5, 8.5}
	p30 := func(v []float64) float64 { return Percentile(v, 30) }
	a := BootstrapCI(xs, p30, 2000, 3, 0.95)
	b := BootstrapCI(xs, p30, 2000, 3, 0.95)
	if a != b {
		t.Fatal("same seed, different interval")
	}
	if !(a.Low <= a.Estimate && a.Estimate <= a.High) || a.Low < 5 || a.High > 9 {
		t.Fatalf("interval %+v", a)
	}
	// A constant sample has a degenerate interval at its value.
	c := BootstrapCI([]float64{4, 4, 4}, p30, 100, 1, 0.95)
	if c.Low != 4 || c.High != 4 {
		t.Fatalf("constant sample: %+v", c)
	}
}

func TestPairedT(t *testing.T) {
	// d = 1..5: t = 3/(√2.5/√5) = 3√2 = 4.2426; df 4; p from the closed form.
	r, err := PairedT([]float64{2, 4, 6, 8, 10}, []float64{1, 2, 3, 4, 5})
	if err != nil {
		t.Fatal(err)
	}
	near(t, "t", r.Statistic, 3*math.Sqrt(2), 1e-12)
	near(t, "p", r.P, 2*(1-tCDF4(3*math.Sqrt(2))), 1e-9)
	if _, err := PairedT([]float64{1, 2}, []float64{0, 1}); err == nil {
		t.Error("constant differences must be an error")
	}
}

func TestPearsonSpearman(t *testing.T) {
	x := []float64{1, 2, 3, 4, 5, 6}
	y := []float64{2, 1, 4, 3, 6, 5}
	// By hand: Σdxdy = 14.5, Σdx² = Σdy² = 17.5, r = 0.828571…;
	// Spearman with no ties: 1 − 6·6/(6·35) = 0.828571… as well.
	r, err := Pearson(x, y)
	if err != nil {
		t.Fatal(err)
	}
	want := 14.5 / 17.5
	near(t, "r", r.Statistic, want, 1e-12)
	tt := want * math.Sqrt(4/(1-want*want))
	near(t, "p", r.P, 2*(1-tCDF4(tt)), 1e-9)
	s, _ := Spearman(x, y)
	near(t, "rho", s.Statistic, 1-6.0*6/(6*35), 1e-12)
}

func TestRanksTies(t *testing.T) {
	r := Ranks([]float64{10, 20, 20, 30})
	want := []float64{1, 2.5, 2.5, 4}
	for i := range want {
		if r[i] != want[i] {
			t.Fatalf("ranks %v, want %v", r, want)
		}
	}
}

func TestWilcoxonExact(t *testing.T) {
	// All five differences positive: W+ = 15, P(W+ ≥ 15) = 1/32, two-sided 2/32.
	r, _ := Wilcoxon([]float64{2, 3, 4, 5, 6}, []float64{1, 1, 1, 1, 1})
	near(t, "W+", r.Statistic, 15, 0)
	near(t, "p", r.P, 0.0625, 1e-12)
	// d = 1, −2, 3, 4, 5: W+ = 13, W− = 2; subsets of {1..5} summing to ≤ 2
	// are {}, {1}, {2}: P = 3/32, two-sided 6/32.
	r, _ = Wilcoxon([]float64{1, -2, 3, 4, 5}, []float64{0, 0, 0, 0, 0})
	near(t, "W+", r.Statistic, 13, 0)
	near(t, "p", r.P, 6.0/32, 1e-12)
	// Zero differences are dropped.
	r, _ = Wilcoxon([]float64{1, 2, 3, 4, 5, 7}, []float64{0, 0, 0, 0, 0, 7})
	if r.N != 5 || r.P != 0.0625 {
		t.Fatalf("zero difference not dropped: %+v", r)
	}
}

func TestMcNemarExact(t *testing.T) {
	// b = 1, c = 6: P(X ≤ 1 | n=7, ½) = (1 + 7)/128, two-sided 16/128.
	near(t, "p", McNemarExact(1, 6).P, 0.125, 1e-12)
	near(t, "p", McNemarExact(3, 3).P, 1, 1e-12)
}

func TestShapiroWilk(t *testing.T) {
	// Expected values from SciPy's test suite (test_morestats.py,
	// TestShapiro.test_basic): W = 0.90047299861907959, p = 0.042089745402336121
	// (SciPy computes in single precision, hence the tolerance).
	x := []float64{0.11, 7.87, 4.61, 10.14, 7.95, 3.14, 0.46, 4.43, 0.21, 4.75, 0.71, 1.52, 3.24,
		0.93, 0.42, 4.97, 9.53, 4.55, 0.47, 6.66}
	r, err := ShapiroWilk(x)
	if err != nil {
		t.Fatal(err)
	}
	near(t, "W", r.Statistic, 0.90047299861907959, 2e-6)
	near(t, "p", r.P, 0.042089745402336121, 2e-5)
	// n = 3, equally spaced: W = 1 exactly, p = 1.
	r, _ = ShapiroWilk([]float64{1, 2, 3})
	near(t, "W(n=3)", r.Statistic, 1, 1e-9)
	near(t, "p(n=3)", r.P, 1, 1e-9)
	if _, err := ShapiroWilk([]float64{1, 1, 1}); err == nil {
		t.Error("constant data must be an error")
	}
}

func TestKrippendorff(t *testing.T) {
	// Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability",
	// example C: 4 observers × 12 units, missing values as NaN. Published:
	// α nominal = 0.743, α ordinal = 0.815, α interval = 0.849.
	n := math.NaN()
	obs := [][]float64{ // observers A, B, C, D per unit
		{1, 1, n, 1}, {2, 2, 3, 2}, {3, 3, 3, 3}, {3, 3, 3, 3}, {2, 2, 2, 2}, {1, 2, 3, 4},
		{4, 4, 4, 4}, {1, 1, 2, 1}, {2, 2, 2, 2}, {n, 5, 5, 5}, {n, n, 1, 1}, {n, n, 3, n},
	}
	a, err := KrippendorffNominal(obs)
	if err != nil {
		t.Fatal(err)
	}
	near(t, "alpha nominal", a, 0.743, 0.0005)
	a, _ = KrippendorffInterval(obs)
	near(t, "alpha interval", a, 0.849, 0.0005)
	a, _ = KrippendorffOrdinal(obs)
	near(t, "alpha ordinal", a, 0.815, 0.0005)
}

func TestMajority(t *testing.T) {
	w, tied, _ := Majority([]string{"yes", "no", "yes"}, nil)
	if w != "yes" || tied {
		t.Fatal(w, tied)
	}
	// A 1–1 tie goes to the preferred label (HIC-Bench: tie counts as hallucinated).
	w, tied, _ = Majority([]string{"no", "yes"}, []string{"yes"})
	if w != "yes" || !tied {
		t.Fatal(w, tied)
	}
	// Without a preference, the smallest label in sort order.
	w, _, _ = Majority([]string{"stimulate", "inhibit"}, nil)
	if w != "inhibit" {
		t.Fatal(w)
	}
	if _, _, ok := Majority(nil, nil); ok {
		t.Fatal("no votes")
	}
}
