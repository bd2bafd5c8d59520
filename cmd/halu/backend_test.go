package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"halu/localmodels/fakeollama"
	"halu/localmodels/fakeopenai"
	"halu/runner/engine"
	"halu/runner/rundir"
)

// A run through --backend openai=URL: the smoke suite against a
// vLLM-like server, with the bearer token from HALU_API_KEY (in no file
// the run writes), a 429 and a 503 retried, every fingerprint marked
// "openai" with the weights' path, and the summary saying the identity is a
// path, not a digest.
func TestRunThroughOpenAIBackend(t *testing.T) {
	f := fakeopenai.New("vllm")
	defer f.Close()
	f.Token = "tok-123-secret"
	f.ReplyFor = func(body map[string]any) string {
		if body["response_format"] != nil {
			return `{"score": 4, "hallucination": false}`
		}
		return "Paris."
	}
	f.SetStatus(429, 503)
	t.Setenv("HALU_API_KEY", "tok-123-secret")
	dir := filepath.Join(t.TempDir(), "run")
	var out, errb bytes.Buffer
	code := run([]string{"--backend", "openai=" + f.URL + "/v1", "--cache", t.TempDir(), "--retries", "4",
		"run", "smoke", "--models", "Qwen/Qwen2.5-7B-Instruct", "--judges", "Qwen/Qwen2.5-7B-Instruct", "--limit", "2", "--out", dir}, &out, &errb)
	if code != exitOK {
		t.Fatalf("exit %d\n%s%s", code, out.String(), errb.String())
	}
	m, recs, err := engine.ReadRun(dir)
	if err != nil || len(recs) != 2 {
		t.Fatalf("%d records: %v", len(recs), err)
	}
	if m.Server.API != "openai" || m.Server.Version != "vllm 0.6.3" || m.Counts.Retries != 2 {
		t.Fatalf("server %+v, counts %+v", m.Server, m.Counts)
	}
	for _, fp := range m.Serving.Fingerprints {
		if fp.API != "openai" || fp.Weights != "/models/qwen2.5-7b" || fp.Identity != "path" || fp.NumCtx != 32768 {
			t.Errorf("fingerprint %+v", fp)
		}
	}
	if !strings.Contains(out.String(), "is known by the path its server loaded (/models/qwen2.5-7b)") {
		t.Errorf("no identity note:\n%s", out.String())
	}
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			if b, _ := os.ReadFile(p); bytes.Contains(b, []byte("tok-123-secret")) {
				t.Errorf("%s holds the token", p)
			}
		}
		return nil
	})
	if strings.Contains(out.String()+errb.String(), "tok-123-secret") {
		t.Error("the token was printed")
	}
	for _, a := range f.Auth() {
		if a != "Bearer tok-123-secret" {
			t.Fatalf("authorization %q", a)
		}
	}
	// Generations asked for greedy decoding say so: temperature is sent
	// even when 0 (smoke's default is 0.7, sent as such).
	for _, b := range f.Bodies() {
		if _, ok := b["temperature"]; !ok {
			t.Fatalf("a request without temperature: %v", b)
		}
		raw, _ := json.Marshal(b)
		if strings.Contains(string(raw), "num_ctx") {
			t.Fatalf("num_ctx sent: %s", raw)
		}
	}
	// A model the server does not serve is a usage error before any call.
	code = run([]string{"--backend", "openai=" + f.URL, "--cache", t.TempDir(), "run", "smoke", "--models", "qwen2.5:7b", "--judges", "Qwen/Qwen2.5-7B-Instruct", "--dry-run"}, &out, &errb)
	if code != exitUsage || !strings.Contains(errb.String(), "it serves: Qwen/Qwen2.5-7B-Instruct, bge-m3") {
		t.Fatalf("missing model: exit %d: %s", code, errb.String())
	}
}

// --ollama a,b runs on both servers: the manifest and the summary count
// each server's calls; the models commands, which work on one server,
// refuse a list.
func TestRunOnAPoolOfServers(t *testing.T) {
	a, b := newFake(t), newFake(t)
	dir := filepath.Join(t.TempDir(), "run")
	var out, errb bytes.Buffer
	code := run([]string{"--ollama", a.Host() + "," + b.Host(), "--parallel", "2", "--cache", t.TempDir(),
		"run", "smoke", "--models", "gen", "--judges", "judge", "--limit", "5", "--out", dir}, &out, &errb)
	if code != exitOK {
		t.Fatalf("exit %d\n%s%s", code, out.String(), errb.String())
	}
	m, err := rundir.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	ha, hb := m.Counts.Hosts[a.Host()], m.Counts.Hosts[b.Host()]
	if ha.Calls+hb.Calls != m.Counts.ModelCalls || m.Counts.ModelCalls != 10 || len(m.Sessions) != 1 || len(m.Sessions[0].Counts.Hosts) != 2 {
		t.Fatalf("hosts %+v, calls %d, sessions %+v", m.Counts.Hosts, m.Counts.ModelCalls, m.Sessions)
	}
	if m.Server.Host != a.Host()+","+b.Host() || !strings.Contains(out.String(), "calls per server: ") {
		t.Fatalf("server %+v\n%s", m.Server, out.String())
	}
	// The same from a run file: the servers, as a list of backends.
	file := filepath.Join(t.TempDir(), "pool.yaml")
	os.WriteFile(file, []byte("suite: smoke\nbackend: [ollama="+a.Host()+", ollama="+b.Host()+"]\nmodels: gen\njudges: [judge]\nlimit: 2\n"), 0o644)
	fromFile := filepath.Join(t.TempDir(), "run")
	if code := run([]string{"--cache", t.TempDir(), "run", "-f", file, "--out", fromFile}, &out, &errb); code != exitOK {
		t.Fatalf("run file: exit %d: %s", code, errb.String())
	}
	if m, _ := rundir.ReadManifest(fromFile); m == nil || m.Server.Host != a.Host()+","+b.Host() {
		t.Fatalf("run file: %+v", m)
	}
	code = run([]string{"--ollama", a.Host() + "," + b.Host(), "models", "list"}, &out, &errb)
	if code != exitUsage || !strings.Contains(errb.String(), "this command works on one server") {
		t.Fatalf("models list on a pool: exit %d: %s", code, errb.String())
	}
}

// A pool with one server answering every call with 503 completes every
// item on the other, and the manifest and the summary count the sick
// server's 503s exactly (they once sank 19 of 20 items, and the summary
// said "503 back-offs: 1" after 95 of them).
func TestRunOnAPoolWithASickServer(t *testing.T) {
	a := newFake(t)
	var refused atomic.Int32
	b := fakeollama.New(func(fakeollama.ChatRequest) fakeollama.Reply {
		refused.Add(1)
		return fakeollama.Reply{Status: 503, Error: "server busy"}
	},
		fakeollama.Model{Name: "gen:latest", Digest: "dg", ParameterCount: 1e9},
		fakeollama.Model{Name: "judge:latest", Digest: "dj", ParameterCount: 1e9})
	t.Cleanup(b.Close)
	dir := filepath.Join(t.TempDir(), "run")
	var out, errb bytes.Buffer
	code := run([]string{"--ollama", b.Host() + "," + a.Host(), "--parallel", "2", "--cache", t.TempDir(),
		"run", "smoke", "--models", "gen", "--judges", "judge", "--out", dir}, &out, &errb)
	if code != exitOK {
		t.Fatalf("exit %d\n%s%s", code, out.String(), errb.String())
	}
	m, err := rundir.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	hb := m.Counts.Hosts[b.Host()]
	if m.Counts.Failed != 0 || m.Counts.Completed != m.Counts.Items || hb.Unavailable != int(refused.Load()) || hb.Calls != 0 {
		t.Fatalf("counts %+v; the sick server answered 503 %d times", m.Counts, refused.Load())
	}
	if want := fmt.Sprintf("%d of them 503", refused.Load()); !strings.Contains(out.String(), want) {
		t.Errorf("the summary does not say %q:\n%s", want, out.String())
	}
	t.Logf("%d items, %d 503s from the sick server", m.Counts.Items, refused.Load())
}

// A judge that states its verdict and then takes it back without a word
// the reader knows as a revision ("Hmm, … so yes") states two values: the
// run reads neither. Asked once (--judge-repairs 0) every judgement is
// unscored and counted as "two values"; with --judge-repairs 1 the judge
// is asked again held to the verdict's JSON schema (the request's format)
// and the verdict it restates there is the one recorded, read as "held".
func TestTwoValuesAreUnscoredThenRepairedHeldToTheSchema(t *testing.T) {
	for _, repairs := range []string{"0", "1"} {
		var held atomic.Int32
		srv := fakeollama.New(func(r fakeollama.ChatRequest) fakeollama.Reply {
			if r.Model != "judge:latest" && r.Model != "judge" {
				return fakeollama.Reply{Content: "Sydney is the capital of Australia."}
			}
			if len(r.Format) > 0 {
				held.Add(1)
				return fakeollama.Reply{Content: `{"score": 1, "hallucination": true}`}
			}
			return fakeollama.Reply{Content: "Score: 5\nHallucination: No\n\nHmm, looking again, the capital is Canberra, so yes, the answer hallucinates."}
		},
			fakeollama.Model{Name: "gen:latest", Digest: "dg", ParameterCount: 1e9},
			fakeollama.Model{Name: "judge:latest", Digest: "dj", ParameterCount: 1e9})
		t.Cleanup(srv.Close)
		dir := filepath.Join(t.TempDir(), "run")
		var out, errb bytes.Buffer
		code := run([]string{"--ollama", srv.Host(), "--cache", t.TempDir(), "--judge-repairs", repairs,
			"run", "smoke", "--models", "gen", "--judges", "judge", "--judge-format", "text", "--limit", "3", "--out", dir}, &out, &errb)
		m, err := rundir.ReadManifest(dir)
		if err != nil {
			t.Fatalf("--judge-repairs %s: exit %d: %v\n%s", repairs, code, err, errb.String())
		}
		_, recs, err := engine.ReadRun(dir)
		if err != nil {
			t.Fatal(err)
		}
		switch repairs {
		case "0":
			// Nothing measured: every judgement unscored, as two values.
			if code != exitNothing || m.Counts.JudgeFailures != 3 || m.Counts.JudgeTwoValues != 3 || held.Load() != 0 {
				t.Fatalf("asked once: exit %d, counts %+v, %d held turns\n%s%s", code, m.Counts, held.Load(), out.String(), errb.String())
			}
			for _, rec := range recs {
				if len(rec.Failures) != 1 || !rec.Failures[0].TwoValues || !strings.Contains(rec.Failures[0].Reason, "two different hallucination values") {
					t.Fatalf("%s: failures %+v", rec.Item, rec.Failures)
				}
			}
			if !strings.Contains(out.String(), "stated two values for one field: 3 unscored") {
				t.Errorf("the summary does not count the two values:\n%s", out.String())
			}
		case "1":
			if code != exitOK || m.Counts.JudgeFailures != 0 || m.Counts.JudgeRepaired != 3 || m.Counts.HeldRepairs != 3 || held.Load() != 3 {
				t.Fatalf("repaired: exit %d, counts %+v, %d held turns\n%s%s", code, m.Counts, held.Load(), out.String(), errb.String())
			}
			for _, rec := range recs {
				if len(rec.Readings) != 1 || rec.Readings[0].How != "held" || !strings.Contains(string(rec.Data), `"hallucination":true`) {
					t.Fatalf("%s: readings %+v, data %s", rec.Item, rec.Readings, rec.Data)
				}
			}
		}
	}
}
