package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// transcriptionChecks read a published table against itself and its
// siblings: what the printed numbers say about their own consistency is
// flagged on the page beside the table, never corrected (the CSVs hold the
// numbers exactly as printed).
var transcriptionChecks = map[string]func(self Reference, all []Reference) []string{
	"cfaith_table5.csv": cfaithTable5Checks,
}

// cfaithTable5Checks compares C-FAITH Table 5 with itself and Table 6:
// its Gen. column is the generative hallucination rate Table 6 reports as
// Overall, so a Gen. cell equal to 100 − Overall is almost surely an
// accuracy printed in its place; and Ova. is checked against the mean of
// the three formats.
func cfaithTable5Checks(self Reference, all []Reference) []string {
	col := func(t []string, name string) int {
		for i, c := range t {
			if strings.TrimSuffix(c, ".") == name {
				return i
			}
		}
		return -1
	}
	num := func(s string) (float64, bool) {
		v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		return v, err == nil
	}
	t5 := self.Table
	gen, ch, tf, ova := col(t5.Columns, "Gen"), col(t5.Columns, "Choice"), col(t5.Columns, "True/False"), col(t5.Columns, "Ova")
	if gen < 0 || ch < 0 || tf < 0 || ova < 0 {
		return nil
	}
	overall := map[string]float64{}
	for _, r := range all {
		if r.File != "cfaith_table6.csv" {
			continue
		}
		oc := col(r.Table.Columns, "Overall")
		for _, row := range r.Table.Rows {
			if v, ok := num(row[oc]); ok && oc >= 0 {
				overall[row[0]] = v
			}
		}
	}
	// Table 6 names some models with a suffix ("Qwen-2.5-14B-Instruct").
	table6 := func(model string) (float64, bool) {
		if v, ok := overall[model]; ok {
			return v, true
		}
		for m, v := range overall {
			if strings.HasPrefix(m, model+"-") {
				return v, true
			}
		}
		return 0, false
	}
	var notes, swapped []string
	meanOff, rows, same, missing := 0, 0, 0, 0
	for _, row := range t5.Rows {
		g, ok1 := num(row[gen])
		c, ok2 := num(row[ch])
		f, ok3 := num(row[tf])
		o, ok4 := num(row[ova])
		if !ok1 || !ok2 || !ok3 || !ok4 {
			continue
		}
		rows++
		if math.Abs((g+c+f)/3-o) > 0.01 {
			meanOff++
		}
		v, ok := table6(row[0])
		switch {
		case !ok:
			missing++
		case math.Abs(g-v) <= 0.005:
			same++
		case math.Abs(g-(100-v)) <= 0.005:
			swapped = append(swapped, fmt.Sprintf("%s Gen. %s = 100 − %.2f", row[0], row[gen], v))
		}
	}
	if len(swapped) > 0 {
		notes = append(notes, fmt.Sprintf("As printed, %d Gen. cells are almost surely accuracy, not hallucination rate: they equal 100 minus Table 6's Overall generative hallucination rate for the same model (%s); %d others equal it, %d not found there by name.",
			len(swapped), strings.Join(swapped, "; "), same, missing))
	}
	if meanOff > 0 {
		notes = append(notes, fmt.Sprintf("As printed, Ova. is not the mean of Gen., Choice. and True/False. in %d of %d rows (by more than 0.01): the paper does not say how it is formed.", meanOff, rows))
	}
	return notes
}
