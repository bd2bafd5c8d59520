package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"halu/runner/engine"
	"halu/runner/registry"
	"halu/runner/rundir"
)

// newMergeCmd joins the shards of a run (halu run … --shard I/N) into one
// run directory.
func newMergeCmd() *cobra.Command {
	var out string
	var rc runControl
	cmd := &cobra.Command{
		Use:   "merge SHARD_DIR... --out DIR",
		Short: "Join the N shard runs of one run (halu run … --shard I/N) into one run directory",
		Long: `merge checks that the runs are the N shards of one command line — the same suite, settings,
protocol, readers and serving fingerprints (server version, model digests, templates), every
shard 1..N once and complete, no item twice — and writes one run directory: every record, the
errors, a manifest with the shards' counts and sessions (listed under merged_from), and the
summary over all records. report, compare and the gates read it as any run.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return usagef("merge: --out is required")
			}
			gates, err := rc.gates()
			if err != nil {
				return err
			}
			m, err := rundir.ReadManifest(args[0])
			if err != nil {
				return err
			}
			def, ok := registry.Find(m.Suite)
			if !ok {
				return fmt.Errorf("run %s: unknown suite %q", args[0], m.Suite)
			}
			s, err := def.Build(m.Config, m.Format)
			if err != nil {
				return fmt.Errorf("run %s: config: %w", args[0], err)
			}
			if err := s.CheckGates(gates); err != nil {
				return usageError{err}
			}
			res, err := engine.Merge(s, args, out)
			if errors.Is(err, engine.ErrShards) {
				return usageError{err}
			}
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if res.Summary != nil {
				res.Summary.Print(w)
			}
			fmt.Fprintf(w, "run directory: %s (merged from %d shards)\n", res.Dir, len(args))
			return closeRun(w, res.Summary, res.Manifest, res.Dir, gates)
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "the merged run's directory (new or empty)")
	rc.bindGates(cmd.Flags())
	return cmd
}
