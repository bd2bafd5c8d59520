package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"halu/localmodels/fakeollama"
	"halu/runner/rundir"
)

// Ctrl-C in the middle of a run keeps every call that finished before
// it: the resume asks the server only for what was never answered (at
// most the calls in flight at the interrupt again).
func TestInterruptKeepsFinishedCalls(t *testing.T) {
	var answered atomic.Int32
	srv := fakeollama.New(func(r fakeollama.ChatRequest) fakeollama.Reply {
		time.Sleep(30 * time.Millisecond)
		answered.Add(1)
		if strings.HasPrefix(r.Model, "gen") {
			return fakeollama.Reply{Content: r.Model + " answers: " + r.LastUser()}
		}
		return fakeollama.Reply{Content: `{"score": 4, "hallucination": false}`}
	},
		fakeollama.Model{Name: "gen1:latest", Digest: "dg1", ParameterCount: 1e9},
		fakeollama.Model{Name: "gen2:latest", Digest: "dg2", ParameterCount: 1e9},
		fakeollama.Model{Name: "gen3:latest", Digest: "dg3", ParameterCount: 1e9},
		fakeollama.Model{Name: "gen4:latest", Digest: "dg4", ParameterCount: 1e9},
		fakeollama.Model{Name: "judge:latest", Digest: "dj", ParameterCount: 1e9})
	t.Cleanup(srv.Close)
	cache, dir := t.TempDir(), filepath.Join(t.TempDir(), "run")
	cmd := asHalu(t.TempDir(), "--ollama", srv.Host(), "--cache", cache, "--parallel", "2",
		"run", "smoke", "--models", "gen1,gen2,gen3,gen4", "--judges", "judge", "--out", dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); answered.Load() < 12 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	cmd.Process.Signal(os.Interrupt)
	cmd.Wait()
	before := answered.Load()
	answered.Store(0)
	var out, errb bytes.Buffer
	if code := run([]string{"--ollama", srv.Host(), "--cache", cache, "run", "--resume", dir}, &out, &errb); code != exitOK {
		t.Fatalf("resume: exit %d\n%s\ninterrupted run:\n%s", code, errb.String(), stderr.String())
	}
	m, err := rundir.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	need := 2 * m.Counts.Items
	t.Logf("%d calls answered before the interrupt, %d by the resume (%d from the cache); a whole run asks %d", before, answered.Load(), m.Counts.CacheHits, need)
	if int(before+answered.Load()) > need+2 {
		t.Errorf("%d calls answered before the interrupt and %d asked again by the resume: a whole run needs %d (+2 in flight)\n%s", before, answered.Load(), need, stderr.String())
	}
}
