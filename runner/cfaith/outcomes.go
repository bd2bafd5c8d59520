package cfaith

import (
	"halu/runner/rundir"
	"halu/runner/summary"
)

// Outcomes gives, per question and format, whether the answer hallucinated
// (binary; unscored answers are left out).
func (s *Suite) Outcomes(recs *rundir.Records) ([]summary.Outcome, error) {
	var out []summary.Outcome
	decoded, err := rundir.DecodeSorted[Answer](recs, nil)
	if err != nil {
		return nil, err
	}
	for _, a := range decoded {
		if !a.Scored {
			continue
		}
		v := 0.0
		if a.Hallucinated {
			v = 1
		}
		out = append(out, summary.Outcome{Model: a.Model, Unit: a.Format + "/" + a.ID, Metric: "hallucinated_" + a.Format, Kind: "binary", Value: v})
	}
	return out, nil
}
