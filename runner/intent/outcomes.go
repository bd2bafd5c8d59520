package intent

import (
	"halu/runner/rundir"
	"halu/runner/summary"
)

// Outcomes gives, per query, the Constraint Score (score), whether the
// response is Perfect (binary) and the 1–10 baseline (score).
func (s *Suite) Outcomes(recs *rundir.Records) ([]summary.Outcome, error) {
	var out []summary.Outcome
	decoded, err := rundir.DecodeSorted[ItemResult](recs, nil)
	if err != nil {
		return nil, err
	}
	for _, ir := range decoded {
		o := func(metric, kind string, v float64) summary.Outcome {
			return summary.Outcome{Model: ir.Model, Unit: ir.ID, Metric: metric, Kind: kind, Value: v}
		}
		if ir.Scored && ir.CS != nil {
			perfect := 0.0
			if ir.Perfect {
				perfect = 1
			}
			out = append(out, o("cs", "score", *ir.CS), o("perfect", "binary", perfect))
		}
		if ir.Baseline != nil {
			out = append(out, o("baseline", "score", *ir.Baseline))
		}
	}
	return out, nil
}
