package hypo

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"halu/runner/rundir"
)

const header = "x_id\ty_id\tx_type\ty_type\trel_type\trelation\tquestion\n"

const goodLine = "Chemical|MESH:C1\tGene|7\tChemical\tGene\tChemical & Gene\tno_relation\tCan we hypothesize the relation between A and B? 'positive_correlate', 'negative_correlate', 'no_relation'\n"

// Test items the scores cannot rest on are refused before any model call,
// naming the line: a gold label outside the task's, an unknown task or
// entity type, IDs not of the task's types, an empty or binary question,
// a pair asked twice, a file without items.
func TestLoadTestItemsRefusesWhatCannotBeScored(t *testing.T) {
	for _, tc := range []struct{ name, body, want string }{
		{"gold outside the task's labels", strings.Replace(goodLine, "no_relation\t", "stimulate\t", 1), `:2: relation "stimulate" is not a label`},
		{"unknown task", strings.Replace(goodLine, "Chemical & Gene", "Drug & Gene", 1), `:2: rel_type "Drug & Gene"`},
		{"unknown entity type", strings.Replace(goodLine, "\tChemical\tGene\t", "\tDrug\tGene\t", 1), ":2: entity types Drug and Gene"},
		{"ID of another type", strings.Replace(goodLine, "Chemical|MESH:C1", "Disease|MESH:C1", 1), `:2: entity ID "Disease|MESH:C1"`},
		{"empty question", strings.Replace(goodLine, "Can we hypothesize the relation between A and B? 'positive_correlate', 'negative_correlate', 'no_relation'", " ", 1), ":2: empty question"},
		{"binary question", strings.Replace(goodLine, "Can we", "Can\x00we", 1), ":2: question holds the control character U+0000"},
		{"a pair twice", goodLine + goodLine, `:3: entity pair "chem-gene/Chemical|MESH:C1/Gene|7" again (first at line 2)`},
		{"too few columns", "a\tb\n", ":2: 2 columns, want 7"},
		{"no items", "", ": no test items"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "edges.tsv")
			os.WriteFile(p, []byte(header+tc.body), 0o644)
			_, err := LoadTestItems(p)
			var ie *rundir.InputError
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.As(err, &ie) || !strings.HasPrefix(err.Error(), p) {
				t.Fatalf("got %v, want an input error at %s…%s", err, p, tc.want)
			}
		})
	}
	p := filepath.Join(t.TempDir(), "edges.tsv")
	os.WriteFile(p, []byte(header+goodLine), 0o644)
	if items, err := LoadTestItems(p); err != nil || len(items) != 1 {
		t.Fatalf("a good file: %v, %d items", err, len(items))
	}
}

// FuzzLoadTestItems: whatever the bytes, the reader returns items every
// check holds for, or an input error naming the file; never a panic.
func FuzzLoadTestItems(f *testing.F) {
	f.Add([]byte(header + goodLine))
	f.Add([]byte(header + goodLine + goodLine))
	f.Add([]byte("x\n\t\t\t\t\t\t\n"))
	f.Add([]byte{0xff, 0xfe, '\n', 0})
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(dir, "edges.tsv")
		os.WriteFile(p, b, 0o644)
		items, err := LoadTestItems(p)
		if err != nil {
			var ie *rundir.InputError
			if !errors.As(err, &ie) {
				t.Fatalf("not an input error: %v", err)
			}
			return
		}
		for _, it := range items {
			if err := checkTestItem(it); err != nil {
				t.Fatalf("accepted %+v: %v", it, err)
			}
		}
	})
}

// FuzzReadOpen: open-ended inputs read as inputs with text and an ID each,
// every ID once, or as an input error; never a panic.
func FuzzReadOpen(f *testing.F) {
	f.Add([]byte(`{"id": "a", "background": "Shh and cyclopamine."}` + "\n"))
	f.Add([]byte(`{"background": "x"}` + "\n" + `{"id": "2", "background": "y"}` + "\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		ins, err := readOpen("open.jsonl", b)
		if err != nil {
			var ie *rundir.InputError
			if !errors.As(err, &ie) {
				t.Fatalf("not an input error: %v", err)
			}
			return
		}
		seen := map[string]bool{}
		for _, in := range ins {
			if seen[in.ID] || rundir.CheckText("background", in.Background) != nil {
				t.Fatalf("accepted %+v", in)
			}
			seen[in.ID] = true
		}
	})
}
