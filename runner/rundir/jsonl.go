package rundir

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// ScanJSONL calls fn with each non-blank line of a JSONL stream and its
// 1-based line number. An error from fn, or from reading, comes back as an
// InputError "name:line: …", so every JSONL input names where it went
// wrong the same way. Lines may be up to 64 MiB; b is fn's only for the
// call.
//
// The lines are read by a second goroutine while fn decodes those before
// them: reading a large compressed set is about as much decompressing as
// decoding (HaluEval's 4,507 lines: 40% and 55% of the time), and the
// first model call of a run waits for both (judgeval's BenchmarkLoadSet:
// 0.69 of the time on one goroutine, on 2 idle cores). No goroutine
// outlives the call: when fn fails, the reader stops at its next batch
// (r's reads return, as a file's and a buffer's do; halu reads no JSONL
// from a pipe).
func ScanJSONL(r io.Reader, name string, fn func(line int, b []byte) error) error {
	batches := make(chan lineBatch, 2)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		readLines(r, batches, stop)
	}()
	defer func() {
		close(stop)
		<-done
	}()
	for bt := range batches {
		for i, b := range bt.lines {
			if err := fn(bt.nums[i], b); err != nil {
				var ie *InputError
				if errors.As(err, &ie) {
					return err // it names its place already
				}
				return &InputError{File: name, Line: bt.nums[i], Err: err}
			}
		}
		if bt.err != nil {
			return &InputError{File: name, Line: bt.errLine, Err: bt.err}
		}
	}
	return nil
}

// lineBatch is lines read together: their bytes (copies, in one buffer),
// their numbers, and the read error that ended the stream after them, on
// line errLine.
type lineBatch struct {
	lines   [][]byte
	nums    []int
	err     error
	errLine int
}

// batchBytes is how much of a stream goes to ScanJSONL's decoder at a
// time: small enough that the two goroutines overlap from the start.
const batchBytes = 64 << 10

// readLines sends r's non-blank lines to out in batches, closing out at
// the stream's end or once stop is closed.
func readLines(r io.Reader, out chan<- lineBatch, stop <-chan struct{}) {
	defer close(out)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	line := 0
	var bt lineBatch
	var buf []byte
	send := func() bool {
		select {
		case out <- bt:
			bt, buf = lineBatch{}, nil
			return true
		case <-stop:
			return false
		}
	}
	for sc.Scan() {
		line++
		b := sc.Bytes()
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		if buf == nil {
			buf = make([]byte, 0, max(batchBytes, len(b)))
		}
		if len(buf)+len(b) > cap(buf) {
			if !send() {
				return
			}
			buf = make([]byte, 0, max(batchBytes, len(b)))
		}
		buf = append(buf, b...)
		bt.lines = append(bt.lines, buf[len(buf)-len(b):len(buf):len(buf)])
		bt.nums = append(bt.nums, line)
	}
	if err := sc.Err(); err != nil {
		bt.err, bt.errLine = err, line+1
	}
	if len(bt.lines) > 0 || bt.err != nil {
		send()
	}
}

// ReadJSONL decodes every line of a JSONL file into a T.
func ReadJSONL[T any](path string) ([]T, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []T
	err = ScanJSONL(f, path, func(_ int, b []byte) error {
		var v T
		if err := json.Unmarshal(b, &v); err != nil {
			return err
		}
		out = append(out, v)
		return nil
	})
	return out, err
}

// WriteJSONL writes items to path, one JSON object per line.
func WriteJSONL[T any](path string, items []T) error {
	b, err := MarshalJSONL(items)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := WriteFileAtomic(path, b); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// MarshalJSONL encodes items one JSON object per line.
func MarshalJSONL[T any](items []T) ([]byte, error) {
	var out []byte
	for _, it := range items {
		b, err := json.Marshal(it)
		if err != nil {
			return nil, err
		}
		out = append(append(out, b...), '\n')
	}
	return out, nil
}
