package slurm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"halu/runner/rundir"
)

// The scripts for given options, line by line.
func TestScripts(t *testing.T) {
	o := Options{Halu: "/opt/halu/bin/halu", HaluSHA256: "ab12", Dir: "/shared/runs/hic 7b", Suite: "hic", Args: []string{"--models", "qwen2.5:7b", "--judges", "a,b", "--note", "it's"},
		Shards: 4, Partition: "gpu", Account: "lab", Time: "4:00:00", GPUsPerTask: "1", CPUsPerTask: 8, Extra: []string{"--mem=16G"},
		Env: []string{"HALU_NUM_THREAD=8", "OLLAMA_HOST=http://gpu-7:11434"}, NeedEnv: []string{"HALU_API_KEY"}}
	want := `#!/bin/bash
#SBATCH --job-name=halu-hic
#SBATCH --array=1-4
#SBATCH --output='/shared/runs/hic 7b/slurm/shard-%a.out'
#SBATCH --open-mode=append
#SBATCH --requeue
#SBATCH --signal=B:USR1@180
#SBATCH --partition=gpu
#SBATCH --account=lab
#SBATCH --time=4:00:00
#SBATCH --gpus-per-task=1
#SBATCH --cpus-per-task=8
#SBATCH --mem=16G
# Written by halu slurm submit. Task I runs shard I/4 of the run below into
# /shared/runs/hic 7b/shards/I; run again (halu slurm resubmit), it resumes its shard.
set -euo pipefail
i="$SLURM_ARRAY_TASK_ID"
echo "== halu slurm attempt: shard $i, job ${SLURM_JOB_ID:-?} on $(hostname) at $(date -u +%Y-%m-%dT%H:%M:%SZ)"
export HALU_NUM_THREAD=8
export OLLAMA_HOST=http://gpu-7:11434
[ -n "${HALU_API_KEY:-}" ] || { echo 'halu slurm: HALU_API_KEY was set when the run was submitted and is not in this task'\''s environment: export it in the shell that runs halu slurm resubmit (halu writes no secret into a script)' >&2; exit 2; }
echo 'ab12  /opt/halu/bin/halu' | sha256sum --check --status || { echo 'halu slurm: /opt/halu/bin/halu is not the halu build submitted (sha256 ab12): submit again with this build' >&2; exit 2; }
shard='/shared/runs/hic 7b/shards'/"$i"
if [ -e "$shard/manifest.json" ]; then where=(--resume "$shard"); else where=(--out "$shard"); fi
rc=0
progress() { /opt/halu/bin/halu slurm progress "$shard" 2>/dev/null || echo 0; }
begun=$(progress)
/opt/halu/bin/halu run hic --models qwen2.5:7b --judges a,b --note 'it'\''s' --shard "$i/4" "${where[@]}" &
pid=$!
requeue() { kill -TERM "$pid" 2>/dev/null || true; wait "$pid" || true; if [ "$(progress)" -le "$begun" ]; then echo "halu slurm: shard $i near its time limit before it recorded an item or kept a call: not requeued (give the tasks a longer --time)" >&2; exit 3; fi; if scontrol requeue "${SLURM_ARRAY_JOB_ID:-$SLURM_JOB_ID}_$i"; then echo "halu slurm: shard $i near its time limit: its run stopped and the task requeued (it resumes the shard)" >&2; exit 0; fi; echo "halu slurm: shard $i near its time limit: its run stopped, and the scheduler refused to requeue the task: halu slurm resubmit resumes it" >&2; exit 3; }
stop() { kill -TERM "$pid" 2>/dev/null || true; wait "$pid" || true; exit 143; }
trap requeue USR1
trap stop TERM
wait "$pid" || rc=$?
if [ "$rc" -eq 4 ]; then echo "halu slurm: shard $i finished and measured nothing in part (above); the merge says what the whole run measured" >&2; exit 0; fi
exit "$rc"
`
	if got := o.Array(); got != want {
		t.Errorf("array script:\n%s\nwant:\n%s", diffLines(got, want), want)
	}
	wantMerge := `#!/bin/bash
#SBATCH --job-name=halu-hic-merge
#SBATCH --output='/shared/runs/hic 7b/slurm/merge.out'
#SBATCH --open-mode=append
#SBATCH --partition=gpu
#SBATCH --account=lab
#SBATCH --time=4:00:00
# Written by halu slurm submit: joins the shards once every task succeeded.
set -euo pipefail
echo "== halu slurm attempt: merge, job ${SLURM_JOB_ID:-?} on $(hostname) at $(date -u +%Y-%m-%dT%H:%M:%SZ)"
export HALU_NUM_THREAD=8
export OLLAMA_HOST=http://gpu-7:11434
[ -n "${HALU_API_KEY:-}" ] || { echo 'halu slurm: HALU_API_KEY was set when the run was submitted and is not in this task'\''s environment: export it in the shell that runs halu slurm resubmit (halu writes no secret into a script)' >&2; exit 2; }
echo 'ab12  /opt/halu/bin/halu' | sha256sum --check --status || { echo 'halu slurm: /opt/halu/bin/halu is not the halu build submitted (sha256 ab12): submit again with this build' >&2; exit 2; }
exec /opt/halu/bin/halu merge '/shared/runs/hic 7b/shards/1' '/shared/runs/hic 7b/shards/2' '/shared/runs/hic 7b/shards/3' '/shared/runs/hic 7b/shards/4' --out '/shared/runs/hic 7b/merged'
`
	if got := o.Merge(); got != wantMerge {
		t.Errorf("merge script:\n%s", diffLines(got, wantMerge))
	}
	// Each task's own Ollama: the run goes through with-ollama.
	o = Options{Halu: "/h", Dir: "/d", Suite: "smoke", Shards: 2, OllamaBin: "/o/ollama", OllamaModels: "/m"}
	var last string
	for _, l := range strings.Split(o.Array(), "\n") {
		if strings.Contains(l, " run smoke ") {
			last = l + "\n"
		}
	}
	if want := `/h with-ollama --bin /o/ollama --models /m --log /d/slurm/ollama-"$i".log -- /h run smoke --shard "$i/2" "${where[@]}" &` + "\n"; last != want {
		t.Errorf("with-ollama line:\n%s\nwant\n%s", last, want)
	}
}

func diffLines(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	var out []string
	for i := range max(len(g), len(w)) {
		var a, b string
		if i < len(g) {
			a = g[i]
		}
		if i < len(w) {
			b = w[i]
		}
		if a != b {
			out = append(out, fmt.Sprintf("line %d: got  %q\n         want %q", i+1, a, b))
		}
	}
	return strings.Join(out, "\n")
}

func TestCheck(t *testing.T) {
	good := Options{Halu: "/h", Dir: "/d", Suite: "hic", Shards: 3}
	for _, tc := range []struct {
		change func(*Options)
		want   string
	}{
		{func(o *Options) { o.Shards = 0 }, "--shards 0"},
		{func(o *Options) { o.Dir = "runs/x" }, "absolute"},
		{func(o *Options) { o.Suite = "" }, "name the suite"},
		{func(o *Options) { o.Args = []string{"--models", "a", "--out", "x"} }, "hold --out"},
		{func(o *Options) { o.Args = []string{"--shard=1/2"} }, "hold --shard"},
		{func(o *Options) { o.Args = []string{"--resume", "x"} }, "hold --resume"},
		{func(o *Options) { o.Extra = []string{"mem=1G"} }, "want one sbatch option"},
		{func(o *Options) { o.Extra = []string{"--mem=1G\n#SBATCH --x"} }, "want one sbatch option"},
		{func(o *Options) { o.OllamaModels = "/m" }, "needs --private-ollama"},
		{func(o *Options) {}, ""},
	} {
		o := good
		tc.change(&o)
		err := o.Check()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: %v, want %q", o, err, tc.want)
		}
	}
}

// fakeCluster answers sbatch with job ids in turn and squeue with what the
// test puts in queue; it records every command.
type fakeCluster struct {
	next  int
	queue map[string]string // job id → "STATE|reason"
	ran   []string
	down  bool // the controller does not answer
}

func (f *fakeCluster) cluster() Cluster {
	return Cluster{Run: func(_ context.Context, name string, args ...string) ([]byte, error) {
		f.ran = append(f.ran, name+" "+strings.Join(args, " "))
		switch name {
		case "sbatch":
			f.next++
			return []byte(fmt.Sprintf("%d\n", 100+f.next)), nil
		case "squeue":
			if f.down {
				return nil, fmt.Errorf("squeue: slurm_load_jobs error: Unable to contact slurm controller (connect failure)")
			}
			var out []string
			for id, s := range f.queue {
				out = append(out, id+"|"+s)
			}
			return []byte(strings.Join(out, "\n")), nil
		case "scancel":
			return nil, nil
		case "sacct":
			return nil, fmt.Errorf("sacct: Slurm accounting storage is disabled")
		}
		return nil, fmt.Errorf("unexpected %s", name)
	}}
}

// writeShard leaves shard i of dir as a run of status with done of items
// recorded.
func writeShard(t *testing.T, dir string, i int, status string, done, items int) {
	d := ShardDir(dir, i)
	os.MkdirAll(d, 0o755)
	if err := rundir.WriteManifest(d, &rundir.Manifest{Suite: "hic", Status: status, Counts: rundir.Counts{Items: items}}); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for k := range done {
		fmt.Fprintf(&b, `{"format":%d,"suite":"hic","item":"i%d-%d","data":{}}`+"\n", rundir.FormatVersion, i, k)
	}
	os.WriteFile(filepath.Join(d, rundir.RecordsFile), []byte(b.String()), 0o644)
}

// Submit sends the array, then the merge after it; resubmit sends again
// only the shards not complete and out of the queue, cancels the merge
// left waiting on the failed array, and refuses while a shard's task is
// still queued.
func TestSubmitStatusResubmit(t *testing.T) {
	dir := t.TempDir()
	f := &fakeCluster{queue: map[string]string{}}
	o := Options{Halu: "/h", Dir: dir, Suite: "hic", Shards: 3}
	j, err := Submit(context.Background(), f.cluster(), o)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"sbatch --parsable " + filepath.Join(dir, "slurm", ArrayScript), "sbatch --parsable --dependency=afterok:101 " + filepath.Join(dir, "slurm", MergeScript)}; strings.Join(f.ran, "\n") != strings.Join(want, "\n") {
		t.Errorf("commands:\n%s\nwant\n%s", strings.Join(f.ran, "\n"), strings.Join(want, "\n"))
	}
	if s := j.Submissions[0]; s.Array != "101" || s.Merge != "102" || len(s.Indices) != 3 {
		t.Errorf("submission %+v", s)
	}
	if _, err := Submit(context.Background(), f.cluster(), o); err == nil || !strings.Contains(err.Error(), "already holds a submission") {
		t.Errorf("a second submit into the directory: %v", err)
	}

	// Shard 1 complete, 2 cancelled half-way, 3 running; the merge waits.
	writeShard(t, dir, 1, "complete", 4, 4)
	writeShard(t, dir, 2, "interrupted", 1, 4)
	writeShard(t, dir, 3, "running", 2, 4)
	f.queue = map[string]string{"101_3": "RUNNING|None", "102": "PENDING|DependencyNeverSatisfied"}
	_, states, merge, err := States(context.Background(), f.cluster(), dir)
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprintf("%+v %v", states, merge)
	want := "[{I:1 Status:complete Done:4 Items:4 Job:101_1 Queue: Reason: Why: Failed:0} {I:2 Status:interrupted Done:1 Items:4 Job:101_2 Queue: Reason: Why: Failed:0} {I:3 Status:running Done:2 Items:4 Job:101_3 Queue:RUNNING Reason:None Why: Failed:0}] [102 PENDING DependencyNeverSatisfied]"
	if got != want {
		t.Errorf("states\n%s\nwant\n%s", got, want)
	}
	// Shard 2's log holds two attempts (appended, never replaced): the
	// state says why the last one ended, and how many items failed.
	os.WriteFile(filepath.Join(dir, "slurm", "shard-2.out"), []byte(AttemptMark+" shard 2, job 101 on n1 at 2026-11-29T07:00:00Z\n"+
		"hic · calls 3/~9 · 1/4 items\nhalu: run: model \"ta\" not found\n"+
		AttemptMark+" shard 2, job 104 on n1 at 2026-11-29T08:00:00Z\nhic · calls 5/~9 · 1/4 items\n"+
		"slurmstepd: error: *** JOB 104 ON n1 CANCELLED AT 2026-11-29T08:01:00 DUE TO TIME LIMIT ***\nTerminated\n"), 0o644)
	os.WriteFile(filepath.Join(ShardDir(dir, 2), rundir.ErrorsFile), []byte("{}\n{}\n"), 0o644)
	_, states, _, _ = States(context.Background(), f.cluster(), dir)
	if s := states[1]; s.Why != "slurmstepd: error: *** JOB 104 ON n1 CANCELLED AT 2026-11-29T08:01:00 DUE TO TIME LIMIT ***" || s.Failed != 2 {
		t.Errorf("shard 2's last attempt: %+v", s)
	}
	// The controller down: each shard as its run directory says.
	f.down = true
	_, states, _, err = States(context.Background(), f.cluster(), dir)
	var down *SchedulerError
	if !errors.As(err, &down) || len(states) != 3 || states[0].Status != "complete" || states[1].Done != 1 {
		t.Errorf("controller down: %v, %+v", err, states)
	}
	if _, _, err := Resubmit(context.Background(), f.cluster(), dir, nil); err == nil {
		t.Error("resubmit with the controller down")
	}
	f.down = false
	// Shard 2 runs again while shard 3 still runs: the new merge job
	// waits for both.
	f.ran = nil
	_, redo, err := Resubmit(context.Background(), f.cluster(), dir, nil)
	if want := strings.Join([]string{
		"squeue -h -r -j 101,102 -o %i|%T|%r",
		"scancel 102",
		"sbatch --parsable --array=2 " + filepath.Join(dir, "slurm", ArrayScript),
		"sbatch --parsable --dependency=afterok:103:101_3 " + filepath.Join(dir, "slurm", MergeScript),
	}, "\n"); err != nil || strings.Join(f.ran, "\n") != want || fmt.Sprint(redo) != "[2]" {
		t.Errorf("resubmit while shard 3 runs: %v, ran\n%s\nwant\n%s", err, strings.Join(f.ran, "\n"), want)
	}
	// Nothing more to run while shard 2 and 3 are in the queue.
	f.queue = map[string]string{"103_2": "RUNNING|None", "101_3": "RUNNING|None", "104": "PENDING|Dependency"}
	if _, _, err := Resubmit(context.Background(), f.cluster(), dir, nil); !errors.Is(err, ErrNothingToDo) || !strings.Contains(err.Error(), "queued or running (103_2, 101_3)") {
		t.Errorf("resubmit with every shard left in the queue: %v", err)
	}
	f.queue = map[string]string{"101_3": "RUNNING|None", "104": "PENDING|Dependency"}
	writeShard(t, dir, 2, "interrupted", 2, 4)
	delete(f.queue, "101_3")
	f.queue["104"] = "PENDING|DependencyNeverSatisfied"
	// Shard 3 was pre-empted too.
	writeShard(t, dir, 3, "interrupted", 2, 4)
	delete(f.queue, "101_3")
	f.ran = nil
	j, redo, err = Resubmit(context.Background(), f.cluster(), dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	want = strings.Join([]string{
		"squeue -h -r -j 101,102,103,104 -o %i|%T|%r",
		"scancel 104",
		"sbatch --parsable --array=2,3 " + filepath.Join(dir, "slurm", ArrayScript),
		"sbatch --parsable --dependency=afterok:105 " + filepath.Join(dir, "slurm", MergeScript),
	}, "\n")
	if strings.Join(f.ran, "\n") != want || fmt.Sprint(redo) != "[2 3]" {
		t.Errorf("resubmit ran\n%s\nwant\n%s (redo %v)", strings.Join(f.ran, "\n"), want, redo)
	}
	if last, _ := j.Last(2); last != "105_2" {
		t.Errorf("shard 2 last ran as %s", last)
	}
	if last, _ := j.Last(1); last != "101_1" {
		t.Errorf("shard 1 last ran as %s", last)
	}
	back, err := ReadJobs(dir)
	if err != nil || len(back.Submissions) != 3 || back.Options.Shards != 3 {
		t.Errorf("jobs.json read back: %+v %v", back, err)
	}
}

// The scripts run only the halu build submitted: the check line passes on
// the binary it was written for and stops a job (exit 2, saying why) once
// another build has replaced the file.
func TestScriptsRefuseAnotherBuild(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "halu")
	os.WriteFile(bin, []byte("build one"), 0o755)
	sum, err := rundir.HashFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	o := Options{Halu: bin, HaluSHA256: sum}
	line := o.checkBuild()[0]
	if out, err := exec.Command("bash", "-c", line).CombinedOutput(); err != nil {
		t.Fatalf("the submitted build refused: %v %s", err, out)
	}
	os.WriteFile(bin, []byte("build two"), 0o755)
	out, err := exec.Command("bash", "-c", line).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "is not the halu build submitted") {
		t.Errorf("another build: %v %s", err, out)
	}
}

// Hostile values in every flag halu writes into a script: refused before
// anything is written (a control character anywhere, a character an
// #SBATCH value's syntax has not, an sbatch option with a space), or
// quoted so that bash runs the script's one command with them as words.
// The scripts are run by bash: nothing the values hold is executed, and
// halu receives each argument as given.
func TestHostileValuesNeverRun(t *testing.T) {
	work := t.TempDir()
	pwned := filepath.Join(work, "pwned")
	inject := []string{"\n touch " + pwned, "\r touch " + pwned, "x\u0085touch " + pwned}
	fields := map[string]func(o *Options, v string){
		"--partition":     func(o *Options, v string) { o.Partition = v },
		"--account":       func(o *Options, v string) { o.Account = v },
		"--time":          func(o *Options, v string) { o.Time = v },
		"--gpus-per-task": func(o *Options, v string) { o.GPUsPerTask = v },
		"--out":           func(o *Options, v string) { o.Dir = filepath.Join(work, "sub"+v) },
		"--sbatch":        func(o *Options, v string) { o.Extra = []string{"--comment=a" + v} },
		"the suite":       func(o *Options, v string) { o.Suite = "hic" + v },
		"a run argument":  func(o *Options, v string) { o.Args = []string{"--models", "m" + v} },
		"--private-ollama": func(o *Options, v string) {
			o.OllamaBin = "/o" + v
		},
	}
	base := func() Options {
		return Options{Halu: "/h", Dir: filepath.Join(work, "sub"), Suite: "hic", Shards: 2}
	}
	for name, set := range fields {
		for _, v := range inject {
			o := base()
			set(&o, v)
			if err := o.Check(); err == nil {
				t.Errorf("%s %q accepted", name, v)
			}
		}
	}
	// An #SBATCH value with a space or a quote, and an sbatch option with
	// a space: refused (sbatch reads them unquoted, splitting at spaces).
	for name, set := range map[string]func(o *Options){
		"--partition": func(o *Options) { o.Partition = "gpu --wrap=id" },
		"--time":      func(o *Options) { o.Time = "1:00:00'" },
		"--sbatch":    func(o *Options) { o.Extra = []string{"--comment=two words"} },
	} {
		o := base()
		set(&o)
		if err := o.Check(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// Shell-active characters in the values that are words of a command:
	// quoted. halu is a script that writes its arguments one a line.
	halu := filepath.Join(work, "bin", "halu")
	os.MkdirAll(filepath.Dir(halu), 0o755)
	args := filepath.Join(work, "args")
	os.WriteFile(halu, []byte("#!/bin/bash\nprintf '%s\\n' \"$@\" >>"+quote(args)+"\n"), 0o755)
	hostile := []string{"$(touch " + pwned + ")", "`touch " + pwned + "`", "a;touch " + pwned, "it's", "100%", "%j", "*"}
	for _, v := range hostile {
		o := Options{Halu: halu, Dir: filepath.Join(work, "s "+strings.NewReplacer("/", "_", "`", "_").Replace(v)), Suite: "smoke", Shards: 2,
			Args: []string{"--models", v}}
		if err := o.Check(); err != nil {
			t.Fatalf("%q: %v", v, err)
		}
		os.Remove(args)
		for _, script := range []string{o.Array(), o.Merge()} {
			cmd := exec.Command("bash", "-c", script)
			cmd.Env = append(os.Environ(), "SLURM_ARRAY_TASK_ID=1")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%q: bash: %v %s", v, err, out)
			}
		}
		got, _ := os.ReadFile(args)
		if !strings.Contains(string(got), "\n"+v+"\n") || !strings.Contains(string(got), o.Dir) {
			t.Errorf("%q: halu got %q", v, got)
		}
		// The output pattern: a % of the directory is written %% (sbatch
		// expands a lone % as a replacement symbol: %j, %a).
		if strings.Contains(o.Dir, "%") && !strings.Contains(o.Array(), strings.ReplaceAll(o.Dir, "%", "%%")+"/slurm/shard-%a.out") {
			t.Errorf("%q: the output pattern does not escape %%:\n%s", v, o.Array())
		}
	}
	if _, err := os.Stat(pwned); err == nil {
		t.Fatal("a value ran as a command")
	}
}

// A task whose shard finished but measured nothing in part (halu exits 4,
// as any run does) succeeds — the merge says what the whole run measured —
// and any other failure is the task's.
func TestArrayTaskExitStatus(t *testing.T) {
	work := t.TempDir()
	halu := filepath.Join(work, "halu")
	for _, tc := range []struct{ halu, task int }{{0, 0}, {4, 0}, {1, 1}, {2, 2}, {130, 130}} {
		os.WriteFile(halu, []byte(fmt.Sprintf("#!/bin/bash\nexit %d\n", tc.halu)), 0o755)
		o := Options{Halu: halu, Dir: filepath.Join(work, "sub"), Suite: "smoke", Shards: 2}
		cmd := exec.Command("bash", "-c", o.Array())
		cmd.Env = append(os.Environ(), "SLURM_ARRAY_TASK_ID=1")
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		if code != tc.task {
			t.Errorf("halu exit %d: task exit %d, want %d", tc.halu, code, tc.task)
		}
	}
}

// A task finds its servers and settings in its script, not in the shell
// that submitted it: run with an empty environment (a resubmit from a new
// login, sbatch --export=NONE), the run sees the submission's OLLAMA_HOST
// and HALU_ settings; a secret is not written, and its absence stops the
// task, naming it. Each attempt's part of the log begins with its mark.
func TestTasksCarryTheSubmissionsEnvironment(t *testing.T) {
	work := t.TempDir()
	halu := filepath.Join(work, "halu")
	seen := filepath.Join(work, "seen")
	os.WriteFile(halu, []byte("#!/bin/bash\necho \"$OLLAMA_HOST $HALU_NUM_THREAD $HALU_JUDGE_REPAIRS\" > "+seen+"\n"), 0o755)
	env, need := SubmissionEnv([]string{"OLLAMA_HOST=http://node-3:11434", "HALU_NUM_THREAD=1", "HALU_JUDGE_REPAIRS=0",
		"HALU_API_KEY=s3cret", "HOME=/root", "PATH=/usr/bin", "OLLAMA_MODELS=/m", "HALU_CACHE_TOKEN=x"})
	if strings.Join(env, " ") != "HALU_JUDGE_REPAIRS=0 HALU_NUM_THREAD=1 OLLAMA_HOST=http://node-3:11434" || strings.Join(need, " ") != "HALU_API_KEY HALU_CACHE_TOKEN" {
		t.Fatalf("carried %q, named %q", env, need)
	}
	o := Options{Halu: halu, Dir: filepath.Join(work, "sub"), Suite: "smoke", Shards: 2, Env: env}
	if err := o.Check(); err != nil {
		t.Fatal(err)
	}
	for name, script := range map[string]string{"array": o.Array(), "merge": o.Merge()} {
		os.Remove(seen)
		cmd := exec.Command("bash", "-c", script)
		cmd.Env = []string{"SLURM_ARRAY_TASK_ID=1", "PATH=/usr/bin:/bin"}
		out, err := cmd.CombinedOutput()
		got, _ := os.ReadFile(seen)
		if err != nil || strings.TrimSpace(string(got)) != "http://node-3:11434 1 0" || !strings.HasPrefix(string(out), AttemptMark+" ") {
			t.Errorf("%s script in an empty environment: %v, halu saw %q, log %q", name, err, got, out)
		}
	}
	o.NeedEnv = need[:1]
	cmd := exec.Command("bash", "-c", o.Array())
	cmd.Env = []string{"SLURM_ARRAY_TASK_ID=1", "PATH=/usr/bin:/bin"}
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "HALU_API_KEY was set when the run was submitted") || strings.Contains(o.Array(), "s3cret") {
		t.Errorf("without the key: %v %s", err, out)
	}
	for _, bad := range [][]string{{"PATH=/x"}, {"HALU_API_KEY=s3cret"}, {"OLLAMA_HOST=a\nb"}} {
		o := o
		o.Env = bad
		if err := o.Check(); err == nil {
			t.Errorf("environment %q accepted", bad)
		}
	}
}

// Near its time limit (Slurm's USR1) a task stops its run as Ctrl-C does
// and requeues itself (scontrol requeue of its own job); a TERM (scancel)
// stops the run the same way and requeues nothing.
func TestTaskRequeuesItselfBeforeItsTimeLimit(t *testing.T) {
	work := t.TempDir()
	halu, scontrol, log := filepath.Join(work, "halu"), filepath.Join(work, "scontrol"), filepath.Join(work, "log")
	// A run that takes long, records an item (unless NORECORD), and says
	// how it ended.
	// Its `slurm progress` counts records and the calls it kept (a line
	// in calls: made with CALLED, kept unless the run has --no-cache), as
	// slurm.Progress does from the manifest (TestProgress).
	os.WriteFile(halu, []byte("#!/bin/bash\nif [ \"$1\" = slurm ]; then d=\"${@: -1}\"; n=$(cat \"$d/records.jsonl\" 2>/dev/null | wc -l); n=$((n + $(cat \"$d/calls\" 2>/dev/null | wc -l))); echo $n; exit; fi\n"+
		"trap 'echo interrupted >> "+log+"; exit 130' TERM\nd=\"${@: -1}\"; mkdir -p \"$d\"; [ -n \"${NORECORD:-}\" ] || echo '{}' >> \"$d/records.jsonl\"\n[ -z \"${CALLED:-}\" ] || [[ \" $* \" == *\" --no-cache \"* ]] || echo call >> \"$d/calls\"\necho started >> "+log+"\nfor i in $(seq 300); do sleep 0.1; done\necho finished >> "+log+"\n"), 0o755)
	// A scheduler that refuses the requeue (MaxBatchRequeue reached)
	// when FAILREQUEUE is set.
	os.WriteFile(scontrol, []byte("#!/bin/bash\necho \"scontrol $*\" >> "+log+"\n[ -z \"${FAILREQUEUE:-}\" ]\n"), 0o755)
	o := Options{Halu: halu, Dir: filepath.Join(work, "sub"), Suite: "smoke", Shards: 2}
	for _, tc := range []struct {
		sig      syscall.Signal
		noRecord bool
		called   bool // the attempt made a model call (kept in the cache)
		noCache  bool
		refused  bool
		code     int
		want     string
	}{
		{syscall.SIGUSR1, false, false, false, false, 0, "started\ninterrupted\nscontrol requeue 70_1\n"},
		// A requeue the scheduler refuses fails the task: the shard is not
		// complete, and the merge (afterok) must not run on it.
		{syscall.SIGUSR1, false, false, false, true, 3, "started\ninterrupted\nscontrol requeue 70_1\n"},
		// An attempt that recorded nothing and kept no call is not
		// requeued: a time limit too short for one call would requeue it
		// for ever.
		{syscall.SIGUSR1, true, false, false, false, 3, "started\ninterrupted\n"},
		// One that recorded no item but made calls, kept in the response
		// cache, is: the next attempt takes them from the cache and gets
		// further (items whose calls interleave finish late).
		{syscall.SIGUSR1, true, true, false, false, 0, "started\ninterrupted\nscontrol requeue 70_1\n"},
		// Without the cache its calls are not kept.
		{syscall.SIGUSR1, true, true, true, false, 3, "started\ninterrupted\n"},
		{syscall.SIGTERM, false, false, false, false, 143, "started\ninterrupted\n"},
	} {
		os.Remove(log)
		os.RemoveAll(o.Dir)
		o.Args = nil
		if tc.noCache {
			o.Args = []string{"--no-cache"}
		}
		cmd := exec.Command("bash", "-c", o.Array())
		// The task's own job id is the array's (a task's may be): the
		// requeue names the task, 70_1, never the array.
		cmd.Env = append(os.Environ(), "SLURM_ARRAY_TASK_ID=1", "SLURM_JOB_ID=70", "SLURM_ARRAY_JOB_ID=70", "PATH="+work+":"+os.Getenv("PATH"))
		if tc.noRecord {
			cmd.Env = append(cmd.Env, "NORECORD=1")
		}
		if tc.refused {
			cmd.Env = append(cmd.Env, "FAILREQUEUE=1")
		}
		if tc.called {
			cmd.Env = append(cmd.Env, "CALLED=1")
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if b, _ := os.ReadFile(log); strings.Contains(string(b), "started") {
				break
			}
		}
		cmd.Process.Signal(tc.sig)
		err := cmd.Wait()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		got, _ := os.ReadFile(log)
		if code != tc.code || string(got) != tc.want {
			t.Errorf("%v: exit %d, log %q; want exit %d, log %q", tc.sig, code, got, tc.code, tc.want)
		}
	}
}

// The warning before a time limit is 3 minutes, or a third of a shorter
// limit, in each of sbatch's time syntaxes.
func TestRequeueBefore(t *testing.T) {
	for _, tc := range []struct {
		time string
		want int
	}{{"", 180}, {"4:00:00", 180}, {"2", 40}, {"1:30", 30}, {"0:05:00", 100}, {"1-0", 180}, {"0-0:06", 120}, {"UNLIMITED", 180}, {"10", 180}} {
		if got := (Options{Time: tc.time}).requeueBefore(); got != tc.want {
			t.Errorf("--time %q: USR1 %d s before, want %d", tc.time, got, tc.want)
		}
	}
}

// halu rebuilt in place: resubmit refuses, saying what to do, and
// --rebind rewrites the scripts for the new build and records it.
func TestResubmitRebindsANewBuild(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(t.TempDir(), "halu")
	os.WriteFile(bin, []byte("build one"), 0o755)
	one, _ := rundir.HashFile(bin)
	f := &fakeCluster{queue: map[string]string{}}
	if _, err := Submit(context.Background(), f.cluster(), Options{Halu: bin, HaluSHA256: one, Dir: dir, Suite: "smoke", Shards: 2}); err != nil {
		t.Fatal(err)
	}
	writeShard(t, dir, 1, "complete", 2, 2)
	writeShard(t, dir, 2, "interrupted", 1, 2)
	os.WriteFile(bin, []byte("build two"), 0o755)
	two, _ := rundir.HashFile(bin)
	if _, _, err := Resubmit(context.Background(), f.cluster(), dir, nil); err == nil || !strings.Contains(err.Error(), "is no longer the halu build submitted") || !strings.Contains(err.Error(), "resubmit --rebind") {
		t.Fatalf("resubmit after a rebuild: %v", err)
	}
	j, redo, err := Resubmit(context.Background(), f.cluster(), dir, &Build{Path: bin, SHA256: two})
	if err != nil || fmt.Sprint(redo) != "[2]" {
		t.Fatalf("--rebind: %v %v", redo, err)
	}
	array, _ := os.ReadFile(filepath.Join(dir, "slurm", ArrayScript))
	back, _ := ReadJobs(dir)
	if !strings.Contains(string(array), two) || strings.Contains(string(array), one) || back.Options.HaluSHA256 != two || len(back.Rebinds) != 1 || j.Rebinds[0].SHA256 != two {
		t.Errorf("after --rebind: jobs %+v\n%s", back, array)
	}
	line := back.Options.checkBuild()[0]
	if out, err := exec.Command("bash", "-c", line).CombinedOutput(); err != nil {
		t.Errorf("the rewritten script refuses the build it was rewritten for: %v %s", err, out)
	}
}

// --throttle K is the array's %K, kept by resubmit; --sbatch cannot set
// what halu writes itself.
func TestThrottleIsKept(t *testing.T) {
	dir := t.TempDir()
	f := &fakeCluster{queue: map[string]string{}}
	o := Options{Halu: "/h", Dir: dir, Suite: "hic", Shards: 4, Throttle: 2}
	if !strings.Contains(o.Array(), "#SBATCH --array=1-4%2\n") {
		t.Errorf("array script:\n%s", o.Array())
	}
	if _, err := Submit(context.Background(), f.cluster(), o); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 4; i++ {
		writeShard(t, dir, i, "interrupted", 0, 2)
	}
	f.ran = nil
	if _, _, err := Resubmit(context.Background(), f.cluster(), dir, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(f.ran, "\n"), "sbatch --parsable --array=1,2,3,4%2 ") {
		t.Errorf("resubmit ran:\n%s", strings.Join(f.ran, "\n"))
	}
	for _, e := range []string{"--array=1-4%2", "--output=/tmp/x", "--signal=USR1@60"} {
		if err := (Options{Halu: "/h", Dir: "/d", Suite: "hic", Shards: 2, Extra: []string{e}}).Check(); err == nil || !strings.Contains(err.Error(), "halu writes") {
			t.Errorf("--sbatch %s: %v", e, err)
		}
	}
}

// Two submissions or resubmissions of one directory at once: the second
// is refused while the first holds the submission's lock.
func TestResubmitTakesTheLock(t *testing.T) {
	dir := t.TempDir()
	f := &fakeCluster{queue: map[string]string{}}
	if _, err := Submit(context.Background(), f.cluster(), Options{Halu: "/h", Dir: dir, Suite: "smoke", Shards: 2}); err != nil {
		t.Fatal(err)
	}
	release, err := rundir.LockDir(filepath.Join(dir, "slurm"))
	if err != nil {
		t.Fatal(err)
	}
	f.ran = nil
	if _, _, err := Resubmit(context.Background(), f.cluster(), dir, nil); err == nil || !strings.Contains(err.Error(), "being submitted or resubmitted by another halu") || len(f.ran) != 0 {
		t.Errorf("resubmit while another holds the lock: %v, ran %q", err, f.ran)
	}
	release()
	if _, _, err := Resubmit(context.Background(), f.cluster(), dir, nil); err != nil {
		t.Errorf("resubmit once the lock is free: %v", err)
	}
}

// Progress counts a shard run's records and, where its engine settings
// use the response cache, the model calls its manifest books; nothing
// there is 0.
func TestProgress(t *testing.T) {
	dir := t.TempDir()
	if n := Progress(filepath.Join(dir, "none")); n != 0 {
		t.Errorf("no run: %d", n)
	}
	os.WriteFile(filepath.Join(dir, rundir.RecordsFile), []byte("{\"item\":\"a\"}\n{\"item\":\"b\"}\n"), 0o644)
	for _, tc := range []struct {
		engine string
		want   int
	}{
		{`{"cache":"/c","no_cache":false}`, 9}, // 2 records + 7 calls kept
		{`{"cache":"/c","no_cache":true}`, 2},  // --no-cache: the calls are not kept
		{``, 2},                                // no engine settings: taken to use no cache
	} {
		m := &rundir.Manifest{Suite: "smoke", Format: rundir.FormatVersion, Status: "interrupted", Counts: rundir.Counts{ModelCalls: 7}}
		if tc.engine != "" {
			m.Engine = json.RawMessage(tc.engine)
		}
		if err := rundir.WriteManifest(dir, m); err != nil {
			t.Fatal(err)
		}
		if n := Progress(dir); n != tc.want {
			t.Errorf("engine %s: %d, want %d", tc.engine, n, tc.want)
		}
	}
}
