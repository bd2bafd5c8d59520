package hypo

import (
	"sort"

	"halu/runner/rundir"
	"halu/runner/summary"
)

// Outcomes gives, per hypothesis item and knowledge setting, whether the
// greedy hypothesis names the gold relation (binary) and its KnowHD
// groundedness per source (score).
func (s *Suite) Outcomes(recs *rundir.Records) ([]summary.Outcome, error) {
	var out []summary.Outcome
	decoded, err := rundir.DecodeSorted[Result](recs, nil)
	if err != nil {
		return nil, err
	}
	for _, res := range decoded {
		if res.Greedy == nil {
			continue
		}
		unit := res.Setting + "/" + res.Task + "/" + res.XID + "/" + res.YID
		if res.OpenID != "" {
			unit = res.Setting + "/open/" + res.OpenID
		}
		if res.Gold != "" {
			v := 0.0
			if res.Greedy.Parsed && res.Greedy.Label == res.Gold {
				v = 1
			}
			out = append(out, summary.Outcome{Model: res.Model, Unit: unit, Metric: "correct", Kind: "binary", Value: v})
		}
		var srcs []string
		for src := range res.Greedy.Grounding {
			srcs = append(srcs, src)
		}
		sort.Strings(srcs)
		for _, src := range srcs {
			if g := res.Greedy.Grounding[src]; g != nil && g.Scored {
				out = append(out, summary.Outcome{Model: res.Model, Unit: unit, Metric: "groundedness_" + src, Kind: "score", Value: g.Groundedness})
			}
		}
	}
	return out, nil
}
