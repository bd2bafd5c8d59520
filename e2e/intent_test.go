//go:build e2e

package e2e

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"halu/localmodels"
	"halu/runner/engine"
	"halu/runner/intent"
)

// TestIntent: FaithQA on the real server — stories260K (a real trained
// model) answers every task type of the bundled sample, and the tiny model
// is the judge; items made from PubMedQA by "halu intent make" run too.
func TestIntent(t *testing.T) {
	srv := server(t, t.TempDir())
	importStories(t, srv.Host, "stories")
	// The judge's prompts hold the whole query and Table 7's instructions,
	// over 2,048 tokens of the tiny model's byte-level vocabulary: its
	// judge is written with an 8,192-token trained context.
	long := filepath.Join(t.TempDir(), "tiny-long.gguf")
	mustHalu(t, srv.Host, "models", "tiny", "--out", long, "--seed", "5", "--context", "8192")
	mustHalu(t, srv.Host, "models", "import", long, "--name", "judge", "--template", localmodels.TinyTemplate)
	work := t.TempDir()

	made := filepath.Join(work, "made.jsonl")
	mustHalu(t, srv.Host, "intent", "make", "--articles", filepath.Join("..", "testdata", "intent", "pubmedqa_articles.jsonl"),
		"--out", made, "--groups", "1", "--response-eval", "1", "--seed", "3")

	for _, tc := range []struct{ name, data string }{{"sample", ""}, {"made", made}} {
		// halu's protocol (JSON judges): a toy judge cannot write Table 7's
		// reasoned listings, and the run must say it departs.
		// Queries whose prompts the toy models' 2,048-token windows cannot
		// hold whole are left out (--too-long skip), never cut by the
		// server.
		args := []string{"run", "intent", "--protocol", "halu", "--models", "stories", "--judges", "judge", "--max-tokens", "60",
			"--judge-max-tokens", "3000", "--too-long", "skip", "--baseline-samples", "2", "--fact-samples", "3",
			"--cache", filepath.Join(work, "cache"), "--out", filepath.Join(work, tc.name)}
		if tc.data != "" {
			args = append(args, "--data", tc.data)
		}
		r := mustHalu(t, srv.Host, args...)
		for _, want := range []string{"FaithQA Table 3", "Appendix G.1", "WARNING: a toy-sized test model"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("%s: summary lacks %q:\n%s", tc.name, want, r.stdout)
			}
		}
		m, recs, err := engine.ReadRun(filepath.Join(work, tc.name))
		if err != nil {
			t.Fatal(err)
		}
		if m.Status != "complete" || len(recs) == 0 {
			t.Fatalf("%s: %d records, status %s", tc.name, len(recs), m.Status)
		}
		var deps []string
		for _, d := range m.Departures {
			deps = append(deps, d.Setting)
		}
		if m.Protocol != "halu" || strings.Join(deps, ",") != "fact-samples,judge-format,too-long,code-checks" || len(m.Assumptions) == 0 {
			t.Errorf("%s: protocol %q, departures %v, assumptions %v", tc.name, m.Protocol, m.Departures, m.Assumptions)
		}
		tasks := map[string]int{}
		unscored, scored, skipped := 0, 0, 0
		for _, rec := range recs {
			var r intent.ItemResult
			if err := json.Unmarshal(rec.Data, &r); err != nil {
				t.Fatal(err)
			}
			tasks[r.Task]++
			if strings.Contains(r.Unscorable, "--too-long skip") {
				skipped++
				t.Logf("%s: %s", r.ID, r.Unscorable)
				if len(rec.Calls) > 0 {
					t.Errorf("%s: skipped as too long, yet %d calls made", r.ID, len(rec.Calls))
				}
				continue
			}
			if r.Response == "" && r.EvalCount == 0 {
				t.Errorf("%s: no response", r.ID)
			}
			if len(r.MapSamples) != 1 || len(r.BaselineSamples) > 2 {
				t.Errorf("%s: %d map samples, %d baseline samples", r.ID, len(r.MapSamples), len(r.BaselineSamples))
			}
			if r.Scored {
				scored++
				if r.CS == nil || len(r.Constraints) == 0 || r.Constraints[0].Source == "" {
					t.Errorf("%s: scored without CS or verdicts: %+v", r.ID, r)
				}
			} else {
				// The tiny judge's replies rarely parse: an unscored item
				// must say why and keep the raw replies.
				unscored++
				if r.Unscorable == "" || len(rec.Failures) == 0 {
					t.Errorf("%s: unscored without a reason or raw replies", r.ID)
				}
			}
		}
		if scored == 0 {
			t.Errorf("%s: no record scored", tc.name)
		}
		if tc.name == "sample" {
			for _, task := range intent.Tasks {
				if tasks[task] == 0 {
					t.Errorf("no %s record", task)
				}
			}
		}
		t.Logf("%s: %d records %v, %d unscored, %d too long for the toy models' windows (left out); judge failures %d; model calls %d", tc.name, len(recs), tasks, unscored, skipped, m.Counts.JudgeFailures, m.Counts.ModelCalls)
	}
}
