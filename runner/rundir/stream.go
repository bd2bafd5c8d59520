package rundir

import (
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"sort"
)

// Records are a run's records as a summary reads them: ranged over (All),
// they are read one at a time — from a records file, afresh each time, in
// the file's order, or from memory — so that a summary keeps what it
// makes of each record, not the records: a run of a million items ends
// with a summary of them, and its records are gigabytes. Err says whether
// the last ranging read every record; a summary made while it failed is
// not the run's.
type Records struct {
	each func(yield func(Record) bool) error
	err  error
	end  int64
}

// RecordsOf are recs, in their order.
func RecordsOf(recs []Record) *Records {
	return &Records{end: -1, each: func(yield func(Record) bool) error {
		for _, r := range recs {
			if !yield(r) {
				break
			}
		}
		return nil
	}}
}

// RecordsIn are the records of the records file path without their
// transcripts (decodeSlim), in the file's order, read again each time
// they are ranged over. A last line cut short by a crash is left out, as
// ReadRecords leaves it.
func RecordsIn(path string) *Records {
	rs := &Records{end: -1}
	rs.each = func(yield func(Record) bool) error {
		rs.end = -1
		good, err := eachRecordLine(path, decodeSlim(false), func(r Record, _ int64, _ []byte) error {
			if !yield(r) {
				return errStop
			}
			return nil
		})
		if err != nil && !errors.Is(err, errStop) {
			return err
		}
		if err == nil {
			rs.end = good
		}
		return nil
	}
	return rs
}

// errStop stops a reading of records its reader has no more use for.
var errStop = errors.New("no more records wanted")

// RecordsFunc are the records each yields, in its order: each returns an
// error when it could not yield them all.
func RecordsFunc(each func(yield func(Record) bool) error) *Records {
	return &Records{each: each, end: -1}
}

// All ranges over the records; Err says after whether it read them all.
func (rs *Records) All() iter.Seq[Record] {
	return func(yield func(Record) bool) {
		rs.err = rs.each(yield)
	}
}

// Err is the error that stopped the last ranging over All, nil when it
// read every record (or was stopped by its loop).
func (rs *Records) Err() error { return rs.err }

// End is where in their file the records the last ranging read end, when
// it read them all from a file (RecordsIn): another reading of the file
// reads the same records up to there (ReadRecordPlaces), whatever a run
// appended since. -1 otherwise.
func (rs *Records) End() int64 { return rs.end }

// Sorted are the records, sorted by item (those of one item in their
// order): a summary's order, the same whatever order the items finished in.
func (rs *Records) Sorted() ([]Record, error) {
	var out []Record
	for r := range rs.All() {
		out = append(out, r)
	}
	if err := rs.Err(); err != nil {
		return nil, err
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Item < out[j].Item })
	return out, nil
}

// DecodeSorted decodes every record's data into a T, in the records' item
// order (Sorted), keeping only the Ts: the records themselves are not held.
// trim, when not nil, takes out of each T as it is decoded what the
// summary does not read (a reply's text, which a real model makes most of
// a record). An error names the record that does not decode.
func DecodeSorted[T any](rs *Records, trim func(*T)) ([]T, error) {
	type decoded struct {
		item string
		v    T
	}
	var out []decoded
	var bad error
	for r := range rs.All() {
		var v T
		if err := json.Unmarshal(r.Data, &v); err != nil {
			bad = fmt.Errorf("record %s: %w", r.Item, err)
			break
		}
		if trim != nil {
			trim(&v)
		}
		out = append(out, decoded{r.Item, v})
	}
	if err := rs.Err(); err != nil {
		return nil, err
	}
	if bad != nil {
		return nil, bad
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].item < out[j].item })
	vs := make([]T, len(out))
	for i := range out {
		vs[i] = out[i].v
	}
	return vs, nil
}

// MapRecords are rs with each record's data, decoded as T, put through f
// (a suite putting another reading of its judge replies in place), made
// as they are ranged over; a record whose data does not decode stops the
// ranging with its error (Err).
func MapRecords[T any](rs *Records, f func(*T)) *Records {
	return RecordsFunc(func(yield func(Record) bool) error {
		var bad error
		for r := range rs.All() {
			v, err := Decode[T](r)
			if err != nil {
				bad = err
				break
			}
			f(&v)
			b, err := json.Marshal(v)
			if err != nil {
				bad = fmt.Errorf("record %s: %w", r.Item, err)
				break
			}
			r.Data = b
			if !yield(r) {
				break
			}
		}
		if err := rs.Err(); err != nil {
			return err
		}
		return bad
	})
}
