//go:build e2e

package e2e

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"halu/runner/engine"
	"halu/runner/rundir"
)

// The smoke and hic suites through the OpenAI-compatible backend pointed at
// the real Ollama's /v1 give the records the native backend gives: the same
// generated text for every unit (temperature 0, the same seeds), and the
// same judge replies. The manifest says which API each run used; the
// second run takes no cache entry of the first (the API is part of every
// key).
func TestOpenAIBackendMatchesNative(t *testing.T) {
	srv := server(t, t.TempDir())
	importTiny(t, srv.Host, "1", "ta")
	cache := filepath.Join(t.TempDir(), "cache")
	openai := "openai=http://" + srv.Host + "/v1"
	for _, tc := range []struct {
		suite string
		args  []string
	}{
		{"smoke", []string{"--models", "ta", "--judges", "ta", "--limit", "3", "--temperature", "0", "--max-tokens", "40"}},
		{"hic", []string{"--models", "ta", "--judges", "ta", "--embed-model", "ta", "--questions", "1,11", "--answers", "2", "--temperature", "0",
			"--strategy", "scp,dhp", "--max-tokens", "40", "--judge-max-tokens", "40"}},
	} {
		native := filepath.Join(t.TempDir(), tc.suite+"-native")
		viaV1 := filepath.Join(t.TempDir(), tc.suite+"-openai")
		// The tiny judge cannot write hic's text verdict: that run measured
		// nothing (exit 4) — alike through both APIs, which is what is
		// compared here.
		rn0 := halu(t, srv.Host, append([]string{"--cache", cache, "run", tc.suite, "--out", native}, tc.args...)...)
		r := halu(t, srv.Host, append([]string{"--cache", cache, "--backend", openai, "run", tc.suite, "--out", viaV1}, tc.args...)...)
		if rn0.code != r.code || r.code != 0 && r.code != 4 {
			t.Fatalf("%s: native exit %d, /v1 exit %d\n%s\n%s", tc.suite, rn0.code, r.code, rn0.stderr, r.stderr)
		}
		mn, rn, _ := engine.ReadRun(native)
		mo, ro, _ := engine.ReadRun(viaV1)
		// Hits within a run (the same text embedded twice) happen alike in
		// both; none may come from the other API's entries.
		if mo.Server.API != "openai" || mn.Server.API != "" || mo.Counts.CacheHits != mn.Counts.CacheHits {
			t.Fatalf("%s: native %+v, openai %+v (cache hits %d)\n%s", tc.suite, mn.Server, mo.Server, mo.Counts.CacheHits, r.stderr)
		}
		a, b := callTexts(rn), callTexts(ro)
		if len(a) == 0 || len(a) != len(b) {
			t.Fatalf("%s: %d calls natively, %d through /v1", tc.suite, len(a), len(b))
		}
		same, differ := 0, []string{}
		for k, v := range a {
			if b[k] == v {
				same++
			} else {
				differ = append(differ, fmt.Sprintf("%s:\n  native %q\n  /v1    %q", k, v, b[k]))
			}
		}
		sort.Strings(differ)
		t.Logf("%s: %d of %d entries (each record's answers and verdicts, each call's token counts and done reason) are the same through /v1", tc.suite, same, len(a))
		if len(differ) > 0 {
			t.Errorf("%s: %d calls differ:\n%s", tc.suite, len(differ), strings.Join(differ, "\n"))
		}
	}
}

// callTexts maps each item of a run to what its record holds (answers,
// verdicts) and, per model call, its stage, prompt and reply token counts
// and done reason: the same prompt rendered the same way has the same
// count.
func callTexts(recs []rundir.Record) map[string]string {
	out := map[string]string{}
	for _, rec := range recs {
		out[rec.Item+" data"] = string(rec.Data)
		for i, c := range rec.Calls {
			if c.Kind == "embed" {
				continue
			}
			out[fmt.Sprintf("%s call %d", rec.Item, i)] = fmt.Sprintf("%s %s prompt %d reply %d %s", c.Stage, c.Kind, c.PromptTokens, c.EvalTokens, c.DoneReason)
		}
	}
	return out
}
