package metrics

import (
	"math"
	"sort"

	"gonum.org/v1/gonum/stat/distuv"
)

// WilsonCI is the Wilson score interval for a proportion k/n at level
// (0.95): with z the normal quantile of (1+level)/2 and p = k/n,
// (p + z²/2n ± z·√(p(1−p)/n + z²/4n²)) / (1 + z²/n). Unlike p ± z·se it
// stays inside [0, 1] and gives an interval at p = 0 or 1, which small runs
// hit often. With n = 0 everything is NaN.
func WilsonCI(k, n int, level float64) Interval {
	if n <= 0 {
		return Interval{Estimate: math.NaN(), Low: math.NaN(), High: math.NaN()}
	}
	z := distuv.UnitNormal.Quantile((1 + level) / 2)
	p := float64(k) / float64(n)
	nf := float64(n)
	den := 1 + z*z/nf
	centre := (p + z*z/(2*nf)) / den
	half := z * math.Sqrt(p*(1-p)/nf+z*z/(4*nf*nf)) / den
	return Interval{Estimate: p, Low: math.Max(0, centre-half), High: math.Min(1, centre+half), N: n}
}

// JudgeScore is one judge's score of one item; Scored is false when the
// judge's reply never parsed (an abstention).
type JudgeScore struct {
	Item, Judge string
	Score       float64
	Scored      bool
}

// JudgeStat describes one judge of a panel.
type JudgeStat struct {
	Judge string `json:"judge"`
	// Judgements asked of the judge and how many never parsed.
	Judgements int     `json:"judgements"`
	Unscored   int     `json:"unscored"`
	FailRate   float64 `json:"parse_failure_rate"`
	Mean       float64 `json:"mean"`
	// Leniency is the judge's mean of (its score − the mean of the other
	// judges' scores on the same item), over the LeniencyN items that at
	// least one other judge scored: above 0, the judge is more generous than
	// the rest of its panel.
	Leniency  float64 `json:"leniency"`
	LeniencyN int     `json:"leniency_n"`
}

// JudgeStats gives each judge's parse-failure rate, mean score and
// leniency relative to the panel, sorted by judge.
func JudgeStats(obs []JudgeScore) []JudgeStat {
	byItem := map[string][]JudgeScore{}
	st := map[string]*JudgeStat{}
	sums := map[string]float64{}
	for _, o := range obs {
		s := st[o.Judge]
		if s == nil {
			s = &JudgeStat{Judge: o.Judge}
			st[o.Judge] = s
		}
		s.Judgements++
		if !o.Scored {
			s.Unscored++
			continue
		}
		sums[o.Judge] += o.Score
		byItem[o.Item] = append(byItem[o.Item], o)
	}
	lenSum := map[string]float64{}
	for _, scores := range byItem {
		if len(scores) < 2 {
			continue
		}
		total := 0.0
		for _, o := range scores {
			total += o.Score
		}
		for _, o := range scores {
			others := (total - o.Score) / float64(len(scores)-1)
			lenSum[o.Judge] += o.Score - others
			st[o.Judge].LeniencyN++
		}
	}
	var out []JudgeStat
	for j, s := range st {
		s.FailRate = float64(s.Unscored) / float64(s.Judgements)
		s.Mean, s.Leniency = math.NaN(), math.NaN()
		if n := s.Judgements - s.Unscored; n > 0 {
			s.Mean = sums[j] / float64(n)
		}
		if s.LeniencyN > 0 {
			s.Leniency = lenSum[j] / float64(s.LeniencyN)
		}
		out = append(out, *s)
	}
	sort.Slice(out, func(i, k int) bool { return out[i].Judge < out[k].Judge })
	return out
}

// CohenDz is the paired effect size: the mean of the differences divided by
// their sample standard deviation (NaN for fewer than two, or no spread).
func CohenDz(d []float64) float64 {
	sd := SampleSD(d)
	if math.IsNaN(sd) || sd == 0 {
		return math.NaN()
	}
	return Mean(d) / sd
}

// ParetoFront marks the points (xs[i], ys[i]) that no other point
// dominates, both coordinates being better when larger: j dominates i when
// it is at least as good in both and better in one. NaN points are never on
// the front.
func ParetoFront(xs, ys []float64) []bool {
	out := make([]bool, len(xs))
	for i := range xs {
		if math.IsNaN(xs[i]) || math.IsNaN(ys[i]) {
			continue
		}
		out[i] = true
		for j := range xs {
			if j == i || math.IsNaN(xs[j]) || math.IsNaN(ys[j]) {
				continue
			}
			if xs[j] >= xs[i] && ys[j] >= ys[i] && (xs[j] > xs[i] || ys[j] > ys[i]) {
				out[i] = false
				break
			}
		}
	}
	return out
}
