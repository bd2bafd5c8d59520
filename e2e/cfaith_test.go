//go:build e2e

package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"halu/runner"
	"halu/runner/cfaith"
)

// TestCFaith: HaluAgent construction and C-FAITH evaluation on the real
// server with the tiny model, in both languages: a build with the paper's
// optimized rules, a build with --optimize (2 rounds), and an evaluation
// run on the built dataset.
func TestCFaith(t *testing.T) {
	srv := server(t, t.TempDir())
	importTiny(t, srv.Host, "7", "agent")
	work := t.TempDir()
	cache := filepath.Join(work, "cache")
	for _, lang := range []string{"zh", "en"} {
		docs := filepath.Join("..", "testdata", "cfaith", "docs_"+lang+".jsonl")
		common := []string{"--docs", docs, "--lang", lang, "--agent", "agent", "--types", "EntErr",
			"--max-questions", "1", "--max-tokens", "1500", "--cache", cache}
		plain := filepath.Join(work, lang+"-plain")
		r := mustHalu(t, srv.Host, append([]string{"build", "cfaith", "--out", plain, "--rules", "optimized"}, common...)...)
		for _, want := range []string{"verification pass rates", "Rejected by the verification module", "dataset " + plain} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("%s build: output lacks %q:\n%s", lang, want, r.stdout)
			}
		}
		plainOut := r.stdout
		m, recs, err := runner.ReadRun(filepath.Join(plain, "run"))
		if err != nil || m.Status != "complete" || len(recs) != 4 {
			t.Fatalf("%s build run: %v, %d records", lang, err, len(recs))
		}
		var info cfaith.DatasetInfo
		b, err := os.ReadFile(filepath.Join(plain, "dataset.json"))
		if err != nil || json.Unmarshal(b, &info) != nil || info.Digests["agent:latest"] == "" || info.Lang != lang || info.Rules.Name != "optimized" {
			t.Errorf("%s dataset manifest: %v %+v", lang, err, info)
		}

		opt := filepath.Join(work, lang+"-opt")
		r = mustHalu(t, srv.Host, append([]string{"build", "cfaith", "--out", opt, "--optimize", "--rounds", "2", "--candidates", "1"}, common...)...)
		if !strings.Contains(r.stdout, "Prompt optimisation: validation pass rates per round") || !strings.Contains(r.stdout, "optimized_rules.json") {
			t.Errorf("%s optimize: output lacks the round table or the final prompt:\n%s", lang, r.stdout)
		}
		var rounds []cfaith.Round
		b, err = os.ReadFile(filepath.Join(opt, "optimize", "rounds.json"))
		if err != nil || json.Unmarshal(b, &rounds) != nil || len(rounds) < 2 {
			t.Errorf("%s rounds: %v, %d", lang, err, len(rounds))
		}
		if _, err := os.Stat(filepath.Join(opt, "optimized_rules.json")); err != nil {
			t.Error(err)
		}

		t.Logf("%s build output:\n%s", lang, plainOut)

		// The evaluation path on the real server, on a small dataset written
		// here (the tiny model's random verdicts rarely let a built item
		// through, so the built dataset may be empty).
		data := filepath.Join(work, lang+"-data")
		os.MkdirAll(data, 0o755)
		ds := cfaith.Dataset{
			Generative: []cfaith.GenItem{{ID: "g1", Doc: "d", Question: "Q1?", CorrectAnswer: "A1", HaluType: "EntErr", HaluAnswer: "H1"}},
			Choice:     []cfaith.ChoiceItem{{ID: "c1", Doc: "d", Question: "Q1?", Options: [4]string{"H1", "A1", "H2", "H3"}, Labels: [4]string{"EntErr", "correct", "EntErr", "EntErr"}, CorrectOption: "B", HaluType: "EntErr"}},
			TrueFalse:  []cfaith.TFItem{{ID: "t1", Doc: "d", Question: "Q1?", Statement: "A1", True: true, HaluType: "EntErr"}, {ID: "t2", Doc: "d", Question: "Q1?", Statement: "H1", HaluType: "EntErr"}},
		}
		if err := cfaith.WriteDataset(data, ds, cfaith.DatasetInfo{Lang: lang, Agent: "hand-written", Verifier: "hand-written"}); err != nil {
			t.Fatal(err)
		}
		ev := filepath.Join(work, lang+"-eval")
		r = mustHalu(t, srv.Host, "run", "cfaith", "--data", data, "--models", "agent", "--judge", "agent",
			"--max-tokens", "40", "--cache", cache, "--out", ev)
		for _, want := range []string{"C-FAITH Table 5", "C-FAITH Table 6", "C-FAITH Figure 5"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("%s run: output lacks %q:\n%s", lang, want, r.stdout)
			}
		}
		if m, recs, err := runner.ReadRun(ev); err != nil || m.Status != "complete" || len(recs) != 4 {
			t.Errorf("%s eval: %v, %d records", lang, err, len(recs))
		}
		t.Logf("%s: build %s", lang, firstLines(r.stdout, 12))
	}
}

func firstLines(s string, n int) string {
	ls := strings.Split(s, "\n")
	if len(ls) > n {
		ls = ls[:n]
	}
	return strings.Join(ls, "\n")
}
