package hypo

import (
	"math"
	"testing"

	"halu/metrics"
	"halu/runner/summary"
)

// The units checked against the gold relation: an item whose greedy
// hypothesis was read (or, under --unreadable wrong, any), with its token confidence and the candidates'
// semantic entropy and agreement — relations are labels, so sets are
// labels, and an unread candidate is a meaning of its own: candidates pos,
// pos, neg and one unread make k = 4, p = ½, ¼, ¼, discrete entropy
// 1.039721 ÷ ln 4 = 0.75, agreement with the greedy pos 2/4; weighted by
// the candidates' probabilities .4, .2, .3, .1 (their mean token
// log-probabilities' exponentials), p = .6, .3, .1: 0.897946 ÷ ln 4 =
// 0.647731. An item without a gold relation is no unit, nor an unread
// greedy hypothesis under --unreadable unscored; under wrong, it is a
// wrong unit.
func TestConfidenceUnits(t *testing.T) {
	tc := metrics.Confidence([]float64{-0.4, -0.8}, nil)
	lp := func(p float64) *metrics.TokenConfidence {
		c := metrics.Confidence([]float64{math.Log(p)}, nil)
		return &c
	}
	rs := []Result{
		{Gold: "pos", Greedy: &Hypothesis{Parsed: true, Label: "pos", Confidence: &tc},
			Candidates: []Hypothesis{{Parsed: true, Label: "pos", Confidence: lp(.4)}, {Parsed: true, Label: "pos", Confidence: lp(.2)}, {Parsed: true, Label: "neg", Confidence: lp(.3)}, {Parsed: false, Confidence: lp(.1)}}},
		{Gold: "neg", Greedy: &Hypothesis{Parsed: true, Label: "pos"}, Candidates: []Hypothesis{{Parsed: true, Label: "pos"}}},
		{Gold: "pos", Greedy: &Hypothesis{Parsed: false}, Candidates: []Hypothesis{{Parsed: true, Label: "pos"}, {Parsed: true, Label: "neg"}}},
		{Greedy: &Hypothesis{Parsed: true, Label: "pos"}},
	}
	unitsOf := func(unreadWrong bool) []summary.ConfidenceUnit {
		var us []summary.ConfidenceUnit
		for i := range rs {
			if u, ok := confidenceUnit(&rs[i], unreadWrong); ok {
				us = append(us, u)
			}
		}
		return us
	}
	units := unitsOf(false)
	if len(units) != 2 || !units[0].Correct || units[1].Correct {
		t.Fatalf("units %+v", units)
	}
	// Under --unreadable wrong the unread greedy hypothesis is a wrong
	// unit with its candidates' entropy (ln 2 ÷ ln 2 = 1), but no
	// agreement: an unread answer has no meaning to agree with; nor a
	// weighted entropy: its candidates' probabilities are not known.
	all := unitsOf(true)
	if len(all) != 3 || all[2].Correct {
		t.Fatalf("unreadable wrong: units %+v", all)
	}
	_, weighted := all[2].Scores[summary.ScoreNegWeightedSemanticEntropy.Key]
	if _, has := all[2].Scores[summary.ScoreAgreement.Key]; has || weighted || math.Abs(all[2].Scores[summary.ScoreNegSemanticEntropy.Key]+1) > 1e-12 {
		t.Errorf("unread greedy's scores %v", all[2].Scores)
	}
	for key, want := range map[string]float64{
		summary.ScoreMeanLogprob.Key: -0.6, summary.ScoreMinLogprob.Key: -0.8,
		summary.ScoreNegSemanticEntropy.Key: -0.75, summary.ScoreAgreement.Key: 0.5,
		summary.ScoreNegWeightedSemanticEntropy.Key: -0.6477309221191608,
	} {
		if got := units[0].Scores[key]; math.Abs(got-want) > 1e-12 {
			t.Errorf("%s = %v, want %v", key, got, want)
		}
	}
	if !math.IsNaN(units[0].Scores[summary.ScoreNegEntropy.Key]) {
		t.Errorf("no alternatives asked, yet an entropy: %v", units[0].Scores[summary.ScoreNegEntropy.Key])
	}
	// One candidate: no spread to measure (k = 1), no sample score.
	if _, has := units[1].Scores[summary.ScoreNegSemanticEntropy.Key]; has || units[1].Scores != nil {
		t.Errorf("k = 1: scores %v", units[1].Scores)
	}
}
