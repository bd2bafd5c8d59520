package main

import (
	"encoding/json"
	"halu/index"
	"halu/localmodels/fakeollama"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"halu/runner/rundir"
)

// A file kg import refuses creates no store (an empty one once read as a
// graph without edges); a damaged kg.db is an input error (exit 2) for kg
// query and for a hypo run, named, never a panic's stack trace, and the
// run stops before any model call.
func TestKGInputErrors(t *testing.T) {
	f := newFake(t)
	dir := t.TempDir()
	bad := filepath.Join(dir, "notes.txt")
	os.WriteFile(bad, []byte("these are my notes\nnothing here is a relation\n"), 0o644)
	refused := filepath.Join(dir, "refused")
	if r := halu(t, f, t.TempDir(), "kg", "import", "--out", refused, bad); r.code != exitUsage || !strings.Contains(r.stderr, "notes.txt") {
		t.Errorf("refused import: exit %d: %s", r.code, r.stderr)
	}
	if _, err := os.Stat(refused); !os.IsNotExist(err) {
		t.Errorf("a refused import left %s (%v)", refused, err)
	}
	kgDir := filepath.Join(dir, "kg")
	if r := halu(t, f, t.TempDir(), "kg", "import", "--out", kgDir, "../../testdata/kg/biored_train_sample.pubtator"); r.code != exitOK {
		t.Fatal(r.stderr)
	}
	db := filepath.Join(kgDir, "kg.db")
	b, _ := os.ReadFile(db)
	os.WriteFile(db, b[:len(b)/3], 0o644)
	r := halu(t, f, t.TempDir(), "kg", "query", kgDir, "type II diabetes")
	if r.code != exitUsage || !strings.Contains(r.stderr, "kg.db is damaged") || strings.Contains(r.stderr, "goroutine") {
		t.Errorf("kg query on a cut kg.db: exit %d: %s", r.code, r.stderr)
	}
	os.WriteFile(db, nil, 0o644)
	calls := len(f.Chats())
	r = halu(t, f, t.TempDir(), "run", "hypo", "--models", "gen", "--setting", "kg", "--kg", kgDir, "--limit", "1", "--out", filepath.Join(dir, "run"))
	if r.code != exitUsage || !strings.Contains(r.stderr, "is empty") || len(f.Chats()) != calls {
		t.Errorf("hypo on an empty kg.db: exit %d, %d model calls: %s", r.code, len(f.Chats())-calls, r.stderr)
	}
	if st, err := os.Stat(db); err != nil || st.Size() != 0 {
		t.Errorf("the empty kg.db was rewritten: %v", err)
	}
}

// build cfaith --docs DIR, the documented directory form, runs (it once
// failed hashing the directory: "is a directory"); the manifest records
// the directory by a hash of its files.
func TestBuildFromADocumentsDirectory(t *testing.T) {
	f := newFake(t)
	docs := filepath.Join(t.TempDir(), "docs")
	os.MkdirAll(docs, 0o755)
	os.WriteFile(filepath.Join(docs, "danube.txt"), []byte("The Danube flows through ten countries and four capitals.\n"), 0o644)
	os.WriteFile(filepath.Join(docs, "fuji.md"), []byte("Mount Fuji is the highest mountain in Japan.\n"), 0o644)
	out := filepath.Join(t.TempDir(), "ds")
	r := halu(t, f, t.TempDir(), "build", "cfaith", "--docs", docs, "--lang", "en", "--agent", "gen", "--types", "EntErr", "--max-questions", "1", "--out", out)
	if r.code != exitOK {
		t.Fatalf("build from a directory: exit %d: %s", r.code, r.stderr)
	}
	m, err := rundir.ReadManifest(filepath.Join(out, "run"))
	if err != nil || m.Datasets["docs"].SHA256 == "" {
		t.Fatalf("manifest datasets: %+v, %v", m, err)
	}
	format := func(m *rundir.Manifest) string {
		var c struct{ Format string }
		json.Unmarshal(m.Config, &c)
		return c.Format
	}
	if len(m.Departures) != 0 || format(m) != "text" {
		t.Errorf("a default build departs from the authors' construction: %v, config %s", m.Departures, m.Config)
	}
	// --protocol halu takes halu's values for the settings not given.
	out = filepath.Join(t.TempDir(), "ds")
	if r := halu(t, f, t.TempDir(), "build", "cfaith", "--protocol", "halu", "--docs", docs, "--lang", "en", "--agent", "gen", "--types", "EntErr", "--max-questions", "1", "--out", out); r.code != exitOK {
		t.Fatalf("build --protocol halu: exit %d: %s", r.code, r.stderr)
	}
	if m, err := rundir.ReadManifest(filepath.Join(out, "run")); err != nil || format(m) != "json" || len(m.Departures) == 0 {
		t.Errorf("--protocol halu: %v, departures %v, config %s", err, m.Departures, m.Config)
	}
}

// Inputs that would skew results are refused before the first model call
// with exit 2 (usage and input errors), naming file and line: a hypo gold
// label outside its task's labels, an intent item ID twice (it once exited
// 1 without the line), a binary keyword.
func TestBadInputsExitTwoBeforeAnyCall(t *testing.T) {
	f := newFake(t)
	dir := t.TempDir()
	hypo := filepath.Join(dir, "edges.tsv")
	os.WriteFile(hypo, []byte("x_id\ty_id\tx_type\ty_type\trel_type\trelation\tquestion\n"+
		"Chemical|MESH:C1\tGene|7\tChemical\tGene\tChemical & Gene\tstimulate\tCan we hypothesize?\n"), 0o644)
	b, _ := os.ReadFile("../../runner/intent/data/sample.jsonl")
	first, _, _ := strings.Cut(string(b), "\n")
	intent := filepath.Join(dir, "faithqa.jsonl")
	os.WriteFile(intent, []byte(first+"\n"+first+"\n"), 0o644)
	kw := filepath.Join(dir, "kw.txt")
	os.WriteFile(kw, []byte("biofilm\n\x89PNG\r\n\x1a\n"), 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "hypo", "--models", "gen", "--setting", "parametric", "--data", hypo}, "edges.tsv:2: relation \"stimulate\" is not a label"},
		{[]string{"run", "intent", "--models", "gen", "--judges", "judge", "--data", intent}, "faithqa.jsonl:2: item"},
		{[]string{"run", "ideas", "--models", "gen", "--judges", "judge", "--keywords", kw}, "kw.txt:2: keyword is not valid UTF-8"},
	} {
		calls := len(f.Chats())
		r := halu(t, f, t.TempDir(), append(tc.args, "--out", filepath.Join(t.TempDir(), "run"))...)
		if r.code != exitUsage || !strings.Contains(r.stderr, tc.want) || len(f.Chats()) != calls {
			t.Errorf("%v: exit %d, %d model calls, want exit 2 saying %q\n%s", tc.args[:2], r.code, len(f.Chats())-calls, tc.want, r.stderr)
		}
	}
}

// The literature index is known by its content, not its path: an index
// replaced by another under the same path, rebuilt without some documents,
// or with bytes of a segment changed, between a hypo run and its resume,
// is refused before any model call, naming the index, and no record is
// added.
func TestIndexIdentityOnResume(t *testing.T) {
	srv := fakeollama.New(suiteReply, fakeollama.Model{Name: "gen:latest", Digest: "g", ParameterCount: 1e9})
	t.Cleanup(srv.Close)
	f := &fakeServer{Server: srv, byKind: map[string]int{}}
	work, cache := t.TempDir(), t.TempDir()
	contexts := "../../testdata/pubmed/pubmedqa_contexts.jsonl"
	b, _ := os.ReadFile(contexts)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	thinned := filepath.Join(work, "thinned.jsonl")
	os.WriteFile(thinned, []byte(strings.Join(lines[3:], "\n")+"\n"), 0o644)
	build := func(ix string, inputs ...string) {
		t.Helper()
		os.RemoveAll(ix)
		if r := halu(t, f, cache, append([]string{"index", "build", "--out", ix}, inputs...)...); r.code != exitOK {
			t.Fatalf("index build: %s", r.stderr)
		}
	}
	for _, tc := range []struct {
		name   string
		change func(ix string)
		want   string
	}{
		{"replaced by another index", func(ix string) {
			build(ix, "../../testdata/pubmed/biopython/pubmed1.xml", "../../testdata/pubmed/biopython/pubmed2.xml")
		}, index.SealFile},
		{"rebuilt without three documents", func(ix string) { build(ix, thinned) }, index.SealFile},
		{"a segment's bytes changed", func(ix string) {
			segs, _ := filepath.Glob(filepath.Join(ix, "bleve", "store", "*.zap"))
			if len(segs) == 0 {
				t.Fatal("no segment")
			}
			data, _ := os.ReadFile(segs[0])
			for i := len(data) / 2; i < len(data)/2+200; i++ {
				data[i] ^= 0x5a
			}
			os.WriteFile(segs[0], data, 0o600)
		}, "does not match its checksum"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ix, run := filepath.Join(work, "ix-"+tc.name), filepath.Join(work, "run-"+tc.name)
			build(ix, contexts)
			r := halu(t, f, cache, "run", "hypo", "--models", "gen", "--setting", "lit", "--index", ix, "--limit", "2", "--tasks", "chem-gene",
				"--knowledge-fit", "drop", "--candidates", "0", "--out", run)
			if r.code != exitOK && r.code != exitNothing {
				t.Fatalf("run: exit %d: %s", r.code, r.stderr)
			}
			// The run is left as an interrupted one: its last record gone.
			recs := filepath.Join(run, rundir.RecordsFile)
			rb, _ := os.ReadFile(recs)
			kept := strings.SplitAfter(string(rb), "\n")
			os.WriteFile(recs, []byte(kept[0]), 0o644)
			tc.change(ix)
			calls := len(f.Chats())
			r = halu(t, f, cache, "run", "--resume", run)
			after, _ := os.ReadFile(recs)
			if r.code != exitUsage || !strings.Contains(r.stderr, tc.want) || len(f.Chats()) != calls || string(after) != kept[0] {
				t.Errorf("resume: exit %d (want %d), %d calls, %d bytes of records (want %d):\n%s", r.code, exitUsage, len(f.Chats())-calls, len(after), len(kept[0]), r.stderr)
			}
		})
	}
}
