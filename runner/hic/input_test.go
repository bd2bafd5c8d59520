package hic

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"halu/runner/rundir"
)

const cdidHeader = "ID,Field,Question,Principle,Challenge,Knowledge Base,Source\n"

// Questions the suite would send empty, IDs twice and files without
// questions are refused before any model call, naming the line; so are
// human labels that can match no answer of the run.
func TestInputsRefusedBeforeTheRun(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ name, body, want string }{
		{"empty question", cdidHeader + `1,Physics," ",p,c,k,s` + "\n", ".csv:2: empty question"},
		{"binary question", cdidHeader + "1,Physics,\"a\x00b\",p,c,k,s\n", ".csv:2: question holds the control character U+0000"},
		{"ID twice", cdidHeader + "1,Physics,Why?,p,c,k,s\n1,Physics,How?,p,c,k,s\n", `.csv:3: question ID "1" again (first at line 2)`},
		{"short row", cdidHeader + "1,Physics\n", ".csv:2: 2 fields, the header has 7"},
		{"no questions", cdidHeader, ".csv: no questions"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, "q.csv")
			os.WriteFile(p, []byte(tc.body), 0o644)
			_, err := LoadQuestions(p)
			var ie *rundir.InputError
			if err == nil || !errors.As(err, &ie) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %s", err, tc.want)
			}
		})
	}
	human := filepath.Join(dir, "human.csv")
	cfg := DefaultConfig()
	cfg.Models, cfg.Judges, cfg.EmbedModel, cfg.Strategies, cfg.Questions = []string{"gen"}, []string{"j"}, "e", []string{"scp"}, []string{"1"}
	for _, tc := range []struct{ body, want string }{
		{"id,label\ngen/scp/T1/q001/a0,IH\n", ""},
		{"gen/scp/T1/q002/a0,IH\n", `human.csv:1: "gen/scp/T1/q002/a0" is no answer of this run`},
		{"other/scp/T1/q001/a0,DH\n", `"other/scp/T1/q001/a0" is no answer of this run`},
		{"gen/scp/T1/q001/a0,IH\ngen/scp/T1/q001/a0,DH\n", `human.csv:2: answer id "gen/scp/T1/q001/a0" again`},
		{"gen/scp/T1/q001,IH\n", "is no answer of this run"},
	} {
		os.WriteFile(human, []byte(tc.body), 0o644)
		c := cfg
		c.Human = human
		_, err := New(c)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("human labels %q: %v, want %q", tc.body, err, tc.want)
		}
	}
}

// FuzzLoadQuestions: questions that are text with distinct IDs, or an
// input error; never a panic.
func FuzzLoadQuestions(f *testing.F) {
	f.Add([]byte(cdidHeader + "1,Physics,Why?,p,c,k,s\n"))
	f.Add([]byte(cdidHeader + "x,,\"\n"))
	f.Add([]byte("\ufeffID,Field,Question,Principle,Knowledge Base\n2,a,b,c,d\n"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(dir, "q.csv")
		os.WriteFile(p, b, 0o644)
		qs, err := LoadQuestions(p)
		if err != nil {
			var ie *rundir.InputError
			if !errors.As(err, &ie) {
				t.Fatalf("not an input error: %v", err)
			}
			return
		}
		seen := map[int]bool{}
		for _, q := range qs {
			if seen[q.ID] || rundir.CheckText("question", q.Question) != nil {
				t.Fatalf("accepted %+v", q)
			}
			seen[q.ID] = true
		}
	})
}

// FuzzLoadHuman: labels of answers the run makes, each once, or an input
// error; never a panic.
func FuzzLoadHuman(f *testing.F) {
	f.Add([]byte("id,label\ngen/scp/T1/q001/a0,IH\n"))
	f.Add([]byte("gen/scp/T1/q001/a,DH\n/a\n"))
	prefixes := map[string]bool{"gen/scp/T1/q001": true}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(dir, "human.csv")
		os.WriteFile(p, b, 0o644)
		labels, err := loadHuman(p, prefixes)
		if err != nil {
			var ie *rundir.InputError
			if !errors.As(err, &ie) {
				t.Fatalf("not an input error: %v", err)
			}
			return
		}
		for id, lab := range labels {
			if !answerOf(id, prefixes) || lab != "IH" && lab != "DH" && lab != "NEUTRAL" {
				t.Fatalf("accepted %q: %q", id, lab)
			}
		}
	})
}
