package rundir

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// InputError is an error in a file a user gave halu to read — a dataset,
// a keyword list, human labels — at a line of it (0: the file as a whole).
// The command exits with the usage status (2), as for a wrong flag, and
// the message names the file and line: "edges_test.tsv:12: …". Suites
// check their inputs when they list their items, before the first model
// call.
type InputError struct {
	File string
	Line int
	Err  error
}

// BadInput is an InputError at file:line.
func BadInput(file string, line int, format string, args ...any) error {
	return &InputError{File: file, Line: line, Err: fmt.Errorf(format, args...)}
}

func (e *InputError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.File, e.Err)
}

func (e *InputError) Unwrap() error { return e.Err }

// InputError marks e as an error in an input (the command exits 2).
func (e *InputError) InputError() bool { return true }

// UsageError is an error the user fixes by what they give halu (another
// directory, the run's own models, a newer halu), never by running the
// same command again: the command exits with the usage status (2).
type UsageError string

func (e UsageError) Error() string { return string(e) }

// InputError marks e as exiting with the usage status.
func (UsageError) InputError() bool { return true }

// ErrNewerFormat is a run directory, record or manifest written in a run
// format newer than this halu's.
var ErrNewerFormat error = UsageError("a run format newer than this halu's")

// IDs finds an ID given twice in an input: Add says where it was first.
type IDs map[string]int

// Add records id at line of file, or refuses it when an earlier line had
// it.
func (s IDs) Add(file string, line int, what, id string) error {
	if first, ok := s[id]; ok {
		return BadInput(file, line, "%s %q again (first at line %d): every %s must be given once", what, id, first, what)
	}
	s[id] = line
	return nil
}

// CheckText refuses what is not text a model should be sent as a field
// of an input: empty (after trimming), invalid UTF-8, or holding control
// characters other than tab and line breaks (a binary file read as text).
// what names the field ("keyword", "question").
func CheckText(what, s string) error {
	if strings.TrimSpace(s) == "" {
		return fmt.Errorf("empty %s", what)
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("%s is not valid UTF-8 text (a binary file, or another encoding?)", what)
	}
	for _, r := range s {
		if unicode.IsControl(r) && r != '\t' && r != '\n' && r != '\r' {
			return fmt.Errorf("%s holds the control character %U (a binary file?)", what, r)
		}
	}
	return nil
}
