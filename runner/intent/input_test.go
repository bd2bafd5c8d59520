package intent

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"halu/runner/rundir"
)

// An article given twice (it once made items with one ID twice), a text
// that is not text, and a file without articles are refused, naming the
// line.
func TestReadArticlesRefusesDuplicatesAndBinary(t *testing.T) {
	art := `{"id": "a1", "title": "Salt", "text": "Salt in clouds."}`
	for _, tc := range []struct{ name, body, want string }{
		{"an article twice", art + "\n" + art + "\n", `:2: article id "a1" again (first at line 1)`},
		{"a binary text", `{"id": "a2", "text": "PK\u0003\u0004"}` + "\n", ":1: text holds the control character U+0003"},
		{"no text", `{"id": "a3"}` + "\n", ":1: want an id (or pmid) and a text"},
		{"no articles", "\n", ": no articles"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "arts.jsonl")
			os.WriteFile(p, []byte(tc.body), 0o644)
			_, err := ReadArticles(p)
			var ie *rundir.InputError
			if err == nil || !errors.As(err, &ie) || !strings.Contains(err.Error(), "arts.jsonl"+tc.want) {
				t.Fatalf("got %v, want arts.jsonl%s", err, tc.want)
			}
		})
	}
}

// FuzzParseInputs: FaithQA items that validate, each ID once, or an input
// error; never a panic.
func FuzzParseInputs(f *testing.F) {
	b, _ := assets.ReadFile("data/sample.jsonl")
	f.Add(b)
	f.Add([]byte(`{"id": "x", "task": "poem", "query": "q"}`))
	f.Add([]byte("{\"id\": \"x\"}\n{\"id\": \"x\"}\n\xff"))
	f.Fuzz(func(t *testing.T, b []byte) {
		ins, err := ParseInputs(b, "in.jsonl")
		if err != nil {
			var ie *rundir.InputError
			if !errors.As(err, &ie) {
				t.Fatalf("not an input error: %v", err)
			}
			return
		}
		seen := map[string]bool{}
		for _, in := range ins {
			if seen[in.ID] || in.validate() != nil {
				t.Fatalf("accepted %+v", in)
			}
			seen[in.ID] = true
		}
	})
}

// FuzzReadArticles: articles with distinct IDs and texts, or an input
// error; never a panic.
func FuzzReadArticles(f *testing.F) {
	f.Add([]byte(`{"pmid": 12, "abstract": "Salt in clouds.", "question": "q", "long_answer": "a"}` + "\n"))
	f.Add([]byte(`{"id": ["x"], "text": 3}`))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(dir, "arts.jsonl")
		os.WriteFile(p, b, 0o644)
		arts, err := ReadArticles(p)
		if err != nil {
			var ie *rundir.InputError
			if !errors.As(err, &ie) {
				t.Fatalf("not an input error: %v", err)
			}
			return
		}
		seen := map[string]bool{}
		for _, a := range arts {
			if seen[a.ID] || a.ID == "" || rundir.CheckText("text", a.Text) != nil {
				t.Fatalf("accepted %+v", a)
			}
			seen[a.ID] = true
		}
	})
}
