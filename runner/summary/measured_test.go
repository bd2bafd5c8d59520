package summary

import (
	"math"
	"strings"
	"testing"

	"halu/runner/rundir"
)

// What a run measured: its headline figures that rest on a scored unit,
// and the parts that measured nothing — the whole run, a figure whose
// every unit went unscored (one with no unit had nothing to measure), a
// stage whose every judge reply went unread.
func TestMeasure(t *testing.T) {
	nan := Num(math.NaN())
	fig := func(model, group, metric string, n, unscored int, headline bool) Figure {
		est := Num(0.5)
		if n == 0 {
			est = nan
		}
		return Figure{Model: model, Group: group, Metric: metric, N: n, Unscored: unscored, Estimate: est, Headline: headline}
	}
	judge := func(stage, parsed string) rundir.CallLog {
		return rundir.CallLog{Stage: stage, Kind: "judge", Parsed: parsed}
	}
	fail := func(stage string) rundir.Failure { return rundir.Failure{Stage: stage} }
	tests := []struct {
		name           string
		figs           []Figure
		recs           []rundir.Record
		figures, score int
		nothing        []string // each a part of one line of Nothing, in order
		status         string
	}{
		{"everything measured", []Figure{fig("m", "SCP", "IH", 5, 0, true), fig("m", "SCP", "DH", 5, 1, true), fig("m", "", "other", 0, 3, false)},
			[]rundir.Record{{Calls: []rundir.CallLog{judge("judge", `{"x":1}`), judge("judge", "")}, Failures: []rundir.Failure{fail("judge")}}},
			2, 2, nil, "complete"},
		{"nothing at all", []Figure{fig("m", "SCP", "IH", 0, 2, true), fig("m", "SCP", "DH", 0, 2, true)},
			[]rundir.Record{{Calls: []rundir.CallLog{judge("judge", ""), judge("judge", "")}, Failures: []rundir.Failure{fail("judge"), fail("judge")}}},
			2, 0, []string{"none of the run's 2 headline figures rests on a scored unit (4 units were left unscored", "stage judge read none of its 2 judge replies (2 judgements unscored)"},
			"complete, measured nothing"},
		{"one format unscored", []Figure{fig("m", "generative", "rate", 4, 0, true), fig("m", "choice", "rate", 0, 4, true), fig("m", "truefalse", "rate", 0, 0, true)},
			nil, 3, 1, []string{"m choice: rate rest on no scored unit (4 unscored)"}, "complete, 1 of 3 headline figures measured"},
		{"a stage read nothing", []Figure{fig("m", "", "acc", 3, 0, true)},
			[]rundir.Record{{Calls: []rundir.CallLog{judge("verify", ""), {Stage: "verify", Kind: "repair"}, judge("entities", `[]`)}, Failures: []rundir.Failure{fail("verify")}}},
			1, 1, []string{"stage verify read none of its 2 judge replies (1 judgements unscored)"}, "complete, one part measured nothing"},
		{"no headline marked: every figure counts", []Figure{fig("m", "", "a", 0, 1, false), fig("m", "", "b", 2, 0, false)},
			nil, 2, 1, []string{"m: a rest on no scored unit (1 unscored)"}, "complete, 1 of 2 headline figures measured"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := Measure(&Summary{Figures: tt.figs}, tt.recs)
			if m.Figures != tt.figures || m.Scored != tt.score || len(m.Nothing) != len(tt.nothing) {
				t.Fatalf("figures %d scored %d nothing %q; want %d, %d, %d lines", m.Figures, m.Scored, m.Nothing, tt.figures, tt.score, len(tt.nothing))
			}
			for i, want := range tt.nothing {
				if !strings.Contains(m.Nothing[i], want) {
					t.Errorf("nothing[%d] = %q, want %q in it", i, m.Nothing[i], want)
				}
			}
			man := &rundir.Manifest{Status: "complete", Measured: &m}
			if got := man.StatusText(); got != tt.status {
				t.Errorf("status %q, want %q", got, tt.status)
			}
			if (m.Closing() == "") != (len(tt.nothing) == 0) {
				t.Errorf("closing line %q with %d parts that measured nothing", m.Closing(), len(tt.nothing))
			}
			if strings.Contains(m.Closing(), "stage") != strings.Contains(m.Closing(), "--judge-format json") {
				t.Errorf("closing line %q: a stage unread names the fix, and only then", m.Closing())
			}
		})
	}
	// A run that is not complete says so, whatever it measured.
	if s := (&rundir.Manifest{Status: "incomplete", Measured: &rundir.Measured{Figures: 2}}).StatusText(); s != "incomplete" {
		t.Errorf("status %q", s)
	}
}
