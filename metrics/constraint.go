package metrics

import (
	"errors"
	"fmt"
	"math"
)

// FaithQA (Hao, Yu and You, "Beyond Facts: Evaluating Intent Hallucination in
// Large Language Models") — the Constraint Score, §4.2.

// Priority is an intent constraint's class (§4.1).
type Priority int

const (
	Mandatory Priority = iota
	Important
	Optional
)

func (p Priority) String() string {
	switch p {
	case Mandatory:
		return "mandatory"
	case Important:
		return "important"
	case Optional:
		return "optional"
	}
	return fmt.Sprintf("priority(%d)", int(p))
}

// Weights are the importance weights of the three constraint classes.
type Weights struct {
	Mandatory, Important, Optional float64
}

// Weight returns the weight of class p.
func (w Weights) Weight(p Priority) float64 {
	switch p {
	case Mandatory:
		return w.Mandatory
	case Important:
		return w.Important
	default:
		return w.Optional
	}
}

// DefaultWeights are the paper's 3/2/1; the others are Appendix G.1's
// alternatives.
var (
	DefaultWeights = Weights{3, 2, 1}
	UniformWeights = Weights{1, 1, 1}
	SteepWeights   = Weights{5, 2, 1}
	FlatWeights    = Weights{2, 1.5, 1}
	InvertedWeight = Weights{1, 2, 3}
)

// Verdict is one constraint with the judge's satisfaction verdict.
type Verdict struct {
	Priority  Priority
	Satisfied bool
}

// ConstraintScore is eq. 5–7: W_total = Σ_t w_t·|C_t| (eq. 5), W_sat =
// Σ_t w_t·Σ_{c∈C_t} s(c, r) (eq. 6), CS = 10·W_sat/W_total (eq. 7).
func ConstraintScore(v []Verdict, w Weights) (float64, error) {
	var total, sat float64
	for _, c := range v {
		wt := w.Weight(c.Priority)
		total += wt
		if c.Satisfied {
			sat += wt
		}
	}
	if total <= 0 {
		return 0, errors.New("constraint score: no weighted constraints")
	}
	return 10 * sat / total, nil
}

// PerfectRate is the share of responses with a Constraint Score of 10 (the
// paper's "Perfect": no intent hallucination).
func PerfectRate(scores []float64) float64 {
	if len(scores) == 0 {
		return math.NaN()
	}
	n := 0
	for _, s := range scores {
		if s >= 10-1e-9 {
			n++
		}
	}
	return float64(n) / float64(len(scores))
}

// MSE is the mean squared error of predictions against references (§7
// compares CS and the baseline against human scores this way).
func MSE(pred, ref []float64) (float64, error) {
	if len(pred) != len(ref) || len(pred) == 0 {
		return 0, fmt.Errorf("mse: %d predictions for %d references", len(pred), len(ref))
	}
	var s float64
	for i := range pred {
		d := pred[i] - ref[i]
		s += d * d
	}
	return s / float64(len(pred)), nil
}

// MeanDeviation is mean(pred − ref), the signed bias the paper reports beside
// the MSE (Baseline −0.73, CS 0.47).
func MeanDeviation(pred, ref []float64) (float64, error) {
	if len(pred) != len(ref) || len(pred) == 0 {
		return 0, fmt.Errorf("mean deviation: %d predictions for %d references", len(pred), len(ref))
	}
	var s float64
	for i := range pred {
		s += pred[i] - ref[i]
	}
	return s / float64(len(pred)), nil
}
