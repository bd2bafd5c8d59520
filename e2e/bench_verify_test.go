//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"halu/runner/rundir"
)

// TestBenchVerify is `make bench-verify`: how deterministic the real
// server is for the models halu ships (the tiny random-weight model,
// stories260K, TinyStories-656K), as halu verify measures it. A smoke run
// of the three (the tiny model judging) at --parallel 1 is verified at
// --sample 1 twice: at --parallel 1 (the server asked the same way) and at
// --parallel 4 (its batches change: the server holds OLLAMA_NUM_PARALLEL=4
// slots); at temperature 0 and at smoke's sampled 0.7, with the run's
// seed. One line per figure: the calls asked again that came back
// identical, and those that read the same, per model and stage — as
// measured, no target assumed.
func TestBenchVerify(t *testing.T) {
	if os.Getenv("HALU_BENCH_VERIFY") == "" {
		t.Skip("run by make bench-verify")
	}
	srv, _ := serverWithLog(t, t.TempDir(), "OLLAMA_NUM_PARALLEL=4")
	importTiny(t, srv.Host, "1", "tiny")
	for name, file := range map[string]string{"stories": "stories260K.gguf", "ts656": "TinyStories-656K-Q8_0.gguf"} {
		mustHalu(t, srv.Host, "models", "import", filepath.Join("..", "testdata", "models", file), "--name", name, "--template", "{{ .Prompt }}")
	}
	work := t.TempDir()
	cache := filepath.Join(work, "cache")
	for _, temp := range []string{"0", "0.7"} {
		dir := filepath.Join(work, "run-T"+temp)
		r := halu(t, srv.Host, "--parallel", "1", "run", "smoke", "--models", "tiny,stories,ts656", "--judges", "tiny", "--temperature", temp,
			"--max-tokens", "48", "--cache", cache, "--out", dir)
		if r.code != 0 && r.code != 4 { // 4: the tiny judge's replies read as nothing
			t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
		}
		for _, par := range []string{"1", "4"} {
			again := filepath.Join(work, "verify-T"+temp+"-p"+par)
			r := halu(t, srv.Host, "--parallel", par, "verify", dir, "--sample", "1", "--cache", cache, "--out", again)
			if r.code != 0 {
				t.Fatalf("verify: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			am, err := rundir.ReadManifest(again)
			if err != nil {
				t.Fatal(err)
			}
			v, err := rundir.ReadVerification(dir)
			if err != nil || v == nil {
				t.Fatalf("verification: %v", err)
			}
			for _, s := range v.Stages {
				figure(fmt.Sprintf("verify identical, T=%s (judges T=0), run at --parallel 1, asked again at --parallel %s, %s %s", temp, par, strings.TrimSuffix(s.Model, ":latest"), s.Stage),
					fmt.Sprintf("%d of %d", s.Identical, s.Asked),
					fmt.Sprintf("read the same: %d of %d; different: %d (the verify made %d model calls in all, %d of its cached calls answered by the cache)", s.Identical+s.Same, s.Asked-s.Unread, s.Different, am.Counts.ModelCalls, am.Counts.CacheHits))
			}
		}
	}
}
