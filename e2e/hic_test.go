//go:build e2e

package e2e

import (
	"path/filepath"
	"strings"
	"testing"

	"halu/runner/engine"
	"halu/runner/rundir"
)

// TestHIC: the hic suite on the real server with the tiny model, 2 questions
// × 2 answers × every strategy; the rerun is served from the cache.
func TestHIC(t *testing.T) {
	srv := server(t, t.TempDir())
	importTiny(t, srv.Host, "1", "tiny")
	work := t.TempDir()
	args := []string{"run", "hic", "--models", "tiny", "--judges", "tiny", "--embed-model", "tiny",
		"--strategy", "scp,cot,rag,rcp,dhp,rcp+dhp", "--answers", "2", "--questions", "1,11", "--max-tokens", "60",
		"--judge-format", "json", "--judge-checks", "0.5", "--cache", filepath.Join(work, "cache")}
	// The judge card's extra calls are in the plan.
	plan := mustHalu(t, srv.Host, append(args, "--out", filepath.Join(work, "plan"), "--dry-run")...)
	if !strings.Contains(plan.stdout, "judge-retest") {
		t.Errorf("the plan does not count the judge card's checks:\n%s", plan.stdout)
	}
	r := mustHalu(t, srv.Host, append(args, "--out", filepath.Join(work, "a"))...)
	for _, want := range []string{"HIC-Bench Table 2 layout", "RCP+DHP", "IFS presets", "Table 9 layout", "Per domain", "meaningless", "Can these judges be trusted?"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("summary lacks %q", want)
		}
	}
	m, recs, err := engine.ReadRun(filepath.Join(work, "a"))
	if err != nil {
		t.Fatal(err)
	}
	// 4 per-question strategies × 2 questions + 2 DHP chains.
	if len(recs) != 10 || m.Status != "complete" || len(m.Prompts) < 9 {
		t.Fatalf("%d records, status %s, %d prompts", len(recs), m.Status, len(m.Prompts))
	}
	mustHalu(t, srv.Host, append(args, "--out", filepath.Join(work, "b"))...)
	m2, _ := rundir.ReadManifest(filepath.Join(work, "b"))
	if m2.Counts.ModelCalls != 0 {
		t.Fatalf("rerun made %d model calls", m2.Counts.ModelCalls)
	}
	// The paper's one-line judge format (the default) on the same run:
	// the random model's text does not parse, every failure is counted,
	// and the run — finished, its every figure "–" — says it measured
	// nothing: exit 4, one closing line naming the fix, the status and the
	// report saying so.
	r = halu(t, srv.Host, "run", "hic", "--models", "tiny", "--judges", "tiny", "--embed-model", "tiny",
		"--answers", "2", "--questions", "1", "--max-tokens", "60",
		"--cache", filepath.Join(work, "cache"), "--out", filepath.Join(work, "c"))
	m3, _ := rundir.ReadManifest(filepath.Join(work, "c"))
	if m3.Counts.JudgeFailures == 0 || r.code != 4 || !strings.Contains(r.stderr, "the run measured nothing") || !strings.Contains(r.stderr, "--judge-format json") ||
		m3.StatusText() != "complete, measured nothing" {
		t.Fatalf("text judge on a random model: exit %d, %d failures, status %q\n%s", r.code, m3.Counts.JudgeFailures, m3.StatusText(), r.stderr)
	}
	rep := mustHalu(t, srv.Host, "report", filepath.Join(work, "c"), "--md")
	if !strings.Contains(rep.stdout, "complete, measured nothing") || !strings.Contains(rep.stdout, "**Measured nothing:**") {
		t.Errorf("the report does not say the run measured nothing:\n%s", lastLines(rep.stdout, 40))
	}
}
