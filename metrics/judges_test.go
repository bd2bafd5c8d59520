package metrics

import (
	"math"
	"testing"
)

func TestWilsonCI(t *testing.T) {
	// 8/10 at 95%: z = 1.959964, den = 1 + z²/10 = 1.3841459,
	// centre = (0.8 + z²/20)/den = 0.7167401,
	// half = z·√(0.016 + z²/400)/den = 0.2265777 → [0.4901625, 0.9433178]
	// (the 0.490–0.943 of published Wilson tables).
	iv := WilsonCI(8, 10, 0.95)
	near(t, "low", iv.Low, 0.4901625, 1e-6)
	near(t, "high", iv.High, 0.9433178, 1e-6)
	near(t, "estimate", iv.Estimate, 0.8, 0)
	// 0/5: low 0, high = (z²/10)/(1 + z²/5) = 0.3844/1.7683 = 0.4344825.
	iv = WilsonCI(0, 5, 0.95)
	near(t, "zero low", iv.Low, 0, 1e-12)
	near(t, "zero high", iv.High, 0.4344825, 1e-6)
	if iv := WilsonCI(0, 0, 0.95); !math.IsNaN(iv.Estimate) {
		t.Error("n = 0 must give NaN")
	}
}

func TestJudgeStats(t *testing.T) {
	obs := []JudgeScore{
		{"i1", "a", 4, true}, {"i1", "b", 2, true}, {"i1", "c", 3, true},
		{"i2", "a", 5, true}, {"i2", "b", 3, true}, {"i2", "c", 0, false},
		{"i3", "a", 1, true}, {"i3", "b", 0, false},
	}
	got := JudgeStats(obs)
	if len(got) != 3 || got[0].Judge != "a" || got[2].Judge != "c" {
		t.Fatalf("%+v", got)
	}
	a, b, c := got[0], got[1], got[2]
	// a: mean (4+5+1)/3; leniency over i1 (4 − 2.5 = 1.5) and i2 (5 − 3 = 2)
	// = 1.75; i3 has no other scorer.
	near(t, "a mean", a.Mean, 10.0/3, 1e-12)
	near(t, "a leniency", a.Leniency, 1.75, 1e-12)
	if a.LeniencyN != 2 || a.Unscored != 0 {
		t.Errorf("a: %+v", a)
	}
	// b: i1 2 − 3.5 = −1.5, i2 3 − 5 = −2 → −1.75; 1 of 3 unscored.
	near(t, "b leniency", b.Leniency, -1.75, 1e-12)
	near(t, "b failure rate", b.FailRate, 1.0/3, 1e-12)
	// c: i1 3 − 3 = 0.
	near(t, "c leniency", c.Leniency, 0, 1e-12)
	near(t, "c failure rate", c.FailRate, 0.5, 1e-12)
}

func TestCohenDz(t *testing.T) {
	// d = 1, 2, 3: mean 2, sd 1.
	near(t, "dz", CohenDz([]float64{1, 2, 3}), 2, 1e-12)
	if !math.IsNaN(CohenDz([]float64{1, 1})) {
		t.Error("no spread must give NaN")
	}
}

func TestParetoFront(t *testing.T) {
	// (1,5) and (5,1) and (3,3) trade off; (2,2) is dominated by (3,3);
	// (3,3) twice: neither dominates the other; NaN is never on the front.
	xs := []float64{1, 5, 3, 2, 3, math.NaN()}
	ys := []float64{5, 1, 3, 2, 3, 9}
	want := []bool{true, true, true, false, true, false}
	got := ParetoFront(xs, ys)
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("point %d: %v, want %v", i, got[i], want[i])
		}
	}
}
