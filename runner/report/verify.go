package report

import (
	"fmt"
	"io"
	"math"
	"text/tabwriter"

	"halu/runner/rundir"
	"halu/runner/summary"
)

// VerifiedFigures are the comparisons of a verification as figures: each
// metric's mean as recorded and with the replies given again, on the units
// both runs scored, with the paired difference and its interval.
func VerifiedFigures(cs []Comparison) []rundir.VerifiedFigure {
	var out []rundir.VerifiedFigure
	for _, c := range cs {
		f := rundir.VerifiedFigure{Model: c.ModelA, Metric: c.Metric, N: c.N, Recorded: c.MeanA, Again: c.MeanB, Diff: c.MeanB - c.MeanA}
		if lo, hi := c.Diff.Low, c.Diff.High; !math.IsNaN(lo) && !math.IsNaN(hi) && !math.IsInf(lo, 0) && !math.IsInf(hi, 0) {
			f.Lo, f.Hi = &lo, &hi
		}
		out = append(out, f)
	}
	return out
}

// PrintVerification writes a verification's tables: per model, stage and
// kind the calls asked again and how they came back, then the headline
// figures recomputed with the replies given again.
func PrintVerification(w io.Writer, v *rundir.Verification) {
	fmt.Fprintln(w, summary.VerifiedLine(v))
	fmt.Fprintf(w, "sample: %.3g of the %d calls the run made (seed %d); the run again, its sampled calls asked live: %s\n", v.Share, v.Calls, v.Seed, v.Dir)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "model\tstage\tkind\tasked\tidentical\tsame reading\tdifferent\tno reading recorded\tnot in the cache")
	for _, s := range v.Stages {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%d\t%d\n", s.Model, s.Stage, s.Kind, s.Asked,
			share(s.Identical, s.Asked), share(s.Identical+s.Same, s.Asked-s.Unread), share(s.Different, s.Asked-s.Unread), s.Unread, s.Uncached)
	}
	tw.Flush()
	if len(v.Figures) == 0 {
		return
	}
	fmt.Fprintln(w, "figures on the units both runs scored, recorded and with the replies given again:")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "model\tmetric\tn\trecorded\tagain\tdifference (95% CI)")
	for _, f := range v.Figures {
		ci := "–"
		switch {
		case f.Lo != nil && f.Hi != nil && *f.Lo == 0 && *f.Hi == 0:
			ci = "(no unit changed)"
		case f.Lo != nil && f.Hi != nil:
			ci = fmt.Sprintf("[%+.4f, %+.4f]", *f.Lo, *f.Hi)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.4f\t%.4f\t%+.4f %s\n", f.Model, f.Metric, f.N, f.Recorded, f.Again, f.Diff, ci)
	}
	tw.Flush()
}

// share is "k of n (p%)", "–" when n is 0.
func share(k, n int) string {
	if n <= 0 {
		return "–"
	}
	return fmt.Sprintf("%d of %d (%.0f%%)", k, n, 100*float64(k)/float64(n))
}
