package main

import (
	"path/filepath"
	"strings"
	"testing"

	"halu/localmodels/fakeollama"
	"halu/runner/rundir"
	"halu/runner/summary"
)

// Sampling parameters a run's calls leave unset are the server's: here the
// Modelfile's. The manifest records them per model and the summary names
// those the server applied — all but what halu sent (--default-top-p).
func TestServerDefaultsAreRecordedAndNamed(t *testing.T) {
	srv := fakeollama.New(func(r fakeollama.ChatRequest) fakeollama.Reply {
		if r.Model == "gen" {
			return fakeollama.Reply{Content: "an answer"}
		}
		return fakeollama.Reply{Content: `{"score": 4, "hallucination": false}`}
	}, fakeollama.Model{Name: "gen:latest", Digest: "dg", ParameterCount: 1e9,
		Parameters: "top_k                          20\ntop_p                          0.8\nrepeat_penalty                 1.05\ntemperature                    0.7\nstop                           \"<|im_end|>\""},
		fakeollama.Model{Name: "judge:latest", Digest: "dj", ParameterCount: 1e9})
	t.Cleanup(srv.Close)
	f := &fakeServer{Server: srv, byKind: map[string]int{}}
	run := filepath.Join(t.TempDir(), "r")
	if r := halu(t, f, t.TempDir(), "run", "smoke", "--models", "gen", "--judges", "judge", "--limit", "1", "--default-top-p", "0.95", "--out", run); r.code != exitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	m, err := rundir.ReadManifest(run)
	if err != nil {
		t.Fatal(err)
	}
	var d map[string]string
	for _, mi := range m.Models {
		if mi.Name == "gen:latest" {
			d = mi.Defaults
		}
	}
	if d["top_k"] != "20" || d["top_p"] != "0.8" || d["repeat_penalty"] != "1.05" || d["temperature"] != "0.7" || d["stop"] != "" {
		t.Errorf("recorded defaults %v", d)
	}
	sum, err := summary.ReadSummary(run)
	if err != nil {
		t.Fatal(err)
	}
	notes := strings.Join(sum.Notes, "\n")
	if !strings.Contains(notes, "gen:latest: its Modelfile's parameters applied by the server to every call: repeat_penalty 1.05, top_k 20; and where a call sets none: temperature 0.7") {
		t.Errorf("notes do not name the defaults applied:\n%s", notes)
	}
}
