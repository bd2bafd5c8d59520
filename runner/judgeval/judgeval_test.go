package judgeval

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"halu/localmodels/fakeollama"
	"halu/runner/engine"
	"halu/runner/engine/enginetest"
	"halu/runner/rundir"
	"halu/runner/summary"
)

func writeFile(t *testing.T, lines ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "set.jsonl")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadSet(t *testing.T) {
	he, err := LoadSet(HaluEval)
	if err != nil {
		t.Fatal(err)
	}
	yes := 0
	for _, u := range he.Units {
		if u.Hallucinated {
			yes++
		}
	}
	// The shipped file as its README gives it: 4,507 responses, 815 yes.
	if len(he.Units) != 4507 || yes != 815 {
		t.Errorf("halueval: %d units, %d hallucinated; want 4507, 815", len(he.Units), yes)
	}
	felm := writeFile(t,
		`{"index": "0", "prompt": "Q0", "response": "A. B.", "segmented_response": ["A.", "B."], "labels": [true, false]}`,
		`{"index": "1", "prompt": "Q1", "response": "C.", "segmented_response": ["C."], "labels": [true]}`,
		`{"index": "2", "prompt": "Q2", "response": "D. E.", "segmented_response": ["D."], "labels": [true, true]}`)
	s, err := LoadSet(felm)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Units) != 2 || !s.Units[0].Hallucinated || s.Units[1].Hallucinated || s.Skipped != 1 {
		t.Errorf("felm: %+v skipped %d", s.Units, s.Skipped)
	}
	for _, c := range []struct {
		name, line, want string
	}{
		{"no label", `{"id": "a", "question": "q", "response": "r"}`, ":1: no label"},
		{"bad json", `{"id": "a",`, ":1: "},
		{"empty response", `{"id": "a", "question": "q", "response": " ", "hallucinated": true}`, `:1: unit "a": empty response`},
		{"bad halueval label", `{"ID": "7", "user_query": "q", "chatgpt_response": "r", "hallucination": "maybe"}`, `:1: HaluEval record 7`},
	} {
		_, err := LoadSet(writeFile(t, c.line))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	_, err = LoadSet(writeFile(t, `{"id": "a", "question": "q", "response": "r", "hallucinated": true}`, `{"id": "a", "question": "q", "response": "s", "hallucinated": false}`))
	if err == nil || !strings.Contains(err.Error(), `:2: id "a" already on line 1`) {
		t.Errorf("duplicate id: %v", err)
	}
	if _, err := LoadSet("no-such-set"); err == nil || !strings.Contains(err.Error(), "not a shipped set") {
		t.Errorf("unknown set: %v", err)
	}
}

// TestValidate runs three judges of known behaviour over 8 labelled units
// (4 hallucinated): an oracle (always right), one that always says Yes,
// and one that never states a verdict. Expected by hand: oracle accuracy
// 100%, κ 1; always-yes TPR 100%, FPR 100%, accuracy 50%, κ 0 (p_o = p_e
// = 0.5); the silent judge all unscored and "–"; the panel's majority
// (the silent judge abstains; a 1–1 tie counts as hallucinated) flags
// every unit: TPR 100%, FPR 100%.
func TestValidate(t *testing.T) {
	var lines []string
	for i := range 8 {
		h := i%2 == 0
		lines = append(lines, fmt.Sprintf(`{"id": "u%d", "question": "Question %d?", "response": "Response %d (truth: %v).", "hallucinated": %v}`, i, i, i, h, h))
	}
	set := writeFile(t, lines...)
	verdict := func(h bool) string {
		w := "No"
		if h {
			w = "Yes"
		}
		return "Originality: 2 Feasibility: 4 Value: 2 Hallucination: " + w
	}
	srv := fakeollama.New(func(r fakeollama.ChatRequest) fakeollama.Reply {
		switch r.Model {
		case "oracle":
			return fakeollama.Reply{Content: verdict(strings.Contains(r.LastUser(), "truth: true"))}
		case "yes":
			return fakeollama.Reply{Content: "**Evaluation**\n" + verdict(true)}
		}
		return fakeollama.Reply{Content: "I cannot evaluate this answer."}
	}, fakeollama.Model{Name: "oracle:latest", Digest: "o", ParameterCount: 1e9},
		fakeollama.Model{Name: "yes:latest", Digest: "y", ParameterCount: 1e9},
		fakeollama.Model{Name: "mute:latest", Digest: "m", ParameterCount: 1e9})
	t.Cleanup(srv.Close)
	cfg := DefaultConfig()
	cfg.Judges, cfg.Set = []string{"oracle", "yes", "mute"}, set
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := enginetest.New(t, srv.Host(), 2).Run(context.Background(), s, engine.RunSpec{Dir: filepath.Join(t.TempDir(), "r")})
	if err != nil {
		t.Fatal(err)
	}
	m := res.Summary.Metrics
	want := map[string]float64{
		"oracle.accuracy": 1, "oracle.kappa": 1, "oracle.tpr": 1, "oracle.fpr": 0,
		"yes.accuracy": 0.5, "yes.kappa": 0, "yes.tpr": 1, "yes.fpr": 1,
		"panel majority.tpr": 1, "panel majority.fpr": 1, "mute.unscored": 8,
	}
	for k, v := range want {
		if got, ok := m[k]; !ok || got != v {
			t.Errorf("%s = %v (present %v), want %v", k, got, ok, v)
		}
	}
	// Each judge's time is in the counts, its calls made beside it on the
	// card: the oracle's 8 judgements (one a unit, none cached).
	if jt := res.Counts.JudgeTime["oracle"]; jt.Calls != 8 || jt.Seconds <= 0 {
		t.Errorf("oracle's time %+v, want 8 calls", jt)
	}
	costRows := 0
	for _, tb := range res.Summary.Tables {
		if tb.Title != summary.CardCostTitle {
			continue
		}
		for _, row := range tb.Rows {
			if row[0] == "oracle" {
				costRows++
				if row[slices.Index(tb.Columns, "calls made (not cached)")] != "8" || row[slices.Index(tb.Columns, "seconds (the server's)")] == "–" {
					t.Errorf("oracle's cost row %v", row)
				}
			}
		}
	}
	if costRows != 1 {
		t.Errorf("%d cost rows for the oracle, want 1", costRows)
	}
	// The sample browser's flags: every unit labelled; "yes" differs from
	// people on the four units they did not label hallucinated; "mute"
	// leaves every unit with an unscored reply.
	_, recs, err := engine.ReadRun(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	against := 0
	for _, rec := range recs {
		f, err := summary.RecordFlags(s, rec)
		if err != nil {
			t.Fatal(err)
		}
		r, _ := rundir.Decode[Result](rec)
		if !f.Labelled || !f.Unscored || f.AgainstPeople == r.Human || !f.Hallucinated {
			t.Errorf("unit %s (people: %v): flags %+v", r.Unit, r.Human, f)
		}
		if f.AgainstPeople {
			against++
		}
	}
	if against != 4 {
		t.Errorf("%d units where a judge differs from people, want 4", against)
	}
	tab := res.Summary.Tables[0]
	for _, row := range tab.Rows {
		if row[0] == "mute" && (row[3] != "–" || row[4] != "–" || !strings.HasPrefix(row[2], "100.0%")) {
			t.Errorf("silent judge row %v: nothing measured must be –, its unscored share 100%%", row)
		}
		// The counts behind κ, TPR and FPR (8 units, half labelled
		// hallucinated): the oracle agrees on all, yes flags all.
		want := map[string]string{"oracle": "4, 0, 0, 4", "yes": "4, 4, 0, 0", "mute": "0, 0, 0, 0"}[row[0]]
		if want != "" && row[7] != want {
			t.Errorf("%s: confusion counts %q, want %q", row[0], row[7], want)
		}
	}
	if len(tab.Rows) != 4 {
		t.Errorf("rows %v: want 3 judges and the panel", tab.Rows)
	}
	notes := strings.Join(res.Summary.Notes, "\n")
	for _, w := range []string{"Krippendorff's α (nominal)", "8 of its 8 units drawn", "warning: low agreement with people", "yes (κ 0.00)"} {
		if !strings.Contains(notes, w) {
			t.Errorf("notes lack %q:\n%s", w, notes)
		}
	}
}
