package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"halu/localmodels"
	"halu/runner/engine"
)

func newDoctorCmd(g *globals) *cobra.Command {
	var models []string
	var index string
	cmd := &cobra.Command{
		Use:   "doctor [--models M,…] [-- run SUITE FLAGS…]",
		Short: "Check the Ollama server, models, index, cache and disk — or what a given run command needs",
		Long: `doctor checks the server, the models named, the index and the cache directory. Given a
run command after --, it checks what that run would need: every model any of its stages calls
(generators, judges, embedding model, verifier) and every file or directory its settings name.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			bad := 0
			check := func(ok bool, format string, a ...any) {
				mark := "ok  "
				if !ok {
					mark = "FAIL"
					bad++
				}
				fmt.Fprintf(out, "[%s] %s\n", mark, fmt.Sprintf(format, a...))
			}
			paths := map[string]string{}
			if len(args) > 0 {
				need, files, parallel, invalid, err := runNeeds(args)
				if err != nil {
					return err
				}
				if parallel > 0 {
					g.eng.Parallel = parallel
				}
				if invalid != nil {
					check(false, "run settings: %v", invalid)
				}
				models = append(models, need...)
				paths = files
			}
			c, err := g.server()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			v, err := c.Version(ctx)
			if err != nil {
				check(false, "Ollama at %s: not answering (%v); %s; or point --ollama / OLLAMA_HOST at a running server", c.Host(), errors.Unwrap(err), startServerHint())
			} else {
				check(true, "Ollama at %s: %s", c.Host(), v)
			}
			if !c.IsLoopback() {
				fmt.Fprintf(out, "[warn] %s is not on this machine: prompts and answers cross the network\n", c.Host())
			}
			if err == nil {
				list, err := c.List(ctx)
				switch {
				case err != nil:
					check(false, "models on server: %v", err)
				case len(list) == 0:
					fmt.Fprintf(out, "[warn] no model on the server: pull one (`halu models pull NAME`) or import a GGUF file (`halu models import FILE.gguf`)\n")
				default:
					check(true, "models on server: %d", len(list))
				}
				seen := map[string]bool{}
				for _, m := range models {
					if seen[m] {
						continue
					}
					seen[m] = true
					info, err := c.Info(ctx, m)
					check(err == nil, "model %s: %s", m, orErr(info.Digest, err))
				}
			}
			if err == nil && g.eng.Parallel > 1 && len(models) > 0 {
				probeParallel(ctx, out, c, models[0], g.eng.Parallel, g.eng.NumThread)
			}
			if index != "" {
				paths["--index"] = index
			}
			for _, k := range sortedKeys(paths) {
				_, err := os.Stat(paths[k])
				check(err == nil, "%s %s: %s", k, paths[k], orErr("present", err))
			}
			check(writable(g.eng.Cache) == nil, "cache %s: %s", g.eng.Cache, orErr("writable", writable(g.eng.Cache)))
			var fs syscall.Statfs_t
			if err := syscall.Statfs(g.eng.Cache+"/..", &fs); err == nil {
				free := float64(fs.Bavail) * float64(fs.Bsize) / (1 << 30)
				check(free > 1, "disk free at cache %s: %.1f GiB", g.eng.Cache, free)
			} else if err := syscall.Statfs(".", &fs); err == nil {
				free := float64(fs.Bavail) * float64(fs.Bsize) / (1 << 30)
				check(free > 1, "disk free here: %.1f GiB", free)
			}
			if bad > 0 {
				return fmt.Errorf("doctor: %d check(s) failed", bad)
			}
			return nil
		},
	}
	cmd.Flags().StringSliceVar(&models, "models", nil, "models that must be present")
	cmd.Flags().SetInterspersed(false)
	g.eng.Settings().Bind(cmd.Flags())
	cmd.Flags().StringVar(&index, "index", "", "index directory that must be present")
	return cmd
}

func orErr(s string, err error) string {
	if err != nil {
		return err.Error()
	}
	return s
}

// runNeeds reads a run command line (run SUITE FLAGS…) as halu run would
// and returns every model its stages call, every path its settings name
// (by flag), its --parallel (0 if not given) and why the suite cannot be
// made from them or its gates name no metric of it (nil if neither),
// without calling any model. A usage error in the line itself is err.
func runNeeds(args []string) (models []string, paths map[string]string, parallel int, invalid, err error) {
	if len(args) < 2 || args[0] != "run" {
		return nil, nil, 0, nil, usagef("doctor: after --, give a run command: run SUITE FLAGS…")
	}
	def, ok := findSuite(args[1])
	if !ok {
		return nil, nil, 0, nil, unknownSuite(args[1])
	}
	// The line is read with every flag halu run takes: the suite's, the
	// run's own (gates, dry run) and the engine's.
	fs := pflag.NewFlagSet("run "+def.Name, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cfg := def.Config()
	cfg.Settings().Bind(fs)
	var rc runControl
	rc.bind(fs)
	var out string
	bindRunOut(fs, &out)
	eng := engine.DefaultEngineConfig()
	eng.Settings().Bind(fs)
	if err := fs.Parse(args[2:]); err != nil {
		return nil, nil, 0, nil, usagef("doctor: %s: %v", strings.Join(args[:2], " "), err)
	}
	if fs.NArg() > 0 {
		return nil, nil, 0, nil, usagef("doctor: %s: unexpected %v", strings.Join(args[:2], " "), fs.Args())
	}
	if rc.file != "" {
		return nil, nil, 0, nil, usagef("doctor: give the run file's settings as flags after -- (doctor does not read -f)")
	}
	if _, err := suiteConfig(fs, cfg); err != nil {
		return nil, nil, 0, nil, err
	}
	gates, err := rc.gates()
	if err != nil {
		return nil, nil, 0, nil, err
	}
	if fs.Changed("parallel") {
		parallel = eng.Parallel
	}
	list := cfg.Settings()
	paths = list.Paths()
	s, invalid := newSuite(def, cfg)
	if invalid == nil {
		if s.Close != nil {
			defer s.Close()
		}
		return s.Models(), paths, parallel, s.CheckGates(gates), nil
	}
	// The suite cannot be made: the models its settings name.
	return list.Models(), paths, parallel, invalid, nil
}

// writable checks that dir exists or can be made, and takes a file.
func writable(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".doctor-*")
	if err != nil {
		return err
	}
	f.Close()
	return os.Remove(f.Name())
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// probeParallel measures how many calls the server answers at once, which
// Ollama's API does not report (OLLAMA_NUM_PARALLEL is the server's own
// setting): one short generation alone, then n at once. A server that
// answers fewer at once than --parallel queues the rest — a run is slower
// than the setting promises, not wrong — so a shortfall is a warning.
func probeParallel(ctx context.Context, out io.Writer, c localmodels.Backend, model string, n, numThread int) {
	n = min(n, 8)
	call := func(i int) (time.Duration, error) {
		opts := localmodels.Options{Temperature: localmodels.Float(0), Seed: localmodels.Int(i), NumPredict: localmodels.Int(32)}
		if numThread > 0 {
			opts.NumThread = localmodels.Int(numThread)
		}
		start := time.Now()
		_, err := c.Chat(ctx, localmodels.ChatRequest{Model: model, Options: opts,
			Messages: []localmodels.Message{{Role: "user", Content: fmt.Sprintf("Count from %d upwards.", i)}}}, localmodels.StreamLimits{Idle: time.Minute})
		return time.Since(start), err
	}
	if _, err := call(0); err != nil { // loads the model
		fmt.Fprintf(out, "[warn] --parallel %d: could not measure the server's parallel slots (%v)\n", n, err)
		return
	}
	one, err := call(1)
	if err != nil {
		fmt.Fprintf(out, "[warn] --parallel %d: could not measure the server's parallel slots (%v)\n", n, err)
		return
	}
	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			_, errs[i] = call(2 + i)
		}(i)
	}
	wg.Wait()
	all := time.Since(start)
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintf(out, "[warn] --parallel %d: could not measure the server's parallel slots (%v)\n", n, err)
		return
	}
	at := slotsAtOnce(n, one, all)
	// Calls served together still share the machine: only a clear
	// shortfall (under 60% of --parallel) is a warning.
	if at < 0.6*float64(n) {
		fmt.Fprintf(out, "[warn] --parallel %d: the server answered %d calls sent at once in %.2fs, one alone in %.2fs: about %.1f at a time (model %s); the rest wait in its queue. Start the server with OLLAMA_NUM_PARALLEL=%d, or lower --parallel\n",
			n, n, all.Seconds(), one.Seconds(), at, model, n)
		return
	}
	fmt.Fprintf(out, "[ok  ] --parallel %d: the server answered %d calls sent at once in %.2fs, one alone in %.2fs (model %s)\n", n, n, all.Seconds(), one.Seconds(), model)
}

// slotsAtOnce estimates how many of n calls sent at once a server answered
// together, from the time of one call alone and of all n: n calls served k
// at a time take about n/k times one.
func slotsAtOnce(n int, one, all time.Duration) float64 {
	if all <= 0 || one <= 0 {
		return float64(n)
	}
	return max(1, min(float64(n), float64(n)*one.Seconds()/all.Seconds()))
}
