package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/spf13/cobra"

	"halu/localmodels"
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
				p, err := exec.LookPath("ollama")
				if err != nil {
					return usagef("with-ollama: --bin is required (no ollama on PATH; `make ollama` builds one)")
				}
				bin = p
			}
			if modelsDir == "" {
				d, err := os.MkdirTemp("", "halu-ollama-models-")
				if err != nil {
					return err
				}
				defer os.RemoveAll(d)
				modelsDir = d
			}
			logw := g.stderr
			if logPath != "" {
				f, err := os.Create(logPath)
				if err != nil {
					return err
				}
				defer f.Close()
				logw = f
			}
			srv, err := localmodels.StartServer(cmd.Context(), localmodels.ServerConfig{Bin: bin, ModelsDir: modelsDir, Log: logw})
			if err != nil {
				return err
			}
			defer srv.Stop()
			fmt.Fprintf(g.stderr, "ollama %s serving on %s (models in %s)\n", filepath.Base(bin), srv.Host, modelsDir)
			c := exec.CommandContext(cmd.Context(), args[0], args[1:]...)
			c.Env = append(os.Environ(), "OLLAMA_HOST="+srv.Host)
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
	cmd.Flags().StringVar(&bin, "bin", os.Getenv("HALU_OLLAMA_BIN"), "ollama binary (default: $HALU_OLLAMA_BIN, then PATH)")
	cmd.Flags().StringVar(&modelsDir, "models", "", "OLLAMA_MODELS directory (default: a temporary one, removed afterwards)")
	cmd.Flags().StringVar(&logPath, "log", "", "write the server's log to this file (default: stderr)")
	return cmd
}
