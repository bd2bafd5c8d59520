//go:build e2e

package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"halu/runner/engine"
	"halu/runner/rundir"
	"halu/runner/slurm"
	"halu/runner/summary"
)

// cluster is a real single-node Slurm cluster (munged, slurmctld, slurmd
// from Debian's packages) started by scripts/slurm-local.sh, with its own
// configuration, state and ports in a temporary directory; SLURM_CONF
// points the test's commands at it.
type cluster struct{ dir string }

// startCluster starts the cluster and stops it when the test ends. It
// skips, with the reason, where Slurm cannot be started (not installed,
// not root); under CI (which installs the packages as root) it fails.
func startCluster(t *testing.T) *cluster {
	t.Helper()
	d, err := os.MkdirTemp("", "halu-slurm-")
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{dir: d}
	script := filepath.Join("..", "scripts", "slurm-local.sh")
	out, err := exec.Command(script, "start", d).Output()
	if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 3 {
		os.RemoveAll(d)
		if os.Getenv("CI") != "" {
			t.Fatalf("slurm: %s", ee.Stderr)
		}
		t.Skipf("slurm: %s", ee.Stderr)
	}
	t.Cleanup(func() {
		exec.Command(script, "stop", d).Run()
		os.RemoveAll(d)
	})
	if err != nil {
		c.logs(t)
		t.Fatalf("slurm: %s start: %v", script, err)
	}
	conf, ok := strings.CutPrefix(strings.TrimSpace(string(out)), "export SLURM_CONF=")
	if !ok {
		t.Fatalf("slurm: %s said %q", script, out)
	}
	t.Setenv("SLURM_CONF", conf)
	return c
}

func (c *cluster) logs(t *testing.T) {
	for _, f := range []string{"slurmctld.log", "slurmd.log", "munged.log"} {
		b, _ := os.ReadFile(filepath.Join(c.dir, "log", f))
		t.Logf("%s:\n%s", f, lastLines(string(b), 20))
	}
}

// sameTables checks that the merged run's tables equal the unsharded
// run's (what they measured) and that both hold the same records; it
// returns the number of tables and the merged records.
func sameTables(t *testing.T, whole, merged string) (int, []rundir.Record) {
	t.Helper()
	sw, _ := summary.ReadSummary(whole)
	sm, err := summary.ReadSummary(merged)
	if err != nil || len(sw.Tables) == 0 {
		t.Fatalf("summaries: %v", err)
	}
	for i := range sw.Tables {
		if measured(sw.Tables[i]) != measured(sm.Tables[i]) {
			t.Errorf("table %q differs:\nwhole  %v\nmerged %v", sw.Tables[i].Title, sw.Tables[i].Rows, sm.Tables[i].Rows)
		}
	}
	_, rw, _ := engine.ReadRun(whole)
	_, rm, _ := engine.ReadRun(merged)
	if len(rw) != len(rm) {
		t.Errorf("%d records unsharded, %d merged", len(rw), len(rm))
	}
	return len(sw.Tables), rm
}

// inQueue reports whether squeue still lists job (an array task: 12_2).
func inQueue(job string) bool {
	out, _ := exec.Command("squeue", "-h", "-r", "-j", job, "-o", "%i").Output()
	return strings.TrimSpace(string(out)) != ""
}

// waitForJob waits until done holds, failing at once when job has left
// the queue and done still does not hold. The queue is asked first and
// done read after: a job that finishes between the two reads has written
// what it wrote before squeue stops listing it, so its result is seen.
func waitForJob(t *testing.T, what, job string, d time.Duration, done func() bool, onFail func()) {
	t.Helper()
	waitFor(t, what, d, func() bool {
		gone := !inQueue(job)
		if done() {
			return true
		}
		if gone {
			onFail()
			t.Fatalf("slurm: job %s left the queue before %s", job, what)
		}
		return false
	}, onFail)
}

// complete reports whether the run directory's manifest says complete.
func complete(dir string) bool {
	m, err := rundir.ReadManifest(dir)
	return err == nil && m.Status == "complete"
}

// slowProxy passes requests to host, holding each model call (chat,
// generate, embed) back by the duration delay holds (nanoseconds; 0: not
// at all) and counting those it passed on. Streamed replies pass as they
// come.
func slowProxy(t *testing.T, host string) (string, *atomic.Int64, *atomic.Int64) {
	t.Helper()
	up, _ := url.Parse("http://" + host)
	var delay, calls atomic.Int64
	rp := httputil.NewSingleHostReverseProxy(up)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/chat" || r.URL.Path == "/api/embed" || r.URL.Path == "/api/generate" {
			time.Sleep(time.Duration(delay.Load()))
			calls.Add(1)
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close)
	return strings.TrimPrefix(proxy.URL, "http://"), &delay, &calls
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, d time.Duration, cond func() bool, onFail func()) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			onFail()
			t.Fatalf("slurm: timed out waiting for %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestSlurmArrayEqualsOneRun submits a 3-shard hic run to a real
// single-node cluster as a job array and a merge job, cancels shard 2's
// task when it has recorded an item (status says why its attempt ended),
// tells shard 3's task its time limit is near (it requeues itself and
// resumes), resubmits shard 2 from a shell with none of the submission's
// environment — it resumes its shard, running no item twice — and finds
// the merged run's tables equal to the same run made unsharded.
func TestSlurmArrayEqualsOneRun(t *testing.T) {
	c := startCluster(t)
	models := t.TempDir()
	srv := server(t, models)
	importTiny(t, srv.Host, "1", "ta")
	work := t.TempDir()
	args := []string{"hic", "--models", "ta", "--judges", "ta", "--embed-model", "ta", "--questions", "1,11,21,31,41,51,61,71,81,91,101,111", "--answers", "2",
		"--strategy", "scp,dhp", "--judge-format", "json", "--max-tokens", "40", "--judge-max-tokens", "160"}
	whole := filepath.Join(work, "whole")
	mustHalu(t, srv.Host, append([]string{"--cache", filepath.Join(work, "c0"), "run"}, append(args, "--out", whole)...)...)

	sub := filepath.Join(work, "sub")
	// The shards reach the server through a proxy that counts the model
	// calls and can hold each back: shard 3's three items take the tiny
	// model about two seconds, and it must still be running when it is
	// told its time limit is near, once it has kept something (its items
	// run at once and record together at its end, their embeddings
	// gathered into one request: waiting for a record, the signal found
	// the task gone).
	host, delay, calls := slowProxy(t, srv.Host)
	// One task at a time (each asks every CPU of the node): shard 2 is
	// cancelled while it runs, with shards 1 and 3 undisturbed.
	r := mustHalu(t, host, append([]string{"slurm", "submit", "--shards", "3", "--out", sub, "--cpus-per-task", fmt.Sprint(runtime.NumCPU()), "--"},
		append(args, "--cache", filepath.Join(work, "c1"))...)...)
	t.Log(strings.TrimSpace(r.stdout))
	jobs, err := slurm.ReadJobs(sub)
	if err != nil {
		t.Fatal(err)
	}
	showOutput := func() {
		c.logs(t)
		for _, f := range []string{"shard-1.out", "shard-2.out", "shard-3.out", "merge.out"} {
			b, _ := os.ReadFile(filepath.Join(sub, "slurm", f))
			t.Logf("%s:\n%s", f, lastLines(string(b), 15))
		}
		out, _ := exec.Command("squeue", "-r").CombinedOutput()
		t.Logf("squeue:\n%s", out)
	}
	shard2 := slurm.ShardDir(sub, 2)
	recs2 := filepath.Join(shard2, rundir.RecordsFile)
	task2, _ := jobs.Last(2)
	waitForJob(t, "shard 2's first record", jobs.Submissions[0].Array, 10*time.Minute, func() bool { return lines(recs2) >= 1 }, showOutput)
	if out, err := exec.Command("scancel", task2).CombinedOutput(); err != nil {
		t.Fatalf("scancel %s: %v %s", task2, err, out)
	}
	waitFor(t, "task "+task2+" to leave the queue", 2*time.Minute, func() bool { return !inQueue(task2) }, showOutput)
	delay.Store(int64(400 * time.Millisecond)) // shard 3: seconds between its first calls and its end
	base := calls.Load()
	// Shard 3 is told its time limit is near as Slurm tells it (USR1 to
	// the batch shell, --signal=B:USR1): it stops its run, requeues
	// itself and resumes its shard — no command typed for it.
	task3, _ := jobs.Last(3)
	shard3 := slurm.ShardDir(sub, 3)
	waitFor(t, "shard 3's first model calls", 10*time.Minute, func() bool { return calls.Load()-base >= 3 }, showOutput)
	if out, err := exec.Command("scancel", "--batch", "--signal=USR1", task3).CombinedOutput(); err != nil {
		t.Fatalf("scancel --signal=USR1 %s: %v %s", task3, err, out)
	}
	waitFor(t, "shard 3, requeued, to finish", 10*time.Minute, func() bool {
		m, err := rundir.ReadManifest(shard3)
		return err == nil && m.Status == "complete" && !inQueue(task3)
	}, showOutput)
	delay.Store(0)
	if m, _ := rundir.ReadManifest(shard3); m == nil || len(m.Sessions) < 2 {
		showOutput()
		t.Errorf("shard 3: want 2 sessions (stopped near its time limit, then requeued), got %+v", m)
	}
	if b, _ := os.ReadFile(filepath.Join(sub, "slurm", "shard-3.out")); strings.Count(string(b), slurm.AttemptMark) < 2 || !strings.Contains(string(b), "near its time limit: its run stopped and the task requeued") {
		t.Errorf("shard 3's log does not show two attempts and the requeue:\n%s", lastLines(string(b), 20))
	}
	for id, n := range countItems(t, shard3) {
		if n != 1 {
			t.Errorf("shard 3 ran item %s %d times", id, n)
		}
	}
	before, _ := os.ReadFile(recs2)
	m2, _ := rundir.ReadManifest(shard2)
	if m2 == nil || m2.Status == "complete" || m2.Counts.Items <= lines(recs2) {
		t.Fatalf("shard 2 after scancel: %+v, %d records: it was not cut short", m2, lines(recs2))
	}

	st := mustHalu(t, srv.Host, "slurm", "status", sub)
	t.Logf("status:\n%s", st.stdout)
	var line2 string
	for _, l := range strings.Split(st.stdout, "\n") {
		if strings.HasPrefix(l, "2/3 ") {
			line2 = l
		}
	}
	if !strings.Contains(line2, "interrupted") || !strings.Contains(line2, "not in the queue") || !strings.Contains(st.stdout, "halu slurm resubmit") {
		t.Errorf("status does not show shard 2 interrupted and out of the queue, with the command that resubmits it")
	}
	if _, why, _ := strings.Cut(st.stdout, "shard 2/3, last attempt ("+task2+"): "); !strings.Contains(why, "CANCELLED") && !strings.HasPrefix(why, "halu: run interrupted") {
		t.Errorf("status does not say why shard 2's last attempt ended (cancelled: its run interrupted)")
	}
	// Resubmitted from a shell with none of the submission's environment
	// (no OLLAMA_HOST, no HALU_NUM_THREAD): the scripts carry it.
	resub := exec.Command(haluBin, "slurm", "resubmit", sub)
	resub.Env = []string{"PATH=" + os.Getenv("PATH"), "SLURM_CONF=" + os.Getenv("SLURM_CONF")}
	rsOut, err := resub.CombinedOutput()
	t.Log(strings.TrimSpace(string(rsOut)))
	if err != nil || !strings.Contains(string(rsOut), "shards [2] resubmitted") {
		t.Errorf("resubmit from an empty environment: %v: %s", err, rsOut)
	}
	merged := slurm.MergedDir(sub)
	resubmitted, _ := slurm.ReadJobs(sub)
	mergeJob := resubmitted.Submissions[len(resubmitted.Submissions)-1].Merge
	waitForJob(t, "the merged run", mergeJob, 10*time.Minute, func() bool { return complete(merged) }, showOutput)

	// Shard 2 resumed: what it recorded before the cancel is kept byte for
	// byte, and each of its items is recorded once.
	after, _ := os.ReadFile(recs2)
	if !strings.HasPrefix(string(after), string(before)) {
		t.Errorf("shard 2's records before the cancel were rewritten")
	}
	for id, n := range countItems(t, shard2) {
		if n != 1 {
			t.Errorf("shard 2 ran item %s %d times", id, n)
		}
	}
	if m, _ := rundir.ReadManifest(shard2); m == nil || len(m.Sessions) != 2 {
		t.Errorf("shard 2: want 2 sessions (the cancelled task, the resumed one)")
	}
	tables, rm := sameTables(t, whole, merged)
	t.Logf("%d tables equal; %d items in 3 shards, shard 2 cancelled after %d records and resumed", tables, len(rm), strings.Count(string(before), "\n"))

	// Each task with its own Ollama on its node (--private-ollama), the
	// models read from the directory the nodes share.
	priv := filepath.Join(work, "private")
	mustHalu(t, srv.Host, "slurm", "submit", "--shards", "2", "--out", priv, "--private-ollama", ollamaBin, "--private-ollama-models", models, "--",
		"smoke", "--models", "ta", "--judges", "ta", "--limit", "3", "--max-tokens", "20", "--cache", filepath.Join(work, "c2"))
	pj, _ := slurm.ReadJobs(priv)
	waitForJob(t, "the private-Ollama run's merge", pj.Submissions[0].Merge, 5*time.Minute, func() bool { return complete(slurm.MergedDir(priv)) }, func() {
		for _, f := range []string{"shard-1.out", "shard-2.out", "merge.out", "ollama-1.log"} {
			b, _ := os.ReadFile(filepath.Join(priv, "slurm", f))
			t.Logf("%s:\n%s", f, lastLines(string(b), 15))
		}
	})
	for i := 1; i <= 2; i++ {
		out, _ := os.ReadFile(filepath.Join(priv, "slurm", fmt.Sprintf("shard-%d.out", i)))
		if !strings.Contains(string(out), "serving on 127.0.0.1:") {
			t.Errorf("shard %d did not start its own Ollama:\n%s", i, lastLines(string(out), 10))
		}
	}
}

// TestSlurmTaskRequeuesAtItsTimeLimit gives a one-shard hic run (100
// questions) a task time limit (2 minutes) shorter than its work: Slurm's
// own clock tells the task its limit is near (--signal=B:USR1@40, sent by
// slurmctld's periodic check, up to 30 s early), the task stops its run,
// requeues itself and resumes — as often as the shard needs — and the
// merged run's tables equal the same run made unsharded. No command is
// typed after submit.
func TestSlurmTaskRequeuesAtItsTimeLimit(t *testing.T) {
	c := startCluster(t)
	models := t.TempDir()
	srv := server(t, models)
	importTiny(t, srv.Host, "1", "ta")
	work := t.TempDir()
	var qs []string
	for q := 1; q <= 100; q++ {
		qs = append(qs, fmt.Sprint(q))
	}
	args := []string{"hic", "--models", "ta", "--judges", "ta", "--embed-model", "ta", "--questions", strings.Join(qs, ","), "--answers", "2",
		"--strategy", "scp,dhp", "--judge-format", "json", "--max-tokens", "40", "--judge-max-tokens", "160"}
	// The cache the tasks fill: the unsharded run is made from it
	// afterwards (the same replies, in seconds), so the comparison is of
	// what sharding, stopping and resuming did to the records.
	cache := filepath.Join(work, "c1")
	sub := filepath.Join(work, "sub")
	began := time.Now()
	r := mustHalu(t, srv.Host, append([]string{"slurm", "submit", "--shards", "1", "--time", "2", "--out", sub, "--cpus-per-task", fmt.Sprint(runtime.NumCPU()), "--"},
		append(args, "--cache", cache)...)...)
	t.Log(strings.TrimSpace(r.stdout))
	jobs, err := slurm.ReadJobs(sub)
	if err != nil {
		t.Fatal(err)
	}
	log1 := filepath.Join(sub, "slurm", "shard-1.out")
	showOutput := func() {
		c.logs(t)
		for _, f := range []string{"shard-1.out", "merge.out"} {
			b, _ := os.ReadFile(filepath.Join(sub, "slurm", f))
			t.Logf("%s:\n%s", f, lastLines(string(b), 30))
		}
		out, _ := exec.Command("squeue", "-r").CombinedOutput()
		t.Logf("squeue:\n%s", out)
	}
	merged := slurm.MergedDir(sub)
	shard := slurm.ShardDir(sub, 1)
	waitForJob(t, "shard 1 complete", jobs.Submissions[0].Array, 15*time.Minute, func() bool { return complete(shard) }, showOutput)
	waitForJob(t, "the merged run", jobs.Submissions[0].Merge, 5*time.Minute, func() bool { return complete(merged) }, showOutput)
	b, _ := os.ReadFile(log1)
	attempts := strings.Count(string(b), slurm.AttemptMark)
	t.Logf("the submission took %s: %d attempts", time.Since(began).Round(time.Second), attempts)
	whole := filepath.Join(work, "whole")
	mustHalu(t, srv.Host, append([]string{"--cache", cache, "run"}, append(args, "--out", whole)...)...)
	m, _ := rundir.ReadManifest(shard)
	if attempts < 2 || !strings.Contains(string(b), "near its time limit: its run stopped and the task requeued") || m == nil || len(m.Sessions) != attempts {
		showOutput()
		t.Fatalf("shard 1: want at least 2 attempts, each a session, the first ended by the requeue near the time limit; %d attempts, manifest %+v", attempts, m)
	}
	if strings.Contains(string(b), "DUE TO TIME LIMIT") {
		t.Errorf("an attempt reached its time limit instead of requeueing itself before it:\n%s", lastLines(string(b), 30))
	}
	for id, n := range countItems(t, shard) {
		if n != 1 {
			t.Errorf("shard 1 ran item %s %d times", id, n)
		}
	}
	tables, rm := sameTables(t, whole, merged)
	t.Logf("%d tables equal; %d items", tables, len(rm))
}
