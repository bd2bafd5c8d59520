package rundir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// The run directory's own file operations: every command that makes,
// discards, reads, appends to, sets aside or places a run directory's
// files does it through these (TestOneWriterOfRunDirectories keeps it so),
// so the lock, the atomic writer and the layout live in one place.

// LabelsDir is the directory of a run where its label sheet, people's
// labels and their import are kept.
const LabelsDir = "labels"

// ErrNotADirectory is a run directory (--out) that names a file.
var ErrNotADirectory error = UsageError("not a directory")

// Make makes the directory of a new run, parents included; fresh says it
// did not exist before (a run refused before its first item removes it
// again with Discard). A path naming a file is ErrNotADirectory.
func Make(dir string) (fresh bool, err error) {
	st, err := os.Stat(dir)
	switch {
	case err == nil && !st.IsDir():
		return false, fmt.Errorf("%w: %s is a file, not a run directory: name a new directory with --out", ErrNotADirectory, dir)
	case err == nil:
		return false, nil
	case !errors.Is(err, fs.ErrNotExist):
		return false, fmt.Errorf("run directory: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, fmt.Errorf("run directory: %w", err)
	}
	return true, nil
}

// Discard removes what a run refused before its first item left in the
// directory Make made for it: its lock, then the directory if it is empty.
func Discard(dir string) {
	_ = os.Remove(filepath.Join(dir, LockFile))
	_ = os.Remove(dir)
}

// HoldsRun reports whether dir holds a run's records.
func HoldsRun(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, RecordsFile))
	return err == nil
}

// OpenAppend opens the run's JSONL file name (errors.jsonl) to append
// records to, after what it holds.
func OpenAppend(dir, name string) (*RecordWriter, error) {
	path := filepath.Join(dir, name)
	size := int64(0)
	if st, err := os.Stat(path); err == nil {
		size = st.Size()
	}
	return OpenRecordWriter(path, size, time.Second)
}

// ReadFile reads the run's file name (a path inside dir: "summary.json",
// "labels/sheet.json").
func ReadFile(dir, name string) ([]byte, error) {
	return os.ReadFile(filepath.Join(dir, name))
}

// Has reports whether the run's file name exists.
func Has(dir, name string) bool {
	_, err := os.Stat(filepath.Join(dir, name))
	return err == nil
}

// SetAside copies the run's file name to name.SUFFIX (atomically), before
// the file is rewritten: a rerun keeps the records it replaces.
func SetAside(dir, name, suffix string) error {
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return err
	}
	return WriteFileAtomic(filepath.Join(dir, name+"."+suffix), b)
}

// WriteLabels writes files (names inside the run's labels directory) under
// the run's lock, each atomically: a sheet is never half written, nor
// written beside a live run or another halu writing labels.
func WriteLabels(dir string, files map[string][]byte) error {
	release, err := LockDir(dir)
	if err != nil {
		return err
	}
	defer release()
	ld := filepath.Join(dir, LabelsDir)
	if err := os.MkdirAll(ld, 0o755); err != nil {
		return err
	}
	for name, b := range files {
		if err := WriteFileAtomic(filepath.Join(ld, name), b); err != nil {
			return err
		}
	}
	return nil
}

// Stage is a run directory written whole beside its destination and put
// in place by one rename: a merge that is killed leaves no half-written
// run (the next stage into the same destination removes what it left).
type Stage struct {
	tmp, out string
	release  func()
}

// NewStage begins a run to be placed at out, which must be missing or
// empty; the stage is locked while it is written.
func NewStage(out string) (*Stage, error) {
	if entries, err := os.ReadDir(out); err == nil && len(entries) > 0 {
		return nil, fmt.Errorf("%s is not empty: merge into a new directory", out)
	}
	parent := filepath.Dir(out)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, err
	}
	SweepTemps(parent, TempPrefix(out))
	tmp, err := os.MkdirTemp(parent, TempPrefix(out)+"*")
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	release, err := LockDir(tmp)
	if err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	return &Stage{tmp: tmp, out: out, release: release}, nil
}

// Dir is where the staged run is written.
func (s *Stage) Dir() string { return s.tmp }

// Place renames the staged run to its destination.
func (s *Stage) Place() error {
	if err := os.Rename(s.tmp, s.out); err != nil {
		return fmt.Errorf("merge: %w", err)
	}
	return nil
}

// Close releases the stage's lock and removes what is left of it (nothing
// after Place).
func (s *Stage) Close() {
	s.release()
	os.RemoveAll(s.tmp)
}
