package main

import (
	"bytes"
	"halu/runner/summary"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// The same run gives byte-identical records and tables whatever the
// engine's scheduling (one item and one call at a time, or 32 items and 4
// calls in flight), and the same as the golden copy in testdata/golden
// (written with HALU_UPDATE_GOLDEN=1): a change to how calls are ordered,
// grouped or sent that changes what a run records fails here (issue on
// throughput: "nothing in the records changes").
func TestRecordsAreByteIdenticalAcrossSchedules(t *testing.T) {
	var got [][]byte
	var tables []string
	for _, sched := range [][]string{{"--items-in-flight", "1", "--parallel", "1"}, {"--items-in-flight", "32", "--parallel", "4"}} {
		f := newFake(t)
		out := filepath.Join(t.TempDir(), "run")
		args := append([]string{"run", "smoke", "--models", "gen", "--judges", "judge,judge2", "--judge-checks", "0", "--out", out}, sched...)
		r := halu(t, f, t.TempDir(), args...)
		if r.code != exitOK {
			t.Fatalf("%v: exit %d: %s", sched, r.code, r.stderr)
		}
		b, err := os.ReadFile(filepath.Join(out, "records.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		sort.Strings(lines) // records append as items complete
		got = append(got, []byte(strings.Join(lines, "\n")+"\n"))
		// The tables, without the lines that name the run's directory, its
		// timing, its model switches or the server's timing (which the
		// schedule decides), nor the judge card's cost table (the seconds
		// each judge's calls took).
		var keep []string
		cost := false
		for _, l := range strings.Split(r.stdout, "\n") {
			switch {
			case strings.HasPrefix(l, summary.CardCostTitle):
				cost = true
			case cost && strings.TrimSpace(l) == "" || cost && strings.HasPrefix(l, "note:"):
				cost = false
			}
			if !cost && !strings.Contains(l, out) && !strings.Contains(l, "took") && !strings.Contains(l, "elapsed") && !strings.HasPrefix(strings.TrimSpace(l), "model switches:") &&
				!strings.HasPrefix(strings.TrimSpace(l), "server timing") {
				keep = append(keep, l)
			}
		}
		tables = append(tables, strings.Join(keep, "\n"))
	}
	if !bytes.Equal(got[0], got[1]) {
		t.Errorf("records differ between schedules:\n%s\n---\n%s", got[0], got[1])
	}
	if tables[0] != tables[1] {
		t.Errorf("tables differ between schedules:\n%s\n---\n%s", tables[0], tables[1])
	}
	golden := filepath.Join("..", "..", "testdata", "golden", "smoke_records.jsonl")
	if os.Getenv("HALU_UPDATE_GOLDEN") != "" {
		os.MkdirAll(filepath.Dir(golden), 0o755)
		if err := os.WriteFile(golden, got[0], 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (write it with HALU_UPDATE_GOLDEN=1)", err)
	}
	if !bytes.Equal(want, got[0]) {
		t.Errorf("records differ from %s (a change to what a run records: if intended, rewrite it with HALU_UPDATE_GOLDEN=1 and say why)", golden)
	}
}
