package report

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"text/tabwriter"

	"halu/metrics"
	"halu/runner/summary"
)

// Comparison is one metric of two runs over the units they share.
type Comparison struct {
	Metric, Kind   string
	ModelA, ModelB string
	N              int     // shared units
	MeanA, MeanB   float64 // over the shared units (NaN when N is 0)
	// OnlyA and OnlyB count the units of the metric scored in one run
	// only (unscored, or absent, in the other): left out of every figure
	// of the pair, and counted so that none drops unseen.
	OnlyA, OnlyB int
	Diff         metrics.Interval
	// Tests are the paired tests for the kind, by name.
	Tests []NamedTest
	// Effect is the standardised effect (Cohen's dz for scores and ratios;
	// for binary outcomes the difference in proportions) with a bootstrap
	// CI.
	EffectName string
	Effect     metrics.Interval
	Discordant [2]int // binary: units right under A only, under B only
}

// NamedTest is a test result with its name.
type NamedTest struct {
	Name string
	metrics.TestResult
}

// CompareSeed fixes the resampling of the permutation test and bootstraps,
// so the same two runs give the same figures.
const CompareSeed = 20240601

// Compare pairs the outcomes of runs a and b on their shared units, metric
// by metric, and runs the paired tests that fit each metric's kind:
// a sign-flip permutation test for ratios (HIC-Bench B.3), paired t and
// Wilcoxon signed-rank for scores, the exact McNemar test for binary
// outcomes, each with the mean difference (B − A) and an effect size with
// 95% CIs. Models pair by name when the runs share models, else every model
// of a with every model of b.
func Compare(a, b []summary.Outcome) ([]Comparison, error) {
	type key struct{ model, metric string }
	index := func(os []summary.Outcome) (map[key]map[string]summary.Outcome, map[string]bool) {
		m := map[key]map[string]summary.Outcome{}
		models := map[string]bool{}
		for _, o := range os {
			k := key{o.Model, o.Metric}
			if m[k] == nil {
				m[k] = map[string]summary.Outcome{}
			}
			m[k][o.Unit] = o
			models[o.Model] = true
		}
		return m, models
	}
	ia, ma := index(a)
	ib, mb := index(b)
	var pairs [][2]string
	for m := range ma {
		if mb[m] {
			pairs = append(pairs, [2]string{m, m})
		}
	}
	if len(pairs) == 0 {
		for x := range ma {
			for y := range mb {
				pairs = append(pairs, [2]string{x, y})
			}
		}
	}
	sort.Slice(pairs, func(i, j int) bool {
		if pairs[i][0] != pairs[j][0] {
			return pairs[i][0] < pairs[j][0]
		}
		return pairs[i][1] < pairs[j][1]
	})
	var metricNames []string
	seen := map[string]bool{}
	for _, i := range []map[key]map[string]summary.Outcome{ia, ib} {
		for k := range i {
			if !seen[k.metric] {
				seen[k.metric] = true
				metricNames = append(metricNames, k.metric)
			}
		}
	}
	sort.Strings(metricNames)
	var out []Comparison
	for _, p := range pairs {
		for _, metric := range metricNames {
			ua, ub := ia[key{p[0], metric}], ib[key{p[1], metric}]
			if len(ua) == 0 && len(ub) == 0 {
				continue
			}
			var units []string
			for u, o := range ua {
				if ob, ok := ub[u]; ok {
					if ob.Kind != o.Kind {
						return nil, fmt.Errorf("compare %s: unit %s is %s in one run and %s in the other", metric, u, o.Kind, ob.Kind)
					}
					units = append(units, u)
				}
			}
			if len(units) == 0 {
				// Scored in one run only: a row of n 0, no figure, the
				// units counted.
				nan, kind := math.NaN(), ""
				for _, o := range ua {
					kind = o.Kind
				}
				for _, o := range ub {
					kind = o.Kind
				}
				out = append(out, Comparison{Metric: metric, Kind: kind, ModelA: p[0], ModelB: p[1], MeanA: nan, MeanB: nan,
					Diff: metrics.Interval{Estimate: nan, Low: nan, High: nan}, Effect: metrics.Interval{Estimate: nan, Low: nan, High: nan},
					OnlyA: len(ua), OnlyB: len(ub)})
				continue
			}
			sort.Strings(units)
			kind := ua[units[0]].Kind
			xa, xb := make([]float64, len(units)), make([]float64, len(units))
			for i, u := range units {
				xa[i], xb[i] = ua[u].Value, ub[u].Value
			}
			c, err := compareMetric(metric, kind, xa, xb)
			if err != nil {
				return nil, err
			}
			c.ModelA, c.ModelB = p[0], p[1]
			c.OnlyA, c.OnlyB = len(ua)-len(units), len(ub)-len(units)
			out = append(out, c)
		}
	}
	return out, nil
}

func compareMetric(metric, kind string, a, b []float64) (Comparison, error) {
	n := len(a)
	d := make([]float64, n)
	for i := range a {
		d[i] = b[i] - a[i]
	}
	c := Comparison{Metric: metric, Kind: kind, N: n, MeanA: metrics.Mean(a), MeanB: metrics.Mean(b)}
	c.Diff = metrics.MeanCI(d, 0.95)
	boot := func(stat func([]float64) float64) metrics.Interval {
		return metrics.BootstrapCI(d, stat, 2000, CompareSeed, 0.95)
	}
	switch kind {
	case "ratio", "score":
		if kind == "ratio" {
			sf, err := metrics.SignFlipTest(d, 10000, CompareSeed)
			if err != nil {
				return c, err
			}
			c.Tests = append(c.Tests, NamedTest{"sign-flip permutation", metrics.TestResult{Statistic: sf.MeanDiff, P: sf.P, N: sf.N}})
		}
		if t, err := metrics.PairedT(b, a); err == nil {
			c.Tests = append(c.Tests, NamedTest{"paired t", t})
		}
		if w, err := metrics.Wilcoxon(b, a); err == nil {
			c.Tests = append(c.Tests, NamedTest{"Wilcoxon signed-rank", w})
		}
		c.EffectName = "Cohen's dz"
		c.Effect = boot(metrics.CohenDz)
		c.Effect.Estimate = metrics.CohenDz(d)
	case "binary":
		for i := range a {
			switch {
			case a[i] == 1 && b[i] == 0:
				c.Discordant[0]++
			case a[i] == 0 && b[i] == 1:
				c.Discordant[1]++
			}
		}
		c.Tests = append(c.Tests, NamedTest{"exact McNemar", metrics.McNemarExact(c.Discordant[0], c.Discordant[1])})
		c.EffectName = "difference in proportions"
		c.Effect = boot(metrics.Mean)
		c.Effect.Estimate = metrics.Mean(d)
	default:
		return c, fmt.Errorf("compare %s: unknown outcome kind %q", metric, kind)
	}
	return c, nil
}

// PrintComparisons writes the comparisons as a table.
func PrintComparisons(w io.Writer, nameA, nameB string, cs []Comparison) {
	fmt.Fprintf(w, "A = %s\nB = %s\nDifferences are B − A over the units both runs scored (n); the units scored in one run only are counted in \"only A/B\" and in no figure; 95%% CIs (t for the mean difference, bootstrap for effect sizes, seed %d).\n\n", nameA, nameB, CompareSeed)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "metric\tkind\tmodel A\tmodel B\tn\tonly A/B\tmean A\tmean B\tB − A [95% CI]\teffect [95% CI]\ttests (p)")
	f := func(x float64) string {
		if math.IsNaN(x) {
			return "–"
		}
		return fmt.Sprintf("%.4g", x)
	}
	iv := func(i metrics.Interval) string {
		if math.IsNaN(i.Low) {
			return f(i.Estimate)
		}
		return fmt.Sprintf("%s [%s, %s]", f(i.Estimate), f(i.Low), f(i.High))
	}
	for _, c := range cs {
		var tests []string
		for _, t := range c.Tests {
			tests = append(tests, fmt.Sprintf("%s p=%s", t.Name, f(t.P)))
		}
		if c.Kind == "binary" {
			tests = append(tests, fmt.Sprintf("discordant %d/%d", c.Discordant[0], c.Discordant[1]))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d/%d\t%s\t%s\t%s\t%s %s\t%s\n", c.Metric, c.Kind, c.ModelA, c.ModelB, c.N, c.OnlyA, c.OnlyB,
			f(c.MeanA), f(c.MeanB), iv(c.Diff), c.EffectName, iv(c.Effect), strings.Join(tests, "; "))
	}
	tw.Flush()
}

// num is a figure for JSON: null where it was not computed (NaN), never a
// value made up for it.
type num = *float64

func jnum(x float64) num {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return &x
}

type jsonInterval struct {
	Estimate num `json:"estimate"`
	Lo       num `json:"lo"`
	Hi       num `json:"hi"`
}

func jinterval(i metrics.Interval) jsonInterval {
	return jsonInterval{jnum(i.Estimate), jnum(i.Low), jnum(i.High)}
}

type jsonTest struct {
	Name      string `json:"name"`
	Statistic num    `json:"statistic"`
	P         num    `json:"p"`
	DF        num    `json:"df,omitempty"`
	N         int    `json:"n"`
}

type jsonComparison struct {
	Metric     string       `json:"metric"`
	Kind       string       `json:"kind"`
	ModelA     string       `json:"model_a"`
	ModelB     string       `json:"model_b"`
	N          int          `json:"n"`
	OnlyA      int          `json:"only_a"`
	OnlyB      int          `json:"only_b"`
	MeanA      num          `json:"mean_a"`
	MeanB      num          `json:"mean_b"`
	Diff       jsonInterval `json:"diff"`
	EffectName string       `json:"effect_name"`
	Effect     jsonInterval `json:"effect"`
	Tests      []jsonTest   `json:"tests"`
	Discordant *[2]int      `json:"discordant,omitempty"`
}

// WriteComparisonsJSON writes the comparisons as one JSON document:
// numbers as numbers (B − A differences with their 95% intervals, p
// values), null where a figure could not be computed.
func WriteComparisonsJSON(w io.Writer, nameA, nameB string, cs []Comparison) error {
	out := struct {
		A           string           `json:"a"`
		B           string           `json:"b"`
		Seed        int              `json:"seed"`
		Comparisons []jsonComparison `json:"comparisons"`
	}{A: nameA, B: nameB, Seed: CompareSeed, Comparisons: []jsonComparison{}}
	for _, c := range cs {
		jc := jsonComparison{Metric: c.Metric, Kind: c.Kind, ModelA: c.ModelA, ModelB: c.ModelB, N: c.N, OnlyA: c.OnlyA, OnlyB: c.OnlyB,
			MeanA: jnum(c.MeanA), MeanB: jnum(c.MeanB), Diff: jinterval(c.Diff), EffectName: c.EffectName, Effect: jinterval(c.Effect),
			Tests: []jsonTest{}}
		for _, t := range c.Tests {
			jt := jsonTest{Name: t.Name, Statistic: jnum(t.Statistic), P: jnum(t.P), N: t.N}
			if t.DF != 0 {
				jt.DF = jnum(t.DF)
			}
			jc.Tests = append(jc.Tests, jt)
		}
		if c.Kind == "binary" {
			d := c.Discordant
			jc.Discordant = &d
		}
		out.Comparisons = append(out.Comparisons, jc)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
