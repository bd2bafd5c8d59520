package cfaith

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"halu/runner/rundir"
)

// datasetWith copies the bundled English sample to a new directory with
// file name's content replaced.
func datasetWith(t testing.TB, name, content string) string {
	t.Helper()
	dir := t.TempDir()
	src := "../../testdata/cfaith/sample_en"
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, _ := os.ReadFile(filepath.Join(src, e.Name()))
		if e.Name() == name {
			b = []byte(content)
		}
		os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644)
	}
	return dir
}

// Dataset items the scores cannot rest on are refused before any model
// call, naming file and line: a correct option not among the options or
// not labelled correct, options and labels of other counts, an unknown
// hallucination type, an empty correct answer, an ID twice.
func TestReadDatasetRefusesWhatCannotBeScored(t *testing.T) {
	choice := `{"id": "q1", "doc": "d", "question": "Where?", "options": ["a x", "b x", "c x", "d x"], "labels": ["EntErr", "correct", "EntErr", "EntErr"], "correct_option": "B", "halu_type": "EntErr"}`
	gen := `{"id": "g1", "doc": "d", "question": "Where?", "correct_answer": "Here.", "evidence": "", "halu_type": "EntErr", "halu_answer": "There."}`
	for _, tc := range []struct{ name, file, content, want string }{
		{"correct option not among the options", choiceFile, strings.Replace(choice, `"B"`, `"E"`, 1), `:1: correct_option "E" is not one of A, B, C, D`},
		{"correct option labelled otherwise", choiceFile, strings.Replace(choice, `"B"`, `"C"`, 1), `:1: correct_option C is labelled "EntErr"`},
		{"three options, four labels", choiceFile, strings.Replace(choice, `"a x", `, "", 1), ":1: 3 options and 4 labels"},
		{"two correct labels", choiceFile, strings.Replace(choice, `["EntErr", "correct"`, `["correct", "correct"`, 1), ":1: 2 options labelled correct"},
		{"unknown hallucination type", genFile, strings.Replace(gen, `"halu_type": "EntErr"`, `"halu_type": "Typo"`, 1), `:1: halu_type "Typo" is not a C-FAITH type`},
		{"empty correct answer", genFile, strings.Replace(gen, `"Here."`, `""`, 1), ":1: empty correct_answer"},
		{"an ID twice", genFile, gen + "\n" + gen + "\n", `:2: id "gen/g1" again (first at line 1)`},
		{"a misspelt field", genFile, strings.Replace(gen, `"halu_answer"`, `"halu_anwser"`, 1), `:1: json: unknown field "halu_anwser"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := datasetWith(t, tc.file, tc.content)
			_, _, err := ReadDataset(dir)
			var ie *rundir.InputError
			if err == nil || !errors.As(err, &ie) || !strings.Contains(err.Error(), tc.file+tc.want) {
				t.Fatalf("got %v, want an input error %s%s", err, tc.file, tc.want)
			}
		})
	}
	if _, _, err := ReadDataset("../../testdata/cfaith/sample_en"); err != nil {
		t.Fatalf("the bundled sample: %v", err)
	}
}

// FuzzReadDataset: whatever a dataset's single-choice and generative files
// hold, the reader returns items the checks hold for, or an input error;
// never a panic.
func FuzzReadDataset(f *testing.F) {
	b, _ := os.ReadFile("../../testdata/cfaith/sample_en/" + choiceFile)
	g, _ := os.ReadFile("../../testdata/cfaith/sample_en/" + genFile)
	f.Add(b, g)
	f.Add([]byte(`{"id":"x","options":["a"],"labels":[]}`), []byte("{}\n"))
	f.Add([]byte{0xff, '\n'}, []byte(`{"halu_type": 1}`))
	f.Fuzz(func(t *testing.T, choice, gen []byte) {
		dir := datasetWith(t, choiceFile, string(choice))
		os.WriteFile(filepath.Join(dir, genFile), gen, 0o644)
		ds, _, err := ReadDataset(dir)
		if err != nil {
			var ie *rundir.InputError
			if !errors.As(err, &ie) {
				t.Fatalf("not an input error: %v", err)
			}
			return
		}
		for _, it := range ds.Choice {
			if it.CorrectOption == "" || it.Labels[it.CorrectOption[0]-'A'] != "correct" {
				t.Fatalf("accepted %+v", it)
			}
		}
		for _, it := range ds.Generative {
			if checkType(it.HaluType) != nil || rundir.CheckText("", it.CorrectAnswer) != nil {
				t.Fatalf("accepted %+v", it)
			}
		}
	})
}

// FuzzReadReleased: the same for the released C-FAITH layout.
func FuzzReadReleased(f *testing.F) {
	src := "../../testdata/cfaith/released"
	b, _ := os.ReadFile(filepath.Join(src, choiceFile))
	g, _ := os.ReadFile(filepath.Join(src, genFile))
	f.Add(b, g)
	f.Add([]byte(`{"question":"q","answers":["a","b","c","d"],"labels":["correct","x","y","z"],"correct_option":"A"}`), []byte("{}"))
	f.Fuzz(func(t *testing.T, choice, gen []byte) {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, choiceFile), choice, 0o644)
		os.WriteFile(filepath.Join(dir, genFile), gen, 0o644)
		ds, _, err := ReadDataset(dir)
		if err != nil {
			var ie *rundir.InputError
			if !errors.As(err, &ie) {
				t.Fatalf("not an input error: %v", err)
			}
			return
		}
		for _, it := range ds.Choice {
			if it.Labels[it.CorrectOption[0]-'A'] != "correct" {
				t.Fatalf("accepted %+v", it)
			}
		}
	})
}

// FuzzReadDocs: knowledge documents (JSONL or CSV) that are text with
// distinct IDs, or an input error; never a panic.
func FuzzReadDocs(f *testing.F) {
	b, _ := os.ReadFile("../../testdata/cfaith/docs_en.jsonl")
	f.Add(b, false)
	f.Add([]byte("ID,Knowledge Base\n1,Salt in clouds.\n2,\"Fuji\"\n"), true)
	f.Add([]byte(`{"pmid": 3, "abstract": "x"}`+"\n"+`{"ent": "3", "text": "y"}`), false)
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte, csv bool) {
		p := filepath.Join(dir, "docs.jsonl")
		if csv {
			p = filepath.Join(dir, "docs.csv")
		}
		os.WriteFile(p, b, 0o644)
		docs, err := ReadDocs(p)
		if err != nil {
			var ie *rundir.InputError
			if !errors.As(err, &ie) {
				t.Fatalf("not an input error: %v", err)
			}
			return
		}
		seen := map[string]bool{}
		for _, d := range docs {
			if seen[d.ID] || rundir.CheckText("", d.Knowledge) != nil {
				t.Fatalf("accepted %+v", d)
			}
			seen[d.ID] = true
		}
	})
}
