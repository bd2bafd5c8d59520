package ideas

import (
	"halu/metrics"
	"halu/runner/rundir"
	"halu/runner/summary"
)

// Outcomes gives, per keyword, the mean originality, feasibility and
// clarity of the model's scored ideas and its mean fluency grade.
func (s *Suite) Outcomes(recs *rundir.Records) ([]summary.Outcome, error) {
	var out []summary.Outcome
	decoded, err := rundir.DecodeSorted[ItemResult](recs, nil)
	if err != nil {
		return nil, err
	}
	for _, ir := range decoded {
		var or, fe, cl, flu []float64
		for _, idea := range ir.Ideas {
			if idea.Excluded != "" {
				continue
			}
			var o, f, c []float64
			for _, cr := range idea.Critiques {
				if cr.Scored {
					o, f, c = append(o, float64(cr.Originality)), append(f, float64(cr.Feasibility)), append(c, float64(cr.Clarity))
				}
			}
			if len(o) > 0 {
				or, fe, cl = append(or, metrics.Mean(o)), append(fe, metrics.Mean(f)), append(cl, metrics.Mean(c))
			}
		}
		for _, fp := range ir.Fluency {
			if fp.Scored {
				flu = append(flu, fp.Score)
			}
		}
		for _, m := range []struct {
			name string
			xs   []float64
		}{{"originality", or}, {"feasibility", fe}, {"clarity", cl}, {"fluency", flu}} {
			if len(m.xs) > 0 {
				out = append(out, summary.Outcome{Model: ir.Model, Unit: ir.Keyword, Metric: m.name, Kind: "score", Value: metrics.Mean(m.xs)})
			}
		}
	}
	return out, nil
}
