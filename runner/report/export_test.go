package report

import (
	"bytes"
	"encoding/csv"
	"strings"
	"testing"

	"halu/runner/rundir"
	"halu/runner/summary"
)

// The long export carries the confidence check's figures as rows: AUROC
// with its interval where the table shows one (empty lo and hi where it
// does not), AURC and the confident-wrong share, each with n and the units
// the score was not known for — computed by hand: ten answers scored 1…10,
// the five highest right (AUROC 1, interval 0.268–1.000, AURC 0.177), and
// one more the score was not known for.
func TestLongExportHasTheConfidenceRows(t *testing.T) {
	var units []summary.ConfidenceUnit
	for i := 1; i <= 10; i++ {
		units = append(units, summary.ConfidenceUnit{Correct: i > 5, Scores: map[string]float64{summary.ScoreMinLogprob.Key: float64(i)}})
	}
	units = append(units, summary.ConfidenceUnit{Correct: true})
	_, _, figs, ok := summary.ConfidenceCheck("the gold labels", []summary.ConfidenceGroup{{Model: "m", Setting: "kg", Units: units}})
	if !ok {
		t.Fatal("no confidence check")
	}
	sum := &summary.Summary{Suite: "hypo"}
	for _, f := range figs {
		sum.AddFigure(f)
	}
	var b bytes.Buffer
	if err := WriteLong(&b, []*Run{{Dir: "/runs/r1", Manifest: &rundir.Manifest{Suite: "hypo"}, Summary: sum}}); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range rows[1:] {
		got[r[4]] = strings.Join([]string{r[6][:min(5, len(r[6]))], r[7][:min(5, len(r[7]))], r[8][:min(5, len(r[8]))], r[9], r[10], r[12], r[13], r[14]}, " ")
	}
	for metric, want := range map[string]string{
		"AUROC (least token log-prob)":           "1 0.268 0.999 10 1 false false false",
		"AURC (least token log-prob)":            "0.177   10 1 false true false",
		"confident-wrong (least token log-prob)": "0   10 1 true true false",
	} {
		if got[metric] != want {
			t.Errorf("%s: %q, want %q", metric, got[metric], want)
		}
	}
}
