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
// labels: candidates read as pos, pos, neg (one unread, left out) make
// p = ⅔, ⅓, entropy −(⅔ ln ⅔ + ⅓ ln ⅓) = 0.6365…, agreement with the
// greedy pos ⅔. An item without a gold relation is no unit, nor an
// unread greedy hypothesis under --unreadable unscored; under wrong, it is
// a wrong unit.
func TestConfidenceUnits(t *testing.T) {
	tc := metrics.Confidence([]float64{-0.4, -0.8}, nil)
	rs := []Result{
		{Gold: "pos", Greedy: &Hypothesis{Parsed: true, Label: "pos", Confidence: &tc},
			Candidates: []Hypothesis{{Parsed: true, Label: "pos"}, {Parsed: true, Label: "pos"}, {Parsed: true, Label: "neg"}, {Parsed: false}}},
		{Gold: "neg", Greedy: &Hypothesis{Parsed: true, Label: "pos"}, Candidates: []Hypothesis{{Parsed: true, Label: "pos"}}},
		{Gold: "pos", Greedy: &Hypothesis{Parsed: false}, Candidates: []Hypothesis{{Parsed: true, Label: "pos"}, {Parsed: true, Label: "neg"}}},
		{Greedy: &Hypothesis{Parsed: true, Label: "pos"}},
	}
	units := confidenceUnits(rs, false)
	if len(units) != 2 || !units[0].Correct || units[1].Correct {
		t.Fatalf("units %+v", units)
	}
	// Under --unreadable wrong the unread greedy hypothesis is a wrong
	// unit with its candidates' entropy (ln 2), but no agreement: an
	// unread answer has no meaning to agree with.
	all := confidenceUnits(rs, true)
	if len(all) != 3 || all[2].Correct {
		t.Fatalf("unreadable wrong: units %+v", all)
	}
	if _, has := all[2].Scores[summary.ScoreAgreement.Key]; has || math.Abs(all[2].Scores[summary.ScoreNegSemanticEntropy.Key]+math.Log(2)) > 1e-12 {
		t.Errorf("unread greedy's scores %v", all[2].Scores)
	}
	h := -(2.0/3*math.Log(2.0/3) + 1.0/3*math.Log(1.0/3))
	for key, want := range map[string]float64{
		summary.ScoreMeanLogprob.Key: -0.6, summary.ScoreMinLogprob.Key: -0.8,
		summary.ScoreNegSemanticEntropy.Key: -h, summary.ScoreAgreement.Key: 2.0 / 3,
	} {
		if got := units[0].Scores[key]; math.Abs(got-want) > 1e-12 {
			t.Errorf("%s = %v, want %v", key, got, want)
		}
	}
	if !math.IsNaN(units[0].Scores[summary.ScoreNegEntropy.Key]) {
		t.Errorf("no alternatives asked, yet an entropy: %v", units[0].Scores[summary.ScoreNegEntropy.Key])
	}
	// One candidate read: no spread to measure (k = 1), no sample score.
	if _, has := units[1].Scores[summary.ScoreNegSemanticEntropy.Key]; has || units[1].Scores != nil {
		t.Errorf("k = 1: scores %v", units[1].Scores)
	}
}
