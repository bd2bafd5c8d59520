package report

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"

	"halu/runner/engine"
	"halu/runner/rundir"
	"halu/runner/summary"
)

// LongColumns are the columns of WriteLong, in order.
var LongColumns = []string{"run", "suite", "model", "group", "metric", "key", "estimate", "lo", "hi", "n", "unscored", "interval", "percent", "lower_is_better", "headline"}

// WriteLong writes every figure of runs as one CSV row (LongColumns):
// numbers as numbers (shares as fractions, not percentages; full
// precision), an empty cell where there is no value (n = 0, or no
// interval), never a formatted string. It is the form other tools
// (pandas, R, a spreadsheet) read directly.
func WriteLong(w io.Writer, runs []*Run) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(LongColumns); err != nil {
		return err
	}
	for _, r := range runs {
		for _, f := range r.Summary.Figures {
			est := f.Estimate
			if !f.Measured() {
				est = summary.Num(math.NaN())
			}
			if err := cw.Write([]string{r.Name(), r.Manifest.Suite, f.Model, f.Group, f.Metric, f.Key,
				longNum(est), longNum(f.Lo), longNum(f.Hi), strconv.Itoa(f.N), strconv.Itoa(f.Unscored), f.Interval,
				strconv.FormatBool(f.Percent), strconv.FormatBool(f.Lower), strconv.FormatBool(f.Headline)}); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

func longNum(x summary.Num) string {
	f := float64(x)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return ""
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// SampleRow is one line of WriteSamples: one record (an item of one model:
// the unit the engine stores, holding the suite's scored units) with its
// inputs, outputs and verdicts.
type SampleRow struct {
	Run   string        `json:"run"`
	Suite string        `json:"suite"`
	Item  string        `json:"item"`
	Flags summary.Flags `json:"flags"`
	// Calls are the item's model calls in order: stage, model, the prompt
	// of a generation as sent, the reply as written and a judge's verdict
	// as read.
	Calls []SampleCall `json:"calls"`
	// Failures are the judgements never read, with every raw reply.
	Failures []rundir.Failure `json:"failures,omitempty"`
	// Data is the suite's record: the scored units with their verdicts.
	Data json.RawMessage `json:"data"`
}

// SampleCall is one model call of a SampleRow.
type SampleCall struct {
	Stage      string `json:"stage"`
	Kind       string `json:"kind"`
	Model      string `json:"model"`
	Prompt     string `json:"prompt,omitempty"`
	Reply      string `json:"reply,omitempty"`
	Parsed     string `json:"parsed,omitempty"`
	DoneReason string `json:"done_reason,omitempty"`
}

// sampleRow is rec, the i-th record of r (whole), as a SampleRow.
func sampleRow(r *Run, i int, rec rundir.Record) SampleRow {
	row := SampleRow{Run: r.Name(), Suite: r.Manifest.Suite, Item: rec.Item, Failures: rec.Failures, Data: rec.Data}
	if i < len(r.records) {
		row.Flags = r.records[i].flags
	}
	for _, c := range rec.Calls {
		if c.Kind == "embed" {
			continue
		}
		row.Calls = append(row.Calls, SampleCall{Stage: c.Stage, Kind: c.Kind, Model: c.Model, Prompt: rec.Prompts[c.Prompt],
			Reply: c.Reply, Parsed: c.Parsed, DoneReason: c.DoneReason})
	}
	return row
}

// WriteSamples writes every record of runs as one JSON line (SampleRow),
// reading one record at a time.
func WriteSamples(w io.Writer, runs []*Run) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, r := range runs {
		if err := writeSamples(enc, r); err != nil {
			return err
		}
	}
	return nil
}

// writeSamples writes every record of r (WriteSamples).
func writeSamples(enc *json.Encoder, r *Run) error {
	return r.readWhole(func(whole *wholeRecords) error {
		for i := range r.records {
			rec, err := whole.record(i)
			if err != nil {
				return err
			}
			if err := enc.Encode(sampleRow(r, i, rec)); err != nil {
				return fmt.Errorf("samples: %s: %w", rec.Item, err)
			}
		}
		return nil
	})
}

// judgeRows is how many judge calls a record shows in the browser.
const judgeRows = 40

// browserLimit is how many prompts a suite's sample browser shows, and
// browserRecords how many records: the rest are counted and left to
// --samples, so that a page of a million records opens in a browser.
const (
	browserLimit   = 2000
	browserRecords = 10000
)

// Browser is one suite's sample browser: every item as a collapsible
// block — the prompt as sent, each model's answer, each judge's verdict as
// read and raw reply — grouped by prompt, so that the answers of several
// models and runs to one question sit together, with filter lists.
type Browser struct {
	Suite, Anchor string
	Filters       []BrowserFilter
	Groups        []SampleGroup
	Total         int // groups before browserLimit
	// Records is the records of the runs, Unshown those the browser
	// leaves out (beyond browserLimit or browserRecords).
	Records, Unshown int
}

// BrowserFilter lists the groups with one flag.
type BrowserFilter struct {
	Name  string
	Links []SampleGroup
}

// SampleGroup is the records that share a generation prompt.
type SampleGroup struct {
	Anchor, Label string
	Flags         summary.Flags
	Prompt        string
	Entries       []SampleEntry
	// More counts the prompt's records left out (beyond browserRecords).
	More int
}

// SampleEntry is one record of a group.
type SampleEntry struct {
	Run, Item string
	Flags     summary.Flags
	Answers   []SampleCall
	Judges    []SampleCall
	// MoreJudges counts judge calls beyond judgeRows, left to --samples
	// (a KnowHD statement asks one per claim and source).
	MoreJudges int
	Failures   []rundir.Failure
	// Data is the record as stored (clipped), shown when the record has no
	// transcript (a run made before halu kept one).
	Data string
}

// Browsers makes one sample browser per suite of runs: records are
// grouped by their slim form (each generation's prompt hash), and a
// record shown is read whole.
func Browsers(runs []*Run) ([]Browser, error) {
	var out []Browser
	at := map[string]int{}
	var groupsAt []map[string]int // per browser: group key → index (-1: not shown)
	for _, r := range runs {
		s := r.Manifest.Suite
		bi, ok := at[s]
		if !ok {
			bi = len(out)
			at[s] = bi
			out = append(out, Browser{Suite: s, Anchor: "samples-" + slug(s)})
			groupsAt = append(groupsAt, map[string]int{})
		}
		if err := browse(&out[bi], groupsAt[bi], r); err != nil {
			return nil, err
		}
	}
	for bi := range out {
		b := &out[bi]
		for _, f := range []struct {
			name string
			has  func(summary.Flags) bool
		}{
			{"judged hallucinated", func(f summary.Flags) bool { return f.Hallucinated }},
			{"judges disagree", func(f summary.Flags) bool { return f.Disagree }},
			{"unscored", func(f summary.Flags) bool { return f.Unscored }},
			{"refused", func(f summary.Flags) bool { return f.Refused }},
			{"cut short", func(f summary.Flags) bool { return f.CutShort }},
			{"judge ≠ people's label", func(f summary.Flags) bool { return f.AgainstPeople }},
		} {
			if f.name == "judge ≠ people's label" && !labelled(b.Groups) {
				continue // no unit of these records was labelled by people
			}
			bf := BrowserFilter{Name: f.name}
			for _, g := range b.Groups {
				if f.has(g.Flags) {
					bf.Links = append(bf.Links, SampleGroup{Anchor: g.Anchor, Label: g.Label})
				}
			}
			b.Filters = append(b.Filters, bf)
		}
	}
	return out, nil
}

// browse adds r's records to b (groupAt: b's groups by key).
func browse(b *Browser, groupAt map[string]int, r *Run) error {
	return r.readWhole(func(whole *wholeRecords) error {
		for i, e := range r.records {
			b.Records++
			key := e.group // browserGroup
			gi, ok := groupAt[key]
			if !ok {
				b.Total++
				gi = -1
				if len(b.Groups) < browserLimit && b.Records-b.Unshown <= browserRecords {
					gi = len(b.Groups)
					b.Groups = append(b.Groups, SampleGroup{Anchor: fmt.Sprintf("%s-%d", b.Anchor, gi+1), Label: e.place.Item})
				}
				groupAt[key] = gi
			}
			if gi < 0 || b.Records-b.Unshown > browserRecords {
				b.Unshown++
				if gi >= 0 {
					b.Groups[gi].More++
				}
				continue
			}
			rec, err := whole.record(i)
			if err != nil {
				return err
			}
			g := &b.Groups[gi]
			if len(g.Entries) == 0 && key[0] == 0 {
				g.Prompt = engine.ClipText(rec.Prompts[key[1:]], 6000)
			}
			row := sampleRow(r, i, rec)
			e := SampleEntry{Run: row.Run, Item: row.Item, Flags: row.Flags, Failures: row.Failures}
			for _, c := range row.Calls {
				c.Prompt = "" // shown once, for the group
				c.Reply = engine.ClipText(c.Reply, 3000)
				if c.Kind == "chat" {
					e.Answers = append(e.Answers, c)
				} else if len(e.Judges) < judgeRows {
					e.Judges = append(e.Judges, c)
				} else {
					e.MoreJudges++
				}
			}
			if len(e.Answers)+len(e.Judges) == 0 {
				e.Data = clip(prettyJSON(row.Data), 4000)
			}
			g.Entries = append(g.Entries, e)
			g.Flags = orFlags(g.Flags, e.Flags)
		}
		return nil
	})
}

func orFlags(a, b summary.Flags) summary.Flags {
	return summary.Flags{Hallucinated: a.Hallucinated || b.Hallucinated, Disagree: a.Disagree || b.Disagree,
		Refused: a.Refused || b.Refused, Unscored: a.Unscored || b.Unscored, CutShort: a.CutShort || b.CutShort,
		Labelled: a.Labelled || b.Labelled, AgainstPeople: a.AgainstPeople || b.AgainstPeople}
}

// labelled reports whether people labelled any unit of the groups.
func labelled(gs []SampleGroup) bool {
	for _, g := range gs {
		if g.Flags.Labelled {
			return true
		}
	}
	return false
}
