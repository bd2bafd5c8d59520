//go:build e2e

package e2e

import (
	"path/filepath"
	"strings"
	"testing"

	"halu/runner/engine"
)

// TestIdeas: LiveIdeaBench on the real server — stories260K (a real trained
// model carried in testdata/models) generates, and the tiny model under three
// names (three seeds, three digests) is the panel; 3 keywords × 3 ideas.
func TestIdeas(t *testing.T) {
	srv := server(t, t.TempDir())
	importStories(t, srv.Host, "stories")
	importTiny(t, srv.Host, "1", "judge-a")
	importTiny(t, srv.Host, "2", "judge-b")
	importTiny(t, srv.Host, "3", "judge-c")
	work := t.TempDir()
	args := []string{"run", "ideas", "--models", "stories", "--judges", "judge-a,judge-b,judge-c",
		"--limit", "3", "--ideas-per-keyword", "3", "--max-tokens", "60", "--judge-format", "json", "--judge-max-tokens", "120", "--fluency-max-tokens", "20",
		"--judge-checks", "0.5", "--cache", filepath.Join(work, "cache"), "--out", filepath.Join(work, "run")}
	// The judge card's extra calls are in the plan.
	plan := mustHalu(t, srv.Host, append(args, "--dry-run")...)
	if !strings.Contains(plan.stdout, "critic-retest") {
		t.Errorf("the plan does not count the judge card's checks:\n%s", plan.stdout)
	}
	r := mustHalu(t, srv.Host, args...)
	for _, want := range []string{"LiveIdeaBench leaderboard layout", "Fluency", "Flexibility", "Per category", "refused", "too small to honour", "Can these judges be trusted?"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("summary lacks %q:\n%s", want, r.stdout)
		}
	}
	m, recs, err := engine.ReadRun(filepath.Join(work, "run"))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 || m.Status != "complete" {
		t.Fatalf("%d records, status %s", len(recs), m.Status)
	}
	t.Logf("judge replies unscored: %d; model calls %d", m.Counts.JudgeFailures, m.Counts.ModelCalls)
}
