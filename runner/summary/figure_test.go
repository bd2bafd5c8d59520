package summary

import (
	"math"
	"testing"
)

// A headline cell carries its interval, n and unscored count, and reads
// "–" with the reason when nothing was measured. Wilson's 95% interval
// of 3 of 10 is [0.1078, 0.6032] (by hand: centre (0.3 + z²/20)/(1 + z²/10),
// z = 1.95996); the t interval of 1, 2, 3 is 2 ± 4.303·1/√3.
func TestFigureCells(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    Figure
		want string
	}{
		{"share", ProportionFigure("m", "", "DH", "m/dh", 3, 10, 2), "30.00% [10.78%, 60.32%] n=10, 2 unscored"},
		{"mean", MeanFigure("m", "", "Or", "m/or", []float64{1, 2, 3}, 0), "2.00 [-0.48, 4.48] n=3"},
		{"mean clipped to its scale", MeanFigure("m", "", "Or", "m/or", []float64{1, 2, 3}, 0).Clip(1, 5), "2.00 [1.00, 4.48] n=3"},
		{"one value: no interval", MeanFigure("m", "", "Or", "m/or", []float64{4}, 0), "4.00 n=1"},
		{"nothing scored", ProportionFigure("m", "", "IH", "m/ih", 0, 0, 4), "– (no scored unit, 4 unscored)"},
		{"nothing at all", MeanFigure("m", "", "CS", "m/cs", nil, 0), "– (no scored unit)"},
	} {
		if got := tc.f.Cell(); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	var s Summary
	s.AddFigure(ProportionFigure("m", "", "IH", "m/ih", 0, 0, 4))
	if sup := s.Support["m/ih"]; sup.N != 0 || sup.Unscored != 4 || !math.IsNaN(s.Metrics["m/ih"]) {
		t.Errorf("support %+v, value %v: a figure of nothing must be unmeasured for the gates", sup, s.Metrics["m/ih"])
	}
}
