package judgeval

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"halu/localmodels/fakeollama"
	"halu/runner/engine"
	"halu/runner/engine/enginetest"
	"halu/runner/rundir"
	"halu/runner/smoke"
)

// TestSheetAndImport: a smoke run of two models × 5 questions whose two
// judges flag every answer of genA hallucinated and none of genB's. People
// label three of each model's five units: genA yes, no, no; genB no, no,
// yes. By hand, for genA: the panel says 1 on all five (uncorrected
// 100%); the rectifier on the labelled three is 0, 1, 1 (mean 2/3,
// variance 1/3), the two unlabelled say 1 (variance 0), so the corrected
// figure is 1 − 2/3 = 33.3% with half-width 1.959964·√(1/3/3) = 65.3
// points, its lower bound −32.0% clipped to 0 (a share); genB the same
// from the other side (0 + 1/3). Three labels each: the table warns. The panel's
// accuracy on the six labelled units is 3/6 (genA's yes, genB's two no).
func TestSheetAndImport(t *testing.T) {
	dir := judgedRun(t)
	sf, err := Sheet(dir, SheetOptions{N: 10, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if sf.Stage != "judge" || sf.Name != "hallucination" || !sf.Binary || len(sf.Rows) != 10 {
		t.Fatalf("sheet %+v", sf.Quantity)
	}
	b, _ := os.ReadFile(filepath.Join(dir, LabelsDir, "sheet.csv"))
	rows, err := csv.NewReader(strings.NewReader(string(b))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(rows[0], ",") != "sheet_id,unit_hash,item,stage,model,text,context,label" {
		t.Errorf("header %v (the judges' verdict must be hidden)", rows[0])
	}
	labels := map[string][]string{"genA": {"yes", "no", "no"}, "genB": {"no", "no", "yes"}}
	var out strings.Builder
	w := csv.NewWriter(&out)
	w.Write(rows[0])
	for _, row := range rows[1:] {
		if !strings.HasPrefix(row[5], "Answer by "+row[4]) {
			t.Errorf("row %v: the judged text is not the model's answer", row)
		}
		if l := labels[row[4]]; len(l) > 0 {
			row[7], labels[row[4]] = l[0], l[1:]
		}
		w.Write(row)
	}
	w.Flush()
	lf := filepath.Join(t.TempDir(), "labels.csv")
	os.WriteFile(lf, []byte(out.String()), 0o644)
	sum, err := Import(dir, lf)
	if err != nil {
		t.Fatal(err)
	}
	var ppi, agree [][]string
	for _, tb := range sum.Tables {
		switch {
		case strings.Contains(tb.Title, "corrected"):
			ppi = tb.Rows
		case strings.Contains(tb.Title, "agreement"):
			agree = tb.Rows
		}
	}
	want := map[string][2]string{
		"genA": {"100.0% [100.0%, 100.0%] n=5", "33.3% [0.0%, 98.7%] n=3"},
		"genB": {"0.0% [0.0%, 0.0%] n=5", "33.3% [0.0%, 98.7%] n=3"},
	}
	for _, r := range ppi {
		if w, ok := want[r[0]]; ok && (r[3] != w[0] || r[4] != w[1]) {
			t.Errorf("%s: uncorrected %q corrected %q, want %q %q", r[0], r[3], r[4], w[0], w[1])
		}
	}
	if len(ppi) != 3 {
		t.Errorf("rows %v: want genA, genB and all", ppi)
	}
	if !strings.Contains(strings.Join(sum.Notes, "\n"), "warning: corrected on fewer than 100 labels — genA (3), genB (3), all (6)") {
		t.Errorf("no warning for 3 labels a model: %v", sum.Notes)
	}
	for _, r := range agree {
		if r[0] == "panel" && !strings.HasPrefix(r[3], "50.0%") {
			t.Errorf("panel accuracy %q, want 3/6", r[3])
		}
	}
	// A label that is no label, and an id not on the sheet, name the line.
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	h1, h2 := sf.Rows[0].Hash, sf.Rows[1].Hash
	os.WriteFile(bad, []byte(`{"sheet_id": "s0001", "unit_hash": "`+h1+`", "label": "yes"}`+"\n"+`{"sheet_id": "s0002", "unit_hash": "`+h2+`", "label": "perhaps"}`+"\n"), 0o644)
	if _, err := Import(dir, bad); err == nil || !strings.HasSuffix(err.Error(), "bad.jsonl:2: s0002: label \"perhaps\" is not yes or no") || strings.Count(err.Error(), "bad.jsonl") != 1 {
		t.Errorf("bad label: %v", err)
	}
	os.WriteFile(bad, []byte(`{"sheet_id": "s9999", "label": "yes"}`+"\n"), 0o644)
	if _, err := Import(dir, bad); err == nil || !strings.Contains(err.Error(), `bad.jsonl:1: sheet_id "s9999" is not on the run's sheet`) {
		t.Errorf("unknown id: %v", err)
	}
}

// Labels are applied only to the texts they were made on: a labels file
// whose item column was shuffled, or whose rows carry another sheet's unit
// hashes, is refused by file and line; a new sheet never replaces one that
// people may be labelling; a spreadsheet's "CSV UTF-8" (a byte-order mark)
// reads; a header alone is an error, not n = 0.
func TestLabelsMatchedByContent(t *testing.T) {
	dir := judgedRun(t)
	sf, err := Sheet(dir, SheetOptions{N: 6, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Sheet(dir, SheetOptions{N: 6, Seed: 2}); !errors.Is(err, ErrSheetExists) {
		t.Fatalf("a second sheet over the first: %v", err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, LabelsDir, "sheet.csv"))
	rows, _ := csv.NewReader(strings.NewReader(string(b))).ReadAll()
	write := func(name string, rows [][]string, prefix string) string {
		var out strings.Builder
		out.WriteString(prefix)
		w := csv.NewWriter(&out)
		w.WriteAll(rows)
		p := filepath.Join(t.TempDir(), name)
		os.WriteFile(p, []byte(out.String()), 0o644)
		return p
	}
	labelled := func(edit func(i int, row []string)) [][]string {
		out := [][]string{rows[0]}
		for i, r := range rows[1:] {
			row := append([]string(nil), r...)
			row[7] = "yes"
			edit(i, row)
			out = append(out, row)
		}
		return out
	}
	// Good, saved with a byte-order mark: imported.
	if _, err := Import(dir, write("bom.csv", labelled(func(int, []string) {}), "\ufeff")); err != nil {
		t.Fatalf("a CSV UTF-8 labels file: %v", err)
	}
	// The item column shuffled (hash column dropped, as people do): refused.
	noHash := func(rows [][]string) [][]string {
		var out [][]string
		for _, r := range rows {
			out = append(out, append(append([]string(nil), r[:1]...), r[2:]...))
		}
		return out
	}
	shuffled := noHash(labelled(func(i int, row []string) { row[2] = rows[1+(i+1)%len(sf.Rows)][2] }))
	if _, err := Import(dir, write("shuffled.csv", shuffled, "")); err == nil || !strings.Contains(err.Error(), "shuffled.csv:2: s0001: item") {
		t.Errorf("shuffled items: %v", err)
	}
	// Labels carrying another sheet's hashes (the sheet was made anew).
	other := labelled(func(i int, row []string) { row[1] = rows[1+(i+1)%len(sf.Rows)][1] })
	if _, err := Import(dir, write("other.csv", other, "")); err == nil || !strings.Contains(err.Error(), "other.csv:2: s0001: unit_hash") {
		t.Errorf("another sheet's labels: %v", err)
	}
	// A header and nothing else.
	if _, err := Import(dir, write("empty.csv", rows[:1], "")); err == nil || !strings.Contains(err.Error(), "no labelled rows") {
		t.Errorf("header only: %v", err)
	}
}

// judgedRun is TestSheetAndImport's smoke run (see there).
func judgedRun(t *testing.T) string {
	t.Helper()
	srv := fakeollama.New(func(r fakeollama.ChatRequest) fakeollama.Reply {
		switch r.Model {
		case "genA", "genB":
			return fakeollama.Reply{Content: "Answer by " + r.Model + "."}
		}
		h := strings.Contains(r.LastUser(), "Answer by genA")
		return fakeollama.Reply{Content: fmt.Sprintf(`{"score": 3, "hallucination": %v}`, h)}
	}, fakeollama.Model{Name: "genA:latest", Digest: "a", ParameterCount: 1e9}, fakeollama.Model{Name: "genB:latest", Digest: "b", ParameterCount: 1e9},
		fakeollama.Model{Name: "j1:latest", Digest: "1", ParameterCount: 1e9}, fakeollama.Model{Name: "j2:latest", Digest: "2", ParameterCount: 1e9})
	t.Cleanup(srv.Close)
	cfg := smoke.DefaultConfig()
	cfg.Models, cfg.Judges = []string{"genA", "genB"}, []string{"j1", "j2"}
	s, err := smoke.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "run")
	if _, err := enginetest.New(t, srv.Host(), 2).Run(context.Background(), s.Task(), engine.RunSpec{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// FuzzReadLabels: whatever a labels file holds (CSV or JSONL), the reader
// returns labels of sheet rows it checked against the sheet, each a yes/no
// value, or an input error naming the file; never a panic.
func FuzzReadLabels(f *testing.F) {
	units := []RunUnit{{Item: "q1", Stage: "judge", Unit: "u1", Subject: "gen", Text: "Paris."}, {Item: "q2", Stage: "judge", Unit: "u2", Subject: "gen", Text: "Rome."}}
	sf := SheetFile{Quantity: Quantity{Stage: "judge", Name: "hallucination", Binary: true}}
	for i, u := range units {
		sf.Rows = append(sf.Rows, SheetUnit{ID: fmt.Sprintf("s%04d", i+1), Stage: u.Stage, Unit: u.Unit, Item: u.Item, Hash: UnitHash(u)})
	}
	check := rowChecker(sf, units)
	f.Add([]byte("sheet_id,unit_hash,item,label\ns0001,"+UnitHash(units[0])+",q1,yes\ns0002,,q2,no\n"), true)
	f.Add([]byte("\ufeffsheet_id,item,text,label\ns0001,q1,Paris.,1\n"), true)
	f.Add([]byte(`{"sheet_id": "s0002", "item": "q2", "label": "no"}`+"\n"+`{"sheet_id": "s0001", "unit_hash": "x", "label": true}`), false)
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte, csv bool) {
		p := filepath.Join(dir, "labels.jsonl")
		if csv {
			p = filepath.Join(dir, "labels.csv")
		}
		os.WriteFile(p, b, 0o644)
		labels, _, err := readLabels(p, sf, check)
		if err != nil {
			if !strings.Contains(err.Error(), p) {
				t.Fatalf("an error that does not name the file: %v", err)
			}
			return
		}
		for id, v := range labels {
			if (id != "s0001" && id != "s0002") || (v != 0 && v != 1) {
				t.Fatalf("accepted %s = %v", id, v)
			}
		}
	})
}

// Where the labels cover three or more models, the import says whether the
// panel ranks them as people do (Spearman's ρ over each model's labelled
// units): a panel that flags in the reverse order of people gives −1.
func TestModelOrderAgainstPeople(t *testing.T) {
	var units []RunUnit
	human := map[string]float64{}
	for m, rates := range map[string][2]float64{"a": {0.2, 0.8}, "b": {0.5, 0.5}, "c": {0.8, 0.2}} {
		for i := range 10 {
			u := RunUnit{Item: fmt.Sprint(m, i), Stage: "judge", Unit: fmt.Sprint(m, i), Subject: m,
				Values: map[string]map[string]float64{"j": {"hallucination": 0}}}
			if float64(i) < rates[0]*10 {
				u.Values["j"]["hallucination"] = 1
			}
			units = append(units, u)
			if float64(i) < rates[1]*10 {
				human["judge\x00"+u.Unit] = 1
			} else {
				human["judge\x00"+u.Unit] = 0
			}
		}
	}
	note, ok := rankAgreement(units, human, Quantity{Stage: "judge", Name: "hallucination", Binary: true})
	if !ok || !strings.Contains(note, "-1.00 (3 models") {
		t.Errorf("%v %q", ok, note)
	}
	if _, ok := rankAgreement(units[:20], human, Quantity{Stage: "judge", Name: "hallucination", Binary: true}); ok {
		t.Error("ranked two models")
	}
}

// A run whose every judge reply went unread has nothing to label, and the
// sheet says so — not that the run's format is old.
func TestSheetOfAnUnreadRunNamesTheCause(t *testing.T) {
	recs := []rundir.Record{{Calls: []rundir.CallLog{{Stage: "judge", Kind: "judge", Model: "j"}},
		Failures: []rundir.Failure{{Stage: "judge", Model: "j", Reason: "no hallucination stated"}}}}
	if err := noVerdicts(recs); err == nil || !strings.Contains(err.Error(), "none of the run's 1 judge replies was read (1 judgements unscored") {
		t.Errorf("%v", err)
	}
	if err := noVerdicts(nil); err == nil || !strings.Contains(err.Error(), "asked no judge") {
		t.Errorf("%v", err)
	}
}

// A sheet of a run that is still running is refused, saying so — not
// "the run asked no judge" because no judged item is recorded yet.
func TestSheetOfARunningRun(t *testing.T) {
	dir := t.TempDir()
	if err := rundir.WriteManifest(dir, &rundir.Manifest{Suite: "hic", Format: rundir.FormatVersion, Status: "running", Counts: rundir.Counts{Items: 8}}); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, rundir.RecordsFile), nil, 0o644)
	release, err := rundir.LockDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Sheet(dir, SheetOptions{N: 4})
	release()
	if err == nil || !strings.Contains(err.Error(), "still running (0 of its 8 items recorded)") {
		t.Errorf("%v", err)
	}
}
