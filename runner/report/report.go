// Package report turns run directories into what people read: one
// self-contained HTML file (tables in the papers' layouts, charts as inline
// SVG, every run's models, prompts, settings and failures), Markdown tables
// and CSV files, and paired comparisons of two runs (compare.go). It reads
// only what a run directory holds — manifest.json and records.jsonl — and
// makes no model call.
package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	"halu/localmodels"
	"halu/runner/engine"
	"halu/runner/judgeval"
	"halu/runner/rundir"
	"halu/runner/summary"
)

// Run is one run directory, loaded.
type Run struct {
	Dir      string
	Manifest *rundir.Manifest
	// records are where the run's records are in its records file, sorted
	// by item, each with what the report shows of it without reading it
	// again; the sample browser and --samples read each one whole at its
	// place.
	records []recordEntry
	// failures are the run's unscored judgements by stage and model (at
	// most failureExamples examples each, the first in item order), calls
	// its model calls by stage and model: both gathered as its records
	// were read.
	failures []FailureGroup
	calls    []callRow
	Summary  *summary.Summary
	// Regenerated is true when Summary was recomputed from the records;
	// false when the suite could not be rebuilt here (its input files are
	// elsewhere) and the run's own summary.json was used, named in Note.
	Regenerated bool
	Note        string
	// Verified is the run's last halu verify in a line (VerifiedLine), ""
	// when it was never verified.
	Verified string
	// Facts are what the run's numbers rest on, for comparison with
	// published tables (Reference.Prove).
	Facts RunFacts
}

// Rebuilder makes the suite a run used from its manifest, with no model
// call; it returns an error when it cannot (an unknown suite, input files
// not on this machine).
type Rebuilder func(m *rundir.Manifest) (engine.Suite, error)

// recordEntry is one record as a report holds it: its place in the records
// file (with its item), its flags (summary.Flags) and its group in the
// sample browser (browserGroup).
type recordEntry struct {
	place rundir.RecordPlace
	flags summary.Flags
	group string
}

// Load reads the run in dir. The summary is recomputed from the records by
// the suite rebuild makes when it can be, so a report shows the current
// tables and charts for any run; otherwise the run's summary.json is used.
// The summary is made first, from the records read one at a time
// (engine.Summarize); then the records are read again, one at a time and
// without their transcripts, up to where the summary's reading ended: what
// the page shows of all of them (unscored judgements, calls, the judge
// replies read) is gathered as they pass, and each is held as its place,
// flags (summary.Flags) and browser group only (recordEntry), so that a
// report's memory does not hold its records; a record is read whole only
// to be shown (readWhole).
func Load(dir string, rebuild Rebuilder) (*Run, error) {
	m, err := rundir.ReadManifest(dir)
	if err != nil {
		return nil, err
	}
	var suite engine.Suite
	var serr error
	var sum *summary.Summary
	end := int64(-1)
	if rebuild != nil {
		if suite, serr = rebuild(m); serr != nil {
			suite = engine.Suite{}
		} else {
			src := rundir.RecordsIn(filepath.Join(dir, rundir.RecordsFile))
			if sum, _, serr = engine.Summarize(suite, m, src); serr == nil {
				end = src.End()
			}
		}
	}
	// One pass over the records (without their transcripts and data):
	// what the page shows of all of them is gathered, and each is kept as
	// its place, flags and browser group only.
	var entries []recordEntry // in the file's order
	failures := newFailureBook(failureExamples)
	calls := callBook{}
	stages := summary.StageReplies{}
	repairs := 0
	groups := map[string]string{} // one copy of each group's key
	_, err = rundir.ReadRecordPlaces(filepath.Join(dir, rundir.RecordsFile), end, func(rec *rundir.Record, at rundir.RecordPlace) error {
		f, err := summary.RecordFlags(suite.Flag, *rec)
		if err != nil {
			return err
		}
		failures.add(rec, len(entries))
		calls.add(rec)
		stages.Add(rec)
		repairs += uncountedRepairs(rec)
		g := browserGroup(rec)
		if k, ok := groups[g]; ok {
			g = k
		} else {
			groups[g] = g
		}
		entries = append(entries, recordEntry{place: at, flags: f, group: g})
		return nil
	})
	if err != nil {
		return nil, err
	}
	// Item order (stable: one item's records keep the file's).
	slices.SortStableFunc(entries, func(a, b recordEntry) int { return strings.Compare(a.place.Item, b.place.Item) })
	r := &Run{Dir: dir, Manifest: m, records: entries, failures: failures.groups(), calls: calls.rows()}
	if v, err := rundir.ReadVerification(dir); err != nil {
		return nil, err
	} else if v != nil {
		if r.Verified, err = VerifiedLine(dir, v); err != nil {
			return nil, err
		}
	}
	if rebuild != nil && len(entries) > 0 { // a run with no record has no summary yet
		if serr == nil {
			r.Summary, r.Regenerated = sum, true
		} else {
			r.Note = fmt.Sprintf("tables from the run's summary.json: the suite could not be rebuilt here (%v)", serr)
		}
	}
	if r.Summary == nil {
		sum, err := summary.ReadSummary(dir)
		switch {
		case err == nil:
			r.Summary = sum
		case errors.Is(err, os.ErrNotExist):
			r.Summary = &summary.Summary{Suite: m.Suite}
			if r.Note == "" {
				r.Note = "the run has no summary yet (no completed item)"
			}
		default:
			return nil, err
		}
	}
	r.Summary.Counts = m.Counts
	r.Summary.TinyModel = r.Summary.TinyModel || m.TinyModel
	if m.Status == "complete" && len(entries) > 0 {
		// What the run measured, from the tables shown (a run booked
		// before halu recorded it, or reported by a newer reader, says
		// the same as one booked now).
		ms := summary.MeasureReplies(r.Summary, stages)
		m.Measured = &ms
	}
	if err := addLabels(dir, r.Summary); err != nil {
		return nil, err
	}
	r.Facts = Facts(m, r.Summary)
	r.Facts.UncountedRepairs = repairs
	return r, nil
}

// uncountedRepairs counts the repair turns in rec logged before halu
// counted the verdicts read from them (rundir.CallLog.Counted).
func uncountedRepairs(rec *rundir.Record) int {
	n := 0
	for _, c := range rec.Calls {
		if c.Kind == "repair" && !c.Counted {
			n++
		}
	}
	return n
}

// browserGroup is the sample browser's group of rec: its first
// generation's prompt, by its hash (the whole prompt, not the clipped text
// the page shows), or its item when it has none.
func browserGroup(rec *rundir.Record) string {
	for _, c := range rec.Calls {
		if c.Kind == "chat" && c.Prompt != "" {
			return "\x00" + c.Prompt
		}
	}
	return rec.Item + "\x00"
}

// addLabels appends to sum what people's labels of the run's own texts
// showed (halu judges import), when there are any.
func addLabels(dir string, sum *summary.Summary) error {
	b, err := rundir.ReadFile(dir, filepath.Join(judgeval.LabelsDir, judgeval.ImportFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var l summary.Summary
	if err := json.Unmarshal(b, &l); err != nil {
		return fmt.Errorf("%s: %w", filepath.Join(dir, judgeval.LabelsDir, judgeval.ImportFile), err)
	}
	sum.Tables = append(sum.Tables, l.Tables...)
	sum.Notes = append(sum.Notes, l.Notes...)
	return nil
}

// LoadAll loads every directory in dirs, in the order given.
func LoadAll(dirs []string, rebuild Rebuilder) ([]*Run, error) {
	var out []*Run
	for _, d := range dirs {
		r, err := Load(d, rebuild)
		if err != nil {
			return nil, fmt.Errorf("report: %w", err)
		}
		out = append(out, r)
	}
	return out, nil
}

// Name is how the report titles a run: its suite and directory.
func (r *Run) Name() string {
	return r.Manifest.Suite + " — " + filepath.Base(filepath.Clean(r.Dir))
}

// FailureGroup is a run's unscored judgements of one stage and model: how
// many, and the first few in item order with their items.
type FailureGroup struct {
	Stage, Model string
	Count        int
	Examples     []rundir.Failure
	Items        []string
}

// failureExamples is how many unscored judgements a failure group shows.
const failureExamples = 3

// failureBook gathers a run's unscored judgements by stage and model as
// its records are read, in any order: it counts them and keeps, of each
// group, the keep first in item order (those of one item in the order
// read).
type failureBook struct {
	keep int
	at   map[[2]string]*failureKept
}

type failureKept struct {
	count int
	kept  []keptFailure
}

type keptFailure struct {
	item string
	seq  int // the record's place in the reading, then the failure's in it
	sub  int
	f    rundir.Failure
}

func newFailureBook(keep int) *failureBook {
	return &failureBook{keep: keep, at: map[[2]string]*failureKept{}}
}

// add books rec's failures; seq is rec's place in the reading.
func (b *failureBook) add(rec *rundir.Record, seq int) {
	for i, f := range rec.Failures {
		k := [2]string{f.Stage, f.Model}
		g := b.at[k]
		if g == nil {
			g = &failureKept{}
			b.at[k] = g
		}
		g.count++
		kf := keptFailure{item: rec.Item, seq: seq, sub: i, f: f}
		at := sort.Search(len(g.kept), func(j int) bool { return kf.before(g.kept[j]) })
		if at < b.keep {
			g.kept = slices.Insert(g.kept, at, kf)
			if len(g.kept) > b.keep {
				g.kept = g.kept[:b.keep]
			}
		}
	}
}

// before orders kept failures by item, then as read.
func (a keptFailure) before(b keptFailure) bool {
	if a.item != b.item {
		return a.item < b.item
	}
	if a.seq != b.seq {
		return a.seq < b.seq
	}
	return a.sub < b.sub
}

// groups are the failure groups by stage, then model.
func (b *failureBook) groups() []FailureGroup {
	var out []FailureGroup
	for k, g := range b.at {
		fg := FailureGroup{Stage: k[0], Model: k[1], Count: g.count}
		for _, kf := range g.kept {
			fg.Examples, fg.Items = append(fg.Examples, kf.f), append(fg.Items, kf.item)
		}
		out = append(out, fg)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Stage != out[j].Stage {
			return out[i].Stage < out[j].Stage
		}
		return out[i].Model < out[j].Model
	})
	return out
}

// callRow counts one run's model calls by stage and model.
type callRow struct {
	Stage, Model          string
	Calls, Repairs        int
	PromptTokens, Tokens  int
	Truncated, NearWindow int
}

// callBook gathers a run's call rows as its records are read.
type callBook map[[2]string]*callRow

// add counts rec's calls.
func (b callBook) add(rec *rundir.Record) {
	for _, c := range rec.Calls {
		k := [2]string{c.Stage, c.Model}
		r := b[k]
		if r == nil {
			r = &callRow{Stage: c.Stage, Model: c.Model}
			b[k] = r
		}
		r.Calls++
		if c.Kind == "repair" {
			r.Repairs++
		}
		r.PromptTokens += c.PromptTokens
		r.Tokens += c.EvalTokens
		if localmodels.CutShort(c.DoneReason) {
			r.Truncated++
		}
		if c.NearContext > 0 {
			r.NearWindow++
		}
	}
}

// rows are the call rows by model, then stage.
func (b callBook) rows() []callRow {
	var out []callRow
	for _, r := range b {
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Model != out[j].Model {
			return out[i].Model < out[j].Model
		}
		return out[i].Stage < out[j].Stage
	})
	return out
}

// prettyJSON indents raw JSON, or returns it as it is.
func prettyJSON(raw json.RawMessage) string {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return string(raw)
	}
	// Model text is shown as written (a "<" stays "<", not "\u003c"): the
	// HTML template escapes it where it is placed.
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return string(raw)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// clip shortens s to at most n bytes on a rune boundary, saying so.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && (s[cut]&0xC0) == 0x80 {
		cut--
	}
	return s[:cut] + fmt.Sprintf("… [%d more bytes in records.jsonl]", len(s)-cut)
}

// Status writes one line per run: its status by what it measured, its
// items, its headline figures that rest on a scored unit and its unscored
// judgements — and, for a run that measured nothing in whole or in part,
// what and how to fix it.
func Status(w io.Writer, runs []*Run) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "run\tstatus\titems\theadline figures measured\tunscored judgements")
	for _, r := range runs {
		m, c := r.Manifest, r.Summary.Counts
		figs := "–"
		if ms := m.Measured; ms != nil && ms.Figures > 0 {
			figs = fmt.Sprintf("%d of %d", ms.Scored, ms.Figures)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d of %d\t%s\t%d\n", r.Dir, m.StatusText(), c.Completed, c.Items, figs, c.JudgeFailures)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range runs {
		if line := r.Manifest.Measured.Closing(); line != "" {
			fmt.Fprintf(w, "%s: %s\n", r.Dir, line)
		}
	}
	return nil
}

// NextSteps says what a reader of a run can do next, by its state: finish
// it, fix what measured nothing, measure its judges against people, or
// compare it with another run.
func NextSteps(r *Run) string {
	m := r.Manifest
	var steps []string
	switch {
	case m.Status == "interrupted" || m.Status == "incomplete":
		steps = append(steps, "finish it: halu run --resume "+r.Dir)
	case m.Measured != nil && len(m.Measured.Nothing) > 0:
		steps = append(steps, "fix what measured nothing (above), then run again — or redo only the judging: halu rerun "+r.Dir+" --stage STAGE with another judge or --judge-format json")
	}
	if m.Suite != "judges" && r.Summary.JudgeReplies > 0 {
		steps = append(steps, "measure the judges against people: halu judges sheet "+r.Dir+" --n 50, label the sheet, then halu judges import "+r.Dir+" labels.csv")
	}
	steps = append(steps, "set it beside another run of the same suite: halu compare "+r.Dir+" OTHER_RUN")
	return strings.Join(steps, "; ")
}

// wholeRecords reads a run's records whole, transcripts included, from
// its records file at the places Load read them from, one at a time.
type wholeRecords struct {
	run *Run
	at  *rundir.RecordsAt
}

// readWhole calls fn with r's records file open for reading records
// whole (not when the run has no record).
func (r *Run) readWhole(fn func(*wholeRecords) error) error {
	if len(r.records) == 0 {
		return nil
	}
	at, err := rundir.OpenRecordsAt(filepath.Join(r.Dir, rundir.RecordsFile))
	if err != nil {
		return err
	}
	defer at.Close()
	return fn(&wholeRecords{run: r, at: at})
}

// record is the run's i-th record (r.records' order) whole.
func (w *wholeRecords) record(i int) (rundir.Record, error) {
	rec, err := w.at.Record(w.run.records[i].place)
	if err != nil {
		return rec, fmt.Errorf("%s: %w (report again)", w.run.Dir, err)
	}
	return rec, nil
}
