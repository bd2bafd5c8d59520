package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"halu/runner/registry"
	"halu/runner/rundir"
	"halu/runner/setting"
	"halu/runner/slurm"
)

// newSlurmCmd hands a sharded run to a Slurm cluster.
func newSlurmCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "slurm",
		Short: "Run a suite on a Slurm cluster: a job array of shards and a merge job after it",
		Long: `slurm submit splits one run into N shards (halu run … --shard I/N) as a Slurm job array —
task I runs shard I into DIR/shards/I — and submits a merge job that waits for every task
(afterok) and joins them into DIR/merged, which report, compare and the gates read as any run.
A task that fails or is pre-empted is run again by slurm resubmit, and resumes its shard.`,
	}
	cmd.AddCommand(newSlurmSubmitCmd(g), newSlurmStatusCmd(), newSlurmResubmitCmd(), newSlurmProgressCmd())
	return cmd
}

func newSlurmSubmitCmd(g *globals) *cobra.Command {
	var o slurm.Options
	var out string
	var print bool
	cmd := &cobra.Command{
		Use:   "submit --shards N --out DIR [scheduler options] -- SUITE [run flags]",
		Short: "Write and submit the job array and its merge job (--print: write them only)",
		Example: `  halu slurm submit --shards 4 --out runs/hic --partition gpu --gpus-per-task 1 --time 4:00:00 \
      --private-ollama /opt/ollama/bin/ollama --private-ollama-models /shared/ollama -- \
      hic --models qwen2.5:7b --judges llama3.1:8b --num-thread 8`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.ArgsLenAtDash() != 0 {
				return usagef("slurm submit: put the run after --: halu slurm submit --shards N --out DIR -- SUITE [flags]")
			}
			if out == "" {
				return usagef("slurm submit: --out DIR is required (the shards, the merged run and the scripts go there)")
			}
			// An engine flag given before `slurm` would set this command
			// only; the tasks take what follows -- and the environment
			// halu reads, which the scripts carry (SubmissionEnv).
			var before []string
			cmd.InheritedFlags().Visit(func(f *pflag.Flag) {
				if _, env := os.LookupEnv(setting.EnvName(f.Name)); !env {
					before = append(before, "--"+f.Name)
				}
			})
			if len(before) > 0 {
				return usagef("slurm submit: %s given before the run: put it after --, with the run's flags, for the tasks to use it", strings.Join(before, ", "))
			}
			if err := checkRunArgs(g, args); err != nil {
				return err
			}
			var err error
			if o.Dir, err = filepath.Abs(out); err != nil {
				return err
			}
			if o.Halu, err = haluPath(); err != nil {
				return err
			}
			if o.HaluSHA256, err = rundir.HashFile(o.Halu); err != nil {
				return err
			}
			o.Suite, o.Args = args[0], args[1:]
			// What the tasks need of this shell goes with the submission:
			// a resubmit from another login still finds the servers.
			o.Env, o.NeedEnv = slurm.SubmissionEnv(os.Environ())
			if o.OllamaModels != "" {
				if o.OllamaModels, err = filepath.Abs(o.OllamaModels); err != nil {
					return err
				}
			}
			if err := o.Check(); err != nil {
				return usageError{err}
			}
			w := cmd.OutOrStdout()
			if print {
				array, merge, err := slurm.WriteScripts(o)
				if err != nil {
					return err
				}
				fmt.Fprintf(w, "# %s\n%s\n# %s (submitted with --dependency=afterok:ARRAY_JOB)\n%s", array, o.Array(), merge, o.Merge())
				return nil
			}
			j, err := slurm.Submit(cmd.Context(), slurm.Cluster{}, o)
			if err != nil {
				return err
			}
			s := j.Submissions[0]
			fmt.Fprintf(w, "submitted array job %s (shards 1-%d into %s) and merge job %s (after every task succeeds, into %s)\n",
				s.Array, o.Shards, filepath.Join(o.Dir, "shards"), s.Merge, slurm.MergedDir(o.Dir))
			fmt.Fprintf(w, "progress: halu slurm status %s\n", out)
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.Shards, "shards", 0, "N: the array's tasks, one shard each")
	f.IntVar(&o.Throttle, "throttle", 0, "K: at most K of the array's tasks run at once (sbatch --array=…%K; resubmit keeps it); 0: no limit")
	f.StringVar(&out, "out", "", "the submission's directory: shards/I, merged, slurm/ (scripts, job ids, task output)")
	f.StringVar(&o.Partition, "partition", "", "sbatch --partition")
	f.StringVar(&o.Account, "account", "", "sbatch --account")
	f.StringVar(&o.Time, "time", "", "sbatch --time: each task's time limit (3 minutes before it a task stops its run, keeping what it finished, and requeues itself to resume its shard)")
	f.StringVar(&o.GPUsPerTask, "gpus-per-task", "", "sbatch --gpus-per-task (array tasks only)")
	f.IntVar(&o.CPUsPerTask, "cpus-per-task", 0, "sbatch --cpus-per-task (array tasks only)")
	f.StringArrayVar(&o.Extra, "sbatch", nil, "a further sbatch option for the array tasks, as written (--sbatch=--mem=16G); repeat it")
	f.StringVar(&o.OllamaBin, "private-ollama", "", "the ollama binary with which each task starts its own Ollama on its node (halu with-ollama); unset: the tasks use --ollama/--backend or OLLAMA_HOST")
	f.StringVar(&o.OllamaModels, "private-ollama-models", "", "the OLLAMA_MODELS directory every node reads (with --private-ollama)")
	f.BoolVar(&print, "print", false, "write the scripts into DIR/slurm and print them; submit nothing")
	return cmd
}

// checkRunArgs refuses, before anything is submitted, a run the tasks
// could not start: an unknown suite, flags the suite does not take or
// values they refuse.
func checkRunArgs(g *globals, args []string) error {
	if _, ok := registry.Find(args[0]); !ok {
		var names []string
		for _, d := range registry.All() {
			names = append(names, d.Name)
		}
		return usagef("slurm submit: unknown suite %q (one of %s)", args[0], strings.Join(names, ", "))
	}
	g2 := &globals{eng: g.eng, stdout: g.stdout, stderr: g.stderr}
	root := newRoot(g2)
	sub, rest, err := root.Find(append([]string{"run"}, args...))
	if err != nil {
		return usageError{err}
	}
	if err := sub.ParseFlags(rest); err != nil {
		return usageError{fmt.Errorf("slurm submit: the run's flags: %w", withSuggestion(err, root))}
	}
	if extra := sub.Flags().Args(); len(extra) > 0 {
		return usagef("slurm submit: the run takes no arguments: %q", extra)
	}
	// Every declared check of the run's settings, as each task will run
	// them: a value out of range is refused here, not by every task.
	if check := g2.checks[sub]; check != nil {
		if err := check(sub); err != nil {
			return fmt.Errorf("slurm submit: the run's settings: %w", err)
		}
	}
	return nil
}

// haluPath is this halu binary's absolute path, which the tasks run.
func haluPath() (string, error) {
	p, err := os.Executable()
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(p)
}

func newSlurmStatusCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "status DIR",
		Short: "Each shard's progress from its run directory, beside what the scheduler says of its task",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := filepath.Abs(args[0])
			if err != nil {
				return err
			}
			c := slurm.Cluster{}
			j, states, merge, err := slurm.States(cmd.Context(), c, dir)
			var down *slurm.SchedulerError
			if err != nil && !errors.As(err, &down) {
				return err
			}
			w := cmd.OutOrStdout()
			if down != nil {
				fmt.Fprintf(w, "%s — each shard as its run directory says\n", firstLine(down.Error()))
			}
			tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "shard\trun\titems done\tjob\tscheduler (squeue)")
			var stranded []string
			for _, s := range states {
				items := "–"
				if s.Items > 0 {
					items = fmt.Sprintf("%d/%d", s.Done, s.Items)
				}
				fmt.Fprintf(tw, "%d/%d\t%s\t%s\t%s\t%s\n", s.I, len(states), orDash(s.Status, "not started"), items, orDash(s.Job, "–"), queueText(s.Queue, s.Reason))
				if !s.Complete() && s.Queue == "" {
					stranded = append(stranded, fmt.Sprint(s.I))
				}
			}
			fmt.Fprintf(tw, "merge\t%s\t\t%s\t%s\n", mergedText(dir), orDash(merge[0], "–"), queueText(merge[1], merge[2]))
			tw.Flush()
			for _, s := range states {
				if s.Why == "" && s.Failed == 0 {
					continue
				}
				why := orDash(s.Why, "its log says nothing")
				if s.Failed > 0 {
					why += fmt.Sprintf("; %d items failed (errors.jsonl), run again on resume", s.Failed)
				}
				fmt.Fprintf(w, "shard %d/%d, last attempt (%s): %s\n", s.I, len(states), orDash(s.Job, "–"), why)
			}
			if down != nil {
				fmt.Fprintf(w, "once the scheduler answers: halu slurm resubmit %s runs again every shard that is not complete\n", args[0])
				return nil
			}
			if acct, err := slurm.Accounting(cmd.Context(), c, j); err != nil {
				msg := firstLine(err.Error())
				if _, after, ok := strings.Cut(msg, ": exit status 1: "); ok {
					msg = after
				}
				fmt.Fprintf(w, "sacct: %s (a task that left the queue is known by its shard's run directory alone)\n", msg)
			} else if strings.TrimSpace(acct) != "" {
				fmt.Fprintf(w, "sacct (job|state|exit|elapsed):\n%s", acct)
			}
			if len(stranded) > 0 {
				fmt.Fprintf(w, "shard %s: not complete and not in the queue — halu slurm resubmit %s runs them again (each resumes its shard)\n", strings.Join(stranded, ", "), args[0])
			}
			complete := true
			for _, s := range states {
				complete = complete && s.Complete()
			}
			if complete && merge[1] == "" && !rundir.Exists(slurm.MergedDir(dir)) {
				why := "no merge job was submitted"
				if merge[0] != "" {
					why = "merge job " + merge[0] + " left the queue without a merged run"
					if b, err := os.ReadFile(filepath.Join(dir, "slurm", "merge.out")); err == nil && len(b) > 0 {
						why += " (its log, slurm/merge.out, ends: " + lastLine(string(b)) + ")"
					}
				}
				fmt.Fprintf(w, "every shard is complete and %s — halu slurm resubmit %s submits the merge\n", why, args[0])
			}
			return nil
		},
	}
}

func orDash(s, empty string) string {
	if s == "" {
		return empty
	}
	return s
}

func queueText(state, reason string) string {
	switch {
	case state == "":
		return "not in the queue"
	case reason != "" && reason != "None":
		return state + " (" + reason + ")"
	}
	return state
}

func mergedText(dir string) string {
	m, err := rundir.ReadManifest(slurm.MergedDir(dir))
	if err != nil {
		return "not merged"
	}
	return "merged: " + m.StatusText()
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}

func newSlurmResubmitCmd() *cobra.Command {
	var rebind bool
	cmd := &cobra.Command{
		Use:   "resubmit DIR [--rebind]",
		Short: "Submit again the shards that are not complete (each resumes its run) and a merge job after them",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := filepath.Abs(args[0])
			if err != nil {
				return err
			}
			var b *slurm.Build
			if rebind {
				p, err := haluPath()
				if err != nil {
					return err
				}
				sum, err := rundir.HashFile(p)
				if err != nil {
					return err
				}
				b = &slurm.Build{Path: p, SHA256: sum}
			}
			j, redo, err := slurm.Resubmit(cmd.Context(), slurm.Cluster{}, dir, b)
			w := cmd.OutOrStdout()
			if errors.Is(err, slurm.ErrNothingToDo) {
				fmt.Fprintf(w, "%v (the merged run: %s)\n", err, slurm.MergedDir(dir))
				return nil
			}
			if err != nil {
				return err
			}
			s := j.Submissions[len(j.Submissions)-1]
			if len(redo) == 0 {
				fmt.Fprintf(w, "every shard is complete: merge job %s submitted\n", s.Merge)
				return nil
			}
			fmt.Fprintf(w, "shards %v resubmitted as array job %s (each resumes its run); merge job %s after them\n", redo, s.Array, s.Merge)
			return nil
		},
	}
	cmd.Flags().BoolVar(&rebind, "rebind", false, "run the shards with this halu build when the one submitted was replaced (the scripts are rewritten for it; each resumed session records its build)")
	return cmd
}

// newSlurmProgressCmd is what a task's script asks when its time limit is
// near: how much the shard's run has kept (slurm.Progress), compared with
// what it had when the attempt began. Hidden: the scripts' own.
func newSlurmProgressCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "progress SHARD_DIR",
		Short:  "Print what a shard's run has kept: its records and the model calls its response cache holds",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			fmt.Fprintln(cmd.OutOrStdout(), slurm.Progress(args[0]))
			return nil
		},
	}
}
