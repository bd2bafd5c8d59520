// Package slurm hands a sharded halu run to a Slurm cluster: a job array
// whose task I runs shard I/N of one command line into its own run
// directory, and a merge job that waits for the whole array (afterok) and
// joins the shards into one run (halu merge), which report, compare, the
// gates and --resume read as any run.
//
// A submission lives in one directory:
//
//	DIR/shards/I     shard I's run directory (halu run … --shard I/N)
//	DIR/merged       the merged run, once every shard is complete
//	DIR/slurm/       the two scripts, the scheduler's job ids (jobs.json)
//	                 and the tasks' output (shard-I.out, merge.out)
//
// A task run again — resubmitted after a failure, or requeued after
// pre-emption — finds its shard's manifest and resumes it: the items it
// recorded are not run again. Nothing here decides what a run measures:
// the scripts run `halu run` with the flags given, and `halu merge`
// refuses shards of other settings, serving fingerprints or shard seeds.
package slurm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"halu/runner/rundir"
)

// Options are what a submission is made of.
type Options struct {
	// Halu is the halu binary the tasks run: an absolute path every node
	// sees (a shared file system).
	Halu string `json:"halu"`
	// HaluSHA256 is that binary's sha256 when submitted: each job checks
	// it before it runs, so a shard is never made by another build that
	// replaced the file meanwhile ("" : not checked).
	HaluSHA256 string `json:"halu_sha256,omitempty"`
	// Dir is the submission's directory, absolute (see the package doc).
	Dir string `json:"dir"`
	// Suite and Args are the run: `halu run Suite Args…` without --out,
	// --shard or --resume, which each task sets.
	Suite string   `json:"suite"`
	Args  []string `json:"args"`
	// Shards is N, the array's size.
	Shards int `json:"shards"`
	// Scheduler options, passed through as #SBATCH lines when set.
	Partition   string `json:"partition,omitempty"`
	Account     string `json:"account,omitempty"`
	Time        string `json:"time,omitempty"` // a task's time limit, in sbatch's syntax (1:00:00)
	GPUsPerTask string `json:"gpus_per_task,omitempty"`
	CPUsPerTask int    `json:"cpus_per_task,omitempty"`
	// Extra are further sbatch options, each written as given
	// ("--mem=16G", "--qos=long").
	Extra []string `json:"sbatch,omitempty"`
	// OllamaBin, when set, makes each task start its own Ollama on its node
	// (halu with-ollama), models read from OllamaModels (a directory the
	// nodes share); unset, the tasks use the servers the run's flags or
	// the environment name (--ollama, --backend, OLLAMA_HOST).
	OllamaBin    string `json:"ollama_bin,omitempty"`
	OllamaModels string `json:"ollama_models,omitempty"`
}

// Files of a submission.
const (
	ArrayScript = "array.sh"
	MergeScript = "merge.sh"
	JobsFile    = "jobs.json"
)

// Layout.
func (o Options) slurmDir() string         { return filepath.Join(o.Dir, "slurm") }
func (o Options) shardDir(i string) string { return filepath.Join(o.Dir, "shards", i) }

// ShardDir is the run directory of shard i of a submission in dir.
func ShardDir(dir string, i int) string { return filepath.Join(dir, "shards", strconv.Itoa(i)) }

// MergedDir is the merged run of a submission in dir.
func MergedDir(dir string) string { return filepath.Join(dir, "merged") }

// Check refuses options a submission cannot be made of, before anything is
// written or submitted.
func (o Options) Check() error {
	switch {
	case o.Shards < 1:
		return fmt.Errorf("--shards %d: want 1 or more", o.Shards)
	case !filepath.IsAbs(o.Dir) || !filepath.IsAbs(o.Halu):
		return fmt.Errorf("the submission's directory and halu's path must be absolute (%q, %q)", o.Dir, o.Halu)
	case o.Suite == "":
		return fmt.Errorf("name the suite to run after --: halu slurm submit … -- hic --models …")
	case o.OllamaModels != "" && o.OllamaBin == "":
		return fmt.Errorf("--private-ollama-models needs --private-ollama (each task's own Ollama reads the models from there)")
	}
	for _, a := range o.Args {
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if strings.HasPrefix(a, "-") && slices.Contains([]string{"out", "shard", "resume", "dry-run"}, name) {
			return fmt.Errorf("the run's flags hold --%s: each task sets --out, --shard and --resume itself", name)
		}
	}
	// Every value written into a script is checked here: none may hold a
	// control character (a newline would end its line and start a
	// command); the values of #SBATCH lines, which sbatch splits at
	// spaces and reads unquoted, are held to the characters their
	// syntax has. Values in the scripts' commands are quoted (quote).
	for _, v := range []struct{ flag, value string }{{"--out", o.Dir}, {"halu's path", o.Halu}, {"the suite", o.Suite},
		{"--private-ollama", o.OllamaBin}, {"--private-ollama-models", o.OllamaModels}} {
		if i := strings.IndexFunc(v.value, isControl); i >= 0 {
			return fmt.Errorf("%s %q: holds a control character (%U), which a job script cannot hold", v.flag, v.value, []rune(v.value[i:])[0])
		}
	}
	for _, a := range o.Args {
		if i := strings.IndexFunc(a, isControl); i >= 0 {
			return fmt.Errorf("the run's argument %q holds a control character (%U), which a job script cannot hold", a, []rune(a[i:])[0])
		}
	}
	for _, v := range []struct{ flag, value string }{{"--partition", o.Partition}, {"--account", o.Account}, {"--time", o.Time}, {"--gpus-per-task", o.GPUsPerTask}} {
		if v.value != "" && !directiveValue.MatchString(v.value) {
			return fmt.Errorf("%s %q: want letters, digits and . _ : , - + @ = / only (an #SBATCH line's value; sbatch reads it unquoted)", v.flag, v.value)
		}
	}
	for _, e := range o.Extra {
		if !strings.HasPrefix(e, "--") || strings.IndexFunc(e, isControl) >= 0 || strings.ContainsAny(e, " \t") {
			return fmt.Errorf("--sbatch %q: want one sbatch option without spaces or control characters (--mem=16G)", e)
		}
	}
	return nil
}

// directiveValue is what an #SBATCH line's value may hold.
var directiveValue = regexp.MustCompile(`^[A-Za-z0-9._:,\-+@=/]+$`)

// isControl reports a character no line of a script may hold.
func isControl(r rune) bool { return r < 0x20 || r == 0x7f || r == 0x85 || r == 0x2028 || r == 0x2029 }

// outputPattern is path as sbatch's --output reads it: a filename pattern
// whose % begins a replacement (%a, %j, …); a % of the path itself is
// written %%.
func outputPattern(path, pattern string) string {
	return strings.ReplaceAll(path, "%", "%%") + pattern
}

// quote is s as one word of a POSIX shell.
func quote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=,+@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = quote(s)
	}
	return strings.Join(q, " ")
}

// directives are the #SBATCH lines both jobs share.
func (o Options) directives(gpus bool) []string {
	var d []string
	add := func(flag, v string) {
		if v != "" {
			d = append(d, "#SBATCH --"+flag+"="+v)
		}
	}
	add("partition", o.Partition)
	add("account", o.Account)
	add("time", o.Time)
	if gpus {
		add("gpus-per-task", o.GPUsPerTask)
		if o.CPUsPerTask > 0 {
			add("cpus-per-task", strconv.Itoa(o.CPUsPerTask))
		}
		for _, e := range o.Extra {
			d = append(d, "#SBATCH "+e)
		}
	}
	return d
}

// checkBuild is the script line that refuses to run another halu build
// than the one submitted.
func (o Options) checkBuild() []string {
	if o.HaluSHA256 == "" {
		return nil
	}
	return []string{"echo " + quote(o.HaluSHA256+"  "+o.Halu) + " | sha256sum --check --status || { echo " +
		quote("halu slurm: "+o.Halu+" is not the halu build submitted (sha256 "+o.HaluSHA256+"): submit again with this build") + " >&2; exit 2; }"}
}

// Array is the job array's script: task I runs shard I/N, or resumes it
// when its run directory already holds a manifest.
func (o Options) Array() string {
	n := strconv.Itoa(o.Shards)
	lines := []string{
		"#!/bin/bash",
		"#SBATCH --job-name=" + quote("halu-"+o.Suite),
		"#SBATCH --array=1-" + n,
		"#SBATCH --output=" + quote(outputPattern(o.slurmDir()+string(filepath.Separator), "shard-%a.out")),
	}
	lines = append(lines, o.directives(true)...)
	lines = append(lines,
		"# Written by halu slurm submit. Task I runs shard I/"+n+" of the run below into",
		"# "+o.shardDir("I")+"; run again (halu slurm resubmit), it resumes its shard.",
		"set -euo pipefail",
	)
	lines = append(lines, o.checkBuild()...)
	lines = append(lines,
		`i="$SLURM_ARRAY_TASK_ID"`,
		`shard=`+quote(filepath.Join(o.Dir, "shards"))+`/"$i"`,
		`if [ -e "$shard/`+rundir.ManifestFile+`" ]; then where=(--resume "$shard"); else where=(--out "$shard"); fi`,
	)
	run := quote(o.Halu) + " run " + quote(o.Suite)
	if len(o.Args) > 0 {
		run += " " + quoteAll(o.Args)
	}
	run += ` --shard "$i/` + n + `" "${where[@]}"`
	if o.OllamaBin != "" {
		with := quote(o.Halu) + " with-ollama --bin " + quote(o.OllamaBin)
		if o.OllamaModels != "" {
			with += " --models " + quote(o.OllamaModels)
		}
		with += " --log " + quote(filepath.Join(o.slurmDir(), "ollama-")) + `"$i".log --`
		run = with + " " + run
	}
	lines = append(lines,
		// A shard that finished but measured nothing in part exits 4, as
		// any run does; it is one part of a run, and the merge says what
		// the whole measured: the task succeeds, so the merge runs.
		"rc=0",
		run+" || rc=$?",
		`if [ "$rc" -eq 4 ]; then echo "halu slurm: shard $i finished and measured nothing in part (above); the merge says what the whole run measured" >&2; exit 0; fi`,
		`exit "$rc"`)
	return strings.Join(lines, "\n") + "\n"
}

// Merge is the merge job's script: halu merge of the N shards into
// DIR/merged.
func (o Options) Merge() string {
	lines := []string{
		"#!/bin/bash",
		"#SBATCH --job-name=" + quote("halu-"+o.Suite+"-merge"),
		"#SBATCH --output=" + quote(outputPattern(o.slurmDir()+string(filepath.Separator), "merge.out")),
	}
	lines = append(lines, o.directives(false)...)
	lines = append(lines,
		"# Written by halu slurm submit: joins the shards once every task succeeded.",
		"set -euo pipefail",
	)
	lines = append(lines, o.checkBuild()...)
	args := []string{o.Halu, "merge"}
	for i := 1; i <= o.Shards; i++ {
		args = append(args, o.shardDir(strconv.Itoa(i)))
	}
	args = append(args, "--out", MergedDir(o.Dir))
	lines = append(lines, "exec "+quoteAll(args))
	return strings.Join(lines, "\n") + "\n"
}

// Jobs are a submission's record of what it handed the scheduler.
type Jobs struct {
	Options     Options      `json:"options"`
	Submissions []Submission `json:"submissions"`
}

// Submission is one sbatch of the array (all shards, or those resubmitted)
// and its merge job.
type Submission struct {
	At      time.Time `json:"at"`
	Array   string    `json:"array"`
	Indices []int     `json:"indices"`
	Merge   string    `json:"merge"`
}

// Last is the array task that last ran shard i (12_3; "" and false when
// none).
func (j *Jobs) Last(i int) (string, bool) {
	s := j.lastRun(i)
	if s == nil {
		return "", false
	}
	return fmt.Sprintf("%s_%d", s.Array, i), true
}

// lastRun is the submission whose array last ran shard i (nil: none).
func (j *Jobs) lastRun(i int) *Submission {
	for k := len(j.Submissions) - 1; k >= 0; k-- {
		if slices.Contains(j.Submissions[k].Indices, i) {
			return &j.Submissions[k]
		}
	}
	return nil
}

// ids are the job ids the submission holds: every array and merge job.
func (j *Jobs) ids() []string {
	var ids []string
	for _, s := range j.Submissions {
		for _, id := range []string{s.Array, s.Merge} {
			if id != "" {
				ids = append(ids, id)
			}
		}
	}
	return ids
}

// ReadJobs reads the submission in dir.
func ReadJobs(dir string) (*Jobs, error) {
	b, err := os.ReadFile(filepath.Join(dir, "slurm", JobsFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s holds no submission (halu slurm submit --out %s …)", dir, dir)
	}
	if err != nil {
		return nil, err
	}
	var j Jobs
	if err := json.Unmarshal(b, &j); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "slurm", JobsFile), err)
	}
	return &j, nil
}

func (j *Jobs) write() error {
	b, err := json.MarshalIndent(j, "", "  ")
	if err != nil {
		return err
	}
	return rundir.WriteFileAtomic(filepath.Join(j.Options.slurmDir(), JobsFile), append(b, '\n'))
}

// Cluster runs the scheduler's commands (sbatch, squeue, scancel, sacct).
type Cluster struct {
	// Run runs a command and returns its standard output; nil runs it
	// with os/exec.
	Run func(ctx context.Context, name string, args ...string) ([]byte, error)
}

func (c Cluster) run(ctx context.Context, name string, args ...string) ([]byte, error) {
	if c.Run != nil {
		return c.Run(ctx, name, args...)
	}
	cmd := exec.CommandContext(ctx, name, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// sbatch submits script with args before it and returns the job id.
func (c Cluster) sbatch(ctx context.Context, script string, args ...string) (string, error) {
	out, err := c.run(ctx, "sbatch", append(append([]string{"--parsable"}, args...), script)...)
	if err != nil {
		return "", err
	}
	id, _, _ := strings.Cut(strings.TrimSpace(string(out)), ";") // "id;cluster"
	if _, err := strconv.Atoi(id); err != nil {
		return "", fmt.Errorf("sbatch said %q, not a job id", strings.TrimSpace(string(out)))
	}
	return id, nil
}

// WriteScripts writes the submission's scripts into DIR/slurm and returns
// their paths. A directory that already holds a submission is refused:
// resubmit it, or submit into another.
func WriteScripts(o Options) (array, merge string, err error) {
	if err := o.Check(); err != nil {
		return "", "", err
	}
	if _, err := os.Stat(filepath.Join(o.slurmDir(), JobsFile)); err == nil {
		return "", "", fmt.Errorf("%s already holds a submission: halu slurm resubmit %s, or submit into another directory", o.Dir, o.Dir)
	}
	if err := os.MkdirAll(o.slurmDir(), 0o755); err != nil {
		return "", "", err
	}
	if err := os.MkdirAll(filepath.Join(o.Dir, "shards"), 0o755); err != nil {
		return "", "", err
	}
	array, merge = filepath.Join(o.slurmDir(), ArrayScript), filepath.Join(o.slurmDir(), MergeScript)
	for p, text := range map[string]string{array: o.Array(), merge: o.Merge()} {
		if err := rundir.WriteFileAtomic(p, []byte(text)); err != nil {
			return "", "", err
		}
		if err := os.Chmod(p, 0o755); err != nil {
			return "", "", err
		}
	}
	return array, merge, nil
}

// Submit writes the scripts and submits the array and, after it, the merge.
func Submit(ctx context.Context, c Cluster, o Options) (*Jobs, error) {
	array, merge, err := WriteScripts(o)
	if err != nil {
		return nil, err
	}
	all := make([]int, o.Shards)
	for i := range all {
		all[i] = i + 1
	}
	j := &Jobs{Options: o}
	return j, j.submit(ctx, c, array, merge, all, nil)
}

func (j *Jobs) submit(ctx context.Context, c Cluster, array, merge string, indices []int, arrayArgs []string) error {
	a, err := c.sbatch(ctx, array, arrayArgs...)
	if err != nil {
		return err
	}
	s := Submission{At: time.Now().UTC(), Array: a, Indices: indices}
	// Written before the merge is submitted: a failure there leaves the
	// array on record, for status and resubmit.
	j.Submissions = append(j.Submissions, s)
	if err := j.write(); err != nil {
		return err
	}
	m, err := c.sbatch(ctx, merge, "--dependency=afterok:"+a)
	if err != nil {
		return fmt.Errorf("array job %s submitted; its merge job was not: %w (halu slurm resubmit %s submits it)", a, err, j.Options.Dir)
	}
	j.Submissions[len(j.Submissions)-1].Merge = m
	return j.write()
}

// ShardState is one shard as its run directory and the scheduler see it.
type ShardState struct {
	I      int
	Status string // the run's: running, complete, interrupted…; "" before it started
	Done   int    // items recorded
	Items  int    // items of the shard (0 until it started)
	Job    string // the array task that last ran it (12_3)
	Queue  string // the scheduler's state of that task ("" when not in the queue)
	Reason string // why it waits, when pending
}

// Complete reports whether the shard's run finished.
func (s ShardState) Complete() bool { return s.Status == "complete" }

// queue is what squeue says of the jobs: state and reason by job id (array
// tasks one by one: 12_3).
func (c Cluster) queue(ctx context.Context, ids []string) (map[string][2]string, error) {
	q := map[string][2]string{}
	if len(ids) == 0 {
		return q, nil
	}
	out, err := c.run(ctx, "squeue", "-h", "-r", "-j", strings.Join(ids, ","), "-o", "%i|%T|%r")
	if err != nil {
		// squeue refuses ids that have all left the queue.
		if strings.Contains(err.Error(), "Invalid job id") {
			return q, nil
		}
		return nil, err
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "|")
		if len(f) == 3 {
			q[f[0]] = [2]string{f[1], f[2]}
		}
	}
	return q, nil
}

// States reads each shard's run directory and what the scheduler says of
// the task that last ran it, and of the last merge job.
func States(ctx context.Context, c Cluster, dir string) (*Jobs, []ShardState, [3]string, error) {
	var merge [3]string // job, state, reason
	j, err := ReadJobs(dir)
	if err != nil {
		return nil, nil, merge, err
	}
	q, err := c.queue(ctx, j.ids())
	if err != nil {
		return nil, nil, merge, err
	}
	var states []ShardState
	for i := 1; i <= j.Options.Shards; i++ {
		st := ShardState{I: i}
		d := ShardDir(dir, i)
		if m, err := rundir.ReadManifest(d); err == nil {
			st.Status, st.Items = m.Status, m.Counts.Items
			if recs, _, err := rundir.ReadRecords(filepath.Join(d, rundir.RecordsFile)); err == nil {
				st.Done = len(recs)
			}
		}
		st.Job, _ = j.Last(i)
		if s, ok := q[st.Job]; ok {
			st.Queue, st.Reason = s[0], s[1]
		} else if last := j.lastRun(i); last != nil {
			// A pending array shows its tasks as one line (12_[2-3]).
			for id, s := range q {
				if strings.HasPrefix(id, last.Array+"_[") {
					st.Queue, st.Reason = s[0], s[1]
				}
			}
		}
		if st.Queue == "RUNNING" && st.Status == "interrupted" {
			// The run's lock names a process on the task's node, which
			// this one cannot see: the scheduler knows it runs.
			st.Status = "running"
		}
		states = append(states, st)
	}
	if n := len(j.Submissions); n > 0 && j.Submissions[n-1].Merge != "" {
		merge[0] = j.Submissions[n-1].Merge
		if s, ok := q[merge[0]]; ok {
			merge[1], merge[2] = s[0], s[1]
		}
	}
	return j, states, merge, nil
}

// Accounting is what sacct says of the submission's jobs, one line each
// ("" and the reason when accounting is off: sacct then knows nothing).
func Accounting(ctx context.Context, c Cluster, j *Jobs) (string, error) {
	out, err := c.run(ctx, "sacct", "-n", "-P", "-X", "-j", strings.Join(j.ids(), ","), "-o", "JobID,State,ExitCode,Elapsed")
	if err != nil {
		return "", err
	}
	return string(out), nil
}

// ErrNothingToDo: every shard is complete, and merged or being merged.
var ErrNothingToDo = errors.New("nothing to resubmit")

// Resubmit submits again the shards of the submission in dir that are not
// complete — a task that failed, was cancelled or pre-empted resumes its
// shard — and a merge job after them (cancelling the merge job left waiting
// on the failed array). It refuses while such a shard's task is still in
// the queue. With nothing left to run and no merged run, it submits the
// merge alone.
func Resubmit(ctx context.Context, c Cluster, dir string) (*Jobs, []int, error) {
	j, states, merge, err := States(ctx, c, dir)
	if err != nil {
		return nil, nil, err
	}
	var redo []int
	for _, s := range states {
		if s.Complete() {
			continue
		}
		if s.Queue != "" {
			return nil, nil, fmt.Errorf("shard %d/%d is %s as job %s: wait for it, or scancel %s first", s.I, len(states), s.Queue, s.Job, s.Job)
		}
		redo = append(redo, s.I)
	}
	if merge[1] != "" {
		if len(redo) == 0 && merge[1] != "PENDING" {
			return j, nil, fmt.Errorf("%w: the merge job %s is %s", ErrNothingToDo, merge[0], merge[1])
		}
		if _, err := c.run(ctx, "scancel", merge[0]); err != nil {
			return nil, nil, err
		}
	}
	o := j.Options
	array, mergeScript := filepath.Join(o.slurmDir(), ArrayScript), filepath.Join(o.slurmDir(), MergeScript)
	if len(redo) == 0 {
		if rundir.Exists(MergedDir(dir)) {
			return j, nil, ErrNothingToDo
		}
		m, err := c.sbatch(ctx, mergeScript)
		if err != nil {
			return nil, nil, err
		}
		j.Submissions = append(j.Submissions, Submission{At: time.Now().UTC(), Merge: m})
		return j, nil, j.write()
	}
	var idx []string
	for _, i := range redo {
		idx = append(idx, strconv.Itoa(i))
	}
	return j, redo, j.submit(ctx, c, array, mergeScript, redo, []string{"--array=" + strings.Join(idx, ",")})
}
