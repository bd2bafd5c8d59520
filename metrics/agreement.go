package metrics

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// How far a judge can be trusted: its agreement with people's labels
// (accuracy, Cohen's κ, the rates at which it calls a labelled unit
// "hallucinated"), and headline figures corrected for its errors by
// prediction-powered inference.

// CohenKappa is Cohen's κ for two raters' labels of the same units
// (Cohen 1960): κ = (p_o − p_e)/(1 − p_e), p_o the share of units they
// label alike, p_e the share expected by chance from each rater's own
// label frequencies.
//
// The interval: the variance of κ̂ is Fleiss, Cohen and Everitt's (1969)
// large-sample variance (Fleiss, Levin & Paik 2003, eq. 18.13),
//
//	[Σᵢ pᵢᵢ(1 − (pᵢ. + p.ᵢ)(1 − κ))² + (1 − κ)² Σᵢ≠ⱼ pᵢⱼ(p.ᵢ + pⱼ.)² − (κ − p_e(1 − κ))²] / (n(1 − p_e)²),
//
// and the interval is a Wilson score interval for p_o at the effective
// sample size that variance implies (n_eff = p_o(1 − p_o)/(se·(1 − p_e))²),
// mapped to κ = (p_o − p_e)/(1 − p_e): it keeps the correct variance where
// Cohen's simpler one over-covers (0.985 at κ 0.16, n = 1,000) and the
// Wilson interval's asymmetry near perfect agreement, where a symmetric
// interval under-covers (0.835 at κ 0.91, n = 50). Measured coverage of a
// 95% interval (TestKappaCoverage): 0.942–0.953 over nine regimes, n
// 50–1,000, κ 0.13–0.91.
// κ is NaN (with NaN bounds) when there are no units or p_e = 1 (both
// raters always give one and the same label: agreement beyond chance is
// not defined). a and b must have the same length.
func CohenKappa(a, b []string, level float64) Interval {
	n := len(a)
	nan := Interval{Estimate: math.NaN(), Low: math.NaN(), High: math.NaN(), N: n}
	if n == 0 || len(b) != n {
		return nan
	}
	ca, cb := map[string]float64{}, map[string]float64{}
	agree := 0.0
	for i := range a {
		ca[a[i]]++
		cb[b[i]]++
		if a[i] == b[i] {
			agree++
		}
	}
	nf := float64(n)
	po := agree / nf
	pe := 0.0
	for l, c := range ca {
		pe += c / nf * cb[l] / nf
	}
	if pe >= 1 {
		return nan
	}
	k := (po - pe) / (1 - pe)
	z := distuv.UnitNormal.Quantile((1 + level) / 2)
	// Fleiss, Cohen and Everitt's variance, over the cells.
	cell := map[[2]string]float64{}
	for i := range a {
		cell[[2]string{a[i], b[i]}] += 1 / nf
	}
	var s1, s2 float64
	for ij, p := range cell {
		if ij[0] == ij[1] {
			x := 1 - (ca[ij[0]]/nf+cb[ij[0]]/nf)*(1-k)
			s1 += p * x * x
			continue
		}
		x := cb[ij[0]]/nf + ca[ij[1]]/nf // p.ᵢ + pⱼ.
		s2 += p * x * x
	}
	s3 := k - pe*(1-k)
	v := (s1 + (1-k)*(1-k)*s2 - s3*s3) / (nf * (1 - pe) * (1 - pe))
	// Wilson's score interval for p_o at the effective n, mapped to κ.
	neff := nf
	if sp := math.Sqrt(math.Max(v, 0)) * (1 - pe); sp > 0 && po > 0 && po < 1 {
		neff = po * (1 - po) / (sp * sp)
	}
	den := 1 + z*z/neff
	center := (po + z*z/(2*neff)) / den
	half := z * math.Sqrt(po*(1-po)/neff+z*z/(4*neff*neff)) / den
	toK := func(p float64) float64 { return math.Min(1, math.Max(-1, (p-pe)/(1-pe))) }
	return Interval{Estimate: k, Low: toK(center - half), High: toK(center + half), N: n}
}

// LabelledVerdict is a judge's verdict on a unit people labelled: Judged is
// the judge's "hallucinated" (meaningless when Unscored: its reply stated
// no verdict), Human the people's label.
type LabelledVerdict struct {
	Judged, Unscored, Human bool
}

// Validity is how a judge's verdicts agree with people's labels. Every
// share carries its Wilson interval and the count it rests on; n = 0 gives
// NaN. Unscored verdicts are counted in Unscored and left out of the rest
// (a judge that never states a verdict is not thereby accurate).
type Validity struct {
	// Units the judge was asked about, and how many it gave no verdict on.
	Units    int      `json:"units"`
	Unscored Interval `json:"unscored"`
	// Accuracy is the share of scored units where judge and people agree.
	Accuracy Interval `json:"accuracy"`
	// Kappa is Cohen's κ between judge and people on the scored units.
	Kappa Interval `json:"kappa"`
	// TPR is the share of units people call hallucinated that the judge
	// calls hallucinated too (sensitivity); FPR the share of units people
	// call faithful that the judge calls hallucinated.
	TPR Interval `json:"tpr"`
	FPR Interval `json:"fpr"`
	// Confusion counts: judge × people.
	TP, FP, TN, FN int
}

// KappaMinClass is how many units each class must have — those people
// label hallucinated and faithful, those the judge calls so — for κ's
// interval to be shown without a warning. Simulated over labels 20–500,
// prevalence 0.05–0.5, symmetric judges of accuracy 0.6–0.95 and judges
// biased to either label (TestKappaCoverageWhereLabelsAreRare), the
// interval covers κ 90–98% of the time with no warning where a class had
// fewer (43% at 20 labels, prevalence 0.05 and a judge that under-flags),
// and 92.9–97.8% where every class has 20 or more.
const KappaMinClass = 20

// KappaWarning says why κ's interval from a confusion table (judge ×
// people) may not hold its coverage — a class with fewer than
// KappaMinClass units, which κ's sampling distribution then rests on —
// and "" when it holds. The report, the judge's validation and the
// coverage test all ask it.
func KappaWarning(tp, fn, fp, tn int) string {
	classes := []struct {
		n    int
		what string
	}{{tp + fn, "people labelled hallucinated"}, {fp + tn, "people labelled faithful"}, {tp + fp, "the judge called hallucinated"}, {fn + tn, "the judge called faithful"}}
	for _, c := range classes {
		if c.n < KappaMinClass {
			return fmt.Sprintf("κ's interval rests on %d units %s (its coverage is assured from %d of each class)", c.n, c.what, KappaMinClass)
		}
	}
	return ""
}

// RateMinUnits is how many units a judge's TPR or FPR must rest on — the
// units people labelled hallucinated, or faithful — for its Wilson
// interval to be shown without a warning. Simulated over the same regimes
// as κ (TestRateCoverageWhereLabelsAreRare), Wilson's interval covers
// 91.3% at worst over every draw and 93.4–97.1% from 15 units; Jeffreys'
// interval was no better there (92.2–98.5%).
const RateMinUnits = 15

// RateWarning says why a TPR or FPR interval resting on n units of the
// class people labelled (what) may not hold its coverage; "" when it
// holds.
func RateWarning(n int, what string) string {
	if n < RateMinUnits {
		return fmt.Sprintf("rests on %d units people labelled %s (its coverage is assured from %d)", n, what, RateMinUnits)
	}
	return ""
}

// Agreement measures one judge against people's labels at level (0.95).
func Agreement(vs []LabelledVerdict, level float64) Validity {
	var out Validity
	out.Units = len(vs)
	var unscored int
	var ja, hu []string
	for _, v := range vs {
		if v.Unscored {
			unscored++
			continue
		}
		ja, hu = append(ja, yes(v.Judged)), append(hu, yes(v.Human))
		switch {
		case v.Judged && v.Human:
			out.TP++
		case v.Judged && !v.Human:
			out.FP++
		case !v.Judged && v.Human:
			out.FN++
		default:
			out.TN++
		}
	}
	scored := len(ja)
	out.Unscored = WilsonCI(unscored, len(vs), level)
	out.Accuracy = WilsonCI(out.TP+out.TN, scored, level)
	out.Kappa = CohenKappa(ja, hu, level)
	out.TPR = WilsonCI(out.TP, out.TP+out.FN, level)
	out.FPR = WilsonCI(out.FP, out.FP+out.TN, level)
	return out
}

func yes(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// PPIMean is the prediction-powered estimate of a mean (Angelopoulos et
// al., "Prediction-powered inference", Science 2023, §2 and Algorithm 1
// for the mean): with a judge's predictions f on N units nobody labelled
// and, on n other units, both its predictions f_i and people's labels y_i,
//
//	θ̂ = mean(f over the N) − mean(f_i − y_i over the n)
//
// — the judge's figure minus its measured bias (the rectifier) — and the
// interval θ̂ ± z·√(σ̂²_f/N + σ̂²_Δ/n), σ̂² the sample variances of the
// predictions and of the rectifier. Its coverage holds whatever the judge's
// error rates, provided the n labelled units are a random sample. NaN when
// either side has fewer than two units.
func PPIMean(unlabelled, labelledPred, labels []float64, level float64) Interval {
	return ppi(unlabelled, labelledPred, labels, level, nil)
}

// ppi is PPIMean with, when floor is set, the rectifier's variance raised
// to at least floor(rectifier).
func ppi(unlabelled, labelledPred, labels []float64, level float64, floor func(rect []float64) float64) Interval {
	N, n := len(unlabelled), len(labelledPred)
	out := Interval{Estimate: math.NaN(), Low: math.NaN(), High: math.NaN(), N: n}
	if N < 2 || n < 2 || len(labels) != n {
		return out
	}
	rect := make([]float64, n)
	for i := range rect {
		rect[i] = labelledPred[i] - labels[i]
	}
	theta := Mean(unlabelled) - Mean(rect)
	vf, vr := SampleSD(unlabelled), SampleSD(rect)
	vr2 := vr * vr
	if floor != nil {
		vr2 = math.Max(vr2, floor(rect))
	}
	z := distuv.UnitNormal.Quantile((1 + level) / 2)
	half := z * math.Sqrt(vf*vf/float64(N)+vr2/float64(n))
	out.Estimate, out.Low, out.High = theta, theta-half, theta+half
	return out
}

// PPIMinLabels is the label count from which PPIShare's interval is shown
// without a warning: simulated over labels 20–200, judge accuracy
// 0.6–0.95, prevalence 0.1 and 0.5, symmetric and under-flagging judges
// (TestPPICoverageAcrossRegimes), it covers the truth 94.1–96.6% of the
// time at 100 labels and 94.2–95.5% at 200; at 50, 93.6–98.6% (over-
// covering where a judge's errors are rare), at 20, 92.8–99.8% with the
// floor below (as little as 64% without it).
const PPIMinLabels = 100

// PPIShare is PPIMean for a yes/no quantity (predictions and labels 0 or
// 1), with a floor on the rectifier's variance: with few labels, a
// judge's errors often do not show among them and the rectifier's sample
// variance is 0 — an interval that then carries none of the judge's
// error. The floor is p̃(1−p̃) with p̃ = (k+1)/(n+2) the Laplace estimate
// of the error rate (k labelled units on which judge and people differ).
// The interval is clipped to 0..1.
func PPIShare(unlabelled, labelledPred, labels []float64, level float64) Interval {
	laplace := func(rect []float64) float64 {
		k := 0
		for _, r := range rect {
			if r != 0 {
				k++
			}
		}
		pe := (float64(k) + 1) / (float64(len(rect)) + 2)
		return pe * (1 - pe)
	}
	return ppi(unlabelled, labelledPred, labels, level, laplace).Clip(0, 1)
}

// NaiveMean is the uncorrected figure PPIMean is set beside: the mean of
// the judge's predictions over every unit with its normal interval,
// as if the judge made no errors.
func NaiveMean(pred []float64, level float64) Interval {
	n := len(pred)
	out := Interval{Estimate: math.NaN(), Low: math.NaN(), High: math.NaN(), N: n}
	if n < 2 {
		return out
	}
	m, sd := Mean(pred), SampleSD(pred)
	half := distuv.UnitNormal.Quantile((1+level)/2) * sd / math.Sqrt(float64(n))
	out.Estimate, out.Low, out.High = m, m-half, m+half
	return out
}

// EffectiveJudges is how many independent judges a panel of k is worth
// when their scores correlate r̄ on average (Spearman–Brown, solved for
// the number of items): k / (1 + (k − 1)·r̄). Judges that always agree
// (r̄ = 1) are worth one; independent judges (r̄ = 0) are worth k. NaN —
// not defined — for k < 1, a NaN r̄, or r̄ below 0: judges that disagree
// more than chance do not measure one thing, and the formula would call
// them worth more than k (or k, were r̄ floored at 0).
func EffectiveJudges(k int, meanR float64) float64 {
	if k < 1 || math.IsNaN(meanR) || meanR < 0 {
		return math.NaN()
	}
	r := math.Min(1, meanR)
	return float64(k) / (1 + float64(k-1)*r)
}

// PanelMajority is the panel's verdict on each unit: hallucinated when more
// than half of the judges that stated a verdict say so (a tie counts as
// hallucinated, HIC-Bench's rule), unscored when none stated one.
// verdicts[u] holds each judge's verdict on unit u.
func PanelMajority(verdicts [][]LabelledVerdict) []LabelledVerdict {
	out := make([]LabelledVerdict, len(verdicts))
	for u, vs := range verdicts {
		var votes []string
		for _, v := range vs {
			out[u].Human = v.Human
			if !v.Unscored {
				votes = append(votes, yes(v.Judged))
			}
		}
		w, _, ok := Majority(votes, []string{"yes"})
		out[u].Unscored, out[u].Judged = !ok, w == "yes"
	}
	return out
}

// Slope is the least-squares slope of y on x with its t interval at level:
// b = Σ(x−x̄)(y−ȳ)/Σ(x−x̄)², se = √(Σr²/(n−2) / Σ(x−x̄)²), b ± t_{n−2}·se.
// The judge card's length bias is the slope of a judge's score on the
// length of the text it judged. NaN under three points or with no spread
// in x.
func Slope(x, y []float64, level float64) Interval {
	n := len(x)
	out := Interval{Estimate: math.NaN(), Low: math.NaN(), High: math.NaN(), N: n}
	if n < 3 || len(y) != n {
		return out
	}
	mx, my := Mean(x), Mean(y)
	var sxx, sxy float64
	for i := range x {
		sxx += (x[i] - mx) * (x[i] - mx)
		sxy += (x[i] - mx) * (y[i] - my)
	}
	if sxx == 0 {
		return out
	}
	b := sxy / sxx
	var ss float64
	for i := range x {
		r := y[i] - my - b*(x[i]-mx)
		ss += r * r
	}
	se := math.Sqrt(ss / float64(n-2) / sxx)
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(n - 2)}.Quantile((1 + level) / 2)
	out.Estimate, out.Low, out.High = b, b-t*se, b+t*se
	return out
}
