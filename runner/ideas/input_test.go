package ideas

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"halu/runner/rundir"
)

// A keyword file whose lines are not keywords a model can be sent is
// refused before any model call, naming the line: bytes that are not
// UTF-8, control characters (a binary file), a keyword twice, a paragraph,
// no keyword at all.
func TestReadKeywordsRefusesWhatIsNotAKeyword(t *testing.T) {
	for _, tc := range []struct{ name, body, want string }{
		{"invalid UTF-8", "photosynthesis\n\xff\xfebiofilm\n", "kw.txt:2: keyword is not valid UTF-8"},
		{"binary", "photosynthesis\nPK\x03\x04\x14\x00\n", "kw.txt:2: keyword holds the control character U+0003"},
		{"twice", "photosynthesis\nbiofilm\nphotosynthesis\n", `kw.txt:3: keyword "photosynthesis" again (first at line 1)`},
		{"a paragraph", strings.Repeat("word ", 60), "kw.txt:1: a keyword of 299 characters"},
		{"none", "\n  \n", "kw.txt: no keyword"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := readKeywords("kw.txt", []byte(tc.body), nil)
			var ie *rundir.InputError
			if err == nil || !errors.As(err, &ie) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %s", err, tc.want)
			}
		})
	}
	known, _ := Keywords()
	kws, err := readKeywords("kw.txt", []byte("photosynthesis\n\n  biofilm  \n"), known)
	if err != nil || len(kws) != 2 || kws[1].Keyword != "biofilm" {
		t.Fatalf("a good file: %v %+v", err, kws)
	}
}

// FuzzReadKeywords: whatever the bytes, keywords that are text, each once,
// or an input error; never a panic.
func FuzzReadKeywords(f *testing.F) {
	f.Add([]byte("photosynthesis\nbiofilm\n"))
	f.Add([]byte("\xff\n\x00\n"))
	f.Add([]byte("a\na\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		kws, err := readKeywords("kw.txt", b, nil)
		if err != nil {
			var ie *rundir.InputError
			if !errors.As(err, &ie) {
				t.Fatalf("not an input error: %v", err)
			}
			return
		}
		seen := map[string]bool{}
		for _, k := range kws {
			if seen[k.Keyword] || !utf8.ValidString(k.Keyword) || rundir.CheckText("keyword", k.Keyword) != nil {
				t.Fatalf("accepted %q", k.Keyword)
			}
			seen[k.Keyword] = true
		}
	})
}
