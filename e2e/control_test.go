//go:build e2e

package e2e

import (
	"path/filepath"
	"strings"
	"testing"

	"halu/runner/engine"
	"halu/runner/rundir"
)

// TestRunControl: on the real server, a rerun with another judge makes only
// the judge calls (every generation comes from the cache); re-importing a
// model under the same name with other weights (a new digest) misses the
// cache; --dry-run counts calls and cached replies; compare and report run
// on real runs.
func TestRunControl(t *testing.T) {
	srv := server(t, t.TempDir())
	importTiny(t, srv.Host, "1", "gen", "j1")
	importTiny(t, srv.Host, "2", "j2")
	work := t.TempDir()
	cache := filepath.Join(work, "cache")
	run := filepath.Join(work, "run")
	common := []string{"--cache", cache, "--limit", "4"}
	mustHalu(t, srv.Host, append([]string{"run", "smoke", "--models", "gen", "--judges", "j1", "--out", run}, common...)...)
	m1, _ := rundir.ReadManifest(run)
	if m1.Counts.ModelCalls != 8 {
		t.Fatalf("first run: %+v, want 8 calls (4 generations, 4 judgements)", m1.Counts)
	}

	// The judge changes: only the judge stage is recomputed.
	r := mustHalu(t, srv.Host, "--cache", cache, "rerun", run, "--stage", "judge", "--judges", "j2")
	m2, recs, err := engine.ReadRun(run + "-rerun-judge")
	if err != nil {
		t.Fatal(err)
	}
	if m2.Counts.ModelCalls != 4 || m2.Counts.CacheHits != 4 || len(recs) != 4 {
		t.Fatalf("judge rerun: %+v, %d records; want 4 judge calls and 4 generations from the cache\n%s", m2.Counts, len(recs), r.stdout)
	}
	for _, rec := range recs {
		for _, c := range rec.Calls {
			if (c.Kind == "judge" || c.Kind == "repair") && !strings.HasPrefix(c.Model, "j2") {
				t.Fatalf("rerun judged with %s", c.Model)
			}
		}
	}

	// The plan after both runs: everything for j1 is cached.
	r = mustHalu(t, srv.Host, append([]string{"run", "smoke", "--models", "gen", "--judges", "j1,j2", "--dry-run"}, common...)...)
	if !strings.Contains(strings.Join(strings.Fields(r.stdout), " "), "total 0 12") {
		t.Errorf("dry run after the runs should find all 12 calls cached:\n%s", r.stdout)
	}

	// Same name, other weights: a new digest, so nothing is reused.
	importTiny(t, srv.Host, "3", "gen")
	run3 := filepath.Join(work, "run3")
	mustHalu(t, srv.Host, append([]string{"run", "smoke", "--models", "gen", "--judges", "j1", "--out", run3}, common...)...)
	m3, _ := rundir.ReadManifest(run3)
	if m3.Models[0].Digest == m1.Models[0].Digest {
		t.Fatal("re-import kept the digest")
	}
	if m3.Counts.CacheHits != 0 || m3.Counts.ModelCalls != 8 {
		t.Fatalf("after re-import: %+v, want 8 fresh calls and no cache hit", m3.Counts)
	}

	// compare and report on the real runs.
	r = mustHalu(t, srv.Host, "compare", run, run3)
	if !strings.Contains(r.stdout, "p=") {
		t.Errorf("compare printed no p-value:\n%s", r.stdout)
	}
	html := filepath.Join(work, "report.html")
	mustHalu(t, srv.Host, "report", run, run+"-rerun-judge", run3, "--html", html)
	a := mustHalu(t, srv.Host, "report", run, run+"-rerun-judge", run3, "--md")
	if !strings.Contains(a.stdout, "meaningless") {
		t.Errorf("markdown report lacks the tiny-model warning")
	}
}

// TestServerWait: on the real server, Ollama's own durations tell the
// time halu's calls were queued for one of its slots. Four calls in flight
// on a server started with one slot are queued there, and halu lowers its
// calls in flight (4 → 1 takes three calls queued most of their time) and
// says so. With four slots the figures are logged, not checked: on these
// two cores a call may wait for the runner to finish reading another's
// prompt, which is queued too.
func TestServerWait(t *testing.T) {
	for _, slots := range []string{"1", "4"} {
		srv, _ := serverWithLog(t, t.TempDir(), "OLLAMA_NUM_PARALLEL="+slots)
		importTiny(t, srv.Host, "1", "a", "b", "c", "d")
		out := filepath.Join(t.TempDir(), "run")
		r := mustHalu(t, srv.Host, "--parallel", "4", "--judge-checks", "0", "run", "smoke", "--no-cache", "--models", "a,b,c,d", "--judges", "a", "--max-tokens", "24", "--out", out)
		m, err := rundir.ReadManifest(out)
		if err != nil {
			t.Fatal(err)
		}
		c := m.Counts
		w, ok := c.ServerWait()
		if !ok || c.TimedCalls == 0 || c.TimedCalls < c.ModelCalls/2 {
			t.Fatalf("%s slots: server timing not measured: %+v", slots, c)
		}
		said := strings.Contains(r.stdout, "times for a call queued there most of its time")
		t.Logf("%s slots: %d generations timed, queued at the server %.0f%% of %.1f s; calls in flight lowered %d times, said %v", slots, c.TimedCalls, 100*w, c.TimedSeconds, c.QueueBackoffs, said)
		if slots == "1" && (c.QueueBackoffs < 3 || !said || w < 0.05) {
			t.Errorf("one slot, four calls in flight: queued %.0f%% of the calls' time, calls in flight lowered %d times, said %v:\n%s", 100*w, c.QueueBackoffs, said, r.stdout)
		}
	}
}
