package smoke

import (
	"halu/metrics"
	"halu/runner/rundir"
	"halu/runner/summary"
)

// Outcomes gives, per question, the judges' mean score and whether their
// majority found the answer hallucinated (a tie counts as not).
func (s *Suite) Outcomes(recs *rundir.Records) ([]summary.Outcome, error) {
	var out []summary.Outcome
	decoded, err := rundir.DecodeSorted[Result](recs, nil)
	if err != nil {
		return nil, err
	}
	for _, res := range decoded {
		var scores []float64
		yes := 0
		for _, j := range res.Judgements {
			if j.Scored && j.Result != nil {
				scores = append(scores, float64(j.Result.Score))
				if j.Result.Hallucination {
					yes++
				}
			}
		}
		if len(scores) == 0 {
			continue
		}
		h := 0.0
		if 2*yes > len(scores) {
			h = 1
		}
		out = append(out, summary.Outcome{Model: res.Model, Unit: res.Question, Metric: "score", Kind: "score", Value: metrics.Mean(scores)},
			summary.Outcome{Model: res.Model, Unit: res.Question, Metric: "hallucinated", Kind: "binary", Value: h})
	}
	return out, nil
}
