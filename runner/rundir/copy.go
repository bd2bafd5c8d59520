package rundir

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// RecordPlace is where one record's line is among several runs' records
// files: its item, the run (an index into the directories a copy reads
// from), the line's offset and length, newline included, and its CRC-32C
// (Sum): a line read again at its place is the one read first, or its
// file changed since (ErrRecordsChanged).
type RecordPlace struct {
	Item string
	Run  int
	Off  int64
	N    int
	Sum  uint32
}

// castagnoli is the CRC-32C table (hardware-assisted on amd64 and arm64).
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// placeOf is the place of the record r read from line at off (run i).
func placeOf(r Record, i int, off int64, line []byte) RecordPlace {
	return RecordPlace{Item: r.Item, Run: i, Off: off, N: len(line), Sum: crc32.Checksum(line, castagnoli)}
}

// readAt reads the line at p from f into buf (grown as needed) and checks
// it is the line read there before.
func readAt(f *os.File, p RecordPlace, buf []byte) ([]byte, error) {
	buf = slices.Grow(buf[:0], p.N)[:p.N]
	if _, err := f.ReadAt(buf, p.Off); err != nil {
		return buf, fmt.Errorf("%s: record of item %s: %w", f.Name(), p.Item, err)
	}
	if crc32.Checksum(buf, castagnoli) != p.Sum {
		return buf, fmt.Errorf("%w: %s: the line of item %s's record is not the one read", ErrRecordsChanged, f.Name(), p.Item)
	}
	return buf, nil
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

// PlaceRecords reads the records of the run in dir one at a time and
// appends each record's place (run i) to places; it returns them with the
// file's state as read. Each record is decoded whole, so that a damaged
// one (a field of the wrong type too) stops a merge before it writes
// anything, naming its file and line.
func PlaceRecords(dir string, i int, places []RecordPlace) ([]RecordPlace, RecordsState, error) {
	path := filepath.Join(dir, RecordsFile)
	st, err := os.Stat(path)
	if err != nil {
		return nil, RecordsState{}, err
	}
	_, err = eachRecordLine(path, decodeWhole, func(r Record, off int64, line []byte) error {
		places = append(places, placeOf(r, i, off, line))
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
// A records file that is not as it was read — its size or time changed,
// or a line copied is not the one read at its place (its CRC-32C) — is
// ErrRecordsChanged: its places would no longer be its records'.
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
			var err error
			if line, err = readAt(files[p.Run], p, line); err != nil {
				return err
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

// ReadRecordPlaces reads a records file's records without their
// transcripts (decodeSlim, each call keeping its prompt's hash) and gives
// each to each as read, in the file's order, with its place in the file
// (run 0), where RecordsAt reads it whole: a report gathers what it shows
// of every record as it passes, keeps each one's place, and reads a record
// whole only to show it. It reads the file's first size bytes (all of it
// when size < 0); good is where the whole records end.
func ReadRecordPlaces(path string, size int64, each func(*Record, RecordPlace) error) (good int64, err error) {
	return eachRecordLineUpTo(path, size, decodeSlim(true), func(r Record, off int64, line []byte) error {
		return each(&r, placeOf(r, 0, off, line))
	})
}

// RecordsAt reads whole records of one records file at their places,
// one at a time.
type RecordsAt struct {
	f    *os.File
	line []byte
}

// OpenRecordsAt opens the records file path for reading records at their
// places (ReadRecordPlaces); Close it after.
func OpenRecordsAt(path string) (*RecordsAt, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	return &RecordsAt{f: f}, nil
}

// Record is the whole record at p: ErrRecordsChanged when its line is no
// longer the one read there (a rerun rewrote the file since).
func (r *RecordsAt) Record(p RecordPlace) (Record, error) {
	var err error
	if r.line, err = readAt(r.f, p, r.line); err != nil {
		return Record{}, err
	}
	var rec Record
	if err := json.Unmarshal(r.line[:len(r.line)-1], &rec); err != nil {
		return Record{}, fmt.Errorf("%s: record of item %s: %w", r.f.Name(), p.Item, err)
	}
	return rec, nil
}

// Close closes the file.
func (r *RecordsAt) Close() error { return r.f.Close() }
