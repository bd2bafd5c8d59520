package rundir

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// ScanJSONL calls fn with each non-blank line of a JSONL stream and its
// 1-based line number. An error from fn, or from reading, comes back as an
// InputError "name:line: …", so every JSONL input names where it went
// wrong the same way. Lines may be up to 64 MiB.
func ScanJSONL(r io.Reader, name string, fn func(line int, b []byte) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	line := 0
	for sc.Scan() {
		line++
		b := sc.Bytes()
		if len(strings.TrimSpace(string(b))) == 0 {
			continue
		}
		if err := fn(line, b); err != nil {
			var ie *InputError
			if errors.As(err, &ie) {
				return err // it names its place already
			}
			return &InputError{File: name, Line: line, Err: err}
		}
	}
	if err := sc.Err(); err != nil {
		return &InputError{File: name, Line: line + 1, Err: err}
	}
	return nil
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
