package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"syscall"

	"github.com/spf13/cobra"
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
				need, files, invalid, err := runNeeds(args)
				if err != nil {
					return err
				}
				if invalid != nil {
					check(false, "run settings: %v", invalid)
				}
				models = append(models, need...)
				paths = files
			}
			c, err := g.client()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			v, err := c.Version(ctx)
			if err != nil {
				check(false, "Ollama at %s: not answering (%v); start it with `ollama serve` (or run halu under `halu with-ollama`), or point --ollama / OLLAMA_HOST at it", c.Host(), errors.Unwrap(err))
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
			if index != "" {
				paths["--index"] = index
			}
			for _, k := range sortedKeys(paths) {
				_, err := os.Stat(paths[k])
				check(err == nil, "%s %s: %s", k, paths[k], orErr("present", err))
			}
			check(writable(g.cacheDir) == nil, "cache %s: %s", g.cacheDir, orErr("writable", writable(g.cacheDir)))
			var fs syscall.Statfs_t
			if err := syscall.Statfs(g.cacheDir+"/..", &fs); err == nil {
				free := float64(fs.Bavail) * float64(fs.Bsize) / (1 << 30)
				check(free > 1, "disk free at cache %s: %.1f GiB", g.cacheDir, free)
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
// (by flag) and why the suite cannot be made from them (nil if it can),
// without calling any model. A usage error in the line itself is err.
func runNeeds(args []string) (models []string, paths map[string]string, invalid, err error) {
	if len(args) < 2 || args[0] != "run" {
		return nil, nil, nil, usagef("doctor: after --, give a run command: run SUITE FLAGS…")
	}
	def, ok := findSuite(args[1])
	if !ok {
		return nil, nil, nil, unknownSuite(args[1])
	}
	cfg, err := def.override(json.RawMessage("{}"), args[2:])
	if err != nil {
		return nil, nil, nil, err
	}
	paths = map[string]string{}
	raw, _ := json.Marshal(cfg)
	var fields map[string]any
	json.Unmarshal(raw, &fields)
	for key, flag := range map[string]string{"index": "--index", "kg": "--kg", "data": "--data", "open": "--open", "human": "--human", "external": "--external"} {
		if p, ok := fields[key].(string); ok && p != "" {
			paths[flag] = p
		}
	}
	s, invalid := def.suite(cfg)
	if invalid == nil {
		if c, ok := s.(io.Closer); ok {
			defer c.Close()
		}
		return s.Models(), paths, nil, nil
	}
	// The suite cannot be made: the models its settings name.
	for _, key := range []string{"models", "judges", "judge", "embed_model", "verifier", "agent"} {
		switch v := fields[key].(type) {
		case string:
			if v != "" {
				models = append(models, v)
			}
		case []any:
			for _, m := range v {
				if m, ok := m.(string); ok {
					models = append(models, m)
				}
			}
		}
	}
	return models, paths, invalid, nil
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
