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
	// Shards is N, the array's size; Throttle, when above 0, the most of
	// its tasks that run at once (sbatch --array=…%K), kept by resubmit.
	Shards   int `json:"shards"`
	Throttle int `json:"throttle,omitempty"`
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
	// Env is the environment halu reads (OLLAMA_HOST, OLLAMA_NUM_PARALLEL,
	// HALU_*) as it was at submission, NAME=VALUE: both scripts export it,
	// so a task finds its servers and settings whatever shell resubmits
	// it, and under sbatch --export=NONE. A secret (HALU_API_KEY) is never
	// written into a script: NeedEnv names it, and a task whose
	// environment lacks it stops, saying so.
	Env     []string `json:"env,omitempty"`
	NeedEnv []string `json:"need_env,omitempty"`
}

// SubmissionEnv splits environ into what a submission carries (Env) and
// the secrets it only names (NeedEnv): the variables halu reads, sorted.
func SubmissionEnv(environ []string) (env, need []string) {
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case !envName.MatchString(name):
		case secretName.MatchString(name):
			need = append(need, name)
		case name == "OLLAMA_HOST" || name == "OLLAMA_NUM_PARALLEL" || strings.HasPrefix(name, "HALU_"):
			env = append(env, kv)
		}
	}
	slices.Sort(env)
	slices.Sort(need)
	return env, need
}

var (
	envName    = regexp.MustCompile(`^(?:OLLAMA_HOST|OLLAMA_NUM_PARALLEL|HALU_[A-Z0-9_]+)$`)
	secretName = regexp.MustCompile(`KEY|TOKEN|SECRET|PASSWORD`)
)

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
	case o.Throttle < 0:
		return fmt.Errorf("--throttle %d: want 0 (none) or more", o.Throttle)
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
	for _, kv := range o.Env {
		name, _, _ := strings.Cut(kv, "=")
		if !envName.MatchString(name) || secretName.MatchString(name) {
			return fmt.Errorf("the environment carried holds %s, which a submission does not carry", name)
		}
		if i := strings.IndexFunc(kv, isControl); i >= 0 {
			return fmt.Errorf("the environment's %s holds a control character (%U), which a job script cannot hold", name, []rune(kv[i:])[0])
		}
	}
	for _, name := range o.NeedEnv {
		if !envName.MatchString(name) {
			return fmt.Errorf("the environment needed names %q, not a variable halu reads", name)
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
		if name, _, _ := strings.Cut(e, "="); slices.Contains([]string{"--array", "--output", "--open-mode", "--requeue", "--no-requeue", "--signal", "--dependency"}, name) {
			return fmt.Errorf("--sbatch %q: halu writes %s itself (a throttle is --throttle K)", e, name)
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

// throttle is the array's "%K" suffix ("" when unthrottled).
func (o Options) throttle() string {
	if o.Throttle > 0 {
		return "%" + strconv.Itoa(o.Throttle)
	}
	return ""
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

// environment are the script lines that export the submission's Env, and
// stop a task whose environment lacks a secret the submission had.
func (o Options) environment() []string {
	var lines []string
	for _, kv := range o.Env {
		name, value, _ := strings.Cut(kv, "=")
		lines = append(lines, "export "+name+"="+quote(value))
	}
	for _, name := range o.NeedEnv {
		lines = append(lines, `[ -n "${`+name+`:-}" ] || { echo `+quote("halu slurm: "+name+" was set when the run was submitted and is not in this task's environment: export it in the shell that runs halu slurm resubmit (halu writes no secret into a script)")+` >&2; exit 2; }`)
	}
	return lines
}

// attempt is the line that begins each attempt's part of a task's log
// (the log is appended to, never replaced: why an earlier attempt ended
// stays readable); status finds the last attempt by it.
func attempt(what string) string {
	return `echo "` + AttemptMark + " " + what + ` job ${SLURM_JOB_ID:-?} on $(hostname) at $(date -u +%Y-%m-%dT%H:%M:%SZ)"`
}

// requeueBefore is how many seconds before its time limit a task is told
// (USR1) to stop its run and requeue itself: 3 minutes — long enough for
// a run to write what it finished — or a third of a shorter --time.
func (o Options) requeueBefore() int {
	if limit, ok := slurmSeconds(o.Time); ok && limit < 9*60 {
		return max(limit/3, 1)
	}
	return 180
}

// slurmSeconds reads a time limit in sbatch's syntax: "M", "M:S",
// "H:M:S", "D-H", "D-H:M", "D-H:M:S"; ok is false for anything else
// ("" and "UNLIMITED" included).
func slurmSeconds(t string) (int, bool) {
	days := 0
	if d, rest, ok := strings.Cut(t, "-"); ok {
		n, err := strconv.Atoi(d)
		if err != nil {
			return 0, false
		}
		days, t = n, rest
		parts := strings.Split(t, ":")
		for len(parts) < 3 {
			parts = append(parts, "0") // D-H, D-H:M
		}
		t = strings.Join(parts, ":")
	}
	var f []int
	for _, p := range strings.Split(t, ":") {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return 0, false
		}
		f = append(f, n)
	}
	s := 0
	switch len(f) {
	case 1:
		s = f[0] * 60
	case 2:
		s = f[0]*60 + f[1]
	case 3:
		s = f[0]*3600 + f[1]*60 + f[2]
	default:
		return 0, false
	}
	return days*86400 + s, true
}

// AttemptMark begins the line each attempt writes first into its log.
const AttemptMark = "== halu slurm attempt:"

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
		"#SBATCH --array=1-" + n + o.throttle(),
		"#SBATCH --output=" + quote(outputPattern(o.slurmDir()+string(filepath.Separator), "shard-%a.out")),
		"#SBATCH --open-mode=append",
		"#SBATCH --requeue",
		"#SBATCH --signal=B:USR1@" + strconv.Itoa(o.requeueBefore()),
	}
	lines = append(lines, o.directives(true)...)
	lines = append(lines,
		"# Written by halu slurm submit. Task I runs shard I/"+n+" of the run below into",
		"# "+o.shardDir("I")+"; run again (halu slurm resubmit), it resumes its shard.",
		"set -euo pipefail",
		`i="$SLURM_ARRAY_TASK_ID"`,
		attempt(`shard $i,`),
	)
	lines = append(lines, o.environment()...)
	lines = append(lines, o.checkBuild()...)
	lines = append(lines,
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
		//
		// Near its time limit (Slurm's USR1, --signal) the task stops its
		// run as Ctrl-C does — every finished item and call kept — and
		// requeues itself: the requeued task resumes the shard, no person
		// needed. A TERM (scancel, a pre-emption) stops the run the same
		// way and leaves the requeue to the scheduler's policy. The task is
		// requeued by its array id (12_3): one task's SLURM_JOB_ID is the
		// array's own, whose requeue would run every task again.
		"rc=0",
		`progress() { `+quote(o.Halu)+` slurm progress "$shard" 2>/dev/null || echo 0; }`,
		`begun=$(progress)`,
		run+" &",
		`pid=$!`,
		`requeue() { kill -TERM "$pid" 2>/dev/null || true; wait "$pid" || true; if [ "$(progress)" -le "$begun" ]; then echo "halu slurm: shard $i near its time limit before it recorded an item or kept a call: not requeued (give the tasks a longer --time)" >&2; exit 3; fi; if scontrol requeue "${SLURM_ARRAY_JOB_ID:-$SLURM_JOB_ID}_$i"; then echo "halu slurm: shard $i near its time limit: its run stopped and the task requeued (it resumes the shard)" >&2; exit 0; fi; echo "halu slurm: shard $i near its time limit: its run stopped, and the scheduler refused to requeue the task: halu slurm resubmit resumes it" >&2; exit 3; }`,
		`stop() { kill -TERM "$pid" 2>/dev/null || true; wait "$pid" || true; exit 143; }`,
		`trap requeue USR1`,
		`trap stop TERM`,
		`wait "$pid" || rc=$?`,
		`if [ "$rc" -eq 4 ]; then echo "halu slurm: shard $i finished and measured nothing in part (above); the merge says what the whole run measured" >&2; exit 0; fi`,
		`exit "$rc"`)
	return strings.Join(lines, "\n") + "\n"
}

// Progress is what a shard's run in dir has kept that a resume builds on:
// its records and, where the run uses the response cache (its manifest's
// engine settings say so, whether --no-cache came as a flag, a run file or
// HALU_NO_CACHE), the model calls it made, each kept there — an attempt
// stopped near its time limit that kept neither is not requeued (it would
// be stopped at the same place again). Nothing there counts 0.
func Progress(dir string) int {
	n := 0
	if k, err := rundir.CountRecords(filepath.Join(dir, rundir.RecordsFile)); err == nil {
		n = k
	}
	if m, err := rundir.ReadManifest(dir); err == nil && m.UsesCache() {
		n += m.Counts.ModelCalls
	}
	return n
}

// Merge is the merge job's script: halu merge of the N shards into
// DIR/merged.
func (o Options) Merge() string {
	lines := []string{
		"#!/bin/bash",
		"#SBATCH --job-name=" + quote("halu-"+o.Suite+"-merge"),
		"#SBATCH --output=" + quote(outputPattern(o.slurmDir()+string(filepath.Separator), "merge.out")),
		"#SBATCH --open-mode=append",
	}
	lines = append(lines, o.directives(false)...)
	lines = append(lines,
		"# Written by halu slurm submit: joins the shards once every task succeeded.",
		"set -euo pipefail",
		attempt("merge,"),
	)
	lines = append(lines, o.environment()...)
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
	// Rebinds are the builds the scripts were rewritten for after the
	// submission (halu slurm resubmit --rebind), in order.
	Rebinds []Rebind `json:"rebinds,omitempty"`
}

// Rebind is one rewrite of the scripts for another halu build.
type Rebind struct {
	At     time.Time `json:"at"`
	Halu   string    `json:"halu"`
	SHA256 string    `json:"sha256"`
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

// lock takes the submission's lock (slurm/): two submits or resubmits of
// one submission at once would leave a job that jobs.json does not know.
func lock(dir string) (func(), error) {
	d := filepath.Join(dir, "slurm")
	if err := os.MkdirAll(d, 0o755); err != nil {
		return nil, err
	}
	release, err := rundir.LockDir(d)
	if err != nil {
		return nil, fmt.Errorf("the submission %s is being submitted or resubmitted by another halu: %w", dir, err)
	}
	return release, nil
}

// Submit writes the scripts and submits the array and, after it, the merge.
func Submit(ctx context.Context, c Cluster, o Options) (*Jobs, error) {
	if err := o.Check(); err != nil {
		return nil, err
	}
	release, err := lock(o.Dir)
	if err != nil {
		return nil, err
	}
	defer release()
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

func (j *Jobs) submit(ctx context.Context, c Cluster, array, merge string, indices []int, arrayArgs []string, after ...string) error {
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
	m, err := c.sbatch(ctx, merge, "--dependency=afterok:"+strings.Join(append([]string{a}, after...), ":"))
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
	// Why the last attempt of a shard that is neither complete nor in the
	// queue ended (its log, slurm/shard-I.out), and Failed the items its
	// run logged as failed (errors.jsonl).
	Why    string
	Failed int
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
	q, qerr := c.queue(ctx, j.ids())
	if qerr != nil {
		// The controller cannot be asked (down, unreachable): the shards
		// are known by their run directories alone.
		q, qerr = map[string][2]string{}, &SchedulerError{Err: qerr}
	}
	var states []ShardState
	for i := 1; i <= j.Options.Shards; i++ {
		st := ShardState{I: i}
		d := ShardDir(dir, i)
		if m, err := rundir.ReadManifest(d); err == nil {
			st.Status, st.Items = m.Status, m.Counts.Items
			if k, err := rundir.CountRecords(filepath.Join(d, rundir.RecordsFile)); err == nil {
				st.Done = k
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
	for k := range states {
		if !states[k].Complete() && states[k].Queue == "" {
			states[k].Why, states[k].Failed = lastAttempt(filepath.Join(dir, "slurm", fmt.Sprintf("shard-%d.out", states[k].I))), failedItems(ShardDir(dir, states[k].I))
		}
	}
	if qerr != nil {
		return j, states, merge, qerr
	}
	return j, states, merge, nil
}

// SchedulerError is States' error when the scheduler could not be asked:
// the states it returns come from the shards' run directories alone.
type SchedulerError struct{ Err error }

func (e *SchedulerError) Error() string { return "the scheduler could not be asked: " + e.Err.Error() }
func (e *SchedulerError) Unwrap() error { return e.Err }

// whyLine is a line of a task's log that says why it ended: halu's own
// errors, the scheduler's notices (CANCELLED, TIME LIMIT, PREEMPTION,
// NODE FAIL, OUT OF MEMORY), a script's refusal; a notice of the
// scheduler's is preferred (halu then says only that it was interrupted).
var (
	whyLine         = regexp.MustCompile(`(?i)^(?:halu(?: slurm)?:|error|slurmstepd: error:)|\*\*\*.*(?:CANCELLED|TIME LIMIT|PREEMPT|NODE FAIL|DUE TO)|oom|out of memory|exit status`)
	schedulerNotice = regexp.MustCompile(`\*\*\*.*(?:CANCELLED|TIME LIMIT|PREEMPT|NODE FAIL|DUE TO)`)
)

// lastAttempt is why the last attempt logged in path ended: the last line
// of its part of the log that says so (whyLine), else its last line;
// "" when the log holds no attempt.
func lastAttempt(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	text := string(b)
	i := strings.LastIndex(text, AttemptMark)
	if i < 0 {
		return ""
	}
	var last, why, notice string
	for _, l := range strings.Split(text[i:], "\n")[1:] {
		if l = strings.TrimSpace(l); l == "" || strings.Contains(l, " · calls ") {
			continue // a progress line says nothing of the end
		}
		last = l
		if whyLine.MatchString(l) {
			why = l
		}
		if schedulerNotice.MatchString(l) {
			notice = l
		}
	}
	switch {
	case notice != "":
		why = notice // the scheduler's word on why it stopped the task
	case why == "":
		why = last
	}
	if r := []rune(why); len(r) > 300 {
		why = string(r[:300]) + "…"
	}
	return why
}

// failedItems counts the items the shard's run logged as failed
// (errors.jsonl): each is run again when the shard resumes.
func failedItems(dir string) int {
	b, err := rundir.ReadFile(dir, rundir.ErrorsFile)
	if err != nil {
		return 0
	}
	return strings.Count(string(b), "\n")
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

// Build is a halu binary: its absolute path and sha256.
type Build struct{ Path, SHA256 string }

// rebuild checks the build the scripts run and, with b, rewrites them for
// b. Without b, a build that changed since the submission is an error
// that says what to do.
func (j *Jobs) rebuild(b *Build) error {
	o := &j.Options
	if b == nil {
		if o.HaluSHA256 == "" {
			return nil
		}
		now, err := rundir.HashFile(o.Halu)
		if err != nil {
			return fmt.Errorf("the halu build submitted (%s): %w", o.Halu, err)
		}
		if now != o.HaluSHA256 {
			return fmt.Errorf("%s is no longer the halu build submitted (sha256 %s, now %s): every task would refuse it — halu slurm resubmit --rebind %s runs the shards with this halu (each session records its build; halu merge refuses shards whose settings differ)", o.Halu, short(o.HaluSHA256), short(now), o.Dir)
		}
		return nil
	}
	if b.Path == o.Halu && b.SHA256 == o.HaluSHA256 {
		return nil
	}
	o.Halu, o.HaluSHA256 = b.Path, b.SHA256
	if err := o.Check(); err != nil {
		return err
	}
	for p, text := range map[string]string{filepath.Join(o.slurmDir(), ArrayScript): o.Array(), filepath.Join(o.slurmDir(), MergeScript): o.Merge()} {
		if err := rundir.WriteFileAtomic(p, []byte(text)); err != nil {
			return err
		}
		if err := os.Chmod(p, 0o755); err != nil {
			return err
		}
	}
	j.Rebinds = append(j.Rebinds, Rebind{At: time.Now().UTC(), Halu: b.Path, SHA256: b.SHA256})
	return j.write()
}

func short(sum string) string { return sum[:min(12, len(sum))] }

// ErrNothingToDo: every shard is complete, and merged or being merged; or
// every shard that is not complete is still queued or running.
var ErrNothingToDo = errors.New("nothing to resubmit")

// Resubmit submits again the shards of the submission in dir that are not
// complete — a task that failed, was cancelled or pre-empted resumes its
// shard — and a merge job after them (cancelling the merge job left waiting
// on the failed array). A shard whose task is still queued or running is
// left to it, and the new merge job waits for that task too. With nothing
// left to run and no merged run, it submits the merge alone.
//
// The tasks run the halu build submitted. When that file now holds
// another build, Resubmit refuses, naming both, unless rebind is set
// (--rebind): the scripts are rewritten for the build given (path and
// sha256), which each resumed shard's session records as its build.
func Resubmit(ctx context.Context, c Cluster, dir string, rebind *Build) (*Jobs, []int, error) {
	if _, err := ReadJobs(dir); err != nil {
		return nil, nil, err
	}
	release, err := lock(dir)
	if err != nil {
		return nil, nil, err
	}
	defer release()
	j, states, merge, err := States(ctx, c, dir)
	if err != nil {
		return nil, nil, err
	}
	if err := j.rebuild(rebind); err != nil {
		return nil, nil, err
	}
	// Shards still queued or running are left to run: the new merge job
	// waits for them as well as for the shards run again.
	var redo []int
	var waiting []string
	for _, s := range states {
		switch {
		case s.Complete():
		case s.Queue != "":
			waiting = append(waiting, s.Job)
		default:
			redo = append(redo, s.I)
		}
	}
	if len(redo) == 0 && len(waiting) > 0 {
		return j, nil, fmt.Errorf("%w: every shard not complete is queued or running (%s)", ErrNothingToDo, strings.Join(waiting, ", "))
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
	return j, redo, j.submit(ctx, c, array, mergeScript, redo, []string{"--array=" + strings.Join(idx, ",") + o.throttle()}, waiting...)
}
