package summary

import (
	"fmt"
	"math"
	"sort"

	"halu/runner/rundir"
)

// Beside is the run's figures under the reading of judge replies that did
// not make the headline: the authors' rule beside halu's careful reading
// (the default), or the careful reading beside the authors' rule when a
// run chose --readers paper. Replies is how many judge replies the two
// read differently; Metrics are the figures under the other reading
// (same keys as the headline's).
type Beside struct {
	Reading string             `json:"reading"`
	Replies int                `json:"replies_read_differently"`
	Metrics map[string]float64 `json:"metrics,omitempty"`
}

// ReadingName is how a table names a reading ("halu" or "paper").
func ReadingName(readers string) string {
	if readers == "paper" {
		return "authors' rule"
	}
	return "careful reader"
}

// AddBeside computes sum's figures under the other reading of judge replies
// — summarize's summary of the records with the other reading in place —
// and adds them (Beside, a table of the figures that differ, a note).
// readers is the reading that made the headline. A suite whose records
// keep, for each judge reply its two readers (halu's careful reader and
// the authors' rule) read differently, the reading that did not decide
// it, gives otherReading: the records with that reading in place of the
// deciding one. A suite without two readers (otherReading nil), or a run
// whose readers never disagreed, gets the note only where it has two.
// The disagreements are counted in view: the records, or what of each
// the engine keeps (its readings among it).
func AddBeside(sum *Summary, summarize func(*rundir.Records) (*Summary, error), otherReading func(*rundir.Records) *rundir.Records, recs *rundir.Records, view []rundir.Record, readers string) error {
	if otherReading == nil {
		return nil
	}
	other := "paper"
	if readers == "paper" {
		other = "halu"
	}
	n := 0
	for _, r := range view {
		for _, rd := range r.Readings {
			if rd.How == "disagree" {
				n++
			}
		}
	}
	b := &Beside{Reading: other, Replies: n, Metrics: map[string]float64{}}
	sum.Beside = b
	if n == 0 {
		for k, v := range sum.Metrics {
			if !math.IsNaN(v) && !math.IsInf(v, 0) {
				b.Metrics[k] = v
			}
		}
		sum.Notes = append(sum.Notes, fmt.Sprintf("reading: no judge reply was read otherwise by the %s and the %s (the authors' rule reads text-format replies only): each figure is the same under both", ReadingName(readers), ReadingName(other)))
		return nil
	}
	alt := otherReading(recs)
	osum, err := summarize(alt)
	if err == nil && alt.Err() != nil {
		err = fmt.Errorf("the other reading: %w", alt.Err())
	}
	if err != nil {
		return fmt.Errorf("summary under the other reading: %w", err)
	}
	for k, v := range osum.Metrics {
		if !math.IsNaN(v) && !math.IsInf(v, 0) { // JSON has no NaN (see WriteSummary)
			b.Metrics[k] = v
		}
	}
	t := Table{
		Title:   fmt.Sprintf("Headline (%s) beside the %s: the figures that differ (%d judge replies read differently)", ReadingName(readers), ReadingName(other), n),
		Columns: []string{"figure", ReadingName(readers), ReadingName(other), "difference"},
	}
	keys := make([]string, 0, len(sum.Metrics))
	for k := range sum.Metrics {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	same := 0
	for _, k := range keys {
		h := sum.Metrics[k]
		o, has := osum.Metrics[k]
		if has && (h == o || math.IsNaN(h) && math.IsNaN(o)) {
			same++
			continue
		}
		cell := "–"
		diff := "–"
		if has && !math.IsNaN(o) {
			cell = fmt.Sprintf("%.4g", o)
			if !math.IsNaN(h) {
				diff = fmt.Sprintf("%+.4g", o-h)
			}
		}
		t.Rows = append(t.Rows, []string{k, fmt.Sprintf("%.4g", h), cell, diff})
	}
	if len(t.Rows) > 0 {
		sum.Tables = append(sum.Tables, t)
	}
	sum.Notes = append(sum.Notes, fmt.Sprintf("reading: the headline is the %s's; the %s read %d judge replies otherwise, which changes %d figures (table above) and leaves %d the same; the other reading is of the same replies along the same run (where a verdict steered later prompts, as DHP's examples do, those prompts stay the headline's)",
		ReadingName(readers), ReadingName(other), n, len(t.Rows), same))
	return nil
}
