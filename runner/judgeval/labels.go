package judgeval

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"halu/metrics"
	"halu/runner/engine"
	"halu/runner/rundir"
	"halu/runner/summary"
)

// Labels from a run's own data: a sheet of judged units for people to
// label (Sheet), and the labels read back (Import) to measure the run's
// judges on that run's own texts and to correct its figures for their
// errors by prediction-powered inference (metrics.PPIMean).

// RunUnit is one unit a run's judges judged at one stage: the text they
// judged, the generation prompt of the item's subject (context for the
// people labelling it), and each judge's quantities.
type RunUnit struct {
	Item, Stage, Unit, Subject string
	Text, Context              string
	// Values[judge][quantity] are the judges' first verdicts.
	Values map[string]map[string]float64
}

// Panel is the panel's value of quantity q on the unit: the majority for
// a yes/no quantity (a tie counts as yes, HIC-Bench's rule), else the
// mean; ok is false when no judge gave one.
func (u RunUnit) Panel(q string, binary bool) (float64, bool) {
	var xs []float64
	var votes []string
	for _, v := range u.Values {
		if x, ok := v[q]; ok {
			xs = append(xs, x)
			votes = append(votes, fmt.Sprint(x))
		}
	}
	if len(xs) == 0 {
		return 0, false
	}
	if binary {
		w, _, _ := metrics.Majority(votes, []string{"1"})
		return map[string]float64{"1": 1}[w], true
	}
	return metrics.Mean(xs), true
}

// value is judge j's value of q on the unit, or the panel's for j "panel".
func (u RunUnit) value(j string, q Quantity) (float64, bool) {
	if j == "panel" {
		return u.Panel(q.Name, q.Binary)
	}
	x, ok := u.Values[j][q.Name]
	return x, ok
}

// RunUnits gathers a run's judged units from its records, in record order.
func RunUnits(recs []rundir.Record) []RunUnit {
	var out []RunUnit
	at := map[string]int{}
	for _, r := range recs {
		for _, v := range r.Verdicts {
			if v.Check != "" {
				continue
			}
			k := v.Stage + "\x00" + v.Unit
			i, ok := at[k]
			if !ok {
				i = len(out)
				at[k] = i
				u := RunUnit{Item: r.Item, Stage: v.Stage, Unit: v.Unit, Subject: v.Subject, Text: r.Prompts[v.Text], Values: map[string]map[string]float64{}}
				for _, c := range r.Calls {
					if c.Kind == "chat" && c.Prompt != "" && (v.Subject == "" || c.Model == v.Subject) {
						u.Context = r.Prompts[c.Prompt]
						break
					}
				}
				out = append(out, u)
			}
			if _, seen := out[i].Values[v.Judge]; !seen {
				out[i].Values[v.Judge] = v.Values
			}
		}
	}
	return out
}

// Quantity names what a sheet asks people to label: a judged quantity at
// a stage, yes/no or a score.
type Quantity struct {
	Stage  string `json:"stage"`
	Name   string `json:"quantity"`
	Binary bool   `json:"binary"`
}

// quantities lists the run's judged quantities, yes/no ones first.
func quantities(units []RunUnit) []Quantity {
	vals := map[[2]string][]float64{}
	for _, u := range units {
		for _, v := range u.Values {
			for q, x := range v {
				k := [2]string{u.Stage, q}
				vals[k] = append(vals[k], x)
			}
		}
	}
	var out []Quantity
	for k, xs := range vals {
		bin := true
		for _, x := range xs {
			bin = bin && (x == 0 || x == 1)
		}
		out = append(out, Quantity{Stage: k[0], Name: k[1], Binary: bin})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Binary != out[j].Binary {
			return out[i].Binary
		}
		if out[i].Stage != out[j].Stage {
			return out[i].Stage < out[j].Stage
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// noVerdicts says why a run has no judged unit to put on a sheet: no judge
// was asked, every judge reply went unread, or the run predates the
// records of verdicts.
func noVerdicts(recs []rundir.Record) error {
	replies, failures := 0, 0
	for _, r := range recs {
		for _, c := range r.Calls {
			if c.Kind == "judge" {
				replies++
			}
		}
		failures += len(r.Failures)
	}
	switch {
	case replies == 0:
		return errors.New("the run asked no judge: there is nothing judged to label")
	case failures > 0:
		return fmt.Errorf("none of the run's %d judge replies was read (%d judgements unscored; their raw replies are in the records): there is no verdict to label — a judge that cannot write the suite's verdict may read with --judge-format json", replies, failures)
	}
	return errors.New("the run recorded no judge verdict (runs of an older format did not record them: rerun or resume it with this halu to add them)")
}

// pick is the quantity named "stage/quantity" or "quantity" (empty: the
// first yes/no quantity).
func pick(units []RunUnit, name string) (Quantity, error) {
	qs := quantities(units)
	if len(qs) == 0 {
		return Quantity{}, errors.New("the run recorded no judge verdict (runs of this version record them; rerun or resume to add them)")
	}
	var names []string
	for _, q := range qs {
		names = append(names, q.Stage+"/"+q.Name)
		if name == "" || name == q.Stage+"/"+q.Name || name == q.Name {
			return q, nil
		}
	}
	return Quantity{}, fmt.Errorf("no judged quantity %q in the run; it has %s", name, strings.Join(names, ", "))
}

// SheetFile is the record of a sheet, kept beside it in the run.
type SheetFile struct {
	Quantity
	Seed  int         `json:"seed"`
	Shown bool        `json:"verdicts_shown"`
	Rows  []SheetUnit `json:"rows"`
}

// SheetUnit is one row of a sheet: its id, the unit it stands for, and the
// unit hash of what people were shown (UnitHash), which a labels file
// carries back so that a label is applied only to the text it was made on.
type SheetUnit struct {
	ID    string `json:"sheet_id"`
	Stage string `json:"stage"`
	Unit  string `json:"unit"`
	Item  string `json:"item,omitempty"`
	Hash  string `json:"unit_hash,omitempty"`
}

// UnitHash identifies a labelled row by content: the sha256 (16 hex
// digits) of the unit's stage, item, judged model and text. A label made
// on another sheet, another copy of the run, or a shuffled file carries
// another hash.
func UnitHash(u RunUnit) string {
	return rundir.HashText(strings.Join([]string{u.Stage, u.Item, u.Subject, u.Text}, "\x00"))[:16]
}

// ErrSheetExists is a sheet that would replace one people may be labelling.
var ErrSheetExists = errors.New("the run already has a sheet")

// LabelsDir is where a run keeps its sheets and imported labels.
const LabelsDir = rundir.LabelsDir

// SheetOptions choose a sheet's units.
type SheetOptions struct {
	N           int
	Seed        int
	Quantity    string // "stage/quantity" or "quantity"; empty: the first yes/no one
	ShowVerdict bool
}

// Sheet writes a seeded sample of n of the run's judged units,
// stratified by judged model and the panel's value, as
// DIR/labels/sheet.csv and sheet.jsonl for people to label, and
// sheet.json recording which unit each row is. The judges' verdict is
// left out unless ShowVerdict (people who see it tend to agree with it).
func Sheet(dir string, opt SheetOptions) (SheetFile, error) {
	m, recs, err := engine.ReadRun(dir)
	if err != nil {
		return SheetFile{}, err
	}
	if m.Status == "running" {
		// Its records grow while it works: a sheet drawn now would sample
		// the items done so far, and say nothing of the rest.
		return SheetFile{}, fmt.Errorf("%s: the run is still running (%d of its %d items recorded): make its sheet when it has ended", dir, len(recs), m.Counts.Items)
	}
	units := RunUnits(recs)
	if len(units) == 0 {
		return SheetFile{}, fmt.Errorf("%s: %w", dir, noVerdicts(recs))
	}
	q, err := pick(units, opt.Quantity)
	if err != nil {
		return SheetFile{}, fmt.Errorf("%s: %w", dir, err)
	}
	var cand []RunUnit
	for _, u := range units {
		if _, ok := u.Panel(q.Name, q.Binary); ok && u.Stage == q.Stage {
			cand = append(cand, u)
		}
	}
	sample := engine.StratifiedSample(cand, opt.N, opt.Seed, func(u RunUnit) string {
		p, _ := u.Panel(q.Name, q.Binary)
		return fmt.Sprintf("%s|%.0f", u.Subject, p)
	})
	ld := filepath.Join(dir, LabelsDir)
	if rundir.Has(dir, filepath.Join(LabelsDir, "sheet.json")) {
		return SheetFile{}, fmt.Errorf("%w (%s): people may be labelling it, and labels made on it would be read against a new one; import its labels first, or move %s aside for a new sheet",
			ErrSheetExists, filepath.Join(ld, "sheet.csv"), ld)
	}
	sf := SheetFile{Quantity: q, Seed: opt.Seed, Shown: opt.ShowVerdict}
	var csvBuf, jsonBuf bytes.Buffer
	w := csv.NewWriter(&csvBuf)
	header := []string{"sheet_id", "unit_hash", "item", "stage", "model", "text", "context"}
	if opt.ShowVerdict {
		header = append(header, "judges_said")
	}
	header = append(header, "label")
	w.Write(header)
	for i, u := range sample {
		id := fmt.Sprintf("s%04d", i+1)
		h := UnitHash(u)
		sf.Rows = append(sf.Rows, SheetUnit{ID: id, Stage: u.Stage, Unit: u.Unit, Item: u.Item, Hash: h})
		row := []string{id, h, u.Item, u.Stage, u.Subject, u.Text, u.Context}
		obj := map[string]any{"sheet_id": id, "unit_hash": h, "item": u.Item, "stage": u.Stage, "model": u.Subject, "text": u.Text, "context": u.Context, "label": nil}
		if opt.ShowVerdict {
			p, _ := u.Panel(q.Name, q.Binary)
			said := strconv.FormatFloat(p, 'f', -1, 64)
			row, obj["judges_said"] = append(row, said), p
		}
		w.Write(append(row, ""))
		b, _ := json.Marshal(obj)
		jsonBuf.Write(append(b, '\n'))
	}
	w.Flush()
	meta, _ := json.MarshalIndent(sf, "", "  ")
	// sheet.json last: it is what marks a sheet as made.
	if err := rundir.WriteLabels(dir, map[string][]byte{"sheet.csv": csvBuf.Bytes(), "sheet.jsonl": jsonBuf.Bytes()}); err != nil {
		return sf, err
	}
	return sf, rundir.WriteLabels(dir, map[string][]byte{"sheet.json": meta})
}

// labelRow is one row of a labels file as read.
type labelRow struct {
	line                      int
	id, label                 string
	item, text, hash          string
	hasItem, hasText, hasHash bool
}

// readLabels reads people's labels (a filled-in sheet, CSV or JSONL) by
// sheet id, each row checked against the sheet by content (checkRow): yes/
// no/true/false/1/0 for a yes/no quantity, a number for a score; a blank
// label is a unit not labelled. A CSV saved by a spreadsheet as "CSV
// UTF-8" (a byte-order mark before the header) reads as any other; a
// file with no row is an error, not n = 0. Errors name file and line.
func readLabels(path string, sf SheetFile, check func(labelRow) error) (map[string]float64, int, error) {
	known := map[string]bool{}
	for _, r := range sf.Rows {
		known[r.ID] = true
	}
	out := map[string]float64{}
	blank, rows := 0, 0
	line := map[string]int{}
	add := func(r labelRow) error {
		rows++
		n := r.line
		id, label := strings.TrimSpace(r.id), strings.TrimSpace(r.label)
		if !known[id] {
			return &rundir.InputError{File: path, Line: n, Err: fmt.Errorf("sheet_id %q is not on the run's sheet", id)}
		}
		if first, dup := line[id]; dup {
			return &rundir.InputError{File: path, Line: n, Err: fmt.Errorf("sheet_id %s already labelled on line %d", id, first)}
		}
		line[id] = n
		r.id = id
		if err := check(r); err != nil {
			return &rundir.InputError{File: path, Line: n, Err: err}
		}
		if label == "" {
			blank++
			return nil
		}
		v, err := labelValue(label, sf.Binary)
		if err != nil {
			return &rundir.InputError{File: path, Line: n, Err: fmt.Errorf("%s: %w", id, err)}
		}
		out[id] = v
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	if strings.HasSuffix(path, ".csv") {
		r := csv.NewReader(f)
		head, err := r.Read()
		if err != nil {
			return nil, 0, &rundir.InputError{File: path, Line: 1, Err: fmt.Errorf("no header: %w", err)}
		}
		col := map[string]int{}
		for i, h := range head {
			if i == 0 {
				h = strings.TrimPrefix(h, "\ufeff") // "CSV UTF-8"'s byte-order mark
			}
			col[strings.TrimSpace(h)] = i
		}
		ic, ok1 := col["sheet_id"]
		lc, ok2 := col["label"]
		if !ok1 || !ok2 {
			return nil, 0, &rundir.InputError{File: path, Line: 1, Err: errors.New("a labels CSV needs the columns sheet_id and label")}
		}
		cell := func(rec []string, name string) (string, bool) {
			i, ok := col[name]
			if !ok || i >= len(rec) {
				return "", false
			}
			return rec[i], true
		}
		for {
			rec, err := r.Read()
			if err == io.EOF {
				break
			}
			ln, _ := r.FieldPos(0)
			if err != nil {
				return nil, 0, fmt.Errorf("%s: %w", path, err)
			}
			row := labelRow{line: ln, id: rec[ic], label: rec[lc]}
			row.item, row.hasItem = cell(rec, "item")
			row.text, row.hasText = cell(rec, "text")
			row.hash, row.hasHash = cell(rec, "unit_hash")
			if err := add(row); err != nil {
				return nil, 0, err
			}
		}
	} else {
		err = rundir.ScanJSONL(f, path, func(n int, b []byte) error {
			var row struct {
				ID    string          `json:"sheet_id"`
				Label json.RawMessage `json:"label"`
				Item  *string         `json:"item"`
				Text  *string         `json:"text"`
				Hash  *string         `json:"unit_hash"`
			}
			if err := json.Unmarshal(b, &row); err != nil {
				return err
			}
			label := strings.Trim(string(row.Label), `"`)
			if label == "null" {
				label = ""
			}
			lr := labelRow{line: n, id: row.ID, label: label}
			if row.Item != nil {
				lr.item, lr.hasItem = *row.Item, true
			}
			if row.Text != nil {
				lr.text, lr.hasText = *row.Text, true
			}
			if row.Hash != nil {
				lr.hash, lr.hasHash = *row.Hash, true
			}
			return add(lr)
		})
		if err != nil {
			return nil, 0, err
		}
	}
	if rows == 0 {
		return nil, 0, &rundir.InputError{File: path, Err: errors.New("no labelled rows (only a header, or empty): nothing to measure the judges on")}
	}
	return out, blank, nil
}

// rowChecker checks each labels row against the sheet row of its id by
// content: its unit_hash (sheets since unit hashes), else its item and
// text, must be those of the unit the sheet row stands for — a label made
// on an earlier sheet, another copy of the run, or a file whose rows were
// shuffled is refused, never applied to a text nobody labelled. A row
// with none of the three cannot be checked and is refused too.
func rowChecker(sf SheetFile, units []RunUnit) func(labelRow) error {
	byKey := map[string]RunUnit{}
	for _, u := range units {
		byKey[u.Stage+"\x00"+u.Unit] = u
	}
	rows := map[string]SheetUnit{}
	for _, r := range sf.Rows {
		rows[r.ID] = r
	}
	fold := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	return func(r labelRow) error {
		su := rows[r.id]
		u, ok := byKey[su.Stage+"\x00"+su.Unit]
		if !ok {
			return fmt.Errorf("%s: the sheet's unit is not in the run's records (were they replaced?)", r.id)
		}
		want := su.Hash
		if want == "" {
			want = UnitHash(u)
		}
		switch {
		case r.hasHash && strings.TrimSpace(r.hash) != "":
			if strings.TrimSpace(r.hash) != want {
				return fmt.Errorf("%s: unit_hash %s is not the sheet's %s: the label was made on another sheet or another copy of the run", r.id, strings.TrimSpace(r.hash), want)
			}
		case r.hasItem || r.hasText:
			if r.hasItem && strings.TrimSpace(r.item) != u.Item {
				return fmt.Errorf("%s: item %q is not the sheet's %q: the label was made on another sheet, or the rows were moved", r.id, strings.TrimSpace(r.item), u.Item)
			}
			if r.hasText && fold(r.text) != fold(u.Text) {
				return fmt.Errorf("%s: the text is not the one the sheet shows for this row: the label was made on another sheet, or the rows were moved", r.id)
			}
		default:
			return fmt.Errorf("%s: the row has no unit_hash, item or text to check it against the sheet (keep the sheet's columns)", r.id)
		}
		return nil
	}
}

func labelValue(s string, binary bool) (float64, error) {
	if binary {
		switch strings.ToLower(s) {
		case "yes", "y", "true", "1", "hallucinated":
			return 1, nil
		case "no", "n", "false", "0", "faithful":
			return 0, nil
		}
		return 0, fmt.Errorf("label %q is not yes or no", s)
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("label %q is not a number", s)
	}
	return v, nil
}

// ImportFile is where Import keeps its findings in the run (the report
// shows them with the run).
const ImportFile = "import.json"

// Import reads people's labels of a run's sheet and measures the run's
// judges on them: per judge (and the panel), agreement with people
// (yes/no: accuracy, κ, TPR, FPR; scores: α and the mean difference), and
// per judged model the panel's figure over all judged units corrected for
// the judges' errors by prediction-powered inference, beside the
// uncorrected figure. The findings are written to DIR/labels/import.json.
func Import(dir, path string) (*summary.Summary, error) {
	b, err := rundir.ReadFile(dir, filepath.Join(LabelsDir, "sheet.json"))
	if err != nil {
		return nil, fmt.Errorf("%s: no sheet to import labels for (halu judges sheet %s first): %w", dir, dir, err)
	}
	var sf SheetFile
	if err := json.Unmarshal(b, &sf); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, LabelsDir, "sheet.json"), err)
	}
	_, recs, err := engine.ReadRun(dir)
	if err != nil {
		return nil, err
	}
	units := RunUnits(recs)
	labels, blank, err := readLabels(path, sf, rowChecker(sf, units))
	if err != nil {
		return nil, err
	}
	sum := Measure(units, sf, labels)
	sum.Notes = append(sum.Notes, fmt.Sprintf("labels: %s — %d of the sheet's %d rows labelled, %d left blank", path, len(labels), len(sf.Rows), blank))
	out, _ := json.MarshalIndent(sum, "", "  ")
	if err := rundir.WriteLabels(dir, map[string][]byte{ImportFile: out}); err != nil {
		return nil, err
	}
	return sum, nil
}

// Measure compares the judges with people's labels (by sheet id) on the
// sheet's quantity and corrects the panel's figure per judged model.
func Measure(units []RunUnit, sf SheetFile, labels map[string]float64) *summary.Summary {
	byUnit := map[string]RunUnit{}
	for _, u := range units {
		byUnit[u.Stage+"\x00"+u.Unit] = u
	}
	human := map[string]float64{} // stage, unit → label
	for _, r := range sf.Rows {
		if y, ok := labels[r.ID]; ok {
			human[r.Stage+"\x00"+r.Unit] = y
		}
	}
	q := sf.Quantity
	sum := &summary.Summary{Suite: "judges", Metrics: map[string]float64{}}
	judges := map[string]bool{}
	for _, u := range units {
		if u.Stage == q.Stage {
			for j := range u.Values {
				judges[j] = true
			}
		}
	}
	js := make([]string, 0, len(judges))
	for j := range judges {
		js = append(js, j)
	}
	sort.Strings(js)
	sum.Tables = append(sum.Tables, agreementTable(byUnit, human, q, js))
	ppi, few := ppiTable(units, human, q)
	sum.Tables = append(sum.Tables, ppi)
	if note, ok := rankAgreement(units, human, q); ok {
		sum.Notes = append(sum.Notes, note)
	}
	if len(few) > 0 {
		sum.Notes = append(sum.Notes, fmt.Sprintf("warning: corrected on fewer than %d labels — %s: with few labels the judges' errors may not show among them, and the corrected interval's coverage, measured in simulation, leaves 93–97%%; label more units", minPPILabels, strings.Join(few, ", ")))
	}
	sum.Notes = append(sum.Notes,
		fmt.Sprintf("quantity: %s at stage %s (%s); the panel's value of a unit is its judges' %s", q.Name, q.Stage, map[bool]string{true: "yes/no", false: "a score"}[q.Binary], map[bool]string{true: "majority (a tie counts as yes)", false: "mean"}[q.Binary]),
		"corrected: prediction-powered inference (Angelopoulos et al., Science 2023): the panel's mean over the units nobody labelled, minus its mean error on the labelled ones, with a 95% interval that carries the judges' error; it is valid when the labelled units are a random sample of the judged ones (the sheet's draw is stratified in proportion to each stratum's size, so it is self-weighting). Uncorrected: the panel's mean over every judged unit, as if it made no error")
	return sum
}

func agreementTable(byUnit map[string]RunUnit, human map[string]float64, q Quantity, js []string) summary.Table {
	keys := make([]string, 0, len(human))
	for k := range human {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if q.Binary {
		t := summary.Table{Title: "The judges on this run's own texts: agreement with people's labels (95% intervals)",
			Columns: []string{"judge", "units labelled", "no verdict", "accuracy", "Cohen's κ", "TPR", "FPR"}}
		for _, j := range append(append([]string(nil), js...), "panel") {
			var vs []metrics.LabelledVerdict
			for _, k := range keys {
				x, ok := byUnit[k].value(j, q)
				v := metrics.LabelledVerdict{Human: human[k] == 1, Unscored: !ok, Judged: x == 1}
				vs = append(vs, v)
			}
			a := metrics.Agreement(vs, 0.95)
			t.Rows = append(t.Rows, []string{j, fmt.Sprint(a.Units), fmt.Sprint(a.Units - a.Accuracy.N), cell(a.Accuracy, true), cell(a.Kappa, false), cell(a.TPR, true), cell(a.FPR, true)})
		}
		return t
	}
	t := summary.Table{Title: "The judges on this run's own texts: agreement with people's scores (95% intervals)",
		Columns: []string{"judge", "units labelled", "α (interval) with people", "mean difference (judge − people)"}}
	for _, j := range append(append([]string(nil), js...), "panel") {
		var data [][]float64
		var diff []float64
		for _, k := range keys {
			if x, ok := byUnit[k].value(j, q); ok {
				data = append(data, []float64{x, human[k]})
				diff = append(diff, x-human[k])
			}
		}
		al := "–"
		if a, err := metrics.KrippendorffInterval(data); err == nil {
			al = fmt.Sprintf("%.2f (%d units)", a, len(data))
		}
		t.Rows = append(t.Rows, []string{j, fmt.Sprint(len(data)), al, cell(metrics.MeanCI(diff, 0.95), false)})
	}
	return t
}

// minPPILabels is the label count below which the corrected interval is
// warned about (metrics.PPIMinLabels: where simulation shows its coverage
// leaves 93–97%).
const minPPILabels = metrics.PPIMinLabels

func ppiTable(units []RunUnit, human map[string]float64, q Quantity) (summary.Table, []string) {
	var few []string
	t := summary.Table{Title: fmt.Sprintf("The panel's %s corrected for its judges' errors (prediction-powered, 95%% intervals)", q.Name),
		Columns: []string{"model judged", "units", "labelled", "uncorrected", "corrected"}}
	by := map[string][]RunUnit{}
	var models []string
	for _, u := range units {
		if u.Stage != q.Stage {
			continue
		}
		if _, ok := by[u.Subject]; !ok {
			models = append(models, u.Subject)
		}
		by[u.Subject] = append(by[u.Subject], u)
	}
	sort.Strings(models)
	if len(models) > 1 {
		models = append(models, "all")
		by["all"] = nil
		for _, m := range models[:len(models)-1] {
			by["all"] = append(by["all"], by[m]...)
		}
	}
	for _, m := range models {
		var all, unl, lp, ly []float64
		for _, u := range by[m] {
			f, ok := u.Panel(q.Name, q.Binary)
			if !ok {
				continue
			}
			all = append(all, f)
			if y, ok := human[u.Stage+"\x00"+u.Unit]; ok {
				lp, ly = append(lp, f), append(ly, y)
			} else {
				unl = append(unl, f)
			}
		}
		name := m
		if name == "" {
			name = "(not named)"
		}
		naive, ppi := metrics.NaiveMean(all, 0.95), metrics.PPIMean(unl, lp, ly, 0.95)
		if q.Binary {
			// A share: its interval floored for few labels and clipped to
			// 0..1 (metrics.PPIShare).
			naive, ppi = naive.Clip(0, 1), metrics.PPIShare(unl, lp, ly, 0.95)
		}
		if len(lp) < minPPILabels {
			few = append(few, fmt.Sprintf("%s (%d)", name, len(lp)))
		}
		t.Rows = append(t.Rows, []string{name, fmt.Sprint(len(all)), fmt.Sprint(len(lp)), cell(naive, q.Binary), cell(ppi, q.Binary)})
	}
	return t, few
}

// minRanked is the fewest judged models whose order is compared: with two,
// a rank correlation is ±1 whatever the figures.
const minRanked = 3

// rankAgreement says whether the panel orders the judged models as people
// do, where the labels cover at least minRanked of them: Spearman's ρ
// between each model's panel figure and people's, both over the model's
// labelled units (so the two are measured on the same texts).
func rankAgreement(units []RunUnit, human map[string]float64, q Quantity) (string, bool) {
	type sums struct {
		panel, people float64
		n             int
	}
	by := map[string]*sums{}
	for _, u := range units {
		if u.Stage != q.Stage {
			continue
		}
		y, ok := human[u.Stage+"\x00"+u.Unit]
		if !ok {
			continue
		}
		p, ok := u.Panel(q.Name, q.Binary)
		if !ok {
			continue
		}
		s := by[u.Subject]
		if s == nil {
			s = &sums{}
			by[u.Subject] = s
		}
		s.panel, s.people, s.n = s.panel+p, s.people+y, s.n+1
	}
	if len(by) < minRanked {
		return "", false
	}
	var models []string
	for m := range by {
		models = append(models, m)
	}
	sort.Strings(models)
	var xs, ys []float64
	for _, m := range models {
		s := by[m]
		xs, ys = append(xs, s.panel/float64(s.n)), append(ys, s.people/float64(s.n))
	}
	r, err := metrics.Spearman(xs, ys)
	if err != nil {
		return fmt.Sprintf("model order: the panel's and people's %s over the labelled units of %d models cannot be ranked (%v)", q.Name, len(models), err), true
	}
	return fmt.Sprintf("model order: Spearman's ρ between the panel's and people's %s per model, over each model's labelled units: %.2f (%d models, p %.2f) — 1 when the judges rank the models as people do", q.Name, r.Statistic, r.N, r.P), true
}
