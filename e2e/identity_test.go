//go:build e2e

package e2e

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"halu/runner/rundir"
)

// TestResumeAfterReimportRefused: a run killed mid-way, its model imported
// again under the same name with other weights, then resumed against the
// real server — refused before any model call, naming the model and both
// digests; the records stay as they were.
func TestResumeAfterReimportRefused(t *testing.T) {
	srv := server(t, t.TempDir())
	importTiny(t, srv.Host, "1", "ta")
	work := t.TempDir()
	dir := filepath.Join(work, "run")
	cache := filepath.Join(work, "cache")
	cmd := startRun(t, srv.Host, dir, 2, "--models", "ta", "--judges", "ta", "--max-tokens", "200", "--cache", cache)
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	before := lines(filepath.Join(dir, "records.jsonl"))
	m, err := rundir.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	old := m.Models[0].Digest
	importTiny(t, srv.Host, "2", "ta") // other weights, same name

	// The resume goes through a proxy that counts the model calls.
	host, calls := countingProxy(t, srv.Host)
	r := halu(t, host, "run", "--resume", dir, "--cache", cache)
	if r.code == 0 {
		t.Fatalf("resume against re-imported weights succeeded:\n%s", r.stderr)
	}
	if !strings.Contains(r.stderr, "ta:latest") || !strings.Contains(r.stderr, old) || !strings.Contains(r.stderr, "cannot be resumed") {
		t.Errorf("the refusal does not name the model and its digest %s:\n%s", old, r.stderr)
	}
	m2, _ := rundir.ReadManifest(dir)
	if !strings.Contains(r.stderr, "→") || m2.Models[0].Digest != old {
		t.Errorf("the new digest is not named, or the manifest changed (%s):\n%s", m2.Models[0].Digest, r.stderr)
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("%d model calls made by a refused resume", n)
	}
	if after := lines(filepath.Join(dir, "records.jsonl")); after != before {
		t.Errorf("records %d → %d", before, after)
	}
	t.Logf("refused: %s", strings.TrimSpace(r.stderr))
}
