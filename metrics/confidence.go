package metrics

import (
	"encoding/json"
	"math"
	"slices"
	"sort"

	"gonum.org/v1/gonum/stat/distuv"
)

// TokenConfidence is how sure a model was of one reply, from its tokens'
// log-probabilities (natural log) as the server reported them. Each is a
// confidence score: higher means surer.
//
//   - MeanLogprob: the mean token log-probability — the length-normalised
//     log-likelihood of the reply (Malinin & Gales 2021, "Uncertainty
//     estimation in autoregressive structured prediction", eq. 15);
//     SelfCheckGPT's Avg(−log p) baseline is its negation (Manakul et al.
//     2023, eq. 9).
//   - MinLogprob: the least probable token's log-probability, the reply's
//     weakest link (Manakul et al. 2023, Max(−log p), eq. 10, negated;
//     Varshney et al. 2023 flag a sentence by its lowest-probability
//     token).
//   - SeqProb: exp(MeanLogprob), the length-normalised sequence probability,
//     the geometric mean of the token probabilities (Malinin & Gales 2021).
//   - NegEntropy: minus the mean, over positions, of the entropy of the
//     top-k distribution the server reported there, renormalised to sum
//     to 1 (Manakul et al. 2023, Avg(H), eq. 11, over the top-k the server
//     gives, not the whole vocabulary). NaN when no position had
//     alternatives.
//
// Tokens counts the reply's tokens with a log-probability; 0 makes every
// score NaN (shown "–").
type TokenConfidence struct {
	Tokens      int     `json:"tokens"`
	MeanLogprob float64 `json:"mean_logprob"`
	MinLogprob  float64 `json:"min_logprob"`
	SeqProb     float64 `json:"seq_prob"`
	NegEntropy  float64 `json:"neg_entropy"`
	// TopK is the most alternatives any position had.
	TopK int `json:"top_k,omitempty"`
	// Grammar marks a reply held to a schema (structured output): the
	// server reports the unconstrained model's log-probabilities (Ollama
	// v0.17.4: before its grammar and temperature), so the scores above
	// average the forced scaffolding's tokens, not what the model chose
	// among what it was allowed. They are kept, and left out of every
	// confidence check.
	Grammar bool `json:"grammar,omitempty"`
}

// tokenConfidenceJSON is TokenConfidence as JSON writes it: a score that
// is not defined (NaN) is null, as JSON has no NaN.
type tokenConfidenceJSON struct {
	Tokens      int      `json:"tokens"`
	MeanLogprob *float64 `json:"mean_logprob"`
	MinLogprob  *float64 `json:"min_logprob"`
	SeqProb     *float64 `json:"seq_prob"`
	NegEntropy  *float64 `json:"neg_entropy"`
	TopK        int      `json:"top_k,omitempty"`
	Grammar     bool     `json:"grammar,omitempty"`
}

// MarshalJSON writes a score that is not defined (NaN) as null.
func (c TokenConfidence) MarshalJSON() ([]byte, error) {
	num := func(x float64) *float64 {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil
		}
		return &x
	}
	return json.Marshal(tokenConfidenceJSON{c.Tokens, num(c.MeanLogprob), num(c.MinLogprob), num(c.SeqProb), num(c.NegEntropy), c.TopK, c.Grammar})
}

// UnmarshalJSON reads what MarshalJSON wrote, null as NaN.
func (c *TokenConfidence) UnmarshalJSON(b []byte) error {
	var v tokenConfidenceJSON
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	val := func(p *float64) float64 {
		if p == nil {
			return math.NaN()
		}
		return *p
	}
	*c = TokenConfidence{Tokens: v.Tokens, MeanLogprob: val(v.MeanLogprob), MinLogprob: val(v.MinLogprob), SeqProb: val(v.SeqProb), NegEntropy: val(v.NegEntropy), TopK: v.TopK, Grammar: v.Grammar}
	return nil
}

// Confidence computes a reply's TokenConfidence from its tokens'
// log-probabilities and, per token, the log-probabilities of the most
// likely alternatives at its position (tops may be nil or shorter).
func Confidence(logprobs []float64, tops [][]float64) TokenConfidence {
	c := TokenConfidence{Tokens: len(logprobs)}
	if len(logprobs) == 0 {
		nan := math.NaN()
		c.MeanLogprob, c.MinLogprob, c.SeqProb, c.NegEntropy = nan, nan, nan, nan
		return c
	}
	sum, lo := 0.0, math.Inf(1)
	for _, lp := range logprobs {
		sum += lp
		lo = min(lo, lp)
	}
	c.MeanLogprob, c.MinLogprob = sum/float64(len(logprobs)), lo
	c.SeqProb = math.Exp(c.MeanLogprob)
	hSum, hN := 0.0, 0
	for _, top := range tops {
		if len(top) == 0 {
			continue
		}
		c.TopK = max(c.TopK, len(top))
		// Entropy of the renormalised top-k distribution, computed from
		// log-probabilities shifted by their largest (no underflow).
		m := slices.Max(top)
		z := 0.0
		for _, lp := range top {
			z += math.Exp(lp - m)
		}
		h := 0.0
		for _, lp := range top {
			p := math.Exp(lp-m) / z
			if p > 0 {
				h -= p * math.Log(p)
			}
		}
		hSum += h
		hN++
	}
	c.NegEntropy = math.NaN()
	if hN > 0 {
		c.NegEntropy = -hSum / float64(hN)
	}
	return c
}

// AUROC is the area under the ROC curve of score as a detector of the
// positive class: the probability that a positive unit, drawn at random,
// scores above a negative one, ties counting one half (the Mann–Whitney U
// statistic over n₊·n₋). 0.5 is a score that tells nothing. NaN when a
// class is empty or a score is NaN.
func AUROC(score []float64, positive []bool) float64 {
	type pt struct {
		s   float64
		pos bool
	}
	pts := make([]pt, len(score))
	var np, nn float64
	for i, s := range score {
		if math.IsNaN(s) {
			return math.NaN()
		}
		pts[i] = pt{s, positive[i]}
		if positive[i] {
			np++
		} else {
			nn++
		}
	}
	if np == 0 || nn == 0 {
		return math.NaN()
	}
	sort.Slice(pts, func(a, b int) bool { return pts[a].s < pts[b].s })
	// Sum of the positives' mid-ranks.
	rankSum := 0.0
	for i := 0; i < len(pts); {
		j := i
		for j < len(pts) && pts[j].s == pts[i].s {
			j++
		}
		mid := float64(i+j+1) / 2 // ranks i+1 … j
		for k := i; k < j; k++ {
			if pts[k].pos {
				rankSum += mid
			}
		}
		i = j
	}
	return (rankSum - np*(np+1)/2) / (np * nn)
}

// AUROCInterval is a confidence interval for an AUROC a measured on nPos
// positive and nNeg negative units: Hanley & McNeil's (1982, Radiology
// 143:29, eq. 2) variance, on the logit scale so that the interval stays
// inside (0, 1); an estimate of 0 or 1 is taken as half a pair from it.
// Its coverage is measured by a seeded simulation (TestAUROCIntervalCoverage:
// 95–99% of binormal samples from 5 units of each kind, AUROC 0.5 to 0.98,
// balanced, unbalanced and tied) — the percentile bootstrap, which this
// replaced, covered as little as 58% at 5 of each and 84% at 10.
func AUROCInterval(a float64, nPos, nNeg int, level float64) (lo, hi float64) {
	if math.IsNaN(a) || nPos < 1 || nNeg < 1 {
		return math.NaN(), math.NaN()
	}
	pairs := float64(nPos * nNeg)
	a = min(max(a, 0.5/pairs), 1-0.5/pairs)
	q1, q2 := a/(2-a), 2*a*a/(1+a)
	v := (a*(1-a) + float64(nPos-1)*(q1-a*a) + float64(nNeg-1)*(q2-a*a)) / pairs
	z := distuv.UnitNormal.Quantile((1 + level) / 2)
	se := math.Sqrt(v) / (a * (1 - a))
	l := math.Log(a / (1 - a))
	inv := func(x float64) float64 { return 1 / (1 + math.Exp(-x)) }
	return inv(l - z*se), inv(l + z*se)
}

// MinClusters is the fewest clusters ClusteredAUROCInterval's coverage
// was measured to hold at (≥ 92% of seeded samples; 85–89% at 5).
const MinClusters = 20

// ClusteredAUROCInterval is a confidence interval for AUROC (AUROC's
// estimate, ties counted half) where units come in clusters that are not
// independent — a question's answers, which share the question and its
// sample scores: Obuchowski's (1997, "Nonparametric analysis of clustered ROC curve data", Biometrics 53:567–578)
// variance for clustered ROC data, from the structural components
// (placement values) summed per cluster, on the logit scale as
// AUROCInterval. With every cluster one unit it is DeLong's variance
// up to its small-sample factors (I/((I−1)M) for 1/(M−1)). cluster names
// each unit's cluster. It returns NaN when a class is empty or fewer than
// two clusters hold units, and lo, hi NaN when the variance is zero (every
// right answer scored above every wrong one, or below: the placement
// values do not vary, and a zero-width interval would claim certainty no
// sample gives); its coverage, measured by
// TestClusteredAUROCIntervalCoverage, holds from MinClusters clusters.
func ClusteredAUROCInterval(score []float64, positive []bool, cluster []string, level float64) (a, lo, hi float64) {
	nan := math.NaN()
	idx := map[string]int{}
	for _, c := range cluster {
		if _, ok := idx[c]; !ok {
			idx[c] = len(idx)
		}
	}
	I := len(idx)
	var pos, neg []int
	for i, p := range positive {
		if math.IsNaN(score[i]) {
			return nan, nan, nan
		}
		if p {
			pos = append(pos, i)
		} else {
			neg = append(neg, i)
		}
	}
	M, N := float64(len(pos)), float64(len(neg))
	if M == 0 || N == 0 || I < 2 {
		return nan, nan, nan
	}
	psi := func(x, y float64) float64 {
		switch {
		case x > y:
			return 1
		case x == y:
			return 0.5
		}
		return 0
	}
	v10, v01 := make([]float64, I), make([]float64, I) // per cluster: its placement values summed
	m, n := make([]float64, I), make([]float64, I)     // per cluster: its positives, its negatives
	total := 0.0
	for _, i := range pos {
		s := 0.0
		for _, j := range neg {
			s += psi(score[i], score[j])
		}
		total += s
		v10[idx[cluster[i]]] += s / N
		m[idx[cluster[i]]]++
	}
	for _, j := range neg {
		s := 0.0
		for _, i := range pos {
			s += psi(score[i], score[j])
		}
		v01[idx[cluster[j]]] += s / M
		n[idx[cluster[j]]]++
	}
	a = total / (M * N)
	var s10, s01, s11 float64
	for k := range I {
		d10, d01 := v10[k]-m[k]*a, v01[k]-n[k]*a
		s10 += d10 * d10
		s01 += d01 * d01
		s11 += d10 * d01
	}
	f := float64(I) / float64(I-1)
	s10 *= f / M
	s01 *= f / N
	s11 *= f
	v := s10/M + s01/N + 2*s11/(M*N)
	if v <= 0 {
		return a, nan, nan
	}
	ac := min(max(a, 0.5/(M*N)), 1-0.5/(M*N))
	z := distuv.UnitNormal.Quantile((1 + level) / 2)
	se := math.Sqrt(max(v, 0)) / (ac * (1 - ac))
	l := math.Log(ac / (1 - ac))
	inv := func(x float64) float64 { return 1 / (1 + math.Exp(-x)) }
	return a, inv(l - z*se), inv(l + z*se)
}

// riskCurve is, for k = 1 … n, the expected share of wrong units among the
// k most confident — units of equal confidence taken in a random order
// (the expectation, so the curve does not depend on the input's order).
func riskCurve(conf []float64, correct []bool) []float64 {
	idx := make([]int, len(conf))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return conf[idx[a]] > conf[idx[b]] })
	risk := make([]float64, len(conf))
	wrong := 0.0
	for i := 0; i < len(idx); {
		j := i
		gw := 0.0
		for j < len(idx) && conf[idx[j]] == conf[idx[i]] {
			if !correct[idx[j]] {
				gw++
			}
			j++
		}
		rate := gw / float64(j-i)
		for k := i; k < j; k++ {
			risk[k] = (wrong + rate*float64(k-i+1)) / float64(k+1)
		}
		wrong += gw
		i = j
	}
	return risk
}

// AURC is the area under the risk–coverage curve of a confidence score:
// the mean, over coverages k/n (k = 1 … n), of the share of wrong units
// among the k most confident (Geifman & El-Yaniv 2017, "Selective
// classification for deep neural networks"; Ding et al. 2020). Lower is
// better; a score that tells nothing has, in expectation, the overall
// error rate. NaN with no units or a NaN score.
func AURC(conf []float64, correct []bool) float64 {
	if len(conf) == 0 || slices.ContainsFunc(conf, math.IsNaN) {
		return math.NaN()
	}
	r := riskCurve(conf, correct)
	s := 0.0
	for _, v := range r {
		s += v
	}
	return s / float64(len(r))
}

// ConfidentWrong is the share of wrong units among the most confident
// tenth (the ⌈n/10⌉ most confident, ties broken in expectation): the
// confident-hallucination share. NaN with no units or a NaN score.
func ConfidentWrong(conf []float64, correct []bool) float64 {
	if len(conf) == 0 || slices.ContainsFunc(conf, math.IsNaN) {
		return math.NaN()
	}
	k := (len(conf) + 9) / 10
	return riskCurve(conf, correct)[k-1]
}

// SemanticSets assigns k samples to semantic sets by bidirectional
// entailment (Kuhn, Gal & Farquhar 2023, Algorithm 1): each sample joins the
// first set whose representative (its first member) it entails and that
// entails it, else starts a new set. entails(i, j) says whether sample i
// entails sample j; it is asked of representatives only, at most twice per
// (sample, set). It returns each sample's set.
func SemanticSets(k int, entails func(i, j int) bool) []int {
	set := make([]int, k)
	var reps []int
	for i := range k {
		set[i] = -1
		for s, r := range reps {
			if entails(i, r) && entails(r, i) {
				set[i] = s
				break
			}
		}
		if set[i] < 0 {
			set[i] = len(reps)
			reps = append(reps, i)
		}
	}
	return set
}

// SemanticEntropy is the discrete semantic entropy of samples assigned to
// sets (Farquhar, Kossen, Kuhn & Gal 2024, Nature, "Detecting
// hallucinations in large language models using semantic entropy",
// Methods, discrete variant): −Σ_c p(c) log p(c), p(c) the share of samples
// in set c. Higher means the model's answers disagree in meaning. NaN for
// fewer than 2 samples: one answer has no spread to measure.
func SemanticEntropy(sets []int) float64 {
	if len(sets) < 2 {
		return math.NaN()
	}
	count := map[int]int{}
	for _, s := range sets {
		count[s]++
	}
	h := 0.0
	for _, c := range count {
		p := float64(c) / float64(len(sets))
		h -= p * math.Log(p)
	}
	return h
}

// NormalizedSemanticEntropy is SemanticEntropy divided by ln k, k the
// samples (len(sets)): 0 when every sample means the same, 1 when each is
// a meaning of its own — a scale that runs drawing different numbers of
// samples share. NaN for fewer than 2 samples.
func NormalizedSemanticEntropy(sets []int) float64 {
	return SemanticEntropy(sets) / math.Log(float64(len(sets)))
}

// WeightedSemanticEntropy is semantic entropy with each meaning weighted
// by its samples' probabilities (Kuhn, Gal & Farquhar 2023, ICLR,
// "Semantic uncertainty"; Farquhar et al. 2024's code: each sample's
// length-normalised log-likelihood — its mean token log-probability —,
// normalised over the samples and summed per meaning (logsumexp_by_id,
// "sum_normalized"), then −Σ p log p (predictive_entropy_rao)), divided by
// ln k as NormalizedSemanticEntropy: p(c) = Σ_{s∈c} e^ℓs / Σ_s e^ℓs.
// meanLogprob[i] is sample i's ℓ. NaN for fewer than 2 samples or an ℓ
// not known (NaN).
func WeightedSemanticEntropy(sets []int, meanLogprob []float64) float64 {
	if len(sets) < 2 || len(meanLogprob) != len(sets) {
		return math.NaN()
	}
	top := math.Inf(-1)
	for _, l := range meanLogprob {
		if math.IsNaN(l) {
			return math.NaN()
		}
		top = max(top, l)
	}
	mass := map[int]float64{}
	total := 0.0
	for i, l := range meanLogprob {
		w := math.Exp(l - top) // scaled by e^−top: the shares are the same
		mass[sets[i]] += w
		total += w
	}
	h := 0.0
	for _, m := range mass {
		if p := m / total; p > 0 {
			h -= p * math.Log(p)
		}
	}
	return h / math.Log(float64(len(sets)))
}

// ROC is the ROC curve of score as a detector of the positive class: the
// false- and true-positive rates as the threshold falls past each distinct
// score (units of equal score enter together: one diagonal step), from
// (0, 0) to (1, 1). Nil when a class is empty or a score is NaN.
func ROC(score []float64, positive []bool) (fpr, tpr []float64) {
	if math.IsNaN(AUROC(score, positive)) {
		return nil, nil
	}
	idx := make([]int, len(score))
	var np, nn float64
	for i := range idx {
		idx[i] = i
		if positive[i] {
			np++
		} else {
			nn++
		}
	}
	sort.SliceStable(idx, func(a, b int) bool { return score[idx[a]] > score[idx[b]] })
	fpr, tpr = []float64{0}, []float64{0}
	fp, tp := 0.0, 0.0
	for i := 0; i < len(idx); {
		j := i
		for j < len(idx) && score[idx[j]] == score[idx[i]] {
			if positive[idx[j]] {
				tp++
			} else {
				fp++
			}
			j++
		}
		fpr, tpr = append(fpr, fp/nn), append(tpr, tp/np)
		i = j
	}
	return fpr, tpr
}
