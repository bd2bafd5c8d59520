package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"halu/localmodels/fakeollama"
	"halu/runner/engine"
	"halu/runner/hypo"
)

// The paper shows 32 retrieved documents in every literature prompt. A
// default run sizes its context window to hold them (one num_ctx for every
// call) and keeps them all; a model whose trained context cannot hold them
// is refused before its first generation, saying why; --knowledge-fit drop
// runs anyway, leaving out what does not fit, as a named departure.
func TestLiteraturePromptsShowEveryDocument(t *testing.T) {
	var mu sync.Mutex
	numCtx := map[string][]float64{} // model → num_ctx of its generate calls
	srv := fakeollama.New(func(r fakeollama.ChatRequest) fakeollama.Reply {
		if strings.Contains(r.LastUser(), "proposed_hypothesis") {
			mu.Lock()
			n, _ := r.Options["num_ctx"].(float64)
			numCtx[r.Model] = append(numCtx[r.Model], n)
			mu.Unlock()
		}
		return suiteReply(r)
	}, fakeollama.Model{Name: "long:latest", Digest: "l", ParameterCount: 1e9, ContextLength: 131072},
		fakeollama.Model{Name: "short:latest", Digest: "s", ParameterCount: 1e9, ContextLength: 4096})
	t.Cleanup(srv.Close)
	f := &fakeServer{Server: srv, byKind: map[string]int{}}
	dir, cache := t.TempDir(), t.TempDir()
	ix := filepath.Join(dir, "ix")
	if r := halu(t, f, cache, "index", "build", "--out", ix, "../../testdata/pubmed/pubmedqa_contexts.jsonl"); r.code != exitOK {
		t.Fatal(r.stderr)
	}
	base := []string{"run", "hypo", "--setting", "lit", "--index", ix, "--limit", "1", "--tasks", "chem-gene"}

	// A model with a long trained context: the window is raised, every
	// prompt holds the 32 documents, no departure.
	run := filepath.Join(dir, "long")
	r := halu(t, f, cache, append(base, "--models", "long", "--out", run)...)
	if r.code != exitOK {
		t.Fatalf("long: exit %d: %s", r.code, r.stderr)
	}
	m, recs, err := engine.ReadRun(run)
	if err != nil || len(recs) != 1 {
		t.Fatalf("long run: %v, %d records", err, len(recs))
	}
	var res hypo.Result
	json.Unmarshal(recs[0].Data, &res)
	if k := res.Knowledge; len(k.PMIDs) != 32 || k.Fit.DocsDropped != 0 {
		t.Errorf("long: %d documents shown, %d dropped; want 32, 0", len(k.PMIDs), k.Fit.DocsDropped)
	}
	ec, err := engine.Recorded(m)
	if err != nil || ec.NumCtx <= 4096 || ec.NumCtx%1024 != 0 || len(m.Departures) != 0 {
		t.Errorf("long: num_ctx %d (%v), departures %v", ec.NumCtx, err, m.Departures)
	}
	for _, n := range numCtx["long"] {
		if int(n) != ec.NumCtx {
			t.Errorf("long: a generation asked num_ctx %v, the run's is %d", n, ec.NumCtx)
		}
	}
	if !strings.Contains(r.stderr, "num_ctx") {
		t.Errorf("long: the raised window is not said: %s", r.stderr)
	}

	// A model whose trained context is 4,096 tokens: refused before its
	// first generation, exit 2, saying what to do.
	run = filepath.Join(dir, "short")
	r = halu(t, f, cache, append(base, "--models", "short", "--out", run)...)
	if r.code != exitUsage || !strings.Contains(r.stderr, "short's trained context is 4096 tokens") || !strings.Contains(r.stderr, "--knowledge-fit drop") {
		t.Errorf("short: exit %d: %s", r.code, r.stderr)
	}
	if len(numCtx["short"]) != 0 {
		t.Errorf("short: %d generations before the refusal", len(numCtx["short"]))
	}

	// --knowledge-fit drop: it runs, leaves documents out, and says so.
	run = filepath.Join(dir, "short-drop")
	r = halu(t, f, cache, append(base, "--models", "short", "--knowledge-fit", "drop", "--out", run)...)
	if r.code != exitOK {
		t.Fatalf("short drop: exit %d: %s", r.code, r.stderr)
	}
	m, recs, _ = engine.ReadRun(run)
	json.Unmarshal(recs[0].Data, &res)
	if len(m.Departures) != 1 || m.Departures[0].String() != "--knowledge-fit drop (paper: all)" || res.Knowledge.Fit.DocsDropped == 0 {
		t.Errorf("short drop: departures %v, %d dropped", m.Departures, res.Knowledge.Fit.DocsDropped)
	}
}

// A FaithQA query is never left for the server to cut (its articles come
// first and are what a server cuts): a model whose context cannot hold a
// query whole is refused before its first call, or, with --too-long skip,
// those items are left out — unscored, counted, no call made — as a named
// departure.
func TestIntentQueriesAreNeverCut(t *testing.T) {
	var mu sync.Mutex
	gens := 0
	srv := fakeollama.New(func(r fakeollama.ChatRequest) fakeollama.Reply {
		if r.Model == "short" && !strings.HasPrefix(r.LastUser(), "Calibration passage.") {
			mu.Lock()
			gens++
			mu.Unlock()
		}
		if r.Model == "short" {
			return fakeollama.Reply{Content: "A short answer."}
		}
		return fakeollama.Reply{Content: "START: mandatory: 1/1"}
	}, fakeollama.Model{Name: "short:latest", Digest: "s", ParameterCount: 1e9, ContextLength: 400},
		fakeollama.Model{Name: "judge:latest", Digest: "j", ParameterCount: 1e9, ContextLength: 131072})
	t.Cleanup(srv.Close)
	f := &fakeServer{Server: srv, byKind: map[string]int{}}
	dir, cache := t.TempDir(), t.TempDir()
	base := []string{"run", "intent", "--models", "short", "--judges", "judge", "--max-tokens", "64", "--baseline-samples", "0", "--fact-samples", "0"}

	r := halu(t, f, cache, append(base, "--out", filepath.Join(dir, "refused"))...)
	if r.code != exitUsage || !strings.Contains(r.stderr, "short's trained context is 400 tokens") || !strings.Contains(r.stderr, "--too-long skip") {
		t.Errorf("refuse: exit %d: %s", r.code, r.stderr)
	}
	if gens != 0 {
		t.Errorf("refuse: %d generations before the refusal", gens)
	}

	run := filepath.Join(dir, "skip")
	r = halu(t, f, cache, append(base, "--too-long", "skip", "--out", run)...)
	if r.code != exitOK {
		t.Fatalf("skip: exit %d: %s", r.code, r.stderr)
	}
	m, recs, err := engine.ReadRun(run)
	if err != nil {
		t.Fatal(err)
	}
	skipped, ran := 0, 0
	for _, rec := range recs {
		var res struct {
			Unscorable string `json:"unscored_reason"`
		}
		json.Unmarshal(rec.Data, &res)
		if strings.Contains(res.Unscorable, "--too-long skip") {
			skipped++
			if len(rec.Calls) != 0 {
				t.Errorf("%s: skipped, yet %d calls", rec.Item, len(rec.Calls))
			}
		} else {
			ran++
		}
	}
	if skipped == 0 || ran == 0 {
		t.Errorf("skip: %d items left out, %d run; want some of each (the sample's long articles do not fit 400 tokens, its short queries do)", skipped, ran)
	}
	found := false
	for _, d := range m.Departures {
		found = found || d.String() == "--too-long skip (paper: refuse)"
	}
	if !found {
		t.Errorf("skip: departures %v", m.Departures)
	}
}

// The summary says how many items were left out as too long, and that no
// call was made for them (no raw reply to look for).
func TestTooLongItemsAreCountedInTheSummary(t *testing.T) {
	srv := fakeollama.New(func(r fakeollama.ChatRequest) fakeollama.Reply {
		if r.Model == "short" {
			return fakeollama.Reply{Content: "A short answer."}
		}
		return fakeollama.Reply{Content: "START: mandatory: 1/1"}
	}, fakeollama.Model{Name: "short:latest", Digest: "s", ParameterCount: 1e9, ContextLength: 400},
		fakeollama.Model{Name: "judge:latest", Digest: "j", ParameterCount: 1e9, ContextLength: 131072})
	t.Cleanup(srv.Close)
	f := &fakeServer{Server: srv, byKind: map[string]int{}}
	r := halu(t, f, t.TempDir(), "run", "intent", "--models", "short", "--judges", "judge", "--max-tokens", "64", "--baseline-samples", "0",
		"--fact-samples", "0", "--too-long", "skip", "--out", filepath.Join(t.TempDir(), "r"))
	if r.code != exitOK || !strings.Contains(r.stdout, "items left out, no call made") || strings.Contains(r.stdout, "--too-long skip) (excluded from CS and Perfect; raw replies") {
		t.Errorf("exit %d; summary:\n%s", r.code, r.stdout)
	}
}
