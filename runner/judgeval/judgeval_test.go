package judgeval

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"halu/localmodels/fakeollama"
	"halu/runner/engine"
	"halu/runner/engine/enginetest"
	"halu/runner/hic/hicjudge"
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
	set := alternatingSet(t, 8)
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
	res, err := enginetest.New(t, srv.Host(), 2).Run(context.Background(), s.Task(), engine.RunSpec{Dir: filepath.Join(t.TempDir(), "r")})
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
	// 8 units, 4 labelled each way: κ's and the rates' intervals rest on
	// too few of a class to hold their coverage, and say so.
	for _, f := range res.Summary.Figures {
		if f.Model != "oracle" {
			continue
		}
		want := map[string]string{"κ": "κ's interval rests on 4 units people labelled hallucinated", "TPR": "rests on 4 units people labelled hallucinated", "FPR": "rests on 4 units people labelled faithful", "accuracy": ""}[f.Metric]
		if !strings.HasPrefix(f.Warning, want) || (want == "") != (f.Warning == "") {
			t.Errorf("oracle %s: warning %q, want %q", f.Metric, f.Warning, want)
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
		f, err := summary.RecordFlags(s.Flag, rec)
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

// The judge's confidence checked against people through the engine's
// path, on known token streams (--logprobs): P(verdict) only where the
// verdict token's alternatives hold evidence for the value read — the
// first judge's yes at 0.8 against no 0.2 on half the units; on the
// others neither value among the alternatives (a tiny model's "the",
// "and"), where P(verdict) was 1.0 and is now not known, counted — and a
// second judge whose P(verdict) is 0.9 on every unit: a constant score,
// which ranks nothing, so no AUROC ("–"), where it printed 0.500.
func TestJudgeConfidenceFromEvidence(t *testing.T) {
	set := alternatingSet(t, 10)
	ln := math.Log
	lp := func(tok string, p float64, alts ...fakeollama.Logprob) fakeollama.Logprob {
		return fakeollama.Logprob{Token: tok, Logprob: ln(p), Top: alts}
	}
	alt := func(tok string, p float64) fakeollama.Logprob { return fakeollama.Logprob{Token: tok, Logprob: ln(p)} }
	srv := fakeollama.New(func(r fakeollama.ChatRequest) fakeollama.Reply {
		head := []fakeollama.Logprob{lp("Originality", 0.9), lp(":", 0.9), lp(" 2", 0.9), lp(" Feasibility", 0.9), lp(":", 0.9), lp(" 4", 0.9),
			lp(" Value", 0.9), lp(":", 0.9), lp(" 2", 0.9), lp(" Hallucination", 0.9), lp(":", 0.9)}
		text := "Originality: 2 Feasibility: 4 Value: 2 Hallucination: Yes"
		evidence := strings.Contains(r.LastUser(), "truth: true")
		switch {
		case r.Model == "steady":
			head = append(head, lp(" Yes", 0.9, alt(" Yes", 0.9), alt(" No", 0.1)))
		case evidence:
			// Units 0, 2, 4, 6, 8: yes at 0.5 to 0.9 against no 0.1.
			n, _ := strconv.Atoi(between(r.LastUser(), "Response ", " (truth"))
			y := 0.5 + 0.05*float64(n)
			head = append(head, lp(" Yes", y, alt(" Yes", y), alt(" No", 0.1)))
		default:
			head = append(head, lp(" Yes", 0.01, alt(" the", 0.5), alt(" and", 0.3), alt(" y", 0.1)))
		}
		return fakeollama.Reply{Content: text, Logprobs: head}
	}, fakeollama.Model{Name: "judge:latest", Digest: "j", ParameterCount: 1e9}, fakeollama.Model{Name: "steady:latest", Digest: "s", ParameterCount: 1e9})
	t.Cleanup(srv.Close)
	cfg := DefaultConfig()
	cfg.Judges, cfg.Set = []string{"judge", "steady"}, set
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e := enginetest.New(t, srv.Host(), 2)
	e.Config.Logprobs = 5
	res, err := e.Run(context.Background(), s.Task(), engine.RunSpec{Dir: filepath.Join(t.TempDir(), "r")})
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string][]string{}
	for _, tb := range res.Summary.Tables {
		if strings.HasPrefix(tb.Title, "Model-side confidence") {
			for _, r := range tb.Rows {
				rows[r[0]+"/"+r[2]] = r
			}
		}
	}
	// judge: 5 units with evidence (all right: they are the hallucinated
	// ones, and it said yes), 5 not known; one class only.
	if r := rows["judge/"+summary.ScoreVerdictProb.Name]; strings.Join(r[3:7], " | ") != "5 | 5 | 0 | – (one class only)" {
		t.Errorf("judge's P(verdict) row: %v", r)
	}
	// steady: 0.9 on all 10 (5 right, 5 wrong): no AUROC, no AURC.
	if r := rows["steady/"+summary.ScoreVerdictProb.Name]; strings.Join(r[3:], " | ") != "10 | 0 | 5 | – (the same score for every unit: it ranks nothing) | – (0.500) | –" {
		t.Errorf("steady's P(verdict) row: %v", r)
	}
}

// alternatingSet writes n labelled units, the even ones hallucinated, each
// response saying its truth so a fake judge can answer from it.
func alternatingSet(t *testing.T, n int) string {
	var lines []string
	for i := range n {
		h := i%2 == 0
		lines = append(lines, fmt.Sprintf(`{"id": "u%d", "question": "Question %d?", "response": "Response %d (truth: %v).", "hallucinated": %v}`, i, i, i, h, h))
	}
	return writeFile(t, lines...)
}

func between(s, start, end string) string {
	_, after, _ := strings.Cut(s, start)
	v, _, _ := strings.Cut(after, end)
	return v
}

// Two judges that always disagree (α below 0) are not said to be worth two
// independent judges: what they are worth together is not defined; two
// that agree on all but one of eight units are worth about one.
func TestPanelWorthFromAgreement(t *testing.T) {
	panel := func(flip func(i int) bool) []Result {
		var rs []Result
		for i := range 8 {
			a, b := i%2 == 0, i%2 == 0
			if flip(i) {
				b = !a
			}
			rs = append(rs, Result{Unit: fmt.Sprint(i), Judgements: []hicjudge.Judgement{
				{Judge: "a", Scored: true, Verdict: &hicjudge.Verdict{Hallucination: a}},
				{Judge: "b", Scored: true, Verdict: &hicjudge.Verdict{Hallucination: b}}}})
		}
		return rs
	}
	note, _ := panelAlpha(panel(func(int) bool { return true }), []string{"a", "b"})
	if !strings.Contains(note, "below chance") || strings.Contains(note, "worth about") {
		t.Errorf("always disagreeing: %s", note)
	}
	note, _ = panelAlpha(panel(func(i int) bool { return i == 3 }), []string{"a", "b"})
	if !strings.Contains(note, "worth about 1.") {
		t.Errorf("agreeing on 7 of 8: %s", note)
	}
}
