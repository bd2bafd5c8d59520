//go:build e2e

package e2e

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"halu/runner/rundir"
)

// countingProxy passes requests to host and counts the model calls
// (chat, generate, embed) it passed.
func countingProxy(t *testing.T, host string) (string, *atomic.Int32) {
	t.Helper()
	up, _ := url.Parse("http://" + host)
	var calls atomic.Int32
	rp := httputil.NewSingleHostReverseProxy(up)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/chat" || r.URL.Path == "/api/embed" || r.URL.Path == "/api/generate" {
			calls.Add(1)
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close)
	return strings.TrimPrefix(proxy.URL, "http://"), &calls
}

// TestVerifyOnTheRealServer: a smoke run of the tiny model, verified at
// --sample 1 against the real server, asks every call again and prints
// the share that came back identical (exit 0), recorded in the run's
// directory; the model imported again with other weights under the same
// name, verify refuses before a call (exit 2), naming both digests.
func TestVerifyOnTheRealServer(t *testing.T) {
	srv := server(t, t.TempDir())
	importTiny(t, srv.Host, "1", "ta")
	work := t.TempDir()
	dir := filepath.Join(work, "run")
	cache := filepath.Join(work, "cache")
	r := halu(t, srv.Host, "run", "smoke", "--models", "ta", "--judges", "ta", "--max-tokens", "32", "--cache", cache, "--out", dir)
	if r.code != 0 && r.code != 4 { // 4: the tiny judge's replies read as nothing
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	m, err := rundir.ReadManifest(dir)
	if err != nil || m.Status != "complete" {
		t.Fatalf("run: %v, %+v", err, m)
	}
	r = halu(t, srv.Host, "verify", dir, "--sample", "1", "--cache", cache, "--out", filepath.Join(work, "again"))
	if r.code != 0 || !strings.Contains(r.stdout, "calls asked again came back identical") {
		t.Fatalf("verify: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	v, err := rundir.ReadVerification(dir)
	if err != nil || v == nil || len(v.Stages) == 0 {
		t.Fatalf("verification: %+v, %v", v, err)
	}
	t.Logf("verify of the tiny model on the real server:\n%s", r.stdout)
	os.Remove(filepath.Join(dir, rundir.VerificationFile))

	old := m.Models[0].Digest
	importTiny(t, srv.Host, "2", "ta") // other weights, same name
	host, calls := countingProxy(t, srv.Host)
	r = halu(t, host, "verify", dir, "--sample", "1", "--cache", cache, "--out", filepath.Join(work, "again2"))
	if r.code != 2 || !strings.Contains(r.stderr, "cannot be verified") || !strings.Contains(r.stderr, old) || !strings.Contains(r.stderr, "→") {
		t.Fatalf("verify against other weights: exit %d\n%s", r.code, r.stderr)
	}
	if n := calls.Load(); n != 0 {
		t.Fatalf("%d model calls made by a refused verify", n)
	}
	if v, _ := rundir.ReadVerification(dir); v != nil {
		t.Fatal("a refused verify wrote a verification")
	}
	t.Logf("refused: %s", strings.TrimSpace(r.stderr))
}
