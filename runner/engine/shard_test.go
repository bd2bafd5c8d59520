package engine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"halu/runner/rundir"
)

// A merge copies each shard's records as written, in item order, from the
// places it read them at; a shard's records file that changed since (a
// rerun of it while the merge works) is refused, not copied from.
func TestCopyRecordsAsWrittenInItemOrder(t *testing.T) {
	dirs := []string{t.TempDir(), t.TempDir()}
	lines := [][]string{
		{`{"format":1,"suite":"s","item":"c","data":{"x":3}}` + "\n", `{"format":1,"suite":"s","item":"a","data":{"x": 1}}` + "\n"},
		{`{"format":1,"suite":"s","item":"b","data":{"x":2}}` + "\n"},
	}
	sh := &shards{dirs: dirs}
	for i, d := range dirs {
		if err := os.WriteFile(filepath.Join(d, rundir.RecordsFile), []byte(strings.Join(lines[i], "")), 0o644); err != nil {
			t.Fatal(err)
		}
		var st rundir.RecordsState
		var err error
		if sh.places, st, err = rundir.PlaceRecords(d, i, sh.places, func(rundir.Record) error { return nil }); err != nil {
			t.Fatal(err)
		}
		sh.states = append(sh.states, st)
	}
	out := filepath.Join(t.TempDir(), rundir.RecordsFile)
	if err := sh.copyRecords(out); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(out)
	if want := lines[0][1] + lines[1][0] + lines[0][0]; string(got) != want {
		t.Fatalf("merged:\n%s\nwant:\n%s", got, want)
	}
	// Shard 2 rewritten after it was read.
	p := filepath.Join(dirs[1], rundir.RecordsFile)
	os.WriteFile(p, []byte(`{"format":1,"suite":"s","item":"b","data":{"x":22}}`+"\n"), 0o644)
	os.Chtimes(p, time.Now(), time.Now().Add(time.Second))
	if err := sh.copyRecords(filepath.Join(t.TempDir(), rundir.RecordsFile)); !errors.Is(err, ErrShards) || !errors.Is(err, rundir.ErrRecordsChanged) || !strings.Contains(err.Error(), "changed while it was merged") {
		t.Fatalf("a shard changed since it was read: %v", err)
	}
}

// ReadRecordsSlim sorts records by item as ReadRun does (stable: two records
// of one item keep the file's order) and each place moves with its
// record: the record read whole at its place is the one beside it, with
// its transcripts, which the slim record leaves out.
func TestReadRecordsSlimPlacesMoveWithTheirRecords(t *testing.T) {
	dir := t.TempDir()
	if err := rundir.WriteManifest(dir, &rundir.Manifest{Suite: "s", Format: rundir.FormatVersion}); err != nil {
		t.Fatal(err)
	}
	items := []string{"e", "b", "d", "a", "b", "c", "a", "f", "b"}
	var lines []string
	for i, it := range items {
		lines = append(lines, fmt.Sprintf(`{"format":1,"suite":"s","item":%q,"data":{"n":%d},"calls":[{"stage":"g","kind":"chat","model":"m","digest":"d","key":"k","reply":"reply %d"}]}`+"\n", it, i, i))
	}
	if err := os.WriteFile(filepath.Join(dir, rundir.RecordsFile), []byte(strings.Join(lines, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	_, whole, err := ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	recs, places, _, err := ReadRecordsSlim(dir, -1, nil)
	if err != nil {
		t.Fatal(err)
	}
	at, err := rundir.OpenRecordsAt(filepath.Join(dir, rundir.RecordsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer at.Close()
	var order []string
	for i, r := range recs {
		order = append(order, r.Item+string(r.Data))
		if r.Calls[0].Reply != "" {
			t.Errorf("record %d holds its reply", i)
		}
		w, err := at.Record(places[i])
		if err != nil {
			t.Fatal(err)
		}
		if w.Item != r.Item || string(w.Data) != string(r.Data) || w.Calls[0].Reply != whole[i].Calls[0].Reply || string(whole[i].Data) != string(r.Data) {
			t.Errorf("place %d: %s %s %q, record %s %s, ReadRun's %s %s", i, w.Item, w.Data, w.Calls[0].Reply, r.Item, r.Data, whole[i].Item, whole[i].Data)
		}
	}
	want := `a{"n":3} a{"n":6} b{"n":1} b{"n":4} b{"n":8} c{"n":5} d{"n":2} e{"n":0} f{"n":7}`
	if got := strings.Join(order, " "); got != want {
		t.Errorf("order %s, want %s", got, want)
	}
}
