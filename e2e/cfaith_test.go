//go:build e2e

package e2e

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"halu/localmodels"
	"halu/runner/cfaith"
	"halu/runner/engine"
	"halu/runner/rundir"
)

// TestCFaith: HaluAgent construction and C-FAITH evaluation on the real
// server with the tiny model, in both languages: a build with the paper's
// optimized rules, a build with --optimize (2 rounds), and an evaluation
// run on the built dataset.
func TestCFaith(t *testing.T) {
	srv := server(t, t.TempDir())
	importTiny(t, srv.Host, "7", "short")
	// The question prompt holds the document whole, as the authors send
	// it: over 2,048 tokens of the tiny model's byte-level vocabulary, so
	// the agent is written with a 16,384-token trained context, and the
	// 2,048-token model is refused before its first call.
	long := filepath.Join(t.TempDir(), "tiny-long.gguf")
	mustHalu(t, srv.Host, "models", "tiny", "--out", long, "--seed", "7", "--context", "16384")
	mustHalu(t, srv.Host, "models", "import", long, "--name", "agent", "--template", localmodels.TinyTemplate)
	work := t.TempDir()
	cache := filepath.Join(work, "cache")
	refused := filepath.Join(work, "refused")
	if r := halu(t, srv.Host, "build", "cfaith", "--docs", filepath.Join("..", "testdata", "cfaith", "docs_zh.jsonl"), "--agent", "short",
		"--types", "EntErr", "--out", refused, "--cache", cache); r.code != 2 || !strings.Contains(r.stderr, "short's trained context is 2048 tokens") ||
		!strings.Contains(r.stderr, "--chunk-tokens") {
		t.Errorf("a model that cannot hold the documents: exit %d\n%s", r.code, r.stderr)
	}
	for _, lang := range []string{"zh", "en"} {
		docs := filepath.Join("..", "testdata", "cfaith", "docs_"+lang+".jsonl")
		common := []string{"--docs", docs, "--lang", lang, "--agent", "agent", "--types", "EntErr",
			"--max-questions", "1", "--max-tokens", "1500", "--cache", cache}
		plain := filepath.Join(work, lang+"-plain")
		r := mustHalu(t, srv.Host, append([]string{"build", "cfaith", "--out", plain, "--rules", "optimized", "--embed-model", "agent"}, common...)...)
		for _, want := range []string{"verification pass rates", "Rejected by the verification module", "dataset " + plain} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("%s build: output lacks %q:\n%s", lang, want, r.stdout)
			}
		}
		plainOut := r.stdout
		m, recs, err := engine.ReadRun(filepath.Join(plain, "run"))
		if err != nil || m.Status != "complete" || len(recs) != 4 {
			t.Fatalf("%s build run: %v, %d records", lang, err, len(recs))
		}
		// Every question that passed verification had its four options
		// embedded on the server for near-duplicate removal.
		for _, d := range decodeBuild(t, recs) {
			for _, q := range d.Questions {
				kept := 0
				for _, resp := range q.Responses {
					if resp.Drop == "" {
						kept++
					}
				}
				if q.Drop == "" && kept == 3 && q.MaxOptionSimilarity == nil {
					t.Errorf("%s %s: a verified question without option similarity", lang, d.Doc)
				}
				if q.MaxOptionSimilarity != nil {
					t.Logf("%s %s: options embedded, max similarity %.3f", lang, d.Doc, *q.MaxOptionSimilarity)
				}
			}
		}
		var info cfaith.DatasetInfo
		b, err := os.ReadFile(filepath.Join(plain, "dataset.json"))
		if err != nil || json.Unmarshal(b, &info) != nil || info.Digests["agent:latest"] == "" || info.Lang != lang || info.Rules.Name != "optimized" {
			t.Errorf("%s dataset manifest: %v %+v", lang, err, info)
		}

		opt := filepath.Join(work, lang+"-opt")
		// halu's JSON optimiser: the tiny model cannot write the authors'
		// corrector a whole prompt back (TestAuthorsCorrector reads one).
		r = mustHalu(t, srv.Host, append([]string{"build", "cfaith", "--out", opt, "--optimize", "--rounds", "2", "--candidates", "1", "--corrector", "json"}, common...)...)
		if !strings.Contains(r.stdout, "Prompt optimisation: validation pass rates per round") || !strings.Contains(r.stdout, "optimized_rules.json") {
			t.Errorf("%s optimize: output lacks the round table or the final prompt:\n%s", lang, r.stdout)
		}
		var rounds []cfaith.Round
		b, err = os.ReadFile(filepath.Join(opt, "optimize", "rounds.json"))
		if err != nil || json.Unmarshal(b, &rounds) != nil || len(rounds) < 2 {
			t.Fatalf("%s rounds: %v, %d", lang, err, len(rounds))
		}
		// Round 1 measured a proposal of the optimisation agent on the
		// validation documents: the loop ran, not just its start.
		if rounds[1].NoCandidate || len(rounds[1].Candidates) != 1 || len(rounds[1].Revised) != 1 {
			t.Errorf("%s: round 1 has no measured candidate: %+v\n%s", lang, rounds[1], r.stdout)
		}
		if _, err := os.Stat(filepath.Join(opt, "optimized_rules.json")); err != nil {
			t.Error(err)
		}

		t.Logf("%s build output:\n%s", lang, plainOut)

		// Evaluation on the real server: on the dataset just built when the
		// verifier let items through, and always on the bundled sample
		// dataset (the tiny model's verdicts are random, so a build may
		// keep nothing).
		datasets := map[string]string{"sample": filepath.Join("..", "testdata", "cfaith", "sample_"+lang)}
		// An empty build is refused as input (exit 2), so only a build
		// that kept items is read back and evaluated.
		if kept := info.Counts["generative"] + info.Counts["single_choice"] + info.Counts["true_false"]; kept > 0 {
			if _, _, err := cfaith.ReadDataset(plain); err != nil {
				t.Error(err)
			}
			datasets["built"] = plain
		} else if _, _, err := cfaith.ReadDataset(plain); err == nil {
			t.Errorf("%s: a built dataset with no items was read without an error", lang)
		}
		for name, data := range datasets {
			ds, _, err := cfaith.ReadDataset(data)
			if err != nil {
				t.Fatal(err)
			}
			ev := filepath.Join(work, lang+"-eval-"+name)
			// Single-choice and true/false replies held to their labels:
			// the tiny model writes neither a letter nor a verdict on its
			// own, and a format whose every answer goes unread measured
			// nothing (exit 4).
			// On the sample dataset the answers' token log-probabilities
			// are asked too (--logprobs, no extra call): the generative
			// answers — free text, judged — carry them, and the confidence
			// table checks them against the judge's verdict (the labels'
			// replies, held to a schema, have none: "not known").
			args := []string{"run", "cfaith", "--data", data, "--models", "agent", "--judges", "agent",
				"--max-tokens", "40", "--answer-format", "labels", "--cache", cache, "--out", ev}
			if name == "sample" {
				args = append(args, "--logprobs", "5")
			}
			r = mustHalu(t, srv.Host, args...)
			for _, want := range []string{"C-FAITH Table 5", "C-FAITH Table 6", "C-FAITH Figure 5"} {
				if !strings.Contains(r.stdout, want) {
					t.Errorf("%s run on %s: output lacks %q:\n%s", lang, name, want, r.stdout)
				}
			}
			if name == "sample" {
				if !regexp.MustCompile(`(?m)^agent\s+generative\s+mean token log-prob\s+\d+\s+\d+\s+\d+\s+\S`).MatchString(r.stdout) {
					t.Errorf("%s: no confidence row of the generative answers' mean token log-prob:\n%s", lang, r.stdout)
				}
				long := filepath.Join(work, lang+"-long.csv")
				mustHalu(t, srv.Host, "report", ev, "--long", long)
				b, _ := os.ReadFile(long)
				rows, _ := csv.NewReader(bytes.NewReader(b)).ReadAll()
				found := false
				for _, row := range rows {
					// run, suite, model, group, metric, key, estimate, lo, hi, n, …
					if len(row) > 9 && row[1] == "cfaith" && row[4] == "AURC (mean token log-prob)" && row[6] != "" && row[9] != "" && row[9] != "0" {
						found = true
					}
				}
				if !found {
					t.Errorf("%s: the long export has no AURC row of the generative answers' token scores:\n%s", lang, b)
				}
			}
			want := len(ds.Generative) + len(ds.Choice) + len(ds.TrueFalse)
			if m, recs, err := engine.ReadRun(ev); err != nil || m.Status != "complete" || len(recs) != want {
				t.Errorf("%s eval on %s: %v, %d records, want %d", lang, name, err, len(recs), want)
			}
			t.Logf("%s: evaluated the %s dataset (%d items)", lang, name, want)
		}
	}
}

func decodeBuild(t *testing.T, recs []rundir.Record) []cfaith.DocResult {
	t.Helper()
	var out []cfaith.DocResult
	for _, r := range recs {
		var d cfaith.DocResult
		if err := json.Unmarshal(r.Data, &d); err != nil {
			t.Fatalf("record %s: %v", r.Item, err)
		}
		out = append(out, d)
	}
	return out
}
