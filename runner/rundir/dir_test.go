package rundir

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Make makes a new run's directory (fresh), finds an existing one (not
// fresh), refuses a file; Discard removes only what a refused run left.
func TestMakeAndDiscard(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "a", "run")
	fresh, err := Make(dir)
	if err != nil || !fresh {
		t.Fatalf("Make new: fresh %v, %v", fresh, err)
	}
	if fresh, err := Make(dir); err != nil || fresh {
		t.Errorf("Make existing: fresh %v, %v", fresh, err)
	}
	file := filepath.Join(base, "f")
	os.WriteFile(file, []byte("x"), 0o644)
	if _, err := Make(file); !errors.Is(err, ErrNotADirectory) {
		t.Errorf("Make on a file: %v", err)
	}
	release, err := LockDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	release()
	Discard(dir)
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("Discard left %s: %v", dir, err)
	}
	// A directory that holds more than a lock is never removed.
	Make(dir)
	os.WriteFile(filepath.Join(dir, RecordsFile), []byte("{}\n"), 0o644)
	Discard(dir)
	if !HoldsRun(dir) {
		t.Error("Discard removed a run's records")
	}
}

// Labels are written under the run's lock: refused while a run (another
// process, or this one) holds it; written whole otherwise.
func TestWriteLabelsTakesTheRunsLock(t *testing.T) {
	dir := t.TempDir()
	release, err := LockDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	err = WriteLabels(dir, map[string][]byte{"sheet.json": []byte("{}")})
	release()
	if !errors.Is(err, ErrRunLocked) {
		t.Errorf("labels written beside a live run: %v", err)
	}
	if Has(dir, filepath.Join(LabelsDir, "sheet.json")) {
		t.Error("a sheet file was written while the run was locked")
	}
	if err := WriteLabels(dir, map[string][]byte{"sheet.json": []byte("{}"), "sheet.csv": []byte("a\n")}); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadFile(dir, filepath.Join(LabelsDir, "sheet.csv")); err != nil || string(b) != "a\n" {
		t.Errorf("sheet.csv: %q, %v", b, err)
	}
}

// A stage is placed whole; one closed before Place leaves nothing, and the
// next stage into the same destination sweeps what a killed one left.
func TestStagePlacesWhole(t *testing.T) {
	base := t.TempDir()
	out := filepath.Join(base, "merged")
	s, err := NewStage(out)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(s.Dir(), RecordsFile), []byte("{}\n"), 0o644)
	s.Close() // as a failed merge does
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatalf("a closed stage was placed: %v", err)
	}
	// A killed merge's stage (never closed) is swept by the next.
	killed := filepath.Join(base, TempPrefix(out)+"123")
	os.Mkdir(killed, 0o755)
	s, err = NewStage(out)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(s.Dir(), RecordsFile), []byte("{}\n"), 0o644)
	if err := s.Place(); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if !HoldsRun(out) {
		t.Error("the placed stage holds no records")
	}
	entries, _ := os.ReadDir(base)
	if len(entries) != 1 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("left beside the merged run: %s", strings.Join(names, ", "))
	}
	if _, err := NewStage(out); err == nil || !strings.Contains(err.Error(), "is not empty") {
		t.Errorf("a stage into a run: %v", err)
	}
}

// SetAside keeps a copy of the file beside it.
func TestSetAside(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, RecordsFile), []byte("{\"item\":\"a\"}\n"), 0o644)
	if err := SetAside(dir, RecordsFile, "before-rerun-1"); err != nil {
		t.Fatal(err)
	}
	if b, _ := ReadFile(dir, RecordsFile+".before-rerun-1"); string(b) != "{\"item\":\"a\"}\n" {
		t.Errorf("set aside: %q", b)
	}
}
