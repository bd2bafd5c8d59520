package summary

import (
	"fmt"
	"math"

	"halu/metrics"
)

// Figure is one estimate of a summary in long form: a metric of one model
// in one group (a strategy and temperature, a retrieval setting, a task),
// with its 95% interval, the units it rests on and the units left out.
// Leaderboards, `halu report --long` and the headline cells are all made
// from figures, so they cannot disagree with one another; the suites'
// own tables print the same values with the same Format.
type Figure struct {
	Model string `json:"model"`
	// Group is the part of the key between the model and the metric
	// ("DHP T0.7", "kg+lit", "overall"); empty when the suite has none.
	Group string `json:"group,omitempty"`
	// Metric is the paper's name for the figure ("IH", "IFS", "CS").
	Metric string `json:"metric"`
	// Key is the summary's metrics key the figure mirrors (gates use it).
	Key      string `json:"key"`
	Estimate Num    `json:"estimate"`
	Lo       Num    `json:"lo"`
	Hi       Num    `json:"hi"`
	N        int    `json:"n"`
	Unscored int    `json:"unscored"`
	// Percent figures are shares printed ×100 with "%"; others print as
	// they are, with two decimals.
	Percent bool `json:"percent,omitempty"`
	// Lower marks a figure where lower is better (DH, hallucination rate).
	Lower bool `json:"lower_is_better,omitempty"`
	// Headline figures are the paper's main ones: the leaderboard's columns.
	Headline bool `json:"headline,omitempty"`
	// Interval names how Lo and Hi were computed ("Wilson", "t").
	Interval string `json:"interval,omitempty"`
	// Warning says why the interval may not hold its coverage (what it
	// rests on is too little: metrics.KappaWarning); "" when it holds.
	Warning string `json:"warning,omitempty"`
}

// Format prints v as the figure's tables print it: "–" for no value.
func (f Figure) Format(v Num) string {
	x := float64(v)
	switch {
	case math.IsNaN(x) || math.IsInf(x, 0):
		return "–"
	case f.Percent:
		return fmt.Sprintf("%.2f%%", 100*x)
	}
	return fmt.Sprintf("%.2f", x)
}

// Measured reports whether the figure rests on at least one unit and has
// a value.
func (f Figure) Measured() bool {
	return f.N > 0 && !math.IsNaN(float64(f.Estimate)) && !math.IsInf(float64(f.Estimate), 0)
}

// Cell is the figure as a headline cell shows it: the value with its
// interval, n and the unscored count, or "–" with the reason when nothing
// was measured.
func (f Figure) Cell() string {
	if !f.Measured() {
		why := "no scored unit"
		if f.Unscored > 0 {
			why = fmt.Sprintf("no scored unit, %d unscored", f.Unscored)
		}
		return "– (" + why + ")"
	}
	s := f.Format(f.Estimate)
	if !math.IsNaN(float64(f.Lo)) && !math.IsNaN(float64(f.Hi)) {
		s += " [" + f.Format(f.Lo) + ", " + f.Format(f.Hi) + "]"
	}
	s += fmt.Sprintf(" n=%d", f.N)
	if f.Unscored > 0 {
		s += fmt.Sprintf(", %d unscored", f.Unscored)
	}
	return s
}

// Clip bounds the interval to the scale [lo, hi] of the figure's units: a
// t-interval of a few values can reach past the scale (a mean score of 1–5
// with an interval from −0.4).
func (f Figure) Clip(lo, hi float64) Figure {
	if !math.IsNaN(float64(f.Lo)) {
		f.Lo = Num(math.Max(lo, float64(f.Lo)))
	}
	if !math.IsNaN(float64(f.Hi)) {
		f.Hi = Num(math.Min(hi, float64(f.Hi)))
	}
	return f
}

// ProportionFigure is the share k of n with its 95% Wilson interval.
func ProportionFigure(model, group, metric, key string, k, n, unscored int) Figure {
	iv := metrics.WilsonCI(k, n, 0.95)
	return Figure{Model: model, Group: group, Metric: metric, Key: key, Estimate: Num(iv.Estimate), Lo: Num(iv.Low), Hi: Num(iv.High),
		N: n, Unscored: unscored, Percent: true, Interval: "Wilson"}
}

// MeanFigure is the mean of xs with its 95% t interval (no interval under
// two values).
func MeanFigure(model, group, metric, key string, xs []float64, unscored int) Figure {
	return IntervalFigure(model, group, metric, key, metrics.MeanCI(xs, 0.95), unscored, "t")
}

// IntervalFigure is an estimate already computed with its interval.
func IntervalFigure(model, group, metric, key string, iv metrics.Interval, unscored int, method string) Figure {
	if iv.N == 0 {
		iv.Estimate, iv.Low, iv.High = math.NaN(), math.NaN(), math.NaN()
	}
	return Figure{Model: model, Group: group, Metric: metric, Key: key, Estimate: Num(iv.Estimate), Lo: Num(iv.Low), Hi: Num(iv.High),
		N: iv.N, Unscored: unscored, Interval: method}
}

// AddFigure appends f and records its value and support under its key, so
// that the metrics a gate reads are the figures a report shows.
func (s *Summary) AddFigure(f Figure) {
	s.Figures = append(s.Figures, f)
	if s.Metrics == nil {
		s.Metrics = map[string]float64{}
	}
	s.Metrics[f.Key] = float64(f.Estimate)
	s.SetSupport(f.Key, f.N, f.Unscored)
}
