package hic

import (
	"fmt"
	"strings"

	"halu/metrics"
	"halu/runner/rundir"
	"halu/runner/summary"
)

// Outcomes gives, per question and (strategy, temperature), the IH and DH
// ratios over its scored answers (the unit of HIC-Bench's B.3 permutation
// test) and the panel-mean Originality, Feasibility and Value.
func (s *Suite) Outcomes(recs *rundir.Records) ([]summary.Outcome, error) {
	var out []summary.Outcome
	decoded, err := rundir.DecodeSorted[ItemResult](recs, nil)
	if err != nil {
		return nil, err
	}
	for _, ir := range decoded {
		for _, q := range ir.Questions {
			unit := fmt.Sprintf("%s/T%g/q%03d", strings.ToUpper(ir.Strategy), ir.Temperature, q.ID)
			var ih, dh, n int
			var or, fe, va float64
			for _, a := range q.Answers {
				p := Aggregate(a.Judgements, s.cfg.TieHallucinated)
				if !p.Scored {
					continue
				}
				n++
				or, fe, va = or+p.Originality, fe+p.Feasibility, va+p.Value
				if metrics.IsIH(p.Originality, p.Feasibility, p.Value) {
					ih++
				}
				if p.Hallucination {
					dh++
				}
			}
			if n == 0 {
				continue
			}
			o := func(metric, kind string, v float64) summary.Outcome {
				return summary.Outcome{Model: ir.Model, Unit: unit, Metric: metric, Kind: kind, Value: v}
			}
			nf := float64(n)
			out = append(out, o("ih", "ratio", float64(ih)/nf), o("dh", "ratio", float64(dh)/nf),
				o("originality", "score", or/nf), o("feasibility", "score", fe/nf), o("value", "score", va/nf))
		}
	}
	return out, nil
}
