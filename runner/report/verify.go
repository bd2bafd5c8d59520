package report

import (
	"fmt"
	"io"
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
		f := rundir.VerifiedFigure{Model: c.ModelA, Metric: c.Metric, N: c.N, RecordedOnly: c.OnlyA, AgainOnly: c.OnlyB,
			Recorded: jnum(c.MeanA), Again: jnum(c.MeanB), Diff: jnum(c.MeanB - c.MeanA)}
		if f.Lo, f.Hi = jnum(c.Diff.Low), jnum(c.Diff.High); f.Lo == nil || f.Hi == nil {
			f.Lo, f.Hi = nil, nil
		}
		out = append(out, f)
	}
	return out
}

// VerifiedLine is the report's line for the run in dir verified by v:
// summary.VerifiedLine while the run's records are the ones verified;
// once they changed (a rerun, a resume), what was verified was an earlier
// state, and the line says so without its figures.
func VerifiedLine(dir string, v *rundir.Verification) (string, error) {
	current, now, err := rundir.VerifiedState(dir, v)
	switch {
	case err != nil:
		return "", err
	case current:
		return summary.VerifiedLine(v), nil
	case v.Records == "":
		return fmt.Sprintf("a verification of %s (build %s) does not say which records it verified: not shown as this run's; verify it again (halu verify %s)",
			v.Time.Format("2006-01-02"), v.Build, dir), nil
	}
	return fmt.Sprintf("an earlier state of this run was verified %s (its records then had sha256 %.12s…, now %.12s…): the records changed since (a rerun or a resume), and these are not verified; verify them again (halu verify %s)",
		v.Time.Format("2006-01-02"), v.Records, now, dir), nil
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
	if v.FiguresError != "" {
		fmt.Fprintf(w, "figures not recomputed: %s\n", v.FiguresError)
	}
	if len(v.Figures) == 0 {
		return
	}
	fmt.Fprintln(w, "figures on the units both runs scored, recorded and with the replies given again:")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "model\tmetric\tn\tscored as recorded only\tscored again only\trecorded\tagain\tdifference (95% CI)")
	for _, f := range v.Figures {
		ci := ""
		switch {
		case f.Lo != nil && f.Hi != nil && *f.Lo == 0 && *f.Hi == 0:
			ci = " (no unit changed)"
		case f.Lo != nil && f.Hi != nil:
			ci = fmt.Sprintf(" [%+.4f, %+.4f]", *f.Lo, *f.Hi)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s%s\n", f.Model, f.Metric, f.N, f.RecordedOnly, f.AgainOnly,
			figure(f.Recorded, "%.4f"), figure(f.Again, "%.4f"), figure(f.Diff, "%+.4f"), ci)
	}
	tw.Flush()
}

// figure is *x in format, "–" when it was not computed.
func figure(x *float64, format string) string {
	if x == nil {
		return "–"
	}
	return fmt.Sprintf(format, *x)
}

// share is "k of n (p%)", "–" when n is 0.
func share(k, n int) string {
	if n <= 0 {
		return "–"
	}
	return fmt.Sprintf("%d of %d (%.0f%%)", k, n, 100*float64(k)/float64(n))
}
