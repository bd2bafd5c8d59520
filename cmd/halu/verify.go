package main

import (
	"fmt"
	"math"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"halu/runner/engine"
	"halu/runner/report"
	"halu/runner/rundir"
	"halu/runner/summary"
)

// verifyMinCalls is the least number of calls halu verify expects to ask
// again by default: the share --sample gives is raised to reach it (to
// every call of a run that made fewer).
const verifyMinCalls = 30

func newVerifyCmd(g *globals) *cobra.Command {
	var sample, failUnder float64
	var seed int64
	var out string
	var dry bool
	cmd := &cobra.Command{
		Use:   "verify RUN_DIR [--sample P] [--seed S] [--out DIR] [--dry-run] [--fail-under SHARE]",
		Short: "Ask a seeded sample of a finished run's model calls again, live, and say how much came back the same",
		Long: `halu verify RUN_DIR runs the run again from the response cache, with its own settings, and
asks a seeded sample of its cached calls (generations, judges, embeddings) of the live server
again, bypassing the cache. Each reply asked again is compared with the recorded one: byte for
byte (its log-probabilities too, when the run asked for them), then by its reading (a judge's
verdict as read; an embedding within cosine 1 − 1e-6); a call the cache no longer holds is asked
live and counted apart, compared with nothing; the
item goes on with the reply given now, so the headline figures are recomputed with it, beside
the recorded ones with a paired 95% interval. The served models must be, by digest and serving
fingerprint, the ones the run recorded: other weights under the same name are refused before a
call (exit 2). The result is written into RUN_DIR (verification.json, shown by halu report); the
run again is a run directory of its own (--out, default RUN_DIR-verify-TIME).
--sample P asks that share of the calls (default 0.05, raised to reach 30 calls); --seed S draws
them (the same seed asks the same calls); --fail-under SHARE exits 3 when fewer of the calls asked
again came back identical; --dry-run plans the calls and stops.`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return verify(cmd, g, args[0], verifyOptions{sample: sample, seed: seed, out: out, dry: dry, failUnder: failUnder,
				sampleGiven: cmd.Flags().Changed("sample")})
		},
	}
	cmd.Flags().Float64Var(&sample, "sample", 0.05, "share of the run's cached calls to ask again, in (0, 1] (raised to reach 30 calls unless given)")
	cmd.Flags().Int64Var(&seed, "seed", 1, "seed of the sample's draw")
	cmd.Flags().StringVar(&out, "out", "", "run directory of the run again (default RUN_DIR-verify-TIME)")
	cmd.Flags().BoolVar(&dry, "dry-run", false, "print the plan (calls per stage and model, those asked again) and stop")
	cmd.Flags().Float64Var(&failUnder, "fail-under", 0, "exit 3 when the share of calls asked again that came back identical is below SHARE")
	g.eng.Settings().Bind(cmd.Flags())
	return cmd
}

type verifyOptions struct {
	sample, failUnder float64
	sampleGiven       bool
	seed              int64
	out               string
	dry               bool
}

// share is the share of the calls of recs to ask again: --sample, raised
// to reach verifyMinCalls unless given; calls is how many the run made.
func (o verifyOptions) share(recs []rundir.Record) (share float64, calls int) {
	for _, r := range recs {
		calls += len(r.Calls)
	}
	share = o.sample
	if !o.sampleGiven && calls > 0 {
		share = min(1, max(share, float64(verifyMinCalls)/float64(calls)))
	}
	return share, calls
}

// verify is halu verify (newVerifyCmd says what it does).
func verify(cmd *cobra.Command, g *globals, dir string, o verifyOptions) error {
	if o.sample <= 0 || o.sample > 1 || math.IsNaN(o.sample) {
		return usagef("verify: --sample %g: a share in (0, 1]", o.sample)
	}
	if o.failUnder < 0 || o.failUnder > 1 {
		return usagef("verify: --fail-under %g: a share in [0, 1]", o.failUnder)
	}
	if _, err := rundir.ReadManifest(dir); err != nil { // not a run: said before the lock is taken
		return err
	}
	// The run is held while verified: its records are the ones the
	// verification names (by sha256) to its end.
	release, err := rundir.LockDir(dir)
	if err != nil {
		return err
	}
	defer release()
	sum, err := rundir.RecordsSum(dir)
	if err != nil {
		return fmt.Errorf("run %s: %w", dir, err)
	}
	m, recs, err := engine.ReadRun(dir)
	if err != nil {
		return err
	}
	if m.Status != "complete" {
		return usagef("verify: %s is %s (%d of its %d items recorded): verify a complete run (finish it with halu run --resume %s)", dir, m.Status, len(recs), m.Counts.Items, dir)
	}
	if !m.UsesCache() {
		return usagef("verify: %s was made with --no-cache: its replies are in no response cache to compare with", dir)
	}
	def, cfg, err := runSuite(dir, m)
	if err != nil {
		return err
	}
	// The engine's settings are the run's unless given: they are part of
	// every cache key; one given with another value would ask other calls.
	differ, err := keepRunEngine(cmd.Flags(), g, dir, m)
	if err != nil {
		return err
	}
	if len(differ) > 0 {
		return usagef("verify %s asks the run's own calls, and these settings differ: %s", dir, strings.Join(differ, ", "))
	}
	if g.eng.NoCache {
		return usagef("verify: --no-cache: verify reads the run's replies from the response cache")
	}
	share, calls := o.share(recs)
	s, err := def.New(cfg)
	if err != nil {
		return usagef("run %s: config: %w", dir, err)
	}
	e, err := g.engine()
	if err != nil {
		return err
	}
	if _, err := e.ServerVersion(cmd.Context()); err != nil && !o.dry {
		return fmt.Errorf("verify asks a live server, and none answered: %w", err)
	}
	e.Reask = &engine.Reask{Share: share, Seed: o.seed}
	started := time.Now().UTC()
	out := o.out
	if out == "" {
		out = verifyDir(dir, started)
	}
	flags := map[string]string{}
	for k, v := range m.Flags {
		flags[k] = v
	}
	flags["verify"] = fmt.Sprintf("%s --sample %g --seed %d", dir, share, o.seed)
	res, err := e.Run(cmd.Context(), s, engine.RunSpec{Dir: out, Args: m.Args, Config: cfg, Flags: flags, Invocation: os.Args[1:], DryRun: o.dry,
		Verifies: &engine.Verified{Dir: dir, Manifest: m}})
	w := cmd.OutOrStdout()
	if res != nil && res.Plan != nil {
		fmt.Fprintf(w, "verify %s: %.3g of its %d calls drawn (seed %d); the calls the cache does not answer below are asked live\n", dir, share, calls, o.seed)
		res.Plan.Print(w)
		return err
	}
	if err != nil {
		return err
	}
	v, err := verification(s, dir, out, recs)
	if err != nil {
		return err
	}
	v.Time, v.Build, v.Servers, v.Records = started, e.Version, strings.Split(e.Client.Host(), ","), sum
	v.Share, v.Seed, v.Calls = share, o.seed, calls
	if err := rundir.WriteVerification(dir, v); err != nil {
		return fmt.Errorf("run %s: %w", dir, err)
	}
	report.PrintVerification(w, v)
	asked, identical, _, _, _ := summary.VerifiedTotals(v.Stages)
	switch {
	case asked == 0:
		return fmt.Errorf("%w: no call of %s was asked again (a sample of %.3g of %d calls drew none): raise --sample", errNothingMeasured, dir, share, calls)
	case float64(identical) < o.failUnder*float64(asked):
		return fmt.Errorf("%w: %d of %d calls asked again came back identical (%.3f), under --fail-under %g", errGate, identical, asked, float64(identical)/float64(asked), o.failUnder)
	}
	return nil
}

// verification compares the run again in out with the run in dir (its
// records recs): the calls asked again per model, stage and kind, and the
// suite's headline figures recomputed with the replies given again.
func verification(s engine.Suite, dir, out string, recs []rundir.Record) (*rundir.Verification, error) {
	_, again, err := engine.ReadRun(out)
	if err != nil {
		return nil, err
	}
	v := &rundir.Verification{Dir: out, Stages: summary.VerifiedStages(recs, again)}
	if s.Outcomes == nil {
		return v, nil
	}
	a, err := s.Outcomes(rundir.RecordsOf(recs))
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", dir, err)
	}
	b, err := s.Outcomes(rundir.RecordsOf(again))
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", out, err)
	}
	if cs, err := report.Compare(a, b); err != nil {
		v.FiguresError = err.Error()
	} else {
		v.Figures = report.VerifiedFigures(cs)
	}
	return v, nil
}

// verifyDir is the default run directory of the run again of dir, verified
// at t: beside it, RUN-verify-TIME (-2, -3… for a second verify within the
// same second).
func verifyDir(dir string, t time.Time) string {
	base := strings.TrimRight(dir, string(os.PathSeparator)) + "-verify-" + t.Format("20060102T150405")
	out := base
	for i := 2; rundir.HoldsRun(out); i++ {
		out = fmt.Sprintf("%s-%d", base, i)
	}
	return out
}
