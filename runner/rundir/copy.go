package rundir

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// RecordPlace is where one record's line is among several runs' records
// files: its item, the run (an index into the directories a copy reads
// from), and the line's offset and length, newline included.
type RecordPlace struct {
	Item string
	Run  int
	Off  int64
	N    int
}

// RecordsState is a records file as it was read (its size and time): a
// copy from places read earlier checks the file is still so.
type RecordsState struct {
	size int64
	mod  time.Time
}

// ErrRecordsChanged is returned by CopyRecords when a records file changed
// since its places were read.
var ErrRecordsChanged = errors.New("records changed since they were read")

// PlaceRecords reads the records of the run in dir one at a time, hands
// each to check (an error stops the reading), and appends each record's
// place (run i) to places; it returns them with the file's state as read.
func PlaceRecords(dir string, i int, places []RecordPlace, check func(Record) error) ([]RecordPlace, RecordsState, error) {
	path := filepath.Join(dir, RecordsFile)
	st, err := os.Stat(path)
	if err != nil {
		return nil, RecordsState{}, err
	}
	_, err = EachRecordAt(path, func(r Record, off int64, n int) error {
		if err := check(r); err != nil {
			return err
		}
		places = append(places, RecordPlace{Item: r.Item, Run: i, Off: off, N: n})
		return nil
	})
	if err != nil {
		return nil, RecordsState{}, err
	}
	return places, RecordsState{st.Size(), st.ModTime()}, nil
}

// CopyRecords writes the records at places, in the order given, from the
// records files of the runs in dirs (read in states) into the records file
// path, each line copied as written, the file placed whole (WriteAtomic).
// A records file that is not as it was read — its size or time changed
// (a change detector, not a hash of the content: hashing would read every
// file twice more) — is ErrRecordsChanged: its places would no longer be
// its records'.
func CopyRecords(path string, dirs []string, states []RecordsState, places []RecordPlace) error {
	files := make([]*os.File, len(dirs))
	for i, d := range dirs {
		f, err := os.Open(filepath.Join(d, RecordsFile))
		if err != nil {
			return err
		}
		defer f.Close()
		files[i] = f
	}
	changed := func() error {
		for i, f := range files {
			if st, err := f.Stat(); err != nil || st.Size() != states[i].size || !st.ModTime().Equal(states[i].mod) {
				return fmt.Errorf("%w: %s", ErrRecordsChanged, f.Name())
			}
		}
		return nil
	}
	if err := changed(); err != nil {
		return err
	}
	err := WriteAtomic(path, func(w io.Writer) error {
		bw := bufio.NewWriterSize(w, 1<<20)
		var line []byte
		for _, p := range places {
			line = slices.Grow(line[:0], p.N)[:p.N]
			if _, err := files[p.Run].ReadAt(line, p.Off); err != nil {
				return fmt.Errorf("%s: record of item %s: %w", files[p.Run].Name(), p.Item, err)
			}
			if _, err := bw.Write(line); err != nil {
				return err
			}
		}
		return bw.Flush()
	})
	if err != nil {
		return err
	}
	return changed()
}
