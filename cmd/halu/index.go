package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"halu/index"
	"halu/index/kg"
)

func newIndexCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "index", Short: "Build and query the on-disk BM25 index of PubMed"}
	cmd.AddCommand(newIndexBuildCmd(g), newIndexCompactCmd(), newIndexSearchCmd(), newIndexStatsCmd())
	return cmd
}

// newIndexBuildCmd is halu index build.
func newIndexBuildCmd(g *globals) *cobra.Command {
	var out string
	var batch int
	var writer, memory string
	build := &cobra.Command{
		Use:   "build --out DIR INPUT...",
		Short: "Add PubMed XML (.xml, .xml.gz) and JSONL files to the index, in order (updates and deletions apply)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return usagef("index build: --out is required")
			}
			var opts []index.Option
			switch writer {
			case "halu":
			case "zap":
				opts = append(opts, index.StockSegments())
			default:
				return usagef("index build: --segment-writer %q (want halu or zap)", writer)
			}
			restore, err := setBuildMemory(cmd, "index build", memory)
			if err != nil {
				return err
			}
			defer restore()
			l, err := index.OpenLiterature(out, true, opts...)
			if err != nil {
				return err
			}
			defer l.Close()
			last := 0
			info, err := l.Build(cmd.Context(), args, index.BuildOptions{BatchSize: batch, Log: g.stderr, Progress: func(n int) {
				if n-last >= 50000 {
					fmt.Fprintf(g.stderr, "%d records applied\n", n)
					last = n
				}
			}})
			failed := printBuild(cmd.OutOrStdout(), info)
			if err != nil {
				return err
			}
			if failed > 0 {
				return fmt.Errorf("index build: %d input(s) damaged (their records before the damage were indexed)", failed)
			}
			return nil
		},
	}
	build.Flags().StringVar(&out, "out", "", "index directory (created, or added to)")
	build.Flags().IntVar(&batch, "batch", 2000, "records per index batch")
	build.Flags().StringVar(&memory, "memory-limit", defaultBuildMemory, "a soft bound on the memory the build's Go runtime holds, its heap mostly (Go's memory limit: it collects garbage more often near it; GOMEMLIMIT in the environment wins unless this flag is given); the pages of the index's own files the kernel maps come on top; 0: no bound")
	build.Flags().StringVar(&writer, "segment-writer", "halu", "who writes the index's segments, in bleve's zap v17 format: halu (its own builder, the same bytes, faster) or zap (bleve's)")
	return build
}

// newIndexCompactCmd is halu index compact.
func newIndexCompactCmd() *cobra.Command {
	var memory string
	compact := &cobra.Command{
		Use:   "compact DIR",
		Short: "Merge a built index's segments into one, for faster queries (reads and writes the whole index; seals it anew)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			restore, err := setBuildMemory(cmd, "index compact", memory)
			if err != nil {
				return err
			}
			defer restore()
			info, err := index.Compact(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "compacted %d segments into %d (%d documents) in %.1f s; the index's seal is new: %s\n",
				info.SegmentsBefore, info.SegmentsAfter, info.Docs, info.Took.Seconds(), index.SealPath(args[0]))
			return nil
		},
	}
	compact.Flags().StringVar(&memory, "memory-limit", defaultBuildMemory, "a soft bound on the memory the merge's Go runtime holds, as index build's; 0: no bound")
	return compact
}

// defaultBuildMemory is index build's --memory-limit. Unbounded, Go's
// collector lets the heap grow to twice what is live, and the one large
// merge of a 5M-document build (ten segments of ~475 MB into one) held
// 553–586 MiB of heap for ~263 MB live, its peak RSS 939–1,110 MiB with
// the file pages; bounded here, 868 and 934 MiB, at 1.08–1.22× that
// stage's wall time (docs/benchmarks.md). A build whose live heap outgrows
// the bound goes on: Go's limit is soft, and caps the collector's share
// of the CPU.
const defaultBuildMemory = "384MiB"

// setBuildMemory sets the process's Go memory limit from the command's
// --memory-limit (buildMemoryLimit) and returns what puts the limit before
// it back; a bad value is a usage error naming the command and the flag.
func setBuildMemory(cmd *cobra.Command, what, flag string) (restore func(), err error) {
	limit, set, err := buildMemoryLimit(flag, cmd.Flags().Changed("memory-limit"), os.Getenv("GOMEMLIMIT"))
	if err != nil {
		return nil, usagef("%s: --memory-limit: %v", what, err)
	}
	if !set {
		return func() {}, nil
	}
	before := debug.SetMemoryLimit(limit)
	return func() { debug.SetMemoryLimit(before) }, nil
}

// buildMemoryLimit is the Go memory limit, in bytes, index build sets
// from --memory-limit (math.MaxInt64, the runtime's own "none", for "0"),
// and whether it sets one: not when the flag was not given and GOMEMLIMIT
// names a limit in the environment (the runtime has applied it already).
func buildMemoryLimit(flag string, given bool, env string) (limit int64, set bool, err error) {
	if !given && env != "" {
		return 0, false, nil
	}
	n, err := parseBytes(flag)
	if err != nil {
		return 0, false, err
	}
	if n == 0 {
		return math.MaxInt64, true, nil
	}
	if n < 64<<20 {
		return 0, false, fmt.Errorf("%q is under 64MiB: the build's heap alone needs more (0 for no bound)", flag)
	}
	return n, true, nil
}

// parseBytes reads a size as Go's GOMEMLIMIT spells it: a whole number
// of bytes, or one with a unit B, KiB, MiB, GiB or TiB.
func parseBytes(s string) (int64, error) {
	units := []struct {
		suffix string
		shift  uint
	}{{"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10}, {"B", 0}}
	num, shift := s, uint(0)
	for _, u := range units {
		if strings.HasSuffix(s, u.suffix) {
			num, shift = strings.TrimSuffix(s, u.suffix), u.shift
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64>>shift {
		return 0, fmt.Errorf("%q is not a size (a whole number of bytes, or with B, KiB, MiB, GiB or TiB: 384MiB)", s)
	}
	return n << shift, nil
}

// printBuild writes what a build applied, input by input, and returns how
// many inputs stopped on damage.
func printBuild(w io.Writer, info index.BuildInfo) (failed int) {
	fmt.Fprintf(w, "added %d, updated %d, deleted %d\n", info.Added, info.Updated, info.Deleted)
	for _, in := range info.Inputs {
		var skipped []string
		for why, n := range in.Skipped {
			skipped = append(skipped, fmt.Sprintf("%d %s", n, why))
		}
		if in.AlreadyIn {
			fmt.Fprintf(w, "  %s: already in (an earlier run of this build applied it)\n", in.Path)
			continue
		}
		fmt.Fprintf(w, "  %s: %d records, %d deletions", in.Path, in.Records, in.Deletes)
		if len(skipped) > 0 {
			sort.Strings(skipped) // map order is random; output is not
			fmt.Fprintf(w, "; skipped %s", strings.Join(skipped, ", "))
		}
		if in.Error != "" {
			failed++
			fmt.Fprintf(w, "; STOPPED: %s", in.Error)
		}
		fmt.Fprintln(w)
	}
	return failed
}

// newIndexSearchCmd is halu index search.
func newIndexSearchCmd() *cobra.Command {
	var k int
	var minScore float64
	var maxPMID uint64
	var asJSON bool
	search := &cobra.Command{
		Use:   "search DIR \"claim text\"",
		Short: "Rank articles by BM25 (k1 1.2, b 0.75)",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := index.OpenLiterature(args[0], false)
			if err != nil {
				return err
			}
			defer l.Close()
			hits, err := l.Search(cmd.Context(), args[1], index.SearchOptions{K: k, MinScore: minScore, BelowPMID: maxPMID})
			if err != nil {
				return err
			}
			if asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(hits)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "RANK\tPMID\tSCORE\tYEAR\tTITLE")
			for i, h := range hits {
				title := h.Title
				if title == "" {
					title = firstWords(h.Abstract, 12) + " …"
				}
				fmt.Fprintf(tw, "%d\t%d\t%.4f\t%d\t%s\n", i+1, h.PMID, h.Score, h.Year, title)
			}
			return tw.Flush()
		},
	}
	search.Flags().IntVar(&k, "k", 5, "articles to return")
	search.Flags().Float64Var(&minScore, "min-score", 0, "keep only articles scoring at least TAU")
	search.Flags().Uint64Var(&maxPMID, "max-pmid", 0, "keep only articles with PMID < N (strictly below; 0: no cutoff)")
	search.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return search
}

// newIndexStatsCmd is halu index stats.
func newIndexStatsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "stats DIR",
		Short: "Documents, size on disk, PMID range and build history",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := index.OpenLiterature(args[0], false)
			if err != nil {
				return err
			}
			defer l.Close()
			st, err := l.Stats(cmd.Context())
			if err != nil {
				return err
			}
			enc := json.NewEncoder(cmd.OutOrStdout())
			enc.SetIndent("", "  ")
			return enc.Encode(st)
		},
	}
}

func firstWords(s string, n int) string {
	f := strings.Fields(s)
	if len(f) > n {
		f = f[:n]
	}
	return strings.Join(f, " ")
}

func newKGCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "kg", Short: "Import and query the biomedical knowledge graph"}
	var out string
	imp := &cobra.Command{
		Use:   "import --out DIR FILE...",
		Short: "Import PubTator relation files (PubTator 3, BioRED, relation2pubtator3, header TSV) and name tables",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return usagef("kg import: --out is required")
			}
			// A refused file creates no store (an empty one would read
			// as a graph without edges).
			if err := kg.CheckFiles(args); err != nil {
				return usageError{err}
			}
			store, err := kg.Open(out, true)
			if err != nil {
				return err
			}
			defer store.Close()
			info, err := store.Import(cmd.Context(), args)
			for _, p := range info.Problems {
				fmt.Fprintf(g.stderr, "skipped: %s\n", p)
			}
			if errors.Is(err, kg.ErrFormat) {
				return usageError{err}
			}
			if err != nil {
				return err
			}
			st, err := store.Stats()
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "read %d relation rows and %d mentions (%d lines skipped); store: %d edges, %d nodes, %d names\n",
				info.Edges, info.Mentions, info.Skipped, st.Edges, st.Nodes, st.Names)
			return nil
		},
	}
	imp.Flags().StringVar(&out, "out", "", "knowledge-graph directory (created, or added to)")

	var hops, maxChains int
	var maxPMID uint64
	query := &cobra.Command{
		Use:   "query DIR ENTITY [ENTITY]",
		Short: "Edges among entities (names or Type|ID), or chains between two",
		Args:  cobra.RangeArgs(2, 3),
		RunE: func(cmd *cobra.Command, args []string) error {
			store, err := kg.Open(args[0], false)
			if err != nil {
				return err
			}
			defer store.Close()
			var ids []string
			for _, a := range args[1:] {
				nodes := store.Lookup(a)
				if err := store.Err(); err != nil {
					return err
				}
				if len(nodes) == 0 {
					return fmt.Errorf("kg %s: no entity named %q", args[0], a)
				}
				ids = append(ids, nodes[0].ID)
				fmt.Fprintf(cmd.OutOrStdout(), "%s → %s (%s)\n", a, nodes[0].ID, nodes[0].Name)
			}
			if len(ids) == 2 {
				chains, err := store.Chains(ids[0], ids[1], hops, maxChains, maxPMID)
				if err != nil {
					return err
				}
				for _, c := range chains {
					fmt.Fprintf(cmd.OutOrStdout(), "%4d  %s\n", c.Support, c)
				}
				return nil
			}
			edges, err := store.EdgesAmong(ids, maxPMID)
			for _, e := range edges {
				fmt.Fprintf(cmd.OutOrStdout(), "%s —%s→ %s  (%d articles)\n", e.Head, e.Relation, e.Tail, len(e.PMIDs))
			}
			return err
		},
	}
	query.Flags().IntVar(&hops, "hops", 2, "longest chain")
	query.Flags().IntVar(&maxChains, "max", 32, "chains to show")
	query.Flags().Uint64Var(&maxPMID, "max-pmid", 0, "count only articles with PMID < N")
	cmd.AddCommand(imp, query)
	return cmd
}
