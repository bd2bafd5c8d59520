package metrics

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// General statistics used by the reports. Distributions come from gonum's
// distuv; the tests check results against values computed independently
// (closed forms, hand enumeration, published examples).

// SampleSD is the standard deviation with divisor n−1.
func SampleSD(xs []float64) float64 {
	if len(xs) < 2 {
		return math.NaN()
	}
	return math.Sqrt(stat.Variance(xs, nil))
}

// Interval is an estimate with a confidence interval.
type Interval struct {
	Estimate float64 `json:"estimate"`
	Low      float64 `json:"low"`
	High     float64 `json:"high"`
	N        int     `json:"n"`
}

// Clip bounds the interval (and its estimate) to the parameter's range
// lo..hi: a normal interval around a proportion near 0 or 1 reaches past
// what the proportion can be, and the part outside says nothing. NaN
// bounds stay NaN.
func (iv Interval) Clip(lo, hi float64) Interval {
	c := func(x float64) float64 {
		if math.IsNaN(x) {
			return x
		}
		return math.Min(hi, math.Max(lo, x))
	}
	iv.Estimate, iv.Low, iv.High = c(iv.Estimate), c(iv.Low), c(iv.High)
	return iv
}

// MeanCI is the mean with its t-based confidence interval at level (0.95):
// mean ± t_{(1+level)/2, n−1} · s/√n. With fewer than two values the bounds
// are NaN: there is no interval to give.
func MeanCI(xs []float64, level float64) Interval {
	n := len(xs)
	iv := Interval{Estimate: Mean(xs), N: n, Low: math.NaN(), High: math.NaN()}
	if n < 2 {
		return iv
	}
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(n - 1)}.Quantile((1 + level) / 2)
	h := t * SampleSD(xs) / math.Sqrt(float64(n))
	iv.Low, iv.High = iv.Estimate-h, iv.Estimate+h
	return iv
}

// Percentile is the p-th percentile (0 ≤ p ≤ 100) with linear interpolation
// between closest ranks, numpy's default ("linear"): with the values sorted
// x_0 ≤ … ≤ x_{n−1}, h = (n−1)·p/100 and the result is
// x_⌊h⌋ + (h − ⌊h⌋)(x_⌊h⌋+1 − x_⌊h⌋).
func Percentile(xs []float64, p float64) float64 {
	n := len(xs)
	if n == 0 || p < 0 || p > 100 {
		return math.NaN()
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	h := float64(n-1) * p / 100
	lo := math.Floor(h)
	i := int(lo)
	if i >= n-1 {
		return s[n-1]
	}
	return s[i] + (h-lo)*(s[i+1]-s[i])
}

// BootstrapCI is a percentile-bootstrap confidence interval for statistic
// over xs: `resamples` resamples with replacement drawn with a PCG generator
// seeded with seed; the bounds are the (1−level)/2 and (1+level)/2
// percentiles (linear interpolation) of the resampled statistics.
func BootstrapCI(xs []float64, statistic func([]float64) float64, resamples int, seed uint64, level float64) Interval {
	iv := Interval{Estimate: statistic(xs), N: len(xs), Low: math.NaN(), High: math.NaN()}
	if len(xs) < 2 || resamples < 1 {
		return iv
	}
	rng := rand.New(rand.NewPCG(seed, seed^0x2545f4914f6cdd1d))
	stats := make([]float64, resamples)
	buf := make([]float64, len(xs))
	for r := range stats {
		for i := range buf {
			buf[i] = xs[rng.IntN(len(xs))]
		}
		stats[r] = statistic(buf)
	}
	iv.Low = Percentile(stats, 100*(1-level)/2)
	iv.High = Percentile(stats, 100*(1+level)/2)
	return iv
}

// TestResult is a test statistic and its two-sided p-value.
type TestResult struct {
	Statistic float64 `json:"statistic"`
	P         float64 `json:"p"`
	DF        float64 `json:"df,omitempty"`
	N         int     `json:"n"`
}

// PairedT is the paired t-test on a−b: t = mean(d)/(s_d/√n), df = n−1,
// two-sided p from Student's t.
func PairedT(a, b []float64) (TestResult, error) {
	if len(a) != len(b) {
		return TestResult{}, fmt.Errorf("paired t: %d vs %d values", len(a), len(b))
	}
	n := len(a)
	if n < 2 {
		return TestResult{}, errors.New("paired t: fewer than 2 pairs")
	}
	d := make([]float64, n)
	for i := range a {
		d[i] = a[i] - b[i]
	}
	sd := SampleSD(d)
	if sd == 0 {
		return TestResult{}, errors.New("paired t: all differences equal")
	}
	t := Mean(d) / (sd / math.Sqrt(float64(n)))
	df := float64(n - 1)
	return TestResult{Statistic: t, P: studentTwoSided(t, df), DF: df, N: n}, nil
}

func studentTwoSided(t, df float64) float64 {
	return 2 * distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Survival(math.Abs(t))
}

// Pearson is the Pearson correlation with the two-sided p-value of
// t = r√((n−2)/(1−r²)) on n−2 degrees of freedom.
func Pearson(x, y []float64) (TestResult, error) {
	if len(x) != len(y) {
		return TestResult{}, fmt.Errorf("pearson: %d vs %d values", len(x), len(y))
	}
	n := len(x)
	if n < 3 {
		return TestResult{}, errors.New("pearson: fewer than 3 pairs")
	}
	r := stat.Correlation(x, y, nil)
	if math.IsNaN(r) {
		return TestResult{}, errors.New("pearson: a variable is constant")
	}
	df := float64(n - 2)
	var p float64
	if math.Abs(r) >= 1 {
		p = 0
	} else {
		p = studentTwoSided(r*math.Sqrt(df/(1-r*r)), df)
	}
	return TestResult{Statistic: r, P: p, DF: df, N: n}, nil
}

// Ranks returns the 1-based ranks of xs, ties given their average rank.
func Ranks(xs []float64) []float64 {
	idx := make([]int, len(xs))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return xs[idx[a]] < xs[idx[b]] })
	r := make([]float64, len(xs))
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && xs[idx[j+1]] == xs[idx[i]] {
			j++
		}
		avg := float64(i+j)/2 + 1
		for k := i; k <= j; k++ {
			r[idx[k]] = avg
		}
		i = j + 1
	}
	return r
}

// Spearman is the Pearson correlation of the ranks (ties averaged), with the
// same t-approximation p-value.
func Spearman(x, y []float64) (TestResult, error) {
	if len(x) != len(y) {
		return TestResult{}, fmt.Errorf("spearman: %d vs %d values", len(x), len(y))
	}
	return Pearson(Ranks(x), Ranks(y))
}

// Wilcoxon is the Wilcoxon signed-rank test on a−b. Zero differences are
// dropped (Wilcoxon's method); the statistic is W+ (sum of ranks of the
// positive differences). The two-sided p-value is exact (enumerated
// distribution of W+) when n ≤ 50 and there are no ties, else from the
// normal approximation with tie correction.
func Wilcoxon(a, b []float64) (TestResult, error) {
	if len(a) != len(b) {
		return TestResult{}, fmt.Errorf("wilcoxon: %d vs %d values", len(a), len(b))
	}
	var d []float64
	for i := range a {
		if x := a[i] - b[i]; x != 0 {
			d = append(d, x)
		}
	}
	n := len(d)
	if n == 0 {
		return TestResult{}, errors.New("wilcoxon: all differences are zero")
	}
	abs := make([]float64, n)
	for i, x := range d {
		abs[i] = math.Abs(x)
	}
	r := Ranks(abs)
	var wplus float64
	ties := false
	seen := map[float64]int{}
	for i, x := range d {
		if x > 0 {
			wplus += r[i]
		}
		seen[abs[i]]++
	}
	var tieSum float64
	for _, c := range seen {
		if c > 1 {
			ties = true
			tieSum += float64(c*c*c - c)
		}
	}
	res := TestResult{Statistic: wplus, N: n}
	if !ties && n <= 50 {
		// counts[s] = number of sign vectors with W+ = s.
		max := n * (n + 1) / 2
		counts := make([]float64, max+1)
		counts[0] = 1
		for k := 1; k <= n; k++ {
			for s := max; s >= k; s-- {
				counts[s] += counts[s-k]
			}
		}
		total := math.Pow(2, float64(n))
		w := int(math.Round(wplus))
		lo := min(w, max-w)
		var tail float64
		for s := 0; s <= lo; s++ {
			tail += counts[s]
		}
		res.P = math.Min(1, 2*tail/total)
		return res, nil
	}
	nf := float64(n)
	mu := nf * (nf + 1) / 4
	sigma := math.Sqrt(nf*(nf+1)*(2*nf+1)/24 - tieSum/48)
	z := (wplus - mu) / sigma
	res.P = 2 * distuv.UnitNormal.Survival(math.Abs(z))
	return res, nil
}

// McNemarExact is the exact (binomial) McNemar test for paired binary
// outcomes: b = pairs right under A only, c = right under B only; the
// two-sided p is min(1, 2·P(X ≤ min(b,c))) with X ~ Binomial(b+c, ½).
func McNemarExact(b, c int) TestResult {
	n := b + c
	res := TestResult{Statistic: float64(min(b, c)), N: n}
	if n == 0 {
		res.P = 1
		return res
	}
	res.P = math.Min(1, 2*distuv.Binomial{N: float64(n), P: 0.5}.CDF(float64(min(b, c))))
	return res
}

// ShapiroWilk is the Shapiro–Wilk W test of normality with Royston's (1995,
// algorithm AS R94) coefficients and p-value approximation, for 3 ≤ n ≤ 5000.
func ShapiroWilk(xs []float64) (TestResult, error) {
	n := len(xs)
	if n < 3 || n > 5000 {
		return TestResult{}, fmt.Errorf("shapiro-wilk: n = %d outside 3..5000", n)
	}
	x := append([]float64(nil), xs...)
	sort.Float64s(x)
	if x[n-1]-x[0] == 0 {
		return TestResult{}, errors.New("shapiro-wilk: all values equal")
	}
	nn2 := n / 2
	a := make([]float64, nn2) // coefficients for the upper half, a[0] largest
	an := float64(n)
	if n == 3 {
		a[0] = math.Sqrt(0.5)
	} else {
		c1 := []float64{0, 0.221157, -0.147981, -2.07119, 4.434685, -2.706056}
		c2 := []float64{0, 0.042981, -0.293762, -1.752461, 5.682633, -3.582633}
		m := make([]float64, nn2)
		var summ2 float64
		for i := range m {
			m[i] = distuv.UnitNormal.Quantile((float64(i+1) - 0.375) / (an + 0.25))
			summ2 += m[i] * m[i]
		}
		summ2 *= 2
		ssumm2 := math.Sqrt(summ2)
		rsn := 1 / math.Sqrt(an)
		a1 := poly(c1, rsn) - m[0]/ssumm2
		var i1 int
		var fac float64
		if n > 5 {
			i1 = 2
			a2 := -m[1]/ssumm2 + poly(c2, rsn)
			fac = math.Sqrt((summ2 - 2*m[0]*m[0] - 2*m[1]*m[1]) / (1 - 2*a1*a1 - 2*a2*a2))
			a[1] = a2
		} else {
			i1 = 1
			fac = math.Sqrt((summ2 - 2*m[0]*m[0]) / (1 - 2*a1*a1))
		}
		a[0] = a1
		for i := i1; i < nn2; i++ {
			a[i] = -m[i] / fac
		}
	}
	mean := Mean(x)
	var ss, num float64
	for _, v := range x {
		ss += (v - mean) * (v - mean)
	}
	for i := 0; i < nn2; i++ {
		num += a[i] * (x[n-1-i] - x[i])
	}
	w := num * num / ss
	if w > 1 {
		w = 1
	}
	res := TestResult{Statistic: w, N: n}
	if n == 3 {
		const pi6, stqr = 6 / math.Pi, math.Pi / 3
		res.P = math.Max(0, pi6*(math.Asin(math.Sqrt(w))-stqr))
		return res, nil
	}
	w1 := math.Log(1 - w)
	var mu, s float64
	if n <= 11 {
		gamma := poly([]float64{-2.273, 0.459}, an)
		if w1 >= gamma {
			res.P = 1e-99
			return res, nil
		}
		w1 = -math.Log(gamma - w1)
		mu = poly([]float64{0.544, -0.39978, 0.025054, -6.714e-4}, an)
		s = math.Exp(poly([]float64{1.3822, -0.77857, 0.062767, -0.0020322}, an))
	} else {
		xx := math.Log(an)
		mu = poly([]float64{-1.5861, -0.31082, -0.083751, 0.0038915}, xx)
		s = math.Exp(poly([]float64{-0.4803, -0.082676, 0.0030302}, xx))
	}
	res.P = distuv.Normal{Mu: mu, Sigma: s}.Survival(w1)
	return res, nil
}

// poly evaluates c[0] + c[1]x + c[2]x² + ….
func poly(c []float64, x float64) float64 {
	var r float64
	for i := len(c) - 1; i >= 0; i-- {
		r = r*x + c[i]
	}
	return r
}

// Majority returns the most frequent vote. When several labels tie for the
// most votes, the first of them in prefer wins; failing that, the smallest
// in sort order — a deterministic rule, reported by tied.
func Majority(votes []string, prefer []string) (winner string, tied bool, ok bool) {
	if len(votes) == 0 {
		return "", false, false
	}
	counts := map[string]int{}
	best := 0
	for _, v := range votes {
		counts[v]++
		best = max(best, counts[v])
	}
	var top []string
	for v, c := range counts {
		if c == best {
			top = append(top, v)
		}
	}
	sort.Strings(top)
	if len(top) == 1 {
		return top[0], false, true
	}
	for _, p := range prefer {
		for _, t := range top {
			if t == p {
				return t, true, true
			}
		}
	}
	return top[0], true, true
}

// Ratio is n/total (eq. 1 for IH, eq. 2 for DH). With total 0 nothing was
// measured and the ratio is NaN ("–" in tables, left out of the metrics),
// never 0: a share of nothing would read as "no hallucination".
func Ratio(n, total int) float64 {
	if total == 0 {
		return math.NaN()
	}
	return float64(n) / float64(total)
}

// PopulationVariance is the variance with divisor n (numpy's var). HIC-Bench's
// Flexibility (Fle, §3.2.1) is the population variance of the per-question
// mean Originality, as the authors' code computes it.
func PopulationVariance(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	m := Mean(xs)
	var s float64
	for _, x := range xs {
		s += (x - m) * (x - m)
	}
	return s / float64(len(xs))
}

// Mean is the arithmetic mean; NaN for no values.
func Mean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}
