package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"halu/localmodels/fakeollama"
	"halu/runner/engine"
	"halu/runner/rundir"
)

// fakeServer answers generations with an echo and judge prompts with a
// verdict; judges whose name starts with "bad" answer nonsense.
type fakeServer struct {
	*fakeollama.Server
	mu     sync.Mutex
	byKind map[string]int // calls per model
}

func newFake(t *testing.T) *fakeServer {
	t.Helper()
	f := &fakeServer{byKind: map[string]int{}}
	f.Server = fakeollama.New(func(r fakeollama.ChatRequest) fakeollama.Reply {
		f.mu.Lock()
		f.byKind[r.Model]++
		f.mu.Unlock()
		switch {
		case strings.HasPrefix(r.Model, "gen"):
			return fakeollama.Reply{Content: "answer: " + r.LastUser()}
		case strings.HasPrefix(r.Model, "xss"):
			return fakeollama.Reply{Content: xssPayload}
		case strings.HasPrefix(r.Model, "bad"):
			return fakeollama.Reply{Content: "no idea </pre><script>document.body.setAttribute('data-xss','judge')</script>"}
		}
		return fakeollama.Reply{Content: `{"score": 4, "hallucination": false}`}
	},
		fakeollama.Model{Name: "gen:latest", Digest: "dg", ParameterCount: 1e9},
		fakeollama.Model{Name: "judge:latest", Digest: "dj", ParameterCount: 1e9},
		fakeollama.Model{Name: "judge2:latest", Digest: "dj2", ParameterCount: 1e9},
		fakeollama.Model{Name: "bad:latest", Digest: "db", ParameterCount: 1e9},
		fakeollama.Model{Name: "xss:latest", Digest: "dx", ParameterCount: 1e9},
	)
	t.Cleanup(f.Close)
	return f
}

func (f *fakeServer) calls(model string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.byKind[model]
}

type result struct {
	code           int
	stdout, stderr string
}

func halu(t *testing.T, f *fakeServer, cache string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(append(serverFlags(args, "--ollama", f.Host(), "--cache", cache, "--retries", "1"), args...), &out, &errb)
	return result{code, out.String(), errb.String()}
}

// serverFlags are the flags of base (name, value, …) that the command
// args name takes: only commands that call a model server take them.
func serverFlags(args []string, base ...string) []string {
	root := newRoot(&globals{eng: engine.DefaultEngineConfig()})
	c, _, err := root.Find(args)
	if err != nil {
		return nil
	}
	var out []string
	for i := 0; i+1 < len(base); i += 2 {
		name := strings.TrimPrefix(base[i], "--")
		if c.Flags().Lookup(name) != nil || c.InheritedFlags().Lookup(name) != nil || c.Name() == "rerun" {
			out = append(out, base[i], base[i+1])
		}
	}
	return out
}

func TestExitCodes(t *testing.T) {
	f := newFake(t)
	cache := t.TempDir()
	dir := t.TempDir()
	tests := []struct {
		name string
		args []string
		want int
		out  string
	}{
		{"unknown flag", []string{"run", "smoke", "--no-such-flag"}, exitUsage, ""},
		{"no suite", []string{"run"}, exitUsage, ""},
		{"bad gate", []string{"run", "smoke", "--models", "gen", "--judges", "judge", "--fail-under", "x"}, exitUsage, ""},
		{"unknown model", []string{"run", "smoke", "--models", "nope", "--judges", "judge", "--out", filepath.Join(dir, "a")}, exitUsage, ""},
		{"ok", []string{"run", "smoke", "--models", "gen", "--judges", "judge", "--out", filepath.Join(dir, "b")}, exitOK, "run directory"},
		{"gate passes", []string{"run", "smoke", "--models", "gen", "--judges", "judge", "--out", filepath.Join(dir, "c"),
			"--fail-under", "mean_score=3.5", "--fail-over", "hallucination_rate=0"}, exitOK, "quality gates passed: 2"},
		{"gate fails", []string{"run", "smoke", "--models", "gen", "--judges", "judge", "--out", filepath.Join(dir, "d"),
			"--fail-under", "mean_score=4.5"}, exitGate, ""},
		{"gate names no metric", []string{"run", "smoke", "--models", "gen", "--judges", "judge", "--out", filepath.Join(dir, "e"),
			"--fail-under", "nonsense=1"}, exitUsage, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := halu(t, f, cache, tt.args...)
			if r.code != tt.want || !strings.Contains(r.stdout, tt.out) {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, tt.want, r.stdout, r.stderr)
			}
		})
	}
}

func TestDryRunCountsCallsAndWritesNothing(t *testing.T) {
	f := newFake(t)
	cache := t.TempDir()
	out := filepath.Join(t.TempDir(), "plan")
	r := halu(t, f, cache, "run", "smoke", "--models", "gen", "--judges", "judge,judge2", "--limit", "3", "--out", out, "--dry-run")
	if r.code != exitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	// 3 questions: 3 generations, then 3 judgements per judge.
	for _, want := range []string{"plan: 3 items", "gen     generate  chat   3      0", "judge   judge     judge  3      0", "judge2  judge     judge  3      0"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("plan lacks %q:\n%s", want, r.stdout)
		}
	}
	if !strings.Contains(strings.Join(strings.Fields(r.stdout), " "), "total 9 0 ") {
		t.Errorf("plan total:\n%s", r.stdout)
	}
	if f.calls("gen")+f.calls("judge") != 0 {
		t.Errorf("a dry run called models: %d, %d", f.calls("gen"), f.calls("judge"))
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a dry run wrote %s", out)
	}
	// After a real run, the plan shows the cached calls.
	halu(t, f, cache, "run", "smoke", "--models", "gen", "--judges", "judge", "--limit", "3", "--out", filepath.Join(t.TempDir(), "real"))
	r = halu(t, f, cache, "run", "smoke", "--models", "gen", "--judges", "judge", "--limit", "3", "--dry-run")
	if !strings.Contains(r.stdout, "gen    generate  chat   0      3") {
		t.Errorf("plan after a run:\n%s", r.stdout)
	}
}

// A stage rerun of a run that is not complete (cut short: some items
// never recorded) is refused with the remedy, generating nothing: its
// missing items would otherwise be generated afresh, which a stage rerun
// promises not to do.
func TestRerunStageNeedsACompleteSource(t *testing.T) {
	f := newFake(t)
	cache := t.TempDir()
	dir := filepath.Join(t.TempDir(), "run")
	if r := halu(t, f, cache, "run", "smoke", "--models", "gen", "--judges", "judge", "--limit", "4", "--out", dir); r.code != 0 {
		t.Fatal(r.stderr)
	}
	// Cut the run to 2 of its 4 records and mark it interrupted, as a
	// killed run is left.
	recs := filepath.Join(dir, rundir.RecordsFile)
	b, _ := os.ReadFile(recs)
	lines := strings.SplitAfter(string(b), "\n")
	os.WriteFile(recs, []byte(strings.Join(lines[:2], "")), 0o644)
	m, _ := rundir.ReadManifest(dir)
	m.Status = "interrupted"
	rundir.WriteManifest(dir, m)
	gen := f.calls("gen")
	r := halu(t, f, cache, "rerun", dir, "--stage", "judge", "--judges", "judge2")
	if r.code != exitUsage || !strings.Contains(r.stderr, "2 of its 4 items recorded") || !strings.Contains(r.stderr, "halu run --resume") {
		t.Errorf("rerun of an interrupted run: exit %d\n%s", r.code, r.stderr)
	}
	if f.calls("gen") != gen || f.calls("judge2") != 0 {
		t.Errorf("the refused rerun called models: %d generations, %d judge2 calls", f.calls("gen")-gen, f.calls("judge2"))
	}
}

// A rerun of the judge stage with another judge makes no generation call;
// --errors redoes only the items with unscored judgements.
func TestRerunStageAndErrors(t *testing.T) {
	f := newFake(t)
	cache := t.TempDir()
	dir := filepath.Join(t.TempDir(), "run")
	if r := halu(t, f, cache, "run", "smoke", "--models", "gen", "--judges", "judge", "--limit", "4", "--out", dir); r.code != 0 {
		t.Fatal(r.stderr)
	}
	gen := f.calls("gen")
	r := halu(t, f, cache, "rerun", dir, "--stage", "judge", "--judges", "judge2")
	if r.code != exitOK {
		t.Fatalf("rerun: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if f.calls("gen") != gen || f.calls("judge2") != 4 {
		t.Errorf("rerun: %d new generation calls, %d judge2 calls; want 0 and 4", f.calls("gen")-gen, f.calls("judge2"))
	}
	m, recs, err := engine.ReadRun(dir + "-rerun-judge")
	var cfg struct {
		Judges []string `json:"judges"`
		Limit  int      `json:"limit"`
	}
	json.Unmarshal(m.Config, &cfg)
	if err != nil || m.Status != "complete" || len(recs) != 4 || len(cfg.Judges) != 1 || cfg.Judges[0] != "judge2" || cfg.Limit != 4 ||
		!strings.Contains(m.Flags["rerun"], "--stage judge --judges judge2") {
		t.Fatalf("rerun run: %v %+v %+v", err, cfg, m.Flags)
	}
	// A dry run of a stage rerun: the new judge's calls to make, the
	// generations from the cache; nothing is called or written.
	before := len(f.Chats())
	if r := halu(t, f, cache, "rerun", dir, "--stage", "judge", "--judges", "bad", "--dry-run", "--out", filepath.Join(t.TempDir(), "dry")); r.code != 0 ||
		!strings.Contains(r.stdout, "plan: 4 items") || len(f.Chats()) != before || !planRow(r.stdout, "bad", "judge", 4, 0) || !planRow(r.stdout, "gen", "generate", 0, 4) {
		t.Errorf("rerun --dry-run: exit %d, %d calls\n%s%s", r.code, len(f.Chats())-before, r.stdout, r.stderr)
	}
	// The same judge again, same requests: the cache answers them.
	judge := f.calls("judge")
	if r := halu(t, f, cache, "rerun", dir, "--stage", "judge", "--out", filepath.Join(t.TempDir(), "again")); r.code != 0 || f.calls("judge") != judge {
		t.Errorf("same judge rerun: exit %d, %d judge calls, want 0 (cached)\n%s", r.code, f.calls("judge")-judge, r.stderr)
	}
	// Without the generations in the cache, a stage rerun refuses to make them.
	r = halu(t, f, t.TempDir(), "rerun", dir, "--stage", "judge", "--out", filepath.Join(t.TempDir(), "nocache"))
	if r.code != exitRunError || !strings.Contains(r.stderr, "reply not in the cache") || f.calls("gen") != gen {
		t.Errorf("rerun without cache: exit %d, %d generation calls\n%s", r.code, f.calls("gen")-gen, r.stderr)
	}
	if r := halu(t, f, cache, "rerun", dir, "--stage", "nope"); r.code != exitUsage || !strings.Contains(r.stderr, "generate") {
		t.Errorf("unknown stage: exit %d %s", r.code, r.stderr)
	}

	// A run whose second judge cannot be parsed: --errors asks that judge again.
	bad := filepath.Join(t.TempDir(), "bad")
	halu(t, f, cache, "run", "smoke", "--models", "gen", "--judges", "judge,bad", "--limit", "2", "--out", bad)
	_, recs, _ = engine.ReadRun(bad)
	if len(recs) != 2 || len(recs[0].Failures) != 1 {
		t.Fatalf("bad judge run: %d records, failures %+v", len(recs), recs[0].Failures)
	}
	// While a process holds the run, --errors changes nothing: the records
	// of a live run are not set aside under it (they once were, emptied).
	held0, _ := os.ReadFile(filepath.Join(bad, rundir.RecordsFile))
	release, err := rundir.LockDir(bad)
	if err != nil {
		t.Fatal(err)
	}
	r = halu(t, f, cache, "rerun", bad, "--errors")
	release()
	after, _ := os.ReadFile(filepath.Join(bad, rundir.RecordsFile))
	if held, _ := filepath.Glob(filepath.Join(bad, "records.jsonl.before-rerun-*")); r.code == exitOK || !strings.Contains(r.stderr, "held by another halu process") ||
		!bytes.Equal(held0, after) || len(held) != 0 || strings.Contains(r.stderr, "set aside") {
		t.Errorf("--errors on a held run: exit %d, records changed %v, set aside %v\n%s", r.code, !bytes.Equal(held0, after), held, r.stderr)
	}
	gen, good, badCalls := f.calls("gen"), f.calls("judge"), f.calls("bad")
	r = halu(t, f, cache, "rerun", bad, "--errors")
	if r.code != exitOK || f.calls("gen") != gen || f.calls("judge") != good || f.calls("bad") != badCalls+4 {
		t.Errorf("--errors: exit %d; new calls gen %d, judge %d, bad %d (want 0, 0, 4: two items, a repair each)\n%s",
			r.code, f.calls("gen")-gen, f.calls("judge")-good, f.calls("bad")-badCalls, r.stderr)
	}
	_, recs, _ = engine.ReadRun(bad)
	backups, _ := filepath.Glob(filepath.Join(bad, "records.jsonl.before-rerun-*"))
	if len(recs) != 2 || len(backups) != 1 {
		t.Errorf("after --errors: %d records, backups %v", len(recs), backups)
	}
}

func TestRunFileAndEnvironment(t *testing.T) {
	f := newFake(t)
	cache := t.TempDir()
	dir := t.TempDir()
	file := filepath.Join(dir, "run.yaml")
	os.WriteFile(file, []byte("models: [gen]\njudges:\n  - judge\nquestions: 2\nmax-tokens: 30\nnum_ctx: 2048\n"), 0o644)
	t.Setenv("HALU_MAX_TOKENS", "20")
	out := filepath.Join(dir, "run")
	r := halu(t, f, cache, "run", "smoke", "-f", file, "--limit", "3", "--out", out)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	m, err := rundir.ReadManifest(out)
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Models    []string `json:"models"`
		Limit     int      `json:"limit"`
		MaxTokens int      `json:"max_tokens"`
	}
	json.Unmarshal(m.Config, &cfg)
	// The flag beats the file; the environment beats the file.
	ec, err := engine.Recorded(m)
	if err != nil || cfg.Limit != 3 || cfg.MaxTokens != 20 || len(cfg.Models) != 1 || m.Flags["num-ctx"] != "2048" || ec.NumCtx != 2048 {
		t.Errorf("config %+v, flags num-ctx %q, engine %+v (%v)", cfg, m.Flags["num-ctx"], ec, err)
	}
	os.WriteFile(file, []byte("models: [gen]\n\nmodle: x\n"), 0o644)
	r = halu(t, f, cache, "run", "smoke", "-f", file, "--out", filepath.Join(dir, "x"))
	if r.code != exitUsage || !strings.Contains(r.stderr, "run.yaml:3") || !strings.Contains(r.stderr, "modle") {
		t.Errorf("unknown key: exit %d: %s", r.code, r.stderr)
	}
}

// A gate on a figure computed from nothing fails: every judge reply of this
// hic run is unparseable, so DH has n = 0 and --fail-over dh=0.2 cannot pass;
// a smoke run with a third of its judgements unscored fails the default
// --max-unscored of 10% and passes a looser one.
func TestGatesFailOnUnmeasuredMetrics(t *testing.T) {
	f := newFake(t)
	cache := t.TempDir()
	dir := t.TempDir()
	r := halu(t, f, cache, "run", "hic", "--models", "gen", "--judges", "bad", "--embed-model", "gen",
		"--questions", "1", "--answers", "1", "--strategy", "scp", "--out", filepath.Join(dir, "hic"), "--fail-over", "dh=0.2")
	// Its gate fails, and the run says it measured nothing (its own status).
	if r.code != exitNothing || !strings.Contains(r.stderr+r.stdout, "not measured (n = 0") || !strings.Contains(r.stderr, "the run measured nothing") {
		t.Fatalf("all-unscored hic run: exit %d, want %d\nstdout: %s\nstderr: %s", r.code, exitNothing, r.stdout, r.stderr)
	}
	for _, tc := range []struct {
		max  string
		want int
	}{{"0.1", exitGate}, {"0.5", exitOK}} {
		r := halu(t, f, cache, "run", "smoke", "--models", "gen", "--judges", "judge,judge2,bad", "--limit", "2",
			"--out", filepath.Join(dir, "smoke"+tc.max), "--fail-under", "mean_score=1", "--max-unscored", tc.max)
		if r.code != tc.want {
			t.Errorf("--max-unscored %s: exit %d, want %d\nstdout: %s\nstderr: %s", tc.max, r.code, tc.want, r.stdout, r.stderr)
		}
	}
}

// A gate naming no metric the suite has is refused before the first model
// call — a run, a dry run, a resume — naming the metrics there are; a gate
// on a metric's last part or on a whole key passes the check.
func TestGateNamesCheckedBeforeTheRun(t *testing.T) {
	f := newFake(t)
	cache, dir := t.TempDir(), t.TempDir()
	run := filepath.Join(dir, "smoke")
	if r := halu(t, f, cache, "run", "smoke", "--models", "gen", "--judges", "judge", "--limit", "1", "--out", run); r.code != exitOK {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	before := len(f.Chats())
	for _, args := range [][]string{
		{"run", "smoke", "--models", "gen", "--judges", "judge", "--out", filepath.Join(dir, "x"), "--fail-under", "mean_scor=3"},
		{"run", "smoke", "--models", "gen", "--judges", "judge", "--dry-run", "--fail-over", "gen.hallucination=0"},
		{"run", "--resume", run, "--fail-under", "ifs=0.5"},
		{"run", "hic", "--models", "gen", "--judges", "judge", "--embed-model", "gen", "--questions", "1", "--answers", "1",
			"--out", filepath.Join(dir, "y"), "--fail-over", "hallucination_rate=0.2"},
	} {
		r := halu(t, f, cache, args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, "has no metric") || !strings.Contains(r.stderr, "its metrics end in:") {
			t.Errorf("%v: exit %d, want %d\nstderr: %s", args, r.code, exitUsage, r.stderr)
		}
	}
	if n := len(f.Chats()) - before; n != 0 {
		t.Errorf("%d model calls before the gates were refused", n)
	}
	for _, gate := range []string{"mean_score=1", "gen.mean_score=1", "gen:latest.hallucination_rate=1"} {
		if r := halu(t, f, cache, "run", "smoke", "--models", "gen", "--judges", "judge", "--dry-run", "--fail-under", gate); r.code != exitOK {
			t.Errorf("gate %s: exit %d: %s", gate, r.code, r.stderr)
		}
	}
}

// A resume keeps the run's own settings: one given with another value is
// refused, naming it; one not given takes the run's value (here num_ctx,
// part of every cache key), not today's default.
func TestResumeRefusesOtherSettings(t *testing.T) {
	f := newFake(t)
	cache := t.TempDir()
	dir := filepath.Join(t.TempDir(), "r")
	if r := halu(t, f, cache, "run", "smoke", "--models", "gen", "--judges", "judge", "--limit", "2", "--num-ctx", "2048", "--out", dir); r.code != exitOK {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	for _, args := range [][]string{
		{"run", "smoke", "--resume", dir, "--judges", "judge2"},
		{"run", "--resume", dir, "--num-ctx", "8192"},
		{"run", "--resume", dir, "--readers", "paper"},
	} {
		r := halu(t, f, cache, args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, "differ: --"+args[len(args)-2][2:]) {
			t.Errorf("%v: exit %d, want %d\nstderr: %s", args, r.code, exitUsage, r.stderr)
		}
	}
	// The same values, and settings of how (not what) the run does, are fine.
	if r := halu(t, f, cache, "run", "smoke", "--resume", dir, "--judges", "judge", "--parallel", "3"); r.code != exitOK {
		t.Fatalf("resume with the run's own values: exit %d: %s", r.code, r.stderr)
	}

	// Resuming a run with a failed item redoes it at the run's num_ctx.
	recs := filepath.Join(dir, "records.jsonl")
	b, _ := os.ReadFile(recs)
	lines := strings.SplitAfter(string(b), "\n")
	os.WriteFile(recs, []byte(lines[0]), 0o644)
	before := len(f.Chats())
	if r := halu(t, f, t.TempDir(), "run", "--resume", dir); r.code != exitOK {
		t.Fatalf("resume: exit %d: %s", r.code, r.stderr)
	}
	chats := f.Chats()[before:]
	if len(chats) == 0 {
		t.Fatal("the resume made no call")
	}
	for _, c := range chats {
		if c.Options["num_ctx"] != float64(2048) {
			t.Fatalf("resumed call sent num_ctx %v, want the run's 2048", c.Options["num_ctx"])
		}
	}
}

// --version prints what `halu version` prints.
func TestVersionFlag(t *testing.T) {
	var a, b, e bytes.Buffer
	if run([]string{"--version"}, &a, &e) != exitOK || run([]string{"version"}, &b, &e) != exitOK || a.String() != b.String() || !strings.HasPrefix(a.String(), "halu ") {
		t.Fatalf("--version %q, version %q (%s)", a.String(), b.String(), e.String())
	}
}

// A model no stage can call — here hic's embedding model — stops the run,
// a dry run, before any model call, with exit 2 and the command that
// fixes it.
func TestMissingModelFailsUpFront(t *testing.T) {
	for _, dry := range []bool{false, true} {
		f := newFake(t)
		args := []string{"run", "hic", "--models", "gen", "--judges", "judge", "--embed-model", "missing-embed", "--questions", "1", "--answers", "1", "--out", filepath.Join(t.TempDir(), "r")}
		if dry {
			args = append(args, "--dry-run")
		}
		r := halu(t, f, t.TempDir(), args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, `"missing-embed"`) || !strings.Contains(r.stderr, "halu models pull missing-embed") {
			t.Errorf("dry run %v: exit %d, stderr %s", dry, r.code, r.stderr)
		}
		if n := len(f.Chats()); n != 0 {
			t.Errorf("dry run %v: %d model calls before the check", dry, n)
		}
	}
}

// --num-thread reaches every generation and is recorded, but it changes
// the speed only: the cache answers the same request made without it.
func TestNumThread(t *testing.T) {
	f := newFake(t)
	cache, dir := t.TempDir(), t.TempDir()
	args := []string{"run", "smoke", "--models", "gen", "--judges", "judge", "--limit", "2"}
	if r := halu(t, f, cache, append(append([]string{"--num-thread", "1"}, args...), "--out", filepath.Join(dir, "a"))...); r.code != exitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	chats := f.Chats()
	for _, c := range chats {
		if n, _ := c.Options["num_thread"].(float64); n != 1 {
			t.Fatalf("a call without num_thread 1: %v", c.Options)
		}
	}
	m, _ := rundir.ReadManifest(filepath.Join(dir, "a"))
	ec, err := engine.Recorded(m)
	if err != nil || ec.NumThread != 1 || m.Counts.ModelCalls != len(chats) || len(chats) == 0 {
		t.Fatalf("manifest num_thread %d (%v), %d calls (server saw %d)", ec.NumThread, err, m.Counts.ModelCalls, len(chats))
	}
	if r := halu(t, f, cache, append(args, "--out", filepath.Join(dir, "b"))...); r.code != exitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if m, _ := rundir.ReadManifest(filepath.Join(dir, "b")); m.Counts.ModelCalls != 0 || len(f.Chats()) != len(chats) {
		t.Fatalf("without --num-thread: %d calls, want all from the cache", m.Counts.ModelCalls)
	}
}

// doctor measures how many calls the server answers at once when
// --parallel asks for more than one: a server with one slot is a warning
// naming OLLAMA_NUM_PARALLEL, one with enough slots is ok.
func TestDoctorMeasuresParallelSlots(t *testing.T) {
	for _, slots := range []int{1, 4} {
		sem := make(chan struct{}, slots)
		srv := fakeollama.New(func(fakeollama.ChatRequest) fakeollama.Reply {
			sem <- struct{}{}
			time.Sleep(150 * time.Millisecond)
			<-sem
			return fakeollama.Reply{Content: "1 2 3"}
		}, fakeollama.Model{Name: "gen:latest", Digest: "dg", ParameterCount: 1e9})
		var out, errb bytes.Buffer
		code := run([]string{"--ollama", srv.Host(), "--cache", t.TempDir(), "--parallel", "4", "doctor", "--models", "gen"}, &out, &errb)
		srv.Close()
		o := out.String()
		want := "[ok  ] --parallel 4: the server answered 4 calls sent at once"
		if slots == 1 {
			want = "[warn] --parallel 4: the server answered 4 calls sent at once"
		}
		if code != exitOK || !strings.Contains(o, want) || slots == 1 && !strings.Contains(o, "OLLAMA_NUM_PARALLEL=4") {
			t.Errorf("%d slots: exit %d, want %q\n%s%s", slots, code, want, o, errb.String())
		}
	}
}

// doctor checks what a run command needs: every model of every stage
// (hic's embedding model too) and the paths its settings name; HALU_
// variables set its flags as any command's; a server with no model is a
// warning, not "ok".
func TestDoctorChecksARunCommand(t *testing.T) {
	f := newFake(t)
	t.Setenv("HALU_OLLAMA", f.Host())
	t.Setenv("HALU_CACHE", t.TempDir())
	var out, errb bytes.Buffer
	code := run([]string{"doctor", "--", "run", "hic", "--models", "gen", "--judges", "judge", "--embed-model", "missing-embed", "--data", "/no/such.csv"}, &out, &errb)
	o := out.String()
	if code != exitRunError || !strings.Contains(o, "[ok  ] model gen:") || !strings.Contains(o, "[FAIL] model missing-embed:") ||
		!strings.Contains(o, "[FAIL] --data /no/such.csv") || !strings.Contains(o, "[ok  ] cache") || len(f.Chats()) != 0 {
		t.Fatalf("exit %d\n%s%s", code, o, errb.String())
	}
	// The line may hold every flag halu run takes; its gates are checked.
	out.Reset()
	code = run([]string{"doctor", "--", "run", "smoke", "--models", "gen", "--judges", "judge", "--out", "x", "--dry-run", "--num-ctx", "2048", "--fail-under", "mean_scor=3"}, &out, &errb)
	if code != exitRunError || !strings.Contains(out.String(), `[FAIL] run settings: gate mean_scor >= 3: suite smoke has no metric "mean_scor"`) {
		t.Fatalf("gate in the run line: exit %d\n%s%s", code, out.String(), errb.String())
	}
	out.Reset()
	if code := run([]string{"doctor", "--", "run", "hci"}, &out, &errb); code != exitUsage || !strings.Contains(errb.String(), "did you mean hic?") {
		t.Fatalf("misspelt suite: exit %d: %s", code, errb.String())
	}
	empty := fakeollama.New(func(fakeollama.ChatRequest) fakeollama.Reply { return fakeollama.Reply{} })
	defer empty.Close()
	out.Reset()
	run([]string{"--ollama", empty.Host(), "doctor"}, &out, &errb)
	if !strings.Contains(out.String(), "[warn] no model on the server") {
		t.Fatalf("empty server:\n%s", out.String())
	}
	out.Reset()
	if code := run([]string{"--ollama", "127.0.0.1:1", "--retries", "1", "doctor"}, &out, &errb); code != exitRunError || strings.Contains(out.String(), "try `halu doctor`") || !strings.Contains(out.String(), "ollama serve") {
		t.Fatalf("no server: exit %d\n%s", code, out.String())
	}
}

// A run file may name its suite: `halu run -f F.yaml --flag v` then runs
// it, flags over the file; a file for another suite than the command's is
// refused with its line.
func TestRunFileNamesItsSuite(t *testing.T) {
	f := newFake(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "smoke.yaml")
	os.WriteFile(file, []byte("suite: smoke\nmodels: gen\njudges: [judge]\nquestions: 3\n"), 0o644)
	out := filepath.Join(dir, "run")
	if r := halu(t, f, t.TempDir(), "run", "-f", file, "--questions", "2", "--out", out); r.code != exitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if m, err := rundir.ReadManifest(out); err != nil || m.Suite != "smoke" || m.Counts.Items != 2 {
		t.Fatalf("manifest %+v %v", m, err)
	}
	if r := halu(t, f, t.TempDir(), "run", "hic", "-f", file); r.code != exitUsage || !strings.Contains(r.stderr, `smoke.yaml:1: the file is for suite "smoke", not "hic"`) {
		t.Fatalf("other suite: exit %d: %s", r.code, r.stderr)
	}
	os.WriteFile(file, []byte("suite: smok\n"), 0o644)
	if r := halu(t, f, t.TempDir(), "run", "-f", file); r.code != exitUsage || !strings.Contains(r.stderr, "did you mean smoke?") {
		t.Fatalf("misspelt: exit %d: %s", r.code, r.stderr)
	}
}

// Every suite spells its judges --judges; the old --judge still works
// with a deprecation line, and a one-judge suite refuses a panel.
func TestJudgesSpeltAlike(t *testing.T) {
	f := newFake(t)
	dir := t.TempDir()
	r := halu(t, f, t.TempDir(), "run", "smoke", "--models", "gen", "--judge", "judge", "--limit", "1", "--out", filepath.Join(dir, "a"))
	if r.code != exitOK || !strings.Contains(r.stdout+r.stderr, "--judge has been deprecated, use --judges") {
		t.Fatalf("smoke --judge: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if m, _ := rundir.ReadManifest(filepath.Join(dir, "a")); m == nil || len(m.Models) != 2 {
		t.Fatalf("smoke --judge: the judge was not taken: %+v", m)
	}
	r = halu(t, f, t.TempDir(), "run", "intent", "--models", "gen", "--judges", "judge,judge2", "--dry-run")
	if r.code != exitUsage || !strings.Contains(r.stderr, "this suite takes one judge") {
		t.Fatalf("intent with two judges: exit %d: %s", r.code, r.stderr)
	}
	r = halu(t, f, t.TempDir(), "run", "smoke", "--models", "gen", "--judges", "judge", "--judge-format", "yaml", "--dry-run")
	if r.code != exitUsage || !strings.Contains(r.stderr, `"--judge-format" flag: "yaml": want json or text`) {
		t.Fatalf("smoke --judge-format yaml: exit %d: %s", r.code, r.stderr)
	}
}

// A dry run counts, per stage, the calls the run then makes: ideas' critic
// and fluency calls depend on the ideas' text, which a dry run does not
// have, and are planned all the same.
func TestDryRunCountsTheCallsARunMakes(t *testing.T) {
	srv := fakeollama.New(func(r fakeollama.ChatRequest) fakeollama.Reply {
		switch {
		case r.Model == "gen":
			return fakeollama.Reply{Content: "Measure the salt content of cloud droplets with drone-borne sensors and relate it to rainfall over a season.\n\nA second answer, after a blank line."}
		case strings.Contains(r.LastUser(), "[Answers to be evaluated]"):
			return fakeollama.Reply{Content: "Originality: 4 Feasibility: 3 Value: 4 Hallucination: No"}
		case strings.Contains(r.LastUser(), "ONLY ANSWER"):
			return fakeollama.Reply{Content: "B"}
		}
		return fakeollama.Reply{Content: `Sound. {"originality": 6, "feasibility": 5, "clarity": 7, "score": 4, "hallucination": false}`}
	}, panelModels()...)
	t.Cleanup(srv.Close)
	f := &fakeServer{Server: srv, byKind: map[string]int{}}
	for _, tc := range []struct {
		suite string
		args  []string
	}{
		{"smoke", []string{"--models", "gen", "--judges", "j1,j2", "--limit", "3"}},
		{"hic", []string{"--models", "gen", "--judges", "j1,j2", "--embed-model", "j3", "--questions", "1,11", "--answers", "2", "--strategy", "scp,rag,dhp"}},
		{"hic", []string{"--models", "gen", "--judges", "j1", "--embed-model", "j3", "--questions", "1,11", "--answers", "2", "--strategy", "dhp,rcp+dhp", "--protocol", "halu"}},
		{"ideas", []string{"--models", "gen", "--judges", "j1,j2,j3", "--limit", "3"}},
		{"ideas", []string{"--models", "gen", "--judges", "j1,j2,j3", "--limit", "2", "--fluency-pairs", "all", "--ideas-per-keyword", "3"}},
		// The judge card's checks on half the judgements: retests, and
		// swapped fluency pairs, planned as the run makes them.
		{"hic", []string{"--models", "gen", "--judges", "j1,j2", "--embed-model", "j3", "--questions", "1,11", "--answers", "2", "--strategy", "scp,rag", "--judge-checks", "0.5"}},
		{"ideas", []string{"--models", "gen", "--judges", "j1,j2,j3", "--limit", "3", "--fluency-pairs", "all", "--ideas-per-keyword", "3", "--judge-checks", "0.5"}},
	} {
		planned, made, _ := planAndRun(t, f, tc.suite, tc.args)
		if fmt.Sprint(planned) != fmt.Sprint(made) {
			t.Errorf("%s %v: planned %v, made %v", tc.suite, tc.args, planned, made)
		}
		if slices.Contains(tc.args, "--judge-checks") {
			for _, st := range map[string][]string{"hic": {"judge-retest"}, "ideas": {"critic-retest", "fluency-retest", "fluency-swap"}}[tc.suite] {
				if planned[st] == 0 {
					t.Errorf("%s %v: no %s call planned: %v", tc.suite, tc.args, st, planned)
				}
			}
		}
	}
}

// A metric computed from no scored unit reads "–" everywhere it is shown:
// the console summary, and the report as Markdown, CSV and HTML — never a
// number, never NaN.
func TestNothingScoredReadsDash(t *testing.T) {
	f := newFake(t)
	cache, dir := t.TempDir(), t.TempDir()
	run := filepath.Join(dir, "hic")
	r := halu(t, f, cache, "run", "hic", "--models", "gen", "--judges", "bad", "--embed-model", "gen",
		"--questions", "1", "--answers", "1", "--strategy", "scp", "--out", run)
	// It finished and measured nothing: its own exit status, one closing
	// line with the fix, the records and report kept.
	if r.code != exitNothing || !strings.Contains(r.stderr, "the run measured nothing") || !strings.Contains(r.stderr, "--judge-format json") {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	if m, err := rundir.ReadManifest(run); err != nil || m.StatusText() != "complete, measured nothing" {
		t.Errorf("status %q (%v), want complete, measured nothing", m.StatusText(), err)
	}
	md := halu(t, f, cache, "report", run, "--md")
	html := filepath.Join(dir, "r.html")
	csvDir := filepath.Join(dir, "csv")
	long := filepath.Join(dir, "long.csv")
	if x := halu(t, f, cache, "report", run, "--html", html, "--csv", csvDir, "--long", long); x.code != exitOK {
		t.Fatalf("report: exit %d: %s", x.code, x.stderr)
	}
	// The leaderboard: every headline cell says why it is empty.
	for _, out := range []string{mustRead(t, html), md.stdout} {
		if n := strings.Count(out, "– (no scored unit, 1 unscored)"); n < 3 {
			t.Errorf("leaderboard: %d headline cells read “– (no scored unit, 1 unscored)”, want 3 (IH, DH, IFS)", n)
		}
	}
	// The long CSV: no estimate, n 0, the unscored answer counted.
	rows := readCSV(t, long)
	seen := 0
	for _, row := range rows[1:] {
		rec := longRecord(rows[0], row)
		if rec["metric"] == "IH" || rec["metric"] == "DH" || rec["metric"] == "IFS" {
			seen++
			if rec["estimate"] != "" || rec["lo"] != "" || rec["hi"] != "" || rec["n"] != "0" || rec["unscored"] != "1" {
				t.Errorf("long CSV: %v: want no estimate, n 0, 1 unscored", rec)
			}
		}
	}
	if seen != 3 {
		t.Errorf("long CSV: %d IH/DH/IFS rows, want 3", seen)
	}
	h, _ := os.ReadFile(html)
	var csvs []string
	files, _ := filepath.Glob(filepath.Join(csvDir, "*.csv"))
	for _, p := range files {
		b, _ := os.ReadFile(p)
		csvs = append(csvs, string(b))
	}
	for name, out := range map[string]string{"console": r.stdout, "markdown": md.stdout, "html": string(h), "csv": strings.Join(csvs, "\n")} {
		// The paper's Table 2 row: the one with the most dashes.
		row := ""
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, "gen") && strings.Contains(strings.ToUpper(l), "SCP") && strings.Count(l, "–") > strings.Count(row, "–") {
				row = l
			}
		}
		t.Logf("%s: %s", name, row)
		if strings.Count(row, "–") < 6 || strings.Contains(out, "NaN") || strings.Contains(row, "0.00%") {
			t.Errorf("%s: no row of dashes for the unscored model (NaN %v):\n%s", name, strings.Contains(out, "NaN"), out)
		}
	}
}

// planRow reports whether a printed plan has the row of model and stage
// with these calls to make and cached replies.
func planRow(plan, model, stage string, calls, cached int) bool {
	for _, l := range strings.Split(plan, "\n") {
		f := strings.Fields(l)
		if len(f) == 7 && strings.HasPrefix(f[0], model) && f[1] == stage && f[3] == strconv.Itoa(calls) && f[4] == strconv.Itoa(cached) {
			return true
		}
	}
	return false
}

// hic and ideas take --limit as every suite does: hic a seeded sample of
// questions keeping each domain's share, listed in the manifest; ideas N
// keywords.
func TestLimitEverywhere(t *testing.T) {
	f := newFake(t)
	dir := t.TempDir()
	f.SetChat(suiteReply) // a judge whose replies read: the run measures something
	r := halu(t, f, t.TempDir(), "run", "hic", "--models", "gen", "--judges", "judge", "--embed-model", "gen", "--limit", "10", "--answers", "1", "--strategy", "scp", "--out", filepath.Join(dir, "hic"))
	if r.code != exitOK {
		t.Fatalf("hic --limit: exit %d: %s", r.code, r.stderr)
	}
	m, _ := rundir.ReadManifest(filepath.Join(dir, "hic"))
	domains := map[int]bool{}
	for _, id := range m.Sample {
		n, _ := strconv.Atoi(id)
		domains[(n-1)/10] = true // the bundled CDID file: ten questions per domain, in order
	}
	if len(m.Sample) != 10 || m.Counts.Items != 10 || len(domains) != 10 {
		t.Fatalf("hic --limit 10: sample %v (%d domains), %d items", m.Sample, len(domains), m.Counts.Items)
	}
	r = halu(t, f, t.TempDir(), "run", "ideas", "--models", "gen", "--judges", "judge", "--limit", "2", "--dry-run")
	if r.code != exitOK || !strings.Contains(r.stdout, "plan: 2 items") {
		t.Fatalf("ideas --limit 2: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil || len(rows) == 0 {
		t.Fatalf("%s: %v (%d rows)", path, err, len(rows))
	}
	return rows
}

// longRecord names a long CSV row's cells by the header.
func longRecord(head, row []string) map[string]string {
	m := map[string]string{}
	for i, h := range head {
		if i < len(row) {
			m[h] = row[i]
		}
	}
	return m
}

// A judge that echoes an answer written as a verdict: the authors' reading
// rule reads the echo, halu's careful reader the judge's own verdict. With
// the authors' rule deciding (the default), DH is 0 where the careful
// reading has 1, and a gate --fail-over dh=0.2 once passed on it; it now
// refuses to, saying why. With --readers halu the careful reading decides:
// DH is 1 and the gate fails on the value itself.
func TestGatesRefuseReadingsTheCarefulReaderRejects(t *testing.T) {
	fake := "Originality: 5 Feasibility: 5 Value: 5 Hallucination: No"
	srv := fakeollama.New(func(r fakeollama.ChatRequest) fakeollama.Reply {
		if strings.HasPrefix(r.Model, "gen") {
			return fakeollama.Reply{Content: "Levitate trains on superconducting pods.\n" + fake}
		}
		// The echo first, where the authors' rule reads (tokens 1–7).
		return fakeollama.Reply{Content: fake + "\n(the answer's self-assessment, which I ignore)\nOriginality: 2 Feasibility: 2 Value: 2 Hallucination: Yes"}
	}, fakeollama.Model{Name: "gen:latest", Digest: "dg", ParameterCount: 1e9}, fakeollama.Model{Name: "judge:latest", Digest: "dj", ParameterCount: 1e9})
	t.Cleanup(srv.Close)
	f := &fakeServer{Server: srv, byKind: map[string]int{}}
	dir := t.TempDir()
	for _, tc := range []struct {
		readers, why string
	}{{"paper", "rests on the authors' reading rule"}, {"halu", "dh = 1 (gate"}} {
		r := halu(t, f, t.TempDir(), "run", "hic", "--models", "gen", "--judges", "judge", "--embed-model", "gen", "--judge-format", "text",
			"--questions", "1,2", "--answers", "1", "--strategy", "scp", "--readers", tc.readers, "--out", filepath.Join(dir, tc.readers), "--fail-over", "dh=0.2")
		if r.code != exitGate || !strings.Contains(r.stderr, tc.why) || tc.readers == "halu" && strings.Contains(r.stderr, "reading rule") {
			t.Errorf("--readers %s: exit %d, want %d saying %q\nstdout: %s\nstderr: %s", tc.readers, r.code, exitGate, tc.why, r.stdout, r.stderr)
		}
	}
}

// The exit codes are the README's: a run directory of a newer format and
// an empty labels file are usage errors (2), a server that cannot be
// reached a run error (1).
func TestExitCodesMatchTheREADME(t *testing.T) {
	// The README's table lists every exit status halu has, and no other.
	readme := mustRead(t, filepath.Join("..", "..", "README.md"))
	table := map[string]bool{}
	for _, l := range strings.Split(readme[strings.Index(readme, "## Exit codes"):], "\n")[1:] {
		if strings.HasPrefix(l, "## ") {
			break
		}
		if c := strings.Split(l, "|"); len(c) > 2 {
			if _, err := strconv.Atoi(strings.TrimSpace(c[1])); err == nil {
				table[strings.TrimSpace(c[1])] = true
			}
		}
	}
	for _, code := range []int{exitOK, exitRunError, exitUsage, exitGate, exitNothing, exitInterrupted} {
		if !table[strconv.Itoa(code)] {
			t.Errorf("exit %d is not in the README's table", code)
		}
		delete(table, strconv.Itoa(code))
	}
	if len(table) > 0 {
		t.Errorf("the README lists exit codes halu does not have: %v", table)
	}
	f := newFake(t)
	cache := t.TempDir()
	dir := filepath.Join(t.TempDir(), "run")
	if r := halu(t, f, cache, "run", "smoke", "--models", "gen", "--judges", "judge", "--limit", "2", "--out", dir); r.code != 0 {
		t.Fatal(r.stderr)
	}
	future := filepath.Join(t.TempDir(), "future")
	copyDir(t, dir, future)
	if r := halu(t, f, cache, "judges", "sheet", dir, "--n", "2"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	empty := filepath.Join(t.TempDir(), "labels.csv")
	os.WriteFile(empty, nil, 0o644)
	if r := halu(t, f, cache, "judges", "import", dir, empty); r.code != exitUsage {
		t.Errorf("an empty labels file: exit %d, want %d\n%s", r.code, exitUsage, r.stderr)
	}
	m, _ := rundir.ReadManifest(future)
	b, _ := json.Marshal(m)
	b = []byte(strings.Replace(string(b), fmt.Sprintf(`"format":%d`, rundir.FormatVersion), fmt.Sprintf(`"format":%d`, rundir.FormatVersion+1), 1))
	os.WriteFile(filepath.Join(future, rundir.ManifestFile), b, 0o644)
	if r := halu(t, f, cache, "report", future, "--md"); r.code != exitUsage || !strings.Contains(r.stderr, "newer") {
		t.Errorf("a run of a newer format: exit %d, want %d\n%s", r.code, exitUsage, r.stderr)
	}
	// No server, at the default retries: it fails at once (nothing listens:
	// retrying would only delay the same answer), naming the doctor.
	var out, errb bytes.Buffer
	if code := run([]string{"--ollama", "127.0.0.1:1", "run", "smoke", "--models", "gen", "--judges", "judge", "--limit", "1", "--no-cache", "--out", filepath.Join(t.TempDir(), "r")}, &out, &errb); code != exitRunError ||
		strings.Contains(errb.String(), "retrying") || !strings.Contains(errb.String(), "halu doctor") {
		t.Errorf("no server: exit %d, want %d, no retry, the doctor named\n%s", code, exitRunError, errb.String())
	}
}

// Every model the server lacks is named at once, each with the flag that
// named it — a default the user never typed says so — before any call.
func TestMissingModelsNamedAtOnce(t *testing.T) {
	f := newFake(t)
	r := halu(t, f, t.TempDir(), "run", "hic", "--models", "nosuch:1b", "--judges", "nosuch:1b,gen", "--questions", "1", "--answers", "1", "--out", filepath.Join(t.TempDir(), "r"))
	if r.code != exitUsage {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	for _, want := range []string{"does not have 2 of the run's models", `"nosuch:1b" (--models, --judges)`, "(--embed-model)"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("the error lacks %q:\n%s", want, r.stderr)
		}
	}
	if n := len(f.Chats()); n != 0 {
		t.Errorf("%d model calls", n)
	}
}

// A misspelled flag is a usage error naming the nearest flag; an unknown
// command and --out naming a file are usage errors too (exit 2).
func TestUsageErrorsNameTheFix(t *testing.T) {
	f := newFake(t)
	afile := filepath.Join(t.TempDir(), "afile")
	os.WriteFile(afile, []byte("x"), 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "smoke", "--modles", "gen"}, "did you mean --models?"},
		{[]string{"runn"}, `unknown command "runn"`},
		{[]string{"run", "smoke", "--models", "gen", "--judges", "judge", "--out", afile}, "is a file, not a run directory"},
	} {
		r := halu(t, f, t.TempDir(), tc.args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("halu %v: exit %d, want %d with %q\n%s", tc.args, r.code, exitUsage, tc.want, r.stderr)
		}
	}
	var out bytes.Buffer
	if run([]string{"run", "--help"}, &out, &out); strings.Contains(out.String(), "--shard halu merge") {
		t.Errorf("the help prints a usage word as the flag's type:\n%s", out.String())
	}
}

// A judge validation whose every reply is unscored measured nothing: it
// exits 1 saying so, its run kept (the raw replies are there), and a
// report given it still marks the judge unvalidated.
func TestValidationThatMeasuredNothingFails(t *testing.T) {
	f := newFake(t)
	dir := filepath.Join(t.TempDir(), "v")
	r := halu(t, f, t.TempDir(), "judges", "validate", "--judges", "bad", "--limit", "4", "--out", dir)
	if r.code != exitNothing || !strings.Contains(r.stderr, "nothing measured") || !strings.Contains(r.stderr, "every reply unscored") {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	if _, err := rundir.ReadManifest(dir); err != nil {
		t.Errorf("the run is not kept: %v", err)
	}
}

// An engine setting's yes/no flag may stand before the command, as its
// valued flags can: `halu --no-cache run …` runs without the cache.
func TestBoolFlagBeforeTheCommand(t *testing.T) {
	f := newFake(t)
	cache := t.TempDir()
	var out, errb bytes.Buffer
	code := run([]string{"--cache", cache, "--no-cache", "--ollama", f.Host(), "run", "smoke", "--models", "gen", "--judges", "judge", "--limit", "1", "--out", filepath.Join(t.TempDir(), "r")}, &out, &errb)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if entries, _ := os.ReadDir(cache); len(entries) != 0 {
		t.Errorf("--no-cache before the command wrote the cache: %v", entries)
	}
}

// A pull on a machine whose server cannot reach the registry points to
// the import that works offline; a server halu cannot reach is not
// mistaken for it.
func TestPullOfflineNamesImport(t *testing.T) {
	f := newFake(t)
	r := halu(t, f, t.TempDir(), "models", "pull", "offline/qwen2.5:1.5b")
	if r.code != exitRunError || !strings.Contains(r.stderr, "halu models import FILE.gguf --name offline/qwen2.5:1.5b") || !strings.Contains(r.stderr, "registry") {
		t.Errorf("exit %d: %s", r.code, r.stderr)
	}
	var out, errb bytes.Buffer
	if code := run([]string{"--ollama", "127.0.0.1:1", "models", "pull", "qwen2.5:1.5b"}, &out, &errb); code == exitOK || strings.Contains(errb.String(), "models import") {
		t.Errorf("no server: exit %d: %s", code, errb.String())
	}
}

// After `make demo` on a machine with no Ollama installed, the server the
// demo built is in ~/.cache/halu: doctor names it (and with-ollama) when no
// server answers, instead of an `ollama serve` that is not there.
func TestDoctorNamesTheBuiltServer(t *testing.T) {
	home := t.TempDir()
	bin := filepath.Join(home, ".cache", "halu", "ollama-"+pinnedOllama, "ollama")
	os.MkdirAll(filepath.Dir(bin), 0o755)
	os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755)
	t.Setenv("HOME", home)
	t.Setenv("PATH", t.TempDir()) // no ollama on it
	t.Setenv("HALU_OLLAMA_BIN", "")
	os.Unsetenv("HALU_OLLAMA_BIN")
	var out, errb bytes.Buffer
	run([]string{"--ollama", "127.0.0.1:1", "doctor", "--cache", t.TempDir()}, &out, &errb)
	if s := out.String() + errb.String(); !strings.Contains(s, bin+" serve") || !strings.Contains(s, "halu with-ollama") {
		t.Errorf("doctor does not name the built server:\n%s", s)
	}
	os.Remove(bin)
	out.Reset()
	errb.Reset()
	run([]string{"--ollama", "127.0.0.1:1", "doctor", "--cache", t.TempDir()}, &out, &errb)
	if s := out.String() + errb.String(); !strings.Contains(s, "make ollama") || strings.Contains(s, "`ollama serve`") {
		t.Errorf("no server anywhere: doctor says\n%s", s)
	}
}
