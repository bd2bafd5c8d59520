package summary

import (
	"fmt"
	"math"

	"halu/localmodels"
	"halu/metrics"
)

// JudgeTable is the per-judge table every suite with judges shows: how many
// judgements each judge was asked for, the share whose reply never parsed
// (those are abstentions, never zeros), its mean score and its leniency
// relative to the rest of the panel (metrics.JudgeStats).
func JudgeTable(title, scale string, obs []metrics.JudgeScore) Table {
	t := Table{Title: title, Columns: []string{"judge", "judgements", "unscored", "parse-failure rate", "mean " + scale, "leniency vs panel", "items compared"}}
	f := func(x float64) string {
		if math.IsNaN(x) {
			return "n/a"
		}
		return fmt.Sprintf("%+.2f", x)
	}
	for _, s := range metrics.JudgeStats(obs) {
		mean := "n/a"
		if !math.IsNaN(s.Mean) {
			mean = fmt.Sprintf("%.2f", s.Mean)
		}
		t.Rows = append(t.Rows, []string{s.Judge, fmt.Sprint(s.Judgements), fmt.Sprint(s.Unscored),
			fmt.Sprintf("%.1f%%", 100*s.FailRate), mean, f(s.Leniency), fmt.Sprint(s.LeniencyN)})
	}
	return t
}

// PanelWarnings are the warnings a judge panel deserves: an even-sized
// panel can tie on a yes/no verdict (the suite's tie rule then decides), and
// a model that judges its own output is known to favour it.
func PanelWarnings(models, judges []string) []string {
	var out []string
	if n := len(judges); n > 1 && n%2 == 0 {
		out = append(out, fmt.Sprintf("warning: the judge panel has %d members, an even number: yes/no verdicts can tie, and ties follow the suite's documented rule", n))
	}
	judge := map[string]bool{}
	for _, j := range judges {
		judge[localmodels.CanonicalName(j)] = true
	}
	for _, m := range models {
		if judge[localmodels.CanonicalName(m)] {
			out = append(out, fmt.Sprintf("warning: %s judges its own output (self-preference bias)", m))
		}
	}
	return out
}
