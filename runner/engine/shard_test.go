package engine

import (
	"errors"
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
		if sh.places, st, err = rundir.PlaceRecords(d, i, sh.places); err != nil {
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
