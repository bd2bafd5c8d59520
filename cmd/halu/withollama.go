package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"halu/localmodels"
	"halu/runner/engine"
)

func newWithOllamaCmd(g *globals) *cobra.Command {
	var bin, modelsDir, logPath string
	cmd := &cobra.Command{
		Use:   "with-ollama --bin PATH [--models DIR] -- COMMAND [ARGS...]",
		Short: "Run COMMAND against a private Ollama server on a free loopback port, stopped afterwards",
		Long: `with-ollama starts 'ollama serve' on a free 127.0.0.1 port with its own models directory
(a temporary one unless --models is given), runs COMMAND with OLLAMA_HOST pointing at it, and
stops the server when COMMAND ends, fails or is interrupted. Used by make e2e and make demo.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if bin == "" {
				if bin = ollamaBin(); bin == "" {
					return usagef("with-ollama: --bin is required (no ollama on PATH, none in $HALU_OLLAMA_BIN or ~/.cache/halu; `make ollama` builds one)")
				}
			}
			if modelsDir == "" {
				d, err := os.MkdirTemp("", "halu-ollama-models-")
				if err != nil {
					return err
				}
				defer os.RemoveAll(d)
				modelsDir = d
			}
			// The server's log goes to --log, else to stderr and a
			// temporary file: either way the command is told where
			// (engine.ServerLogEnv), so that a server that crashes under
			// a call is named with its own account of why.
			var logw io.Writer
			if logPath != "" {
				f, err := os.Create(logPath)
				if err != nil {
					return err
				}
				defer f.Close()
				logw = f
			} else {
				f, err := os.CreateTemp("", "halu-ollama-*.log")
				if err != nil {
					return err
				}
				defer os.Remove(f.Name())
				defer f.Close()
				logw, logPath = io.MultiWriter(g.stderr, f), f.Name()
			}
			if abs, err := filepath.Abs(logPath); err == nil {
				logPath = abs
			}
			srv, err := localmodels.StartServer(cmd.Context(), localmodels.ServerConfig{Bin: bin, ModelsDir: modelsDir, Log: logw})
			if err != nil {
				return err
			}
			defer srv.Stop()
			fmt.Fprintf(g.stderr, "ollama %s serving on %s (models in %s)\n", filepath.Base(bin), srv.Host, modelsDir)
			c := exec.CommandContext(cmd.Context(), args[0], args[1:]...)
			// Interrupted (Ctrl-C, a task's TERM), the command is asked to
			// stop as it would be by hand — a halu run keeps every finished
			// item and call — and given time to, before it is killed.
			c.Cancel = func() error { return c.Process.Signal(syscall.SIGTERM) }
			c.WaitDelay = time.Minute
			c.Env = append(os.Environ(), "OLLAMA_HOST="+srv.Host, engine.ServerLogEnv+"="+logPath)
			c.Stdin, c.Stdout, c.Stderr = os.Stdin, g.stdout, g.stderr
			if err := c.Run(); err != nil {
				var ee *exec.ExitError
				if errors.As(err, &ee) {
					code := ee.ExitCode()
					if code < 0 { // killed by a signal
						code = exitInterrupted
					}
					return childExit{fmt.Errorf("with-ollama: %s: %w", args[0], err), code}
				}
				return fmt.Errorf("with-ollama: %s: %w", args[0], err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&bin, "bin", "", "ollama binary (default: $HALU_OLLAMA_BIN, then ollama on PATH, then the one `make ollama` built in ~/.cache/halu)")
	cmd.Flags().StringVar(&modelsDir, "models", "", "OLLAMA_MODELS directory (default: a temporary one, removed afterwards)")
	cmd.Flags().StringVar(&logPath, "log", "", "write the server's log to this file (default: stderr)")
	return cmd
}

// pinnedOllama is the Ollama version `make ollama` (scripts/ollama-bin.sh)
// builds when none is installed, into the user's cache.
const pinnedOllama = "v0.17.4"

// ollamaBin is the Ollama server binary halu can start: $HALU_OLLAMA_BIN,
// else `ollama` on PATH, else the one `make ollama` (and `make demo`)
// built into ~/.cache/halu — so that after the demo, on a machine with no
// Ollama installed, `halu with-ollama -- …` works as it did there. "" when
// there is none.
func ollamaBin() string {
	if b := os.Getenv("HALU_OLLAMA_BIN"); b != "" {
		return b
	}
	if p, err := exec.LookPath("ollama"); err == nil {
		return p
	}
	if home, err := os.UserHomeDir(); err == nil {
		p := filepath.Join(home, ".cache", "halu", "ollama-"+pinnedOllama, "ollama")
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// startServerHint says how to start a model server on this machine, for
// the messages of a server that does not answer.
func startServerHint() string {
	b := ollamaBin()
	if b == "" {
		return "no Ollama is installed: `make ollama` builds the pinned one (offline once it is built), then run halu under `halu with-ollama -- halu …`"
	}
	return fmt.Sprintf("start it with `%s serve`, or run the command under `halu with-ollama -- halu …` (a private server on a free port, stopped afterwards)", b)
}
