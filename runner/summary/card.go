package summary

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"

	"halu/localmodels"
	"halu/metrics"
	"halu/runner/rundir"
)

// The judge card: how far a run's judges can be trusted, measured without
// people's labels from the verdicts the run recorded (rundir.Verdict) —
// agreement across the panel, agreement of a judge with itself judged
// again (test–retest) and with the two texts of a pairwise judgement
// swapped, the pull of a text's length on its score, and a judge's
// preference for texts of its own model family.

// CardTitle heads the judge card's table.
const CardTitle = "Can these judges be trusted? Judge card (label-free; 95% intervals)"

// Thresholds the card's warnings use (Krippendorff 2004, §11.4: α ≥ 0.8
// for conclusions, 0.667 the lowest for tentative ones).
const (
	AlphaReliable  = 0.8
	AlphaTentative = 0.667
)

type quantity struct{ stage, name string }

// CardCostTitle heads the card's table of what each judge cost.
const CardCostTitle = "Judge card: what each judge cost, and how sure of its replies it was (its calls in this run's records)"

// costTable is, per judge model, its calls in the records — judgements,
// repair turns, the card's checks (retest and swap) and their share — the
// tokens it read and wrote, and its time from the manifest's counts
// (times: Counts.JudgeTime; time is not kept per call, as a run's records
// are the same bytes whatever the schedule): the calls made (a cached reply
// takes none), their seconds as halu measured them and, in brackets, the
// server's own seconds of reading and generating; "–" when none was made;
// and its confidence in its replies where they carry token log-probabilities
// (--logprobs): the geometric mean of the replies' per-token probability,
// exp(mean of each reply's mean token log-prob) — the judge's own account,
// checked against people's labels only by judges validate.
func costTable(recs []rundir.Record, times map[string]rundir.JudgeTime) (Table, bool) {
	type cost struct {
		calls, repairs, checks, in, out int
		sure                            []float64 // replies' mean token log-probs
		held                            int       // replies held to a schema (their log-probs the unconstrained model's)
	}
	by := map[string]*cost{}
	for _, r := range recs {
		for _, c := range r.Calls {
			if c.Kind != "judge" && c.Kind != "repair" {
				continue
			}
			k := by[c.Model]
			if k == nil {
				k = &cost{}
				by[c.Model] = k
			}
			k.calls++
			if c.Kind == "repair" {
				k.repairs++
			}
			if strings.HasSuffix(c.Stage, "-retest") || strings.HasSuffix(c.Stage, "-swap") {
				k.checks++
			}
			k.in += c.PromptTokens
			k.out += c.EvalTokens
			if cf := c.Confidence; cf != nil && cf.Tokens > 0 && !math.IsNaN(cf.MeanLogprob) {
				if cf.Grammar {
					k.held++ // the unconstrained model's tokens: no account of the reply
				} else {
					k.sure = append(k.sure, cf.MeanLogprob)
				}
			}
		}
	}
	if len(by) == 0 {
		return Table{}, false
	}
	t := Table{Title: CardCostTitle, Columns: []string{"judge", "calls", "repair turns", "checks (retest, swap)", "checks' share of its calls", "tokens in", "tokens out",
		"calls made (not cached)", "seconds (the server's)", "replies' token probability (geometric mean; replies with log-probs)"}}
	for _, j := range slices.Sorted(maps.Keys(by)) {
		k := by[j]
		made, secs := "0", "–"
		if jt := times[j]; jt.Calls > 0 {
			made, secs = fmt.Sprint(jt.Calls), fmt.Sprintf("%.1f (%.1f)", jt.Seconds, jt.ServerSeconds)
		}
		sure := "–"
		if len(k.sure) > 0 {
			sure = fmt.Sprintf("%.3f (%d)", math.Exp(metrics.Mean(k.sure)), len(k.sure))
		}
		if k.held > 0 {
			sure += fmt.Sprintf("; %d held to a schema, left out", k.held)
		}
		t.Rows = append(t.Rows, []string{j, fmt.Sprint(k.calls), fmt.Sprint(k.repairs), fmt.Sprint(k.checks),
			fmt.Sprintf("%.1f%%", 100*float64(k.checks)/float64(k.calls)), fmt.Sprint(k.in), fmt.Sprint(k.out), made, secs, sure})
	}
	return t, true
}

// CardJudgeTitle heads the card's per-judge table.
const CardJudgeTitle = "Judge card, per judge: stable, order-blind, length-blind, impartial? (95% intervals)"

// verdictKey names one judge's verdict on one unit at one stage.
func verdictKey(v rundir.Verdict) string { return v.Stage + "\x00" + v.Unit + "\x00" + v.Judge }

// cardData is what the card is made of, gathered from the records.
type cardData struct {
	// primary[q][unit][judge]: each judge's first verdict on each unit.
	primary map[quantity]map[string]map[string]float64
	// checks[q][judge][check]: (verdict, checked verdict) pairs.
	checks map[quantity]map[string]map[string][][]float64
	// length[q][judge]: (judged text's length in 1,000s of characters,
	// value) points.
	length  map[quantity]map[string][][2]float64
	subject map[string]string // stage, unit → the model judged
	judges  map[string]bool
}

func gather(recs []rundir.Record) cardData {
	d := cardData{primary: map[quantity]map[string]map[string]float64{}, checks: map[quantity]map[string]map[string][][]float64{},
		length: map[quantity]map[string][][2]float64{}, subject: map[string]string{}, judges: map[string]bool{}}
	first := map[string]map[string]float64{}
	for _, r := range recs {
		for _, v := range r.Verdicts {
			if v.Check != "" {
				continue
			}
			if _, seen := first[verdictKey(v)]; seen {
				continue
			}
			first[verdictKey(v)] = v.Values
			d.judges[v.Judge] = true
			if v.Subject != "" {
				d.subject[v.Stage+"\x00"+v.Unit] = v.Subject
			}
			for name, x := range v.Values {
				q := quantity{v.Stage, name}
				if d.primary[q] == nil {
					d.primary[q] = map[string]map[string]float64{}
					d.length[q] = map[string][][2]float64{}
				}
				if d.primary[q][v.Unit] == nil {
					d.primary[q][v.Unit] = map[string]float64{}
				}
				d.primary[q][v.Unit][v.Judge] = x
				if v.Chars > 0 {
					d.length[q][v.Judge] = append(d.length[q][v.Judge], [2]float64{float64(v.Chars) / 1000, x})
				}
			}
		}
	}
	for _, r := range recs {
		for _, v := range r.Verdicts {
			orig, ok := first[verdictKey(v)]
			if v.Check == "" || !ok {
				continue
			}
			for name, x := range v.Values {
				o, ok := orig[name]
				if !ok {
					continue
				}
				q := quantity{v.Stage, name}
				if d.checks[q] == nil {
					d.checks[q] = map[string]map[string][][]float64{}
				}
				if d.checks[q][v.Judge] == nil {
					d.checks[q][v.Judge] = map[string][][]float64{}
				}
				d.checks[q][v.Judge][v.Check] = append(d.checks[q][v.Judge][v.Check], []float64{o, x})
			}
		}
	}
	return d
}

// JudgeCard makes the card from a run's records; families names each
// model's family by its canonical name (localmodels.CanonicalName: "tiny"
// is "tiny:latest"), from the manifest's model information. Its first table is
// per judged quantity (the panel's agreement), its second per judge and
// quantity (test–retest, order swap, length bias, self-preference). It
// returns no table when the run recorded no verdict.
func JudgeCard(recs []rundir.Record, families map[string]string, times map[string]rundir.JudgeTime) ([]Table, []string) {
	d := gather(recs)
	if len(d.primary) == 0 {
		replies := 0
		for _, r := range recs {
			for _, c := range r.Calls {
				if c.Kind == "judge" {
					replies++
				}
			}
		}
		if replies == 0 {
			return nil, nil
		}
		return []Table{{Title: CardTitle, Columns: []string{"stage", "quantity", "level", "panel α", "judges worth", "length bias, all judges (per 1,000 chars)"},
				Rows: [][]string{{"–", "–", "–", fmt.Sprintf("– (none of %d judge replies was read: nothing to measure)", replies), "–", "–"}}}},
			[]string{"judge card: no judge verdict was read, so nothing about the judges could be measured"}
	}
	qs := make([]quantity, 0, len(d.primary))
	for q := range d.primary {
		qs = append(qs, q)
	}
	sort.Slice(qs, func(i, j int) bool {
		if qs[i].stage != qs[j].stage {
			return qs[i].stage < qs[j].stage
		}
		return qs[i].name < qs[j].name
	})
	js := sortedSet(d.judges)
	panelT := Table{Title: CardTitle, Columns: []string{"stage", "quantity", "level", "panel α", "judges worth", "length bias, all judges (per 1,000 chars)"}}
	judgeT := Table{Title: CardJudgeTitle, Columns: []string{"judge", "stage", "quantity", "test–retest α", "order swap α", "length bias (per 1,000 chars)", "self-preference: own family − others, vs the rest of the panel"}}
	var warn []string
	for _, q := range qs {
		level := levelOf(d.values(q))
		alpha := alphaAt(level)
		panel, worth := "– (one judge)", "–"
		if len(js) > 1 {
			m := d.matrix(q, js)
			a, n, err := alphaN(alpha, m)
			panel = alphaCell(a, n, err, "units")
			if err == nil {
				panel = alphaWithCI(alpha, m, a, n, "units")
			}
			if err == nil && a > 0 {
				worth = fmt.Sprintf("%.1f of %d", metrics.EffectiveJudges(len(js), a), len(js))
			}
			if err == nil && lowAlpha(a, n) {
				warn = append(warn, fmt.Sprintf("%s %s: panel α %.2f on %d units", q.stage, q.name, a, n))
			}
		}
		var pooled [][2]float64
		for _, j := range js {
			pooled = append(pooled, d.length[q][j]...)
		}
		panelT.Rows = append(panelT.Rows, []string{q.stage, q.name, level, panel, worth, slopeCell(pooled)})
		for _, j := range js {
			if !d.judged(q, j) {
				continue
			}
			row := []string{j, q.stage, q.name}
			for _, kind := range []string{"retest", "swap"} {
				c, a, ok := checkCell(alpha, d.checks[q][j][kind])
				if ok && lowAlpha(a, len(d.checks[q][j][kind])) {
					warn = append(warn, fmt.Sprintf("%s on %s %s: %s α %.2f on %d pairs", j, q.stage, q.name, kind, a, len(d.checks[q][j][kind])))
				}
				row = append(row, c)
			}
			row = append(row, slopeCell(d.length[q][j]), selfPreference(q, d, families, j))
			judgeT.Rows = append(judgeT.Rows, row)
		}
	}
	notes := []string{"judge card: panel α is Krippendorff's α across the judges at the quantity's level (nominal for yes/no, ordinal for a score scale, interval otherwise); \"judges worth\" is how many independent judges the panel's agreement makes it (Spearman–Brown with α as the judges' mean agreement); test–retest α compares a judge's verdict with the same request sent with another seed, order swap α a pairwise judgement with its two texts in the other order (both on the share of judgements --judge-checks draws); length bias is the slope of the quantity on the judged text's length; self-preference is how far a judge scores texts of its own model family above the rest of the panel, against how far it scores other texts above them. α ≥ 0.80 supports conclusions, 0.667 is the lowest for tentative ones (Krippendorff), warned of from 20 pairable units on; α's 95% interval is a BCa bootstrap over the units (1,000 resamples, seeded), shown from 100 pairable units where the judges agreed on each label in at least 5 (simulated for two judges of a yes/no label or a 1–5 score: coverage there 92.7–97.6%; panels of three or more and non-whole quantities were not simulated; where a label was agreed on more rarely the cell says so and shows none); under greedy decoding a retest measures the server's determinism"}
	if len(warn) > 0 {
		notes = append(notes, fmt.Sprintf("warning: judges agree too little for conclusions (α < %.3f): %s", AlphaTentative, strings.Join(warn, "; ")))
	}
	out := []Table{panelT, judgeT}
	if ct, ok := costTable(recs, times); ok {
		out = append(out, ct)
	}
	return out, notes
}

// values are every judge's values of q.
func (d cardData) values(q quantity) []float64 {
	var out []float64
	for _, by := range d.primary[q] {
		for _, x := range by {
			out = append(out, x)
		}
	}
	return out
}

// matrix is units × judges of q's values (NaN where a judge gave none).
func (d cardData) matrix(q quantity, js []string) [][]float64 {
	var data [][]float64
	for _, u := range sortedSet(d.primary[q]) {
		row := make([]float64, len(js))
		for i, j := range js {
			row[i] = math.NaN()
			if x, ok := d.primary[q][u][j]; ok {
				row[i] = x
			}
		}
		data = append(data, row)
	}
	return data
}

// judged reports whether judge j gave any value of q.
func (d cardData) judged(q quantity, j string) bool {
	for _, by := range d.primary[q] {
		if _, ok := by[j]; ok {
			return true
		}
	}
	return false
}

// checkCell is a check's α over its pairs as a cell, and α when measured.
func checkCell(alpha metrics.AlphaMetric, pairs [][]float64) (cell string, a float64, ok bool) {
	if len(pairs) == 0 {
		return "– (none checked)", math.NaN(), false
	}
	a, n, err := alphaN(alpha, pairs)
	if err != nil {
		same := 0
		for _, p := range pairs {
			if p[0] == p[1] {
				same++
			}
		}
		if same == len(pairs) {
			return fmt.Sprintf("all %d pairs identical", len(pairs)), math.NaN(), false
		}
		return alphaCell(a, n, err, "pairs"), math.NaN(), false
	}
	return alphaWithCI(alpha, pairs, a, n, "pairs"), a, true
}

// alphaWithCI is a measured α (a on n pairable units or pairs) as a cell:
// with its 95% interval where metrics.AlphaWarning lets it be shown; from
// metrics.AlphaMinUnits units on, with why it is not shown where the
// warning holds it back (a label the judges agreed on too rarely).
func alphaWithCI(m metrics.AlphaMetric, data [][]float64, a float64, n int, what string) string {
	warning := metrics.AlphaWarning(m, data)
	if warning == "" {
		if lo, hi, ok := metrics.AlphaCI(m, data, 0.95); ok {
			return fmt.Sprintf("%.2f [%.2f, %.2f] (%d %s)", a, lo, hi, n, what)
		}
	}
	if n >= metrics.AlphaMinUnits && warning != "" {
		return fmt.Sprintf("%.2f (%d %s; no interval: %s)", a, n, what, warning)
	}
	return alphaCell(a, n, nil, what)
}

// lowAlpha is whether an α below the tentative threshold is warned of: on
// at least minAlphaUnits pairable units (on fewer, a low α is too likely
// by chance to mean anything).
func lowAlpha(a float64, n int) bool {
	return a < AlphaTentative && n >= minAlphaUnits
}

// minLengthRange is the least spread of judged texts' lengths (in 1,000s
// of characters) a length bias is measured over: 100 characters.
const minLengthRange = 0.1

// slopeCell is the length bias of points (length, value) as a cell.
func slopeCell(pts [][2]float64) string {
	var x, y []float64
	for _, p := range pts {
		x, y = append(x, p[0]), append(y, p[1])
	}
	if len(x) > 0 {
		// A slope per 1,000 characters from texts a few characters apart
		// is no measurement: its interval is as wide as numbers go.
		lo, hi := x[0], x[0]
		for _, v := range x {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
		if hi-lo < minLengthRange {
			return fmt.Sprintf("– (judged texts within %d characters of one length)", int(math.Round(1000*(hi-lo))))
		}
	}
	sl := metrics.Slope(x, y, 0.95)
	if math.IsNaN(sl.Estimate) {
		return "–"
	}
	c := fmt.Sprintf("%+.2f [%+.2f, %+.2f] n=%d", sl.Estimate, sl.Low, sl.High, sl.N)
	if sl.Low > 0 || sl.High < 0 {
		c += " (≠ 0)"
	}
	return c
}

// levelOf is the level of measurement of a quantity's values: nominal for
// yes/no (0/1), ordinal for whole scores on a short scale, else interval.
func levelOf(xs []float64) string {
	whole, distinct := true, map[float64]bool{}
	for _, x := range xs {
		distinct[x] = true
		if x != math.Trunc(x) {
			whole = false
		}
	}
	switch {
	case whole && len(distinct) <= 2 && allIn(distinct, 0, 1):
		return "nominal"
	case whole && len(distinct) <= 11:
		return "ordinal"
	}
	return "interval"
}

func allIn(m map[float64]bool, vals ...float64) bool {
	for x := range m {
		ok := false
		for _, v := range vals {
			ok = ok || x == v
		}
		if !ok {
			return false
		}
	}
	return true
}

func alphaAt(level string) metrics.AlphaMetric {
	switch level {
	case "nominal":
		return metrics.AlphaNominal
	case "ordinal":
		return metrics.AlphaOrdinal
	}
	return metrics.AlphaInterval
}

// minAlphaUnits is the fewest pairable units on which a low α is warned
// about: on fewer, an α is shown but warns of nothing.
const minAlphaUnits = 20

// alphaN is α and the number of pairable units it rests on.
func alphaN(alpha metrics.AlphaMetric, data [][]float64) (float64, int, error) {
	n := 0
	for _, row := range data {
		k := 0
		for _, x := range row {
			if !math.IsNaN(x) {
				k++
			}
		}
		if k >= 2 {
			n++
		}
	}
	a, err := metrics.Krippendorff(alpha, data)
	return a, n, err
}

func alphaCell(a float64, n int, err error, what string) string {
	if err != nil {
		if n == 0 {
			return "– (no unit judged twice)"
		}
		return fmt.Sprintf("– (%d %s, no variation)", n, what)
	}
	return fmt.Sprintf("%.2f (%d %s)", a, n, what)
}

// selfPreference is, for judge j of a known family, how far it scores
// texts of its own family above the rest of the panel against how far it
// scores other texts above them, as a cell.
func selfPreference(q quantity, d cardData, families map[string]string, j string) string {
	fam := families[localmodels.CanonicalName(j)]
	if fam == "" {
		return "– (family unknown)"
	}
	var own, other []float64
	for u, by := range d.primary[q] {
		x, ok := by[j]
		s := d.subject[q.stage+"\x00"+u]
		if !ok || s == "" || len(by) < 2 {
			continue
		}
		var rest []float64
		for k, y := range by {
			if k != j {
				rest = append(rest, y)
			}
		}
		if families[localmodels.CanonicalName(s)] == fam {
			own = append(own, x-metrics.Mean(rest))
		} else {
			other = append(other, x-metrics.Mean(rest))
		}
	}
	switch {
	case len(own) == 0:
		return "– (no text of its family " + fam + " judged with others)"
	case len(other) == 0:
		o := metrics.MeanCI(own, 0.95)
		return fmt.Sprintf("own %+.2f [%s] n=%d; no text of another family (leniency and self-preference cannot be told apart)", o.Estimate, ciText(o), o.N)
	}
	o, r := metrics.MeanCI(own, 0.95), metrics.MeanCI(other, 0.95)
	return fmt.Sprintf("%+.2f: own %+.2f [%s] n=%d, others %+.2f [%s] n=%d", o.Estimate-r.Estimate, o.Estimate, ciText(o), o.N, r.Estimate, ciText(r), r.N)
}

func ciText(iv metrics.Interval) string {
	if math.IsNaN(iv.Low) {
		return "no interval under 2"
	}
	return fmt.Sprintf("%+.2f, %+.2f", iv.Low, iv.High)
}

func sortedSet[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
