package metrics

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"strings"
)

// HIC-Bench (Yang et al., "Heaven-Sent or Hell-Bent? Benchmarking the
// Intelligence and Defectiveness of LLM Hallucinations").

// IsIH reports whether an answer is an Intelligent Hallucination (IH,
// §3.2.2): Originality ≥ 4, Value ≥ 4 and Feasibility ≥ 3, each the mean over
// the judge panel. As in the authors' code, IH does not look at the
// hallucination verdict, so an answer can be both IH and DH.
func IsIH(originality, feasibility, value float64) bool {
	return originality >= 4 && value >= 4 && feasibility >= 3
}

// IFS is the Intelligent-Fidelity Score (eq. 3):
//
//	IFS = w1·IH_ratio + w2·(1 − DH_ratio − IH_ratio),  w2 = 1 − w1.
//
// The paper's default is w1 = 0.6 (BIFS); see the presets below.
func IFS(ihRatio, dhRatio, w1 float64) float64 {
	return w1*ihRatio + (1-w1)*(1-dhRatio-ihRatio)
}

// IFS weight presets (§4.3): intelligent, balanced (the paper's default) and
// robust.
const (
	IIFSWeight = 0.9
	BIFSWeight = 0.6
	RIFSWeight = 0.1
)

var wordRE = regexp.MustCompile(`[\p{L}\p{N}]+(?:[-'][\p{L}\p{N}]+)*`)

// Keywords extracts the keywords kwPrec compares: the distinct lower-cased
// words (letters and digits, inner hyphens and apostrophes kept) of three or
// more characters that are not English stop words, in order of first
// appearance. UHGEval segments Chinese with jieba; for English answers this
// content-word set plays the same role.
func Keywords(text string) []string {
	seen := map[string]bool{}
	var out []string
	for _, w := range wordRE.FindAllString(strings.ToLower(text), -1) {
		if len([]rune(w)) < 3 || stopWords[w] || seen[w] {
			continue
		}
		seen[w] = true
		out = append(out, w)
	}
	return out
}

// ErrNoKeywords is returned by KwPrec for a response without keywords.
var ErrNoKeywords = errors.New("response has no keywords")

// KwPrec is UHGEval's keyword precision (HIC-Bench §3.2.2): the share of the
// response's keywords that also occur among the reference text's keywords.
func KwPrec(response, reference string) (float64, error) {
	kw := Keywords(response)
	if len(kw) == 0 {
		return 0, ErrNoKeywords
	}
	ref := map[string]bool{}
	for _, k := range Keywords(reference) {
		ref[k] = true
	}
	hit := 0
	for _, k := range kw {
		if ref[k] {
			hit++
		}
	}
	return float64(hit) / float64(len(kw)), nil
}

// SignFlipResult is the outcome of a paired sign-flip permutation test.
type SignFlipResult struct {
	MeanDiff float64 // observed mean of the differences
	P        float64 // two-sided p-value
	SE       float64 // standard error of the mean difference, sd/√n
	N        int
}

// SignFlipTest is HIC-Bench's two-sided paired permutation test (Appendix
// B.3): under H0 the expected difference is zero, so each task-level
// difference d_i keeps or flips its sign with probability ½; the mean is
// recomputed for each of `resamples` random sign vectors (a PCG generator
// seeded with seed) and p is the share of resampled means at least as
// extreme as the observed one, |m*| ≥ |m|. When 2^n ≤ resamples every sign
// vector is enumerated instead and p is exact. SE is the sample standard
// deviation of d over √n.
func SignFlipTest(d []float64, resamples int, seed uint64) (SignFlipResult, error) {
	n := len(d)
	if n == 0 {
		return SignFlipResult{}, errors.New("sign-flip test: no differences")
	}
	obs := math.Abs(Mean(d))
	res := SignFlipResult{MeanDiff: Mean(d), N: n}
	if n > 1 {
		res.SE = SampleSD(d) / math.Sqrt(float64(n))
	}
	const eps = 1e-12
	extreme := func(signs func(i int) float64) bool {
		var s float64
		for i, x := range d {
			s += signs(i) * x
		}
		return math.Abs(s/float64(n)) >= obs-eps
	}
	if n < 63 && 1<<uint(n) <= resamples {
		count := 0
		total := 1 << uint(n)
		for mask := 0; mask < total; mask++ {
			if extreme(func(i int) float64 {
				if mask>>uint(i)&1 == 1 {
					return -1
				}
				return 1
			}) {
				count++
			}
		}
		res.P = float64(count) / float64(total)
		return res, nil
	}
	if resamples <= 0 {
		return res, fmt.Errorf("sign-flip test: %d resamples", resamples)
	}
	rng := rand.New(rand.NewPCG(seed, seed^0x5851f42d4c957f2d))
	count := 0
	signs := make([]float64, n)
	for r := 0; r < resamples; r++ {
		for i := range signs {
			signs[i] = 1
			if rng.IntN(2) == 1 {
				signs[i] = -1
			}
		}
		if extreme(func(i int) float64 { return signs[i] }) {
			count++
		}
	}
	res.P = float64(count) / float64(resamples)
	return res, nil
}

// stopWords is a common English stop-word list (function words, auxiliaries,
// pronouns and a few ubiquitous verbs) used by Keywords.
var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a about above after again against all also am an and any are aren't as at
be because been before being below between both but by can can't cannot could couldn't did didn't do does
doesn't doing don't down during each either few for from further had hadn't has hasn't have haven't having
he her here hers herself him himself his how however i if in into is isn't it it's its itself just let's
may me might more most must mustn't my myself neither no nor not now of off on once only or other ought our
ours ourselves out over own per same shall shan't she should shouldn't so some such than that that's the
their theirs them themselves then there there's these they this those through thus to too under until up
upon us use used using very via was wasn't we were weren't what when where whether which while who whom
whose why will with within without won't would wouldn't yet you your yours yourself yourselves`) {
		m[w] = true
	}
	return m
}()
