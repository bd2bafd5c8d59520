//go:build e2e

// Package e2e drives the halu binary against a real Ollama server started on
// a free loopback port with its own models directory. Run with `make e2e`
// (HALU_OLLAMA_BIN names the server binary).
package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"halu/localmodels"
	"halu/runner/engine"
	"halu/runner/rundir"
)

var (
	haluBin   string
	ollamaBin string
	binDir    string // the test's own binaries (halu unless HALU_E2E_HALU, peakrss)
)

func TestMain(m *testing.M) {
	ollamaBin = os.Getenv("HALU_OLLAMA_BIN")
	if ollamaBin == "" {
		println("e2e: HALU_OLLAMA_BIN is not set (make e2e sets it)")
		os.Exit(1)
	}
	dir, err := os.MkdirTemp("", "halu-e2e-bin-")
	if err != nil {
		panic(err)
	}
	binDir, haluBin = dir, filepath.Join(dir, "halu")
	if b := os.Getenv("HALU_E2E_HALU"); b != "" {
		// Another build to measure (an older one, for a before and after
		// of make bench-engine's figures).
		haluBin = b
	} else if out, err := exec.Command("go", "build", "-o", haluBin, "../cmd/halu").CombinedOutput(); err != nil {
		println("e2e: build halu:", string(out))
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// server starts a real Ollama on modelsDir and stops it when the test ends.
func server(t *testing.T, modelsDir string) *localmodels.Server {
	t.Helper()
	srv, _ := serverWithLog(t, modelsDir)
	return srv
}

// serverWithLog is server, and the path of the server's log.
func serverWithLog(t *testing.T, modelsDir string, env ...string) (*localmodels.Server, string) {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), "ollama.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := localmodels.StartServer(context.Background(), localmodels.ServerConfig{Bin: ollamaBin, ModelsDir: modelsDir, Log: logf, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop(); logf.Close() })
	return srv, logPath
}

// numThread is the CPU threads every generation of the tests asks for:
// half the machine's cores, at least one, so that the server's runners and
// the tests do not oversubscribe a small CI machine.
func numThread() string {
	return strconv.Itoa(max(1, runtime.NumCPU()/2))
}

type result struct {
	stdout, stderr string
	code           int
	// cpu is the process's user and system time; rssMiB its peak resident
	// memory, measured by peakHalu only (0 otherwise).
	cpu    time.Duration
	rssMiB float64
}

func halu(t *testing.T, host string, args ...string) result {
	t.Helper()
	r, err := execHalu(host, args...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// execHalu runs halu against host; err is only a failure to run it (an
// exit code other than 0 is in the result). Safe from any goroutine.
func execHalu(host string, args ...string) (result, error) { return execHaluEnv(host, nil, args...) }

// execHaluEnv is execHalu with more of the environment (NAME=VALUE).
func execHaluEnv(host string, env []string, args ...string) (result, error) {
	return execCmd(haluCmd(host, env, haluBin, args...))
}

// haluCmd is the command bin args with halu's environment: the server
// and thread count come from it (commands that call no model take
// neither flag).
func haluCmd(host string, env []string, bin string, args ...string) *exec.Cmd {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(append(os.Environ(), "OLLAMA_HOST="+host, "HALU_NUM_THREAD="+numThread()), env...)
	return cmd
}

// execCmd runs cmd, its output and exit code in the result.
func execCmd(cmd *exec.Cmd) (result, error) {
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		return result{}, err
	}
	return result{stdout: so.String(), stderr: se.String(), code: code, cpu: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()}, nil
}

var peakrss struct {
	once sync.Once
	bin  string
	err  error
}

// peakHalu is mustHalu with halu's peak resident memory (rssMiB), read
// by e2e/peakrss: the peak the kernel reports for a process this test
// starts itself is at least this test's own resident memory (peakrss's
// doc comment says why).
func peakHalu(t *testing.T, host string, args ...string) result {
	t.Helper()
	peakrss.once.Do(func() {
		peakrss.bin = filepath.Join(binDir, "peakrss")
		if out, err := exec.Command("go", "build", "-o", peakrss.bin, "./peakrss").CombinedOutput(); err != nil {
			peakrss.err = fmt.Errorf("build peakrss: %v: %s", err, out)
		}
	})
	if peakrss.err != nil {
		t.Fatal(peakrss.err)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	cmd := haluCmd(host, nil, peakrss.bin, append([]string{haluBin}, args...)...)
	cmd.ExtraFiles = []*os.File{pw}
	r, err := execCmd(cmd)
	pw.Close()
	if err != nil {
		t.Fatal(err)
	}
	if r.code != 0 {
		t.Fatalf("halu %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	var kib float64
	if _, err := fmt.Fscan(pr, &kib); err != nil || kib <= 0 {
		t.Fatalf("peakrss: no peak read (%v)", err)
	}
	r.rssMiB = kib / 1024
	return r
}

func mustHalu(t *testing.T, host string, args ...string) result {
	t.Helper()
	r := halu(t, host, args...)
	if r.code != 0 {
		t.Fatalf("halu %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r
}

// importTiny writes the tiny model and imports it under each name.
func importTiny(t *testing.T, host string, seed string, names ...string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tiny.gguf")
	mustHalu(t, host, "models", "tiny", "--out", path, "--seed", seed)
	for _, n := range names {
		mustHalu(t, host, "models", "import", path, "--name", n, "--template", localmodels.TinyTemplate)
	}
}

// importStories imports stories260K (a real trained model, carried in
// testdata/models with its licence) under name.
func importStories(t *testing.T, host, name string) {
	t.Helper()
	stories := filepath.Join("..", "testdata", "models", "stories260K.gguf")
	if _, err := os.Stat(stories); err != nil {
		t.Fatalf("need %s: %v", stories, err)
	}
	mustHalu(t, host, "models", "import", stories, "--name", name, "--template", localmodels.TinyTemplate)
}

func sortedLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	sort.Strings(lines)
	return lines
}

func countItems(t *testing.T, dir string) map[string]int {
	t.Helper()
	_, recs, err := engine.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]int{}
	for _, r := range recs {
		m[r.Item]++
	}
	return m
}

// TestSmokeCacheAndJudgeFailures: issue "Done when" 2, 3 (cache) and 4.
func TestSmokeCacheAndJudgeFailures(t *testing.T) {
	srv := server(t, t.TempDir())
	importTiny(t, srv.Host, "1", "tiny")
	work := t.TempDir()
	cache := filepath.Join(work, "cache")
	run1 := filepath.Join(work, "run1")
	r := mustHalu(t, srv.Host, "run", "smoke", "--models", "tiny", "--judges", "tiny", "--out", run1, "--cache", cache)
	if !strings.Contains(r.stdout, "meaningless") {
		t.Errorf("no tiny-model warning in the summary:\n%s", r.stdout)
	}
	man, recs, err := engine.ReadRun(run1)
	if err != nil {
		t.Fatal(err)
	}
	if man.Status != "complete" || len(man.Models) != 1 || !strings.HasPrefix(man.Models[0].Name, "tiny") ||
		len(man.Models[0].Digest) != 64 || !man.TinyModel || man.Server.Version == "" {
		t.Fatalf("manifest: %+v", man)
	}
	if len(recs) != 5 {
		t.Fatalf("%d records, want 5", len(recs))
	}
	scored := 0
	for _, rec := range recs {
		var d struct {
			Judgements []struct {
				Scored  bool `json:"scored"`
				Verdict *struct {
					Score int `json:"score"`
				} `json:"verdict"`
			} `json:"judgements"`
		}
		json.Unmarshal(rec.Data, &d)
		for _, j := range d.Judgements {
			if j.Scored && j.Verdict != nil && j.Verdict.Score >= 1 && j.Verdict.Score <= 5 {
				scored++
			}
		}
		if rec.Calls[0].Digest != man.Models[0].Digest || rec.Calls[0].EvalTokens == 0 {
			t.Fatalf("call log lacks digest or token counts: %+v", rec.Calls[0])
		}
	}
	if scored == 0 {
		t.Fatal("no judge score decoded from schema-constrained output")
	}
	t.Logf("schema-constrained judge: %d of 5 verdicts scored", scored)

	// Rerun: served entirely from the cache, identical records.
	run2 := filepath.Join(work, "run2")
	mustHalu(t, srv.Host, "run", "smoke", "--models", "tiny", "--judges", "tiny", "--out", run2, "--cache", cache)
	m2, _ := rundir.ReadManifest(run2)
	// Every call of the first run (5 generations, 5 judgements, and any
	// judge-card retest) is a hit.
	if all := man.Counts.ModelCalls + man.Counts.CacheHits; m2.Counts.ModelCalls != 0 || m2.Counts.CacheHits != all || all < 10 {
		t.Fatalf("rerun counts %+v, want 0 model calls and %d hits", m2.Counts, all)
	}
	if strings.Join(sortedLines(t, filepath.Join(run1, "records.jsonl")), "\n") != strings.Join(sortedLines(t, filepath.Join(run2, "records.jsonl")), "\n") {
		t.Fatal("rerun records differ")
	}

	// A free-text judge (no schema): the random model's reply does not
	// parse, is retried with a repair turn, then recorded unscored; a run
	// whose every judgement went so measured nothing, and says so (exit 4).
	run3 := filepath.Join(work, "run3")
	r = halu(t, srv.Host, "run", "smoke", "--models", "tiny", "--judges", "tiny", "--judge-format", "text", "--out", run3, "--cache", cache)
	m3, recs3, _ := engine.ReadRun(run3)
	if m3.Counts.JudgeFailures == 0 || !strings.Contains(r.stdout, "unscored") || (r.code != 0 && (r.code != 4 || !strings.Contains(r.stderr, "measured nothing"))) {
		t.Fatalf("no judge failures counted, or exit %d: %+v\n%s\n%s", r.code, m3.Counts, r.stdout, r.stderr)
	}
	f := recs3[0].Failures
	if len(f) != 1 || len(f[0].Raw) != 2 || f[0].Reason == "" { // the reply and one repair turn
		t.Fatalf("failure not recorded with raw replies: %+v", f)
	}
}

// startRun starts a smoke run in the background and returns when records
// has at least n lines.
func startRun(t *testing.T, host, dir string, n int, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(haluBin, append([]string{"--ollama", host, "--retries", "2", "run", "smoke", "--out", dir}, args...)...)
	var se bytes.Buffer
	cmd.Stderr = &se
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		if lines(filepath.Join(dir, "records.jsonl")) >= n {
			return cmd
		}
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Kill()
	t.Fatalf("run did not reach %d records: %s", n, se.String())
	return nil
}

func lines(path string) int {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	n := 0
	s := bufio.NewScanner(f)
	for s.Scan() {
		n++
	}
	return n
}

// TestKillAndResume: kill -9 mid-run, then --resume: every item exactly once.
func TestKillAndResume(t *testing.T) {
	srv := server(t, t.TempDir())
	names := []string{"ta", "tb", "tc"}
	importTiny(t, srv.Host, "1", names...)
	work := t.TempDir()
	dir := filepath.Join(work, "run")
	args := []string{"--models", strings.Join(names, ","), "--judges", "ta", "--max-tokens", "200", "--cache", filepath.Join(work, "cache")}
	cmd := startRun(t, srv.Host, dir, 2, args...)
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	before := lines(filepath.Join(dir, "records.jsonl"))
	if before >= 15 {
		t.Skip("run finished before the kill")
	}
	r := mustHalu(t, srv.Host, "run", "--resume", dir, "--cache", filepath.Join(work, "cache"))
	items := countItems(t, dir)
	if len(items) != 15 {
		t.Fatalf("%d items after resume, want 15\n%s", len(items), r.stderr)
	}
	for id, n := range items {
		if n != 1 {
			t.Fatalf("item %s recorded %d times", id, n)
		}
	}
	if lines(filepath.Join(dir, "records.jsonl")) != 15 {
		t.Fatal("duplicate lines")
	}
	t.Logf("killed after %d of 15 records; resume completed the rest", before)
}

// TestServerStopsMidRun: calls retry, then the run stops with a clear
// message; a restarted server and --resume complete it.
func TestServerStopsMidRun(t *testing.T) {
	models := t.TempDir()
	srv := server(t, models)
	names := []string{"ta", "tb", "tc"}
	importTiny(t, srv.Host, "1", names...)
	work := t.TempDir()
	dir := filepath.Join(work, "run")
	cache := filepath.Join(work, "cache")
	args := []string{"--models", strings.Join(names, ","), "--judges", "ta", "--max-tokens", "200", "--cache", cache}
	cmd := startRun(t, srv.Host, dir, 2, args...)
	var se bytes.Buffer
	cmd.Stderr = nil
	srv.Stop()
	err := cmd.Wait()
	_ = se
	if err == nil {
		if lines(filepath.Join(dir, "records.jsonl")) == 15 {
			t.Skip("run finished before the server stopped")
		}
		t.Fatal("run succeeded with the server gone")
	}
	r := halu(t, srv.Host, "run", "--resume", dir, "--cache", cache)
	if r.code == 0 || !strings.Contains(r.stderr, "is the server running") {
		t.Fatalf("resume against a stopped server: exit %d, stderr %s", r.code, r.stderr)
	}
	srv2 := server(t, models)
	mustHalu(t, srv2.Host, "run", "--resume", dir, "--cache", cache)
	items := countItems(t, dir)
	if len(items) != 15 {
		t.Fatalf("%d items after resume, want 15", len(items))
	}
	for id, n := range items {
		if n != 1 {
			t.Fatalf("item %s recorded %d times", id, n)
		}
	}
}

// TestServerStopsMidRunMessage checks the message a run prints when the
// server disappears while it is working.
func TestServerStopsMidRunMessage(t *testing.T) {
	models := t.TempDir()
	srv := server(t, models)
	importTiny(t, srv.Host, "1", "ta", "tb")
	work := t.TempDir()
	dir := filepath.Join(work, "run")
	cmd := exec.Command(haluBin, "--ollama", srv.Host, "--retries", "2", "run", "smoke", "--out", dir,
		"--models", "ta,tb", "--judges", "ta", "--max-tokens", "200", "--cache", filepath.Join(work, "cache"))
	var se bytes.Buffer
	cmd.Stderr = &se
	cmd.Start()
	for lines(filepath.Join(dir, "records.jsonl")) < 1 {
		time.Sleep(20 * time.Millisecond)
	}
	srv.Stop()
	err := cmd.Wait()
	if lines(filepath.Join(dir, "records.jsonl")) == 10 {
		t.Skip("run finished before the server stopped")
	}
	// A call cut by the stop finds nothing listening: the server went
	// away under it, said at once (no retry: it is not coming back); a
	// call begun after it finds the server unreachable, after retries.
	out := se.String()
	wentAway := strings.Contains(out, "went away during this call") && !strings.Contains(out, "retrying")
	unreachable := strings.Contains(out, "retrying") && strings.Contains(out, "unreachable")
	if err == nil || !(wentAway || unreachable) || !strings.Contains(out, "--resume") {
		t.Fatalf("err %v, stderr:\n%s", err, out)
	}
}

// TestCachedRerunWithNoServer: a finished run repeated into a new
// directory with the server stopped works from the cache alone — no call,
// the same records, the manifest saying offline — where it used to exit 1
// after its connection retries, leaving a directory holding only a lock.
func TestCachedRerunWithNoServer(t *testing.T) {
	srv := server(t, t.TempDir())
	importTiny(t, srv.Host, "1", "tiny")
	work := t.TempDir()
	args := []string{"run", "smoke", "--models", "tiny", "--judges", "tiny", "--limit", "3", "--max-tokens", "16", "--judge-format", "json",
		"--cache", filepath.Join(work, "cache")}
	mustHalu(t, srv.Host, append(args, "--out", filepath.Join(work, "a"))...)
	host := srv.Host
	srv.Stop()
	start := time.Now()
	r := mustHalu(t, host, append(args, "--out", filepath.Join(work, "b"))...)
	t.Logf("offline rerun of 3 items: %s", time.Since(start))
	m, recs, err := engine.ReadRun(filepath.Join(work, "b"))
	if err != nil {
		t.Fatal(err)
	}
	_, recsA, _ := engine.ReadRun(filepath.Join(work, "a"))
	if !m.Server.Offline || m.Counts.ModelCalls != 0 || len(recs) != len(recsA) {
		t.Fatalf("offline %v, %d calls, %d records (first run %d)\n%s", m.Server.Offline, m.Counts.ModelCalls, len(recs), len(recsA), r.stderr)
	}
	for i := range recs {
		if string(recs[i].Data) != string(recsA[i].Data) {
			t.Errorf("record %d differs offline", i)
		}
	}
	// Nothing cached for another model: refused, and no directory left.
	bad := halu(t, host, "run", "smoke", "--models", "other", "--judges", "tiny", "--limit", "1", "--cache", filepath.Join(work, "cache"), "--out", filepath.Join(work, "c"))
	if bad.code == 0 {
		t.Fatal("a run of a model the cache never saw ran with no server")
	}
	if _, err := os.Stat(filepath.Join(work, "c")); err == nil {
		t.Errorf("the refused run left its directory")
	}
}
