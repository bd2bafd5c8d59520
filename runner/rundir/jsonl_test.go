package rundir

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// failingReader gives its text, then err.
type failingReader struct {
	text string
	err  error
}

func (f *failingReader) Read(p []byte) (int, error) {
	if f.text == "" {
		return 0, f.err
	}
	n := copy(p, f.text)
	f.text = f.text[n:]
	return n, nil
}

// ScanJSONL hands over every non-blank line with its number, across the
// batches its reader sends (lines far longer than a batch among them), and
// names the line of fn's error and of a read error.
func TestScanJSONL(t *testing.T) {
	long := `{"x":"` + strings.Repeat("a", 3*batchBytes) + `"}`
	var many []string
	for i := range 5000 {
		many = append(many, fmt.Sprintf(`{"i":%d}`, i))
	}
	cases := []struct {
		name    string
		in      string
		failOn  int // fn fails on this line (0: never)
		want    []int
		wantErr string
	}{
		{name: "blank lines skipped, numbers kept", in: "{}\n\n  \n{}\r\n\t\n{}", want: []int{1, 4, 6}},
		{name: "empty", in: "", want: nil},
		{name: "many batches", in: strings.Join(many, "\n") + "\n", want: seq(1, 5000)},
		{name: "a line longer than a batch", in: "{}\n" + long + "\n{}\n" + long, want: []int{1, 2, 3, 4}},
		{name: "fn's error names its line", in: strings.Join(many, "\n"), failOn: 4321, want: seq(1, 4321), wantErr: "in.jsonl:4321: bad"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got []int
			err := ScanJSONL(strings.NewReader(c.in), "in.jsonl", func(line int, b []byte) error {
				got = append(got, line)
				want := strings.Split(strings.ReplaceAll(c.in, "\r", ""), "\n")[line-1]
				if string(b) != want {
					t.Fatalf("line %d: got %.40q, want %.40q", line, b, want)
				}
				if line == c.failOn {
					return errors.New("bad")
				}
				return nil
			})
			if c.wantErr == "" && err != nil || c.wantErr != "" && (err == nil || err.Error() != c.wantErr) {
				t.Fatalf("error %v, want %q", err, c.wantErr)
			}
			if fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Errorf("lines %v, want %v", short(got), short(c.want))
			}
		})
	}
	t.Run("a read error names the line after the last read", func(t *testing.T) {
		var got []int
		err := ScanJSONL(&failingReader{text: "{}\n{}\n", err: errors.New("disk gone")}, "in.jsonl", func(line int, b []byte) error {
			got = append(got, line)
			return nil
		})
		var ie *InputError
		if !errors.As(err, &ie) || err.Error() != "in.jsonl:3: disk gone" || fmt.Sprint(got) != "[1 2]" {
			t.Fatalf("got lines %v, error %v; want [1 2] and in.jsonl:3: disk gone", got, err)
		}
	})
	t.Run("fn's own InputError is kept", func(t *testing.T) {
		err := ScanJSONL(strings.NewReader("{}\n"), "in.jsonl", func(int, []byte) error {
			return &InputError{File: "other.json", Line: 7, Err: errors.New("inner")}
		})
		if err == nil || err.Error() != "other.json:7: inner" {
			t.Fatalf("error %v, want other.json:7: inner", err)
		}
	})
	t.Run("an error stops the reading", func(t *testing.T) {
		// 40 MB of lines; fn fails on the first: the reader is stopped
		// within the batches in flight, not left reading to the end.
		line := `{"x":"` + strings.Repeat("b", 1000) + `"}` + "\n"
		cr := &countingReader{r: strings.NewReader(strings.Repeat(line, 40000))}
		err := ScanJSONL(cr, "in.jsonl", func(int, []byte) error { return errors.New("bad") })
		if err == nil || err.Error() != "in.jsonl:1: bad" {
			t.Fatalf("error %v", err)
		}
		if cr.n > 8<<20 {
			t.Errorf("read %d bytes after the first line failed; the reader should stop at its next batch", cr.n)
		}
	})
}

func seq(from, to int) []int {
	var out []int
	for i := from; i <= to; i++ {
		out = append(out, i)
	}
	return out
}

func short(xs []int) string {
	if len(xs) > 10 {
		return fmt.Sprintf("%v … %v (%d)", xs[:5], xs[len(xs)-5:], len(xs))
	}
	return fmt.Sprint(xs)
}
