package main

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"halu/localmodels"
)

func newModelsCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "models", Short: "List, pull, import and create models on the Ollama server"}

	list := &cobra.Command{
		Use:   "list",
		Short: "List the server's models with digest, family, size and quantization",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			models, err := c.List(cmd.Context())
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tDIGEST\tFAMILY\tPARAMETERS\tQUANTIZATION\tSIZE")
			for _, m := range models {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\n", m.Name, localmodels.ShortDigest(m.Digest), m.Family, m.ParameterSize, m.Quantization, m.Size)
			}
			return tw.Flush()
		},
	}

	pull := &cobra.Command{
		Use:   "pull NAME",
		Short: "Download a model from its registry (needs network; offline, use import)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			interactive := isTerminal(g.stderr)
			var bar *progressbar.ProgressBar
			last := ""
			err = c.Pull(cmd.Context(), args[0], func(status string, completed, total int64) {
				if total > 0 && interactive {
					if bar == nil || status != last {
						bar = progressbar.NewOptions64(total,
							progressbar.OptionSetWriter(g.stderr), progressbar.OptionSetVisibility(true),
							progressbar.OptionSetDescription(status), progressbar.OptionShowBytes(true))
					}
					_ = bar.Set64(completed)
				} else if status != last {
					fmt.Fprintln(g.stderr, status)
				}
				last = status
			})
			if err != nil {
				return pullError(args[0], err)
			}
			info, err := c.Info(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s %s\n", info.Name, info.Digest)
			return nil
		},
	}

	var name, template, system string
	imp := &cobra.Command{
		Use:   "import FILE.gguf --name NAME",
		Short: "Create a model from a local GGUF file through the API (works offline)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if name == "" {
				return usagef("models import: --name is required")
			}
			c, err := g.client()
			if err != nil {
				return err
			}
			info, err := c.Import(cmd.Context(), args[0], name, localmodels.ImportOptions{
				Template: template, System: system,
				Progress: func(s string) { fmt.Fprintln(g.stderr, s) },
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s %s\n", info.Name, info.Digest)
			return nil
		},
	}
	for _, c := range []*cobra.Command{list, pull, imp} {
		g.eng.ServerSettings().Bind(c.Flags())
	}
	imp.Flags().StringVar(&name, "name", "", "model name to create")
	imp.Flags().StringVar(&template, "template", "", "prompt template (Go template, as in a Modelfile); default: the GGUF file's own")
	imp.Flags().StringVar(&system, "system", "", "default system prompt")

	cmd.AddCommand(list, pull, imp, newTinyCmd())
	return cmd
}

// newTinyCmd is `halu models tiny`: it writes the random-weight test model.
func newTinyCmd() *cobra.Command {
	var out string
	var seed uint64
	var tinyCtx int
	tiny := &cobra.Command{
		Use:   "tiny --out FILE.gguf",
		Short: "Write the deterministic random-weight test model (scores it produces are meaningless)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return usagef("models tiny: --out is required")
			}
			if tinyCtx < 64 {
				return usagef("models tiny: --context %d: want at least 64", tinyCtx)
			}
			if err := localmodels.WriteTinyGGUFFileContext(out, seed, tinyCtx); err != nil {
				return err
			}
			st, err := os.Stat(out)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s %d bytes (seed %d); import with: halu models import %s --name NAME --template '%s'\n",
				out, st.Size(), seed, out, localmodels.TinyTemplate)
			return nil
		},
	}
	tiny.Flags().StringVar(&out, "out", "", "output GGUF file")
	tiny.Flags().Uint64Var(&seed, "seed", 1, "random seed for the weights")
	tiny.Flags().IntVar(&tinyCtx, "context", 2048, "trained context length written in its metadata (tokens)")

	return tiny
}

// pullError is a failed pull, pointing to `halu models import` when the
// server could not reach its registry (a machine offline): the model's
// GGUF file, copied from where it was downloaded, imports with no network.
func pullError(name string, err error) error {
	var local *url.Error
	if errors.As(err, &local) {
		return fmt.Errorf("pull %s: %w", name, err) // halu could not reach the server itself
	}
	msg := err.Error()
	for _, offline := range []string{"no such host", "lookup ", "dial tcp", "network is unreachable", "i/o timeout", "TLS handshake timeout"} {
		if strings.Contains(msg, offline) {
			return fmt.Errorf("pull %s: the model registry cannot be reached from the server (%v); offline, import the model's GGUF file instead: halu models import FILE.gguf --name %s", name, err, name)
		}
	}
	return fmt.Errorf("pull %s: %w", name, err)
}
