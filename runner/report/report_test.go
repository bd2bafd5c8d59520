package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"halu/localmodels"
	"halu/metrics"
	"halu/runner/engine"
	"halu/runner/ideas"
	"halu/runner/judgeval"
	"halu/runner/registry"
	"halu/runner/rundir"
	"halu/runner/setting"
	"halu/runner/smoke"
	"halu/runner/summary"
)

func charts() []summary.Chart {
	nan := summary.Num(math.NaN())
	return []summary.Chart{
		{Kind: "bars", Title: "bars", Y: "share", Groups: []string{"m1 SCP", "<m2>"},
			Series: []summary.Series{
				{Name: "IH", Values: summary.Nums(0.5, 0.2), Lo: summary.Nums(0.3, 0.05), Hi: summary.Nums(0.7, 0.4)},
				{Name: "DH", Values: []summary.Num{0.1, nan}},
			}},
		{Kind: "histogram", Title: "hist", Bins: 10, Min: 0, Max: 10,
			Series: []summary.Series{{Name: "m", Values: summary.Nums(0, 2.5, 10, 10, 7)}}},
		{Kind: "scatter", Title: "pareto", X: "originality", Y: "feasibility", Points: []summary.Point{
			{Label: "a", X: 5, Y: 6, Front: true}, {Label: "b", X: 7, Y: 4, Front: true}, {Label: "c", X: 4, Y: 3}}},
		{Kind: "heatmap", Title: "heat", Groups: []string{"Physics", "Biology"}, Rows: []string{"m1", "m2"},
			Cells: [][]summary.Num{{5, 6}, {nan, 7}}},
	}
}

func TestSVGEveryKindDeterministicAndEscaped(t *testing.T) {
	for _, c := range charts() {
		a, err := SVG(c)
		if err != nil {
			t.Fatalf("%s: %v", c.Kind, err)
		}
		b, _ := SVG(c)
		if !bytes.Equal(a, b) {
			t.Errorf("%s: two renderings differ", c.Kind)
		}
		s := string(a)
		// The page prints the title once, above the chart; the chart's
		// text is in the sans face (the page's style gives it the page's
		// family).
		if !strings.Contains(s, "<svg") || strings.Contains(s, ">"+c.Title+"<") {
			t.Errorf("%s: not an SVG, or one that prints its title a second time", c.Kind)
		}
		if strings.Contains(s, "Serif") {
			t.Errorf("%s: serif text on a sans-serif page", c.Kind)
		}
		if Empty(c) {
			t.Errorf("%s: a chart with values is not empty", c.Kind)
		}
		if strings.Contains(s, "<m2>") {
			t.Errorf("%s: a label was written unescaped", c.Kind)
		}
	}
	if _, err := SVG(summary.Chart{Kind: "bars", Title: "empty"}); err == nil {
		t.Error("a chart with no data must be an error")
	}
	// Nothing measured: no frame is drawn, and a series with no value
	// has no legend entry.
	nan := summary.Num(math.NaN())
	none := summary.Chart{Kind: "bars", Title: "none", Groups: []string{"m"}, Series: []summary.Series{{Name: "IH", Values: []summary.Num{nan}}}}
	if !Empty(none) {
		t.Error("a chart of NaN only is not empty")
	}
	if _, err := SVG(none); err == nil {
		t.Error("a chart of NaN only was drawn")
	}
	half := summary.Chart{Kind: "bars", Title: "half", Groups: []string{"m"}, Series: []summary.Series{
		{Name: "IH", Values: summary.Nums(0.5)}, {Name: "DH-nothing", Values: []summary.Num{nan}}, {Name: "third", Values: summary.Nums(0.2)}}}
	b, err := SVG(half)
	if err != nil || strings.Contains(string(b), "DH-nothing") || !strings.Contains(string(b), "third") {
		t.Errorf("a series with no value must draw nothing, not even its legend entry (%v)", err)
	}
}

// A share's bar carries its n: a rate of 0 of 1 answer (no bar, a whisker
// up to 79%) reads as a share of one unit, not as a missing bar.
func TestBarsSayTheirN(t *testing.T) {
	var se summary.Series
	se.Name = "m"
	se.AddProportion(0, 1)
	se.AddProportion(3, 12)
	se.AddInterval(metrics.Interval{Estimate: 0.4, Low: 0.3, High: 0.5})
	b, err := SVG(summary.Chart{Kind: "bars", Title: "rates", Groups: []string{"choice", "generative", "other"}, Series: []summary.Series{se}})
	if err != nil {
		t.Fatal(err)
	}
	if s := string(b); !strings.Contains(s, ">n=1<") || !strings.Contains(s, ">n=12<") || strings.Count(s, ">n=") != 2 {
		t.Errorf("the bars' n: %d labels", strings.Count(s, ">n="))
	}
	if fmt.Sprint(se.N) != "[1 12 0]" {
		t.Errorf("series n %v", se.N)
	}
}

func TestHistogramBins(t *testing.T) {
	h := histogramBars(charts()[1])
	// 0 → [0,1); 2.5 → [2,3); 7 → [7,8); 10 and 10 → the closed last bin.
	want := map[int]float64{0: 1, 2: 1, 7: 1, 9: 2}
	for i, v := range h.Series[0].Values {
		if float64(v) != want[i] {
			t.Errorf("bin %d (%s) = %v, want %v", i, h.Groups[i], v, want[i])
		}
	}
	if h.Groups[9] != "[9, 10]" {
		t.Errorf("last bin %q", h.Groups[9])
	}
}

func TestReferencesTranscribed(t *testing.T) {
	rows := map[string][]int{"hic": {24}, "ideas": {20}, "hypo": {16, 12}, "intent": {42}}
	for suite, ns := range rows {
		refs, err := References(suite)
		if err != nil || len(refs) != len(ns) {
			t.Errorf("%s: %v, %d tables", suite, err, len(refs))
			continue
		}
		for i, n := range ns {
			if len(refs[i].Table.Rows) != n {
				t.Errorf("%s table %d: %d rows, want %d", suite, i+1, len(refs[i].Table.Rows), n)
			}
		}
	}
	refs, err := References("cfaith")
	if err != nil || len(refs) != 2 {
		t.Fatalf("cfaith: %v %d", err, len(refs))
	}
	// C-FAITH Table 5, DeepSeek-V3 as printed (underlines removed).
	found := false
	for _, r := range refs[0].Table.Rows {
		if r[0] == "DeepSeek-V3" {
			found = strings.Join(r, ",") == "DeepSeek-V3,24.25,11.60,16.70,17.52"
		}
	}
	if !found {
		t.Error("Table 5 DeepSeek-V3 row not as printed")
	}
	// HIC-Bench Table 2: deepseek-r1 RCP.
	h, _ := References("hic")
	if got := strings.Join(h[0].Table.Rows[7], ","); got != "deepseek-r1,RCP,3.70,3.57,3.76,60.46%,0.09,71.10%,0.30%,54.10%" {
		t.Errorf("HIC row 8: %s", got)
	}
}

func TestCompareKinds(t *testing.T) {
	var a, b []summary.Outcome
	for i, x := range []float64{1, 2, 3, 4, 5, 6} {
		u := string(rune('a' + i))
		a = append(a, summary.Outcome{Model: "m", Unit: u, Metric: "s", Kind: "score", Value: x})
		b = append(b, summary.Outcome{Model: "m", Unit: u, Metric: "s", Kind: "score", Value: x + float64(i%2) + 1})
	}
	// Binary: A right on u0..u3, B right on u0, u4; discordant 3 (A only) and 1 (B only).
	for i, p := range [][2]float64{{1, 1}, {1, 0}, {1, 0}, {1, 0}, {0, 1}, {0, 0}} {
		u := string(rune('a' + i))
		a = append(a, summary.Outcome{Model: "m", Unit: u, Metric: "y", Kind: "binary", Value: p[0]})
		b = append(b, summary.Outcome{Model: "m", Unit: u, Metric: "y", Kind: "binary", Value: p[1]})
	}
	b = append(b, summary.Outcome{Model: "m", Unit: "only-b", Metric: "s", Kind: "score", Value: 9})
	a = append(a, summary.Outcome{Model: "m", Unit: "a", Metric: "x", Kind: "score", Value: 1},
		summary.Outcome{Model: "m", Unit: "b", Metric: "x", Kind: "score", Value: 2})
	cs, err := Compare(a, b)
	if err != nil || len(cs) != 3 {
		t.Fatalf("%v %+v", err, cs)
	}
	s, x, y := cs[0], cs[1], cs[2]
	// d = 1, 2, 1, 2, 1, 2: mean 1.5; unit only-b is not paired, and counted.
	if s.Metric != "s" || s.N != 6 || s.Diff.Estimate != 1.5 || len(s.Tests) != 2 || s.OnlyA != 0 || s.OnlyB != 1 {
		t.Errorf("score: %+v", s)
	}
	// Metric x is scored in A only: a row of n 0, its units counted, no figure.
	if x.Metric != "x" || x.N != 0 || x.OnlyA != 2 || x.OnlyB != 0 || !math.IsNaN(x.MeanA) || !math.IsNaN(x.Diff.Estimate) || len(x.Tests) != 0 {
		t.Errorf("scored in A only: %+v", x)
	}
	var out bytes.Buffer
	PrintComparisons(&out, "a", "b", cs)
	if !regexp.MustCompile(`(?m)^x +score +m +m +0 +2/0 +– +–`).MatchString(out.String()) || !regexp.MustCompile(`(?m)^s +score +m +m +6 +0/1 `).MatchString(out.String()) {
		t.Errorf("printed:\n%s", out.String())
	}
	// McNemar exact with b=3, c=1: 2·P(X ≤ 1 | n=4) = 2·5/16 = 0.625.
	if y.Discordant != [2]int{3, 1} || math.Abs(y.Tests[0].P-0.625) > 1e-12 || math.Abs(y.Effect.Estimate-(-2.0/6)) > 1e-12 {
		t.Errorf("binary: %+v", y)
	}
}

// facts are a run's facts with the suite's settings as decl's defaults
// changed by set (flag name → value) and the engine's defaults.
func facts(t *testing.T, suite string, set map[string]string) RunFacts {
	t.Helper()
	d, ok := registry.Find(suite)
	if !ok {
		t.Fatalf("no suite %s", suite)
	}
	ec := engine.DefaultEngineConfig()
	list := append(d.Config().Settings(), ec.Settings()...)
	for k, v := range set {
		s, ok := list.Lookup(k)
		if !ok {
			t.Fatalf("%s: no setting %s", suite, k)
		}
		s.Value.Reset()
		if err := s.Value.Set(v); err != nil {
			t.Fatalf("%s --%s %s: %v", suite, k, v, err)
		}
	}
	// The models served are the published ones by evidence, unless a
	// case says otherwise (RunFacts.Models).
	return RunFacts{Settings: list, Assumed: AssumedValues(d), Format: rundir.FormatVersion, Models: map[string]localmodels.ModelInfo{
		"llama3.1:8b": {Name: "llama3.1:8b", Family: "llama", ParameterCount: 8_030_261_248}}}
}

// Every published table's configuration names every setting that can
// change its numbers — each setting of the suite and the engine a table is
// compared on — and nothing that is not a setting: a setting added to a
// suite without saying what the published tables used fails here.
func TestPublishedConfigurationsCoverEverySetting(t *testing.T) {
	ec := engine.DefaultEngineConfig()
	n := 0
	for _, d := range registry.All() {
		refs, err := References(d.Name)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range refs {
			n++
			if r.Published == nil || r.Published.Source == "" || r.Published.Dataset == "" {
				t.Errorf("%s: no published configuration", r.File)
				continue
			}
			missing, unknown := r.Published.uncovered(append(d.Config().Settings(), ec.Settings()...))
			if len(missing) > 0 || len(unknown) > 0 {
				t.Errorf("%s: settings not named %v; names that are no setting %v", r.File, missing, unknown)
			}
		}
	}
	if n != 7 {
		t.Errorf("%d published tables, want 7", n)
	}
}

// A run is comparable only when every setting is shown equal; one that
// differs only in its judges is "same method, other judges"; anything
// else — a value, a value the table's configuration does not know, a
// method difference, content cut to fit the window — makes it "reference
// only", each difference listed. A setting the table ignores, or one that
// does not bear on the run, is no difference.
func TestProveLabels(t *testing.T) {
	pub := &Published{Source: "s", Dataset: "d", Settings: map[string]Entry{
		"limit": {Value: "0", Text: "all five"}, "temperature": {Value: "0.7"}, "max-tokens": {Value: "48"}, "judge-format": {Value: "json"},
		"judges":  {Value: "llama3.1:8b", Models: []PublishedModel{{Name: "llama3.1:8b", Family: "llama", Parameters: 8_030_261_248}}},
		"readers": {Value: "paper"}, "default-top-p": {Value: "1"}, "default-top-k": {Ignore: "greedy"},
		"default-repeat-penalty": {Value: "1"},
	}}
	ref := Reference{File: "t.csv", Published: pub}
	same := map[string]string{"judges": "llama3.1:8b", "default-top-p": "1", "default-repeat-penalty": "1", "readers": "paper"}
	with := func(extra map[string]string) map[string]string {
		m := map[string]string{}
		for k, v := range same {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	for _, tc := range []struct {
		name  string
		set   map[string]string
		edit  func(*RunFacts)
		label string
		diffs []string
	}{
		{"all equal", same, nil, LabelComparable, nil},
		{"top-k ignored", with(map[string]string{"default-top-k": "40"}), nil, LabelComparable, nil},
		{"other judge", with(map[string]string{"judges": "qwen2.5:7b"}), nil, LabelOtherJudges, []string{"--judges qwen2.5:7b (published: llama3.1:8b)"}},
		// A name is only a name: the model served under it must be what
		// the table's model was.
		{"the name, not the model", same, func(f *RunFacts) {
			f.Models["llama3.1:8b"] = localmodels.ModelInfo{Name: "llama3.1:8b", Family: "llama", ParameterCount: 127_552, Tiny: true}
		}, LabelOtherJudges, []string{"llama3.1:8b: the served model has 127,552 parameters, the published llama, 8,030,261,248 parameters"}},
		{"the name, another family", same, func(f *RunFacts) {
			f.Models["llama3.1:8b"] = localmodels.ModelInfo{Name: "llama3.1:8b", Family: "qwen2", ParameterCount: 8_000_000_000}
		}, LabelOtherJudges, []string{"llama3.1:8b: the served model is of family qwen2"}},
		{"temperature", with(map[string]string{"temperature": "1.2"}), nil, LabelReference, []string{"--temperature 1.2 (published: 0.7)"}},
		{"sample", with(map[string]string{"limit": "2"}), nil, LabelReference, []string{"--limit 2 (published: all five)"}},
		// The default headline is the careful reading; a table the authors'
		// rule read is not that figure.
		{"careful reading", with(map[string]string{"readers": "halu"}), func(f *RunFacts) { f.Counts.ReaderDisagreements = 3 }, LabelReference, []string{"--readers halu (published: paper)"}},
		// A difference that cannot apply: no reply the two readers read
		// differently, so the reading rule changes no number.
		{"careful reading, no reply read otherwise", with(map[string]string{"readers": "halu"}), nil, LabelComparable, nil},
		// A run of an older format may not have recorded the replies the
		// readers read differently: its 0 proves nothing.
		{"careful reading, an older run", with(map[string]string{"readers": "halu"}), func(f *RunFacts) { f.Format = 1 }, LabelReference, []string{"--readers halu (published: paper)"}},
		{"server defaults", with(map[string]string{"default-top-p": "server"}), nil, LabelReference, []string{"--default-top-p server (published: 1)"}},
		{"unknown", same, func(f *RunFacts) { pub.Settings["max-tokens"] = Entry{Unknown: "lost"} }, LabelReference, []string{"--max-tokens 48 (published: not known — lost)"}},
		{"cut", same, func(f *RunFacts) { pub.Settings["max-tokens"] = Entry{Value: "48"}; f.ContentCut = 3 }, LabelReference,
			[]string{"3 prompts lost content to fit the context window"}},
		{"near window", same, func(f *RunFacts) { f.Counts.NearContext = 2 }, LabelReference, []string{"2 prompts filled 90% of the context window"}},
		{"past the window", same, func(f *RunFacts) { f.Counts.OverContext = 5 }, LabelReference, []string{"5 calls ran past their context window"}},
		// Repair turns are compared on what they did: verdicts read from one.
		{"repairs asked, none read", with(map[string]string{"judge-repairs": "3"}), nil, LabelComparable, nil},
		{"repaired", same, func(f *RunFacts) { f.Counts.JudgeRepaired = 4 }, LabelReference, []string{"4 judge verdicts were read from a repair turn"}},
		// A run recorded before halu counted them: each repair turn its
		// records log may have given a verdict.
		{"repairs uncounted", same, func(f *RunFacts) { f.UncountedRepairs = 2 }, LabelReference, []string{"repair turns asked of the judges: 2 "}},
		{"method", same, func(f *RunFacts) { pub.Method = []MethodEntry{{Text: "halu reads it otherwise"}} }, LabelReference, []string{"halu reads it otherwise"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := facts(t, "smoke", tc.set)
			if tc.edit != nil {
				tc.edit(&f)
			}
			v := ref.Prove(f)
			all := strings.Join(append(append([]string(nil), v.Differences...), v.Judges...), "; ")
			if v.Label != tc.label || len(v.Differences)+len(v.Judges) != len(tc.diffs) {
				t.Fatalf("%s: %q, want %s with %d differences", v.Label, all, tc.label, len(tc.diffs))
			}
			for _, d := range tc.diffs {
				if !strings.Contains(all, d) {
					t.Errorf("differences %q lack %q", all, d)
				}
			}
			if !strings.HasPrefix(v.Why(), tc.label) {
				t.Errorf("why: %s", v.Why())
			}
		})
	}
	// A table whose configuration halu does not know is never comparable.
	if v := (Reference{}).Prove(facts(t, "smoke", nil)); v.Label != LabelReference {
		t.Errorf("no configuration: %s", v.Label)
	}
	// Nor is a run whose settings cannot be read.
	pub.Method = nil
	if v := ref.Prove(RunFacts{}); v.Label != LabelReference || !strings.Contains(v.Why(), "cannot be read") {
		t.Errorf("unread run: %s", v.Why())
	}
}

// A setting the published table ignores (sampled candidates beside
// TruthHypo's greedy tables) is no difference; any other is listed; a
// retrieval setting counts only when the run retrieves.
func TestProveIgnoresWhatATableIgnores(t *testing.T) {
	refs, err := References("hypo")
	if err != nil || len(refs) != 2 {
		t.Fatalf("%d references, %v", len(refs), err)
	}
	for _, r := range refs {
		v := r.Prove(facts(t, "hypo", map[string]string{"candidates": "0"}))
		if strings.Contains(v.Why(), "candidates") {
			t.Errorf("%s with --candidates 0: %s", r.File, v.Why())
		}
		v = r.Prove(facts(t, "hypo", map[string]string{"candidates": "0", "max-tokens": "40"}))
		if v.Label != LabelReference || !strings.Contains(v.Why(), "--max-tokens 40 (published: 2,048 (the authors' call_llm))") {
			t.Errorf("%s with --max-tokens 40: %s", r.File, v.Why())
		}
		if strings.Contains(v.Why(), "--bm25") || strings.Contains(v.Why(), "--index") {
			t.Errorf("%s: a parametric run is compared on retrieval: %s", r.File, v.Why())
		}
	}
}

// A board sorts each metric best first (lower first where lower is
// better), puts cells with no value last, and reads published cells on
// the figures' scale.
func TestBoardSortsAndReadsPublished(t *testing.T) {
	nan := summary.Num(math.NaN())
	fig := func(model, metric string, est summary.Num, n int, lower bool) summary.Figure {
		return summary.Figure{Model: model, Metric: metric, Key: model + "/" + metric, Estimate: est, Lo: nan, Hi: nan, N: n, Percent: true, Lower: lower, Headline: true}
	}
	run := &Run{Dir: "r", Manifest: &rundir.Manifest{Suite: "cfaith"}, Summary: &summary.Summary{Figures: []summary.Figure{
		fig("a", "HR generative", 0.30, 10, true), fig("b", "HR generative", 0.10, 10, true), fig("c", "HR generative", nan, 0, true),
		fig("a", "Overall HR", 0.5, 10, true), fig("b", "Overall HR", 0.7, 10, true), fig("c", "Overall HR", 0.2, 10, true),
	}}}
	boards, err := Boards([]*Run{run})
	if err != nil || len(boards) != 1 {
		t.Fatalf("boards: %v, %d", err, len(boards))
	}
	b := boards[0]
	order := func(metric string) string {
		for _, s := range b.Sorts {
			if s.Metric == metric {
				var names []string
				for _, i := range s.Rows {
					if b.Rows[i].Published == "" {
						names = append(names, b.Rows[i].Model)
					}
				}
				return strings.Join(names, ",")
			}
		}
		return ""
	}
	if got := order("HR generative"); got != "b,a,c" {
		t.Errorf("HR generative (lower is better, c unmeasured): %s, want b,a,c", got)
	}
	if got := order("Overall HR"); got != "c,a,b" {
		t.Errorf("Overall HR: %s, want c,a,b", got)
	}
	if c := b.Rows[2].Cells[0]; c.Text != "– (no scored unit)" || !math.IsNaN(c.Value) {
		t.Errorf("unmeasured cell %+v", c)
	}
	// The run has no protocol recorded, so the published rows are not
	// shown, and a note says why.
	if len(b.Rows) != 3 || len(b.Notes) == 0 || !strings.Contains(b.Notes[0], "not shown") {
		t.Errorf("published rows shown beside a run of unknown protocol: %d rows, notes %q", len(b.Rows), b.Notes)
	}
	for _, tc := range []struct {
		in      string
		percent bool
		want    float64
	}{{"13.40%", true, 0.134}, {"43.23", true, 0.4323}, {"8.62", false, 8.62}, {"–", false, math.NaN()}} {
		got := publishedValue(tc.in, tc.percent)
		if !(math.IsNaN(got) && math.IsNaN(tc.want)) && math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("publishedValue(%q, %v) = %v, want %v", tc.in, tc.percent, got, tc.want)
		}
	}
}

// The browser puts records that share a generation prompt in one block,
// across runs; lists each flag's blocks; and shows at most judgeRows judge
// calls a record, counting the rest.
func TestBrowserGroupsByPrompt(t *testing.T) {
	rec := func(item, prompt string, judges int, failed bool) rundir.Record {
		r := rundir.Record{Item: item, Data: []byte(`{}`), Prompts: map[string]string{"p-" + prompt: "[user]\n" + prompt},
			Calls: []rundir.CallLog{{Stage: "generate", Kind: "chat", Model: "m", Prompt: "p-" + prompt, Reply: "answer to " + prompt, DoneReason: "length"}}}
		for i := 0; i < judges; i++ {
			r.Calls = append(r.Calls, rundir.CallLog{Stage: "judge", Kind: "judge", Model: "j", Reply: `{"score": 4}`, Parsed: `{"score":4}`})
		}
		if failed {
			r.Failures = []rundir.Failure{{Stage: "judge", Model: "j", Reason: "no verdict", Raw: []string{"hmm"}}}
		}
		return r
	}
	work := t.TempDir()
	run := func(name string, recs ...rundir.Record) *Run {
		return writtenRun(t, filepath.Join(work, name), recs...)
	}
	// Two prompts that agree beyond what the page shows of them (6,000
	// bytes) are two prompts.
	long := strings.Repeat("context ", 1000)
	bs, err := Browsers([]*Run{
		run("a", rec("q1/m", "What is 2+2?", 2, false), rec("q2/m", "Name a gas.", judgeRows+5, true),
			rec("q3/m", long+"Question A?", 0, false), rec("q4/m", long+"Question B?", 0, false)),
		run("b", rec("q1/m", "What is 2+2?", 1, false)),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(bs) != 1 || len(bs[0].Groups) != 4 {
		t.Fatalf("%d groups, want 4 (q1 of both runs, q2, q3, q4)", len(bs[0].Groups))
	}
	g := bs[0].Groups
	if len(g[0].Entries) != 2 || g[0].Entries[1].Run != "smoke — b" || g[0].Prompt != "[user]\nWhat is 2+2?" {
		t.Errorf("one prompt in two runs: %+v", g[0])
	}
	if e := g[1].Entries[0]; len(e.Judges) != judgeRows || e.MoreJudges != 5 || !e.Flags.Unscored || !e.Flags.CutShort {
		t.Errorf("capped judges %d, more %d, flags %+v", len(e.Judges), e.MoreJudges, e.Flags)
	}
	counts := map[string]int{}
	for _, f := range bs[0].Filters {
		counts[f.Name] = len(f.Links)
	}
	if counts["unscored"] != 1 || counts["cut short"] != 4 || counts["judged hallucinated"] != 0 {
		t.Errorf("filter lists %v", counts)
	}
	if _, ok := counts["judge ≠ people's label"]; ok {
		t.Errorf("records no person labelled list the units a judge and people disagree on: %v", counts)
	}
	// Units people labelled: the ones a judge read otherwise are listed.
	lab := run("c", rec("u1/j", "Is it true?", 1, false), rec("u2/j", "Is it so?", 1, false))
	lab.records[0].flags, lab.records[1].flags = summary.Flags{Labelled: true, AgainstPeople: true}, summary.Flags{Labelled: true}
	listed := false
	lb, err := Browsers([]*Run{lab})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range lb[0].Filters {
		if f.Name == "judge ≠ people's label" {
			listed = len(f.Links) == 1 && f.Links[0].Label == "u1/j"
		}
	}
	if !listed {
		t.Errorf("the unit a judge read otherwise than people is not listed: %+v", lb[0].Filters)
	}
}

// writtenRun writes recs as the records of a smoke run in dir and loads
// it as a report does.
func writtenRun(t *testing.T, dir string, recs ...rundir.Record) *Run {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := rundir.WriteManifest(dir, &rundir.Manifest{Suite: "smoke", Format: rundir.FormatVersion}); err != nil {
		t.Fatal(err)
	}
	w, err := rundir.OpenRecordWriter(filepath.Join(dir, rundir.RecordsFile), 0, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if err := w.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := Load(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A run of more records than the browser shows: 2,003 prompts of 6
// records each (12,018). The first 10,000 records are shown — 1,666
// prompts whole, 4 of the 1,667th's (2 more counted in its block) — and
// the rest counted: 2,018 not shown, 2,003 prompts in all. Each record is
// read whole from the records file as it is shown (its reply is on the
// page); the page says what it left out.
func TestBrowserShowsABoundedSample(t *testing.T) {
	var recs []rundir.Record
	for p := 0; p < 2003; p++ {
		for m := 0; m < 6; m++ {
			h := fmt.Sprintf("h%04d", p)
			recs = append(recs, rundir.Record{Item: fmt.Sprintf("q%04d/m%d", p, m), Data: []byte(`{}`),
				Prompts: map[string]string{h: fmt.Sprintf("prompt %d", p)},
				Calls:   []rundir.CallLog{{Stage: "generate", Kind: "chat", Model: fmt.Sprint("m", m), Prompt: h, Reply: fmt.Sprintf("answer %d of m%d", p, m)}}})
		}
	}
	run := writtenRun(t, filepath.Join(t.TempDir(), "big"), recs...)
	bs, err := Browsers([]*Run{run})
	if err != nil {
		t.Fatal(err)
	}
	b := bs[0]
	shown := 0
	for _, g := range b.Groups {
		shown += len(g.Entries)
	}
	last := b.Groups[len(b.Groups)-1]
	if shown != browserRecords || len(b.Groups) != 1667 || b.Total != 2003 || b.Records != 12018 || b.Unshown != 2018 ||
		len(last.Entries) != 4 || last.More != 2 || b.Groups[0].More != 0 {
		t.Fatalf("shown %d in %d groups of %d, records %d, unshown %d; last group %d shown, %d more",
			shown, len(b.Groups), b.Total, b.Records, b.Unshown, len(last.Entries), last.More)
	}
	if e := last.Entries[3]; e.Item != "q1666/m3" || e.Answers[0].Reply != "answer 1666 of m3" || last.Prompt != "prompt 1666" {
		t.Errorf("the last record shown: %+v in %q", e, last.Prompt)
	}
	run.Summary = &summary.Summary{Suite: "smoke"}
	var page bytes.Buffer
	if err := HTML(&page, []*Run{run}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"1667 prompts (the first 1667 of 2003); 2018 of the 12018 records not shown", "… and 2 more records of this prompt, not shown"} {
		if !strings.Contains(page.String(), want) {
			t.Errorf("the page does not say %q", want)
		}
	}
}

// A report reads a record's transcripts from the records file as it
// read it: a file rewritten since (a rerun) is an error, not another
// record's text.
func TestSamplesOfRecordsRewrittenSinceRead(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "r")
	rec := rundir.Record{Item: "q1/m", Data: []byte(`{}`), Prompts: map[string]string{"h": "prompt"},
		Calls: []rundir.CallLog{{Stage: "generate", Kind: "chat", Model: "m", Prompt: "h", Reply: "first answer"}}}
	run := writtenRun(t, dir, rec)
	var out bytes.Buffer
	if err := WriteSamples(&out, []*Run{run}); err != nil || !strings.Contains(out.String(), "first answer") {
		t.Fatalf("samples: %v: %s", err, out.String())
	}
	rec.Calls[0].Reply = "other answer"
	writtenRun(t, dir+"2", rec)
	if err := os.Rename(filepath.Join(dir+"2", rundir.RecordsFile), filepath.Join(dir, rundir.RecordsFile)); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := WriteSamples(&out, []*Run{run}); !errors.Is(err, rundir.ErrRecordsChanged) || strings.Contains(out.String(), "other answer") {
		t.Errorf("records rewritten since read: %v: %s", err, out.String())
	}
}

// C-FAITH Table 5 as printed: GPT-3.5's Gen. 45.69 is 100 − 54.31 and
// Qwen-2.5-14B's 58.06 is 100 − 41.94 (Table 6's Overall), 13 others equal
// Table 6 and ChatGLM-6B is not found there by name (its 65.79 is
// ChatGLM3-6B's); Ova. is the mean of the three formats in 1 of 16 rows
// (DeepSeek-V3: (24.25 + 11.60 + 16.70)/3 = 17.52), not in the others
// (Qwen-2.5-72B: (32.63 + 14.40 + 16.40)/3 = 21.14 ≠ 20.82; checked by
// hand for GPT-4o: (25.17 + 10.40 + 14.30)/3 = 16.62 ≠ 16.53).
func TestCFaithTable5IsFlagged(t *testing.T) {
	refs, err := References("cfaith")
	if err != nil {
		t.Fatal(err)
	}
	var notes []string
	for _, r := range refs {
		if r.File == "cfaith_table5.csv" {
			notes = r.Notes
		}
	}
	all := strings.Join(notes, "\n")
	for _, want := range []string{"2 Gen. cells are almost surely accuracy", "GPT-3.5 Gen. 45.69 = 100 − 54.31", "Qwen-2.5-14B Gen. 58.06 = 100 − 41.94", "13 others equal it, 1 not found there by name", "in 15 of 16 rows"} {
		if !strings.Contains(all, want) {
			t.Errorf("Table 5 notes lack %q:\n%s", want, all)
		}
	}
}

// A leaderboard marks the rows of runs whose judges no judge validation
// run among the runs given measured, and names those judges.
func TestBoardMarksUnvalidatedJudges(t *testing.T) {
	cfg := smoke.DefaultConfig()
	cfg.Models, cfg.Judges = []string{"gen"}, []string{"j1", "j2"}
	raw, _ := json.Marshal(cfg)
	models := []localmodels.ModelInfo{{Name: "gen:latest", Digest: "sha256:aaaaaaaaaaaaaaaa"}, {Name: "j1:latest", Digest: "sha256:1111111111111111"}, {Name: "j2:latest", Digest: "sha256:2222222222222222"}}
	fig := summary.Figure{Model: "gen", Metric: "hallucination rate", Key: "gen.hallucination_rate", Estimate: 0.2, N: 10, Percent: true, Headline: true}
	run := &Run{Dir: "s", Manifest: &rundir.Manifest{Suite: "smoke", Format: rundir.FormatVersion, Config: raw, Models: models},
		Summary: &summary.Summary{Figures: []summary.Figure{fig}}}
	// A validation run of the judges named, each with n scored units,
	// unscored ones and κ's interval (its upper end given, the lower 0.2
	// below it); a judge named in warn has a κ interval under a warning.
	warn := map[string]string{}
	validationOf := func(judges map[string][3]float64) *Run {
		vc := judgeval.DefaultConfig()
		vc.Judges = nil
		sum := &summary.Summary{}
		var ms []localmodels.ModelInfo
		for _, m := range models[1:] {
			j := strings.TrimSuffix(m.Name, ":latest")
			v, ok := judges[j]
			if !ok {
				continue
			}
			vc.Judges = append(vc.Judges, j)
			ms = append(ms, m)
			sum.AddFigure(summary.Figure{Model: j, Metric: "accuracy", Key: j + ".accuracy", Estimate: 0.8, N: int(v[0]), Unscored: int(v[1])})
			sum.AddFigure(summary.Figure{Model: j, Metric: "κ", Key: j + ".kappa", Estimate: summary.Num(v[2] - 0.1), Lo: summary.Num(v[2] - 0.2), Hi: summary.Num(v[2]), N: int(v[0]), Warning: warn[j]})
		}
		vraw, _ := json.Marshal(vc)
		return &Run{Dir: "v", Manifest: &rundir.Manifest{Suite: "judges", Format: rundir.FormatVersion, Config: vraw, Models: ms}, Summary: sum}
	}
	val := validationOf(map[string][3]float64{"j1": {200, 5, 0.8}})
	boards, err := Boards([]*Run{run, val})
	if err != nil || len(boards) != 1 {
		t.Fatalf("boards: %v, %d", err, len(boards))
	}
	b := boards[0]
	if b.Rows[0].Mark != "‡" {
		t.Errorf("row mark %q, want ‡ (j2 never validated)", b.Rows[0].Mark)
	}
	notes := strings.Join(b.Notes, "\n")
	if !strings.Contains(notes, "‡ judged by models that no judge validation run") || !strings.Contains(notes, ": j2 —") {
		t.Errorf("notes: %s", notes)
	}
	// An instrument setting that names no model is no judge.
	ic := ideas.DefaultConfig()
	ic.Models, ic.Judges = []string{"gen"}, []string{"j1"}
	iraw, _ := json.Marshal(ic)
	irun := &Run{Dir: "i", Manifest: &rundir.Manifest{Suite: "ideas", Format: rundir.FormatVersion, Config: iraw, Models: models}}
	if js := judgesOf(irun); strings.Join(js, ",") != "j1" {
		t.Errorf("ideas judges %v, want j1 alone", js)
	}
	// Both judges validated: no mark.
	val = validationOf(map[string][3]float64{"j1": {200, 5, 0.8}, "j2": {60, 0, 0.7}})
	boards, _ = Boards([]*Run{run, val})
	if boards[0].Rows[0].Mark != "" {
		t.Errorf("validated judges still marked %q", boards[0].Rows[0].Mark)
	}
	// A validation that measured nothing, too little, or a κ below
	// moderate validates nothing: the mark stays, and says why.
	for _, tc := range []struct {
		name string
		j2   [3]float64
		why  string
	}{
		{"every reply unscored", [3]float64{0, 414, math.NaN()}, "j2: validated on 0 units scored"},
		{"too few units", [3]float64{20, 0, 0.9}, "j2: validated on 20 units scored, fewer than 50"},
		{"too many unscored", [3]float64{100, 50, 0.9}, "j2: 33% of its validation replies unscored"},
		{"κ 0.00", [3]float64{200, 0, 0.15}, "j2: κ with people not shown to be at least moderate (lower 95% bound -0.05"},
		// Its interval reaches 0.41 but its lower end does not: a weak
		// judge is not validated by the width of its interval.
		{"κ interval reaching 0.41 from below", [3]float64{200, 0, 0.55}, "lower 95% bound 0.35 < 0.41"},
		{"κ from rare labels", [3]float64{200, 0, 0.9}, "j2: κ's interval rests on 4 units"},
	} {
		if tc.name == "κ from rare labels" {
			warn["j2"] = "κ's interval rests on 4 units people labelled hallucinated"
		}
		val = validationOf(map[string][3]float64{"j1": {200, 5, 0.8}, "j2": tc.j2})
		boards, _ = Boards([]*Run{run, val})
		notes := strings.Join(boards[0].Notes, "\n")
		if boards[0].Rows[0].Mark != "‡" || !strings.Contains(notes, tc.why) {
			t.Errorf("%s: mark %q, notes:\n%s", tc.name, boards[0].Rows[0].Mark, notes)
		}
	}
}

// The tiny random model imported as gpt-4o and deepseek-v3 (and as the
// paper's SimCSE embedder) is reported as other judges against HIC-Bench
// Table 2, with the reason — a closed model, a parameter count — and so it
// stays when every setting the table leaves unstated is filled in with
// the run's own values. The panel is compared as the set the method
// averages: the other order is the same panel.
func TestTinyModelUnderPublishedNamesIsNotThePublishedJudge(t *testing.T) {
	refs, err := References("hic")
	if err != nil {
		t.Fatal(err)
	}
	var ref Reference
	for _, r := range refs {
		if strings.Contains(r.File, "table2") {
			ref = r
		}
	}
	if ref.Published == nil {
		t.Fatal("no HIC Table 2 configuration")
	}
	tiny := localmodels.ModelInfo{Family: "llama", ParameterCount: 127_552, Tiny: true, Digest: "sha256:0123456789abcdef"}
	for _, judges := range []string{"gpt-4o,deepseek-v3", "deepseek-v3,gpt-4o"} {
		f := facts(t, "hic", map[string]string{"judges": judges, "embed-model": "sup-simcse-bert-base-uncased", "readers": "paper"})
		f.Models = map[string]localmodels.ModelInfo{}
		for _, n := range []string{"gpt-4o", "deepseek-v3", "sup-simcse-bert-base-uncased"} {
			m := tiny
			m.Name = n
			f.Models[localmodels.CanonicalName(n)] = m
		}
		// Fill in every unstated setting with the run's own value.
		pub := *ref.Published
		pub.Settings = map[string]Entry{}
		for k, e := range ref.Published.Settings {
			if e.Unknown != "" {
				if s, ok := f.Settings.Lookup(k); ok {
					e = Entry{Value: s.Value.String()}
				}
			}
			pub.Settings[k] = e
		}
		filled := Reference{File: ref.File, Published: &pub}
		for _, r := range []Reference{ref, filled} {
			v := r.Prove(f)
			judgesWhy := strings.Join(v.Judges, "; ")
			for _, want := range []string{"gpt-4o is a closed API model", "deepseek-v3: the served model has 127,552 parameters", "sup-simcse-bert-base-uncased: the served model has 127,552 parameters"} {
				if !strings.Contains(judgesWhy, want) {
					t.Errorf("%s (%s): the judges' differences lack %q:\n%s", judges, v.Label, want, judgesWhy)
				}
			}
			if v.Label == LabelComparable {
				t.Errorf("%s: a tiny model under the published names is comparable", judges)
			}
			if strings.Contains(judgesWhy, "(published: gpt-4o,deepseek-v3)") {
				t.Errorf("%s: the panel is compared in order: %s", judges, judgesWhy)
			}
		}
	}
}

// --csv replaces its directory whole, so a directory that holds anything
// but tables is refused, untouched.
func TestCSVRefusesADirectoryOfOtherFiles(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o644)
	if _, err := CSV(dir, nil); err == nil || !strings.Contains(err.Error(), "notes.txt") {
		t.Fatalf("CSV into a directory of other files: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "notes.txt")); err != nil || string(b) != "mine" {
		t.Errorf("the refused directory changed: %v", err)
	}
}

// A faithful offline run — every setting the table states set to its
// value, judges of the run's own — reaches "same method, other judges"
// (or "comparable" where the table has no judge) on each table whose data
// can be had offline, resting on the assumptions the paper leaves open;
// one result-affecting change makes it "reference only", naming it. The
// tables whose data or corpus cannot be had offline stay reference only
// for that reason (a difference, listed), never by construction.
func TestFaithfulRunReachesItsLabel(t *testing.T) {
	want := map[string]string{
		"hic_table2.csv":           LabelOtherJudges,
		"truthhypo_table2.csv":     LabelComparable,
		"truthhypo_table3.csv":     LabelReference, // the authors' PubMed corpus and KG
		"faithqa_table3.csv":       LabelReference, // the FaithQA test set
		"cfaith_table5.csv":        LabelReference, // the released C-FAITH dataset
		"cfaith_table6.csv":        LabelReference,
		"LiveIdeaBench-202412.csv": LabelOtherJudges, // its keywords are the list halu ships
	}
	seen := 0
	for _, d := range registry.All() {
		refs, err := References(d.Name)
		if err != nil {
			t.Fatal(err)
		}
		for _, ref := range refs {
			if ref.Published == nil {
				continue
			}
			seen++
			set := map[string]string{}
			for k, e := range ref.Published.Settings {
				if e.Value != "" && e.Unknown == "" && e.Assumed == "" && e.Ignore == "" {
					set[k] = e.Value
				}
			}
			f := facts(t, d.Name, nil)
			f.Models = map[string]localmodels.ModelInfo{}
			for k, v := range set {
				s, ok := f.Settings.Lookup(k)
				if !ok {
					continue
				}
				if s.Role == setting.Instrument && s.IsModels() {
					v = "qwen2.5:7b" // the run's own judges
				}
				s.Value.Reset()
				if err := s.Value.Set(v); err != nil {
					t.Fatalf("%s --%s %s: %v", ref.File, k, v, err)
				}
			}
			v := ref.Prove(f)
			w, ok := want[filepath.Base(ref.File)]
			if !ok {
				t.Errorf("%s: no expected label", ref.File)
				continue
			}
			if v.Label != w {
				t.Errorf("%s: %s, want %s", ref.File, v.Why(), w)
			}
			t.Logf("%s: %s", filepath.Base(ref.File), v.Why())
			if w == LabelReference {
				continue
			}
			// One result-affecting change: a sample of the items.
			s, _ := f.Settings.Lookup("limit")
			s.Value.Reset()
			s.Value.Set("2")
			if v := ref.Prove(f); v.Label != LabelReference || !strings.Contains(strings.Join(v.Differences, "; "), "--limit 2") {
				t.Errorf("%s with a sample: %s", ref.File, v.Why())
			}
			s.Value.Reset()
			s.Value.Set(set["limit"])
			// A value the paper leaves unstated is an assumption only at
			// the value halu assumes: a shorter cap is a difference.
			if s, ok := f.Settings.Lookup("max-tokens"); ok && ref.Published.Settings["max-tokens"].Assumed != "" {
				s.Value.Reset()
				s.Value.Set("40")
				if v := ref.Prove(f); v.Label != LabelReference || !strings.Contains(strings.Join(v.Differences, "; "), "--max-tokens 40 (unstated by the paper") {
					t.Errorf("%s with a 40-token cap: %s", ref.File, v.Why())
				}
			}
		}
	}
	if seen != len(want) {
		t.Errorf("%d tables, want %d", seen, len(want))
	}
}

// A table with no rows is never headers over nothing: each renderer says
// why it is empty.
func TestEmptyTableSaysWhy(t *testing.T) {
	tb := summary.Table{Title: "Figure 5", Columns: []string{"model", "FN rate"}, Empty: "no true/false answer was scored"}
	var b strings.Builder
	writeMDTable(&b, tb)
	if !strings.Contains(b.String(), "no rows: no true/false answer was scored") || strings.Contains(b.String(), "FN rate") {
		t.Errorf("markdown: %q", b.String())
	}
	var p bytes.Buffer
	(&summary.Summary{Tables: []summary.Table{tb}}).Print(&p)
	if !strings.Contains(p.String(), "no rows: no true/false answer was scored") || strings.Contains(p.String(), "FN rate") {
		t.Errorf("text: %q", p.String())
	}
	if why := (summary.Table{}).WhyEmpty(); why == "" {
		t.Error("an empty table without a reason says nothing")
	}
}

// The paper's values are written in two places — each setting's
// declaration (.Paper, what a run under the paper's protocol uses) and the
// published tables' configurations (what the table was made with). Where
// both give a value for one setting, they agree, but for the differences
// named here, each with why: a drift between the two fails.
func TestPublishedValuesAgreeWithTheDeclarations(t *testing.T) {
	differ := map[string]string{
		"LiveIdeaBench-202412.csv --scoring": "the December 2024 board was scored by the first release's scales; the paper's protocol is the current release's",
	}
	checked := 0
	ec := engine.DefaultEngineConfig()
	for _, d := range registry.All() {
		refs, err := References(d.Name)
		if err != nil {
			t.Fatal(err)
		}
		list := append(d.Config().Settings(), ec.Settings()...)
		for _, ref := range refs {
			if ref.Published == nil {
				continue
			}
			for name, e := range ref.Published.Settings {
				if e.Value == "" || e.Unknown != "" || e.Assumed != "" || e.Ignore != "" {
					continue
				}
				s, ok := list.Lookup(name)
				if !ok {
					continue
				}
				pv, ok := s.ProtocolValue(setting.ProtocolPaper)
				if !ok {
					continue
				}
				checked++
				key := filepath.Base(ref.File) + " --" + name
				saved := s.Value.String()
				s.Value.Reset()
				same := s.Value.Set(pv) == nil && sameValue(s, e)
				s.Value.Reset()
				s.Value.Set(saved)
				if same {
					continue
				}
				if why, ok := differ[key]; ok {
					t.Logf("%s: the declaration's %q, the table's %q — on purpose: %s", key, pv, e.Value, why)
					continue
				}
				t.Errorf("%s: the declaration's paper value %q, the published configuration's %q: one source has drifted", key, pv, e.Value)
			}
		}
	}
	if checked < 10 {
		t.Errorf("only %d values checked", checked)
	}
	t.Logf("%d published values checked against the declarations", checked)
}

// A method difference touching items the run has none of cannot change
// its numbers: a poem-only intent run is not touched by the
// misinterpretation design — neither the suite's departure nor FaithQA
// Table 3's — while a run holding one misinterpretation item is.
func TestMethodDifferenceOfItemsTheRunHasNot(t *testing.T) {
	d, ok := registry.Find("intent")
	if !ok {
		t.Fatal("no intent suite")
	}
	refs, err := References("intent")
	if err != nil || len(refs) != 1 {
		t.Fatalf("%d references, %v", len(refs), err)
	}
	for _, tc := range []struct {
		tasks   []string
		applies bool
	}{
		{[]string{"poem", "poem", "story"}, false},
		{[]string{"poem", "summary"}, true},
	} {
		cfg := d.Config()
		for k, v := range map[string]string{"models": "m", "judges": "j"} {
			s, _ := cfg.Settings().Lookup(k)
			if err := s.Value.Set(v); err != nil {
				t.Fatal(err)
			}
		}
		s, err := d.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := json.Marshal(cfg)
		man := &rundir.Manifest{Suite: "intent", Config: raw, Format: rundir.FormatVersion, Methods: s.Departures()}
		var recs []rundir.Record
		for i, task := range tc.tasks {
			data, _ := json.Marshal(map[string]any{"model": "m", "id": fmt.Sprint("q", i), "task": task, "response": "…"})
			recs = append(recs, rundir.Record{Item: fmt.Sprint("m/q", i), Data: data})
		}
		sum, _, err := engine.Summarize(s, man, rundir.RecordsOf(recs))
		if err != nil {
			t.Fatal(err)
		}
		mis := func(list []string) bool {
			return strings.Contains(strings.Join(list, "\n"), "misinterpretation scoring is halu's design")
		}
		if mis(sum.Methods) != tc.applies || mis(sum.MethodsInapplicable) == tc.applies {
			t.Errorf("tasks %v: methods %q, inapplicable %q", tc.tasks, sum.Methods, sum.MethodsInapplicable)
		}
		v := refs[0].Prove(Facts(man, sum))
		if mis(v.Differences) != tc.applies || mis(v.Inapplicable) == tc.applies {
			t.Errorf("tasks %v against %s: differences %q, inapplicable %q", tc.tasks, refs[0].File, v.Differences, v.Inapplicable)
		}
	}
}

// A setting the records show was not carried out (the ideas panel's cap on
// a panel too small for it) is a difference from a table made with it.
func TestUnappliedSettingIsADifference(t *testing.T) {
	refs, err := References("ideas")
	if err != nil || len(refs) != 1 {
		t.Fatalf("%d references, %v", len(refs), err)
	}
	sum := &summary.Summary{Unapplied: []string{"--family-cap 0.2 not applied on 2 of 2 items: panel too small"}}
	f := Facts(&rundir.Manifest{Suite: "ideas"}, sum)
	if v := refs[0].Prove(f); !strings.Contains(strings.Join(v.Differences, "\n"), "--family-cap 0.2 not applied on 2 of 2 items") {
		t.Errorf("differences %q", v.Differences)
	}
}

// The December 2024 LiveIdeaBench board is reachable by a run of its
// protocol with the keyword list halu ships (the release's own,
// byte-identical): every keyword, the first release's scoring, no caps —
// "same method, other judges", the judges being the one thing a local run
// cannot have. A sample of the keywords is a difference.
func TestLiveIdeaBenchBoardReachable(t *testing.T) {
	refs, err := References("ideas")
	if err != nil {
		t.Fatal(err)
	}
	var board *Reference
	for i := range refs {
		if strings.Contains(refs[i].File, "202412") {
			board = &refs[i]
		}
	}
	if board == nil {
		t.Fatal("no LiveIdeaBench-202412 reference")
	}
	full := map[string]string{"limit": "0", "scoring": "first-release", "max-tokens": "0", "judge-max-tokens": "0", "fluency-max-tokens": "0",
		"ideas-per-keyword": "2", "fluency-pairs": "one", "judge-format": "text", "readers": "paper", "judges": "j1,j2,j3"}
	v := board.Prove(facts(t, "ideas", full))
	if v.Label != LabelOtherJudges {
		t.Errorf("a faithful full run: %s", v.Why())
	}
	full["limit"] = "50"
	if v := board.Prove(facts(t, "ideas", full)); v.Label != LabelReference || !strings.Contains(v.Why(), "--limit 50") {
		t.Errorf("50 keywords: %s", v.Why())
	}
}

// HIC-Bench's token cap is a paper–code conflict, named as such — never
// "unstated": the paper says 70, the authors' code sends 700 (and asks for
// 70 in its prompt). A run at 700 rests on that reading, listed with the
// assumptions and not a difference; a run at 70 differs from the numbers,
// which the code made, and says why.
func TestHICTokenCapIsAConflict(t *testing.T) {
	refs, err := References("hic")
	if err != nil || len(refs) == 0 {
		t.Fatal(err)
	}
	ref := refs[0]
	for _, tc := range []struct {
		cap  string
		kind string
		diff bool
	}{{"700", KindConflict, false}, {"70", KindDifference, true}} {
		v := ref.Prove(facts(t, "hic", map[string]string{"max-tokens": tc.cap}))
		var row *ProofRow
		for i, r := range v.Rows {
			if r.What == "--max-tokens" {
				row = &v.Rows[i]
			}
		}
		if row == nil || !strings.HasPrefix(row.Kind, tc.kind) || !strings.Contains(row.Paper, "paper says 'the maximum token length is set to 70'") || !strings.Contains(row.Paper, "max_tokens 700") {
			t.Errorf("--max-tokens %s: %+v", tc.cap, row)
			continue
		}
		why := v.Why()
		if strings.Contains(why, "unstated by the paper") || !strings.Contains(why, "paper–code conflict") || strings.Contains(strings.Join(v.Differences, "; "), "--max-tokens") != tc.diff {
			t.Errorf("--max-tokens %s: %s", tc.cap, why)
		}
	}
}

// TestPublishedKeywordsAreTheShippedOnes: the LiveIdeaBench configuration
// says its keywords are byte-identical to the kws.csv halu embeds (so a
// default run, which names no file, used the published keywords); the hash
// it records must be that file's, or the claim is a name.
func TestPublishedKeywordsAreTheShippedOnes(t *testing.T) {
	pub, err := loadPublished("LiveIdeaBench-202412.yaml")
	if err != nil {
		t.Fatal(err)
	}
	got, err := rundir.HashFile(filepath.Join("..", "ideas", "data", "kws.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if want := pub.Settings["keywords"].SHA256; got != want {
		t.Fatalf("embedded kws.csv has sha256 %s; LiveIdeaBench-202412.yaml records %s", got, want)
	}
}

// The paper a run's suite implements (Manifest.Paper, from the suite's
// Task) is named in the run's section of the page and of the Markdown,
// escaped as any text; a run of halu's own suite names none.
func TestReportNamesThePaper(t *testing.T) {
	const paper = `Yang et al., "Heaven-Sent or Hell-Bent? <b>"; the authors' code: github.com/x/y`
	runs := []*Run{
		{Dir: "a", Manifest: &rundir.Manifest{Suite: "hic", Paper: paper}, Summary: &summary.Summary{}},
		{Dir: "b", Manifest: &rundir.Manifest{Suite: "smoke"}, Summary: &summary.Summary{}},
	}
	var page, md strings.Builder
	if err := HTML(&page, runs); err != nil {
		t.Fatal(err)
	}
	if err := Markdown(&md, runs); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(page.String(), "<b>Paper:</b> Yang et al., &#34;Heaven-Sent or Hell-Bent? &lt;b&gt;&#34;; the authors&#39; code: github.com/x/y</p>"); n != 1 {
		t.Errorf("the page names the paper %d times, want once (the hic run's)", n)
	}
	if n := strings.Count(md.String(), "Paper: "); n != 1 || !strings.Contains(md.String(), "Heaven-Sent or Hell-Bent?") {
		t.Errorf("the Markdown names a paper %d times, want once:\n%s", n, md.String())
	}
}

// A report holds its records in item order (stable: two records of one
// item keep the file's order), and a record read whole at its place is the
// one read there, with its transcripts.
func TestLoadHoldsRecordsInItemOrder(t *testing.T) {
	dir := t.TempDir()
	if err := rundir.WriteManifest(dir, &rundir.Manifest{Suite: "s", Format: rundir.FormatVersion}); err != nil {
		t.Fatal(err)
	}
	items := []string{"e", "b", "d", "a", "b", "c", "a", "f", "b"}
	var lines []string
	for i, it := range items {
		lines = append(lines, fmt.Sprintf(`{"format":1,"suite":"s","item":%q,"data":{"n":%d},"calls":[{"stage":"g","kind":"chat","model":"m","digest":"d","key":"k","reply":"reply %d"}]}`+"\n", it, i, i))
	}
	if err := os.WriteFile(filepath.Join(dir, rundir.RecordsFile), []byte(strings.Join(lines, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Load(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	err = r.readWhole(func(w *wholeRecords) error {
		for i := range r.records {
			rec, err := w.record(i)
			if err != nil {
				return err
			}
			n := strings.TrimSuffix(strings.TrimPrefix(string(rec.Data), `{"n":`), "}")
			if rec.Item != r.records[i].place.Item || rec.Calls[0].Reply != "reply "+n {
				t.Errorf("place %d (%s): record %s %s %q", i, r.records[i].place.Item, rec.Item, rec.Data, rec.Calls[0].Reply)
			}
			order = append(order, rec.Item+string(rec.Data))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := `a{"n":3} a{"n":6} b{"n":1} b{"n":4} b{"n":8} c{"n":5} d{"n":2} e{"n":0} f{"n":7}`
	if got := strings.Join(order, " "); got != want {
		t.Errorf("order %s, want %s", got, want)
	}
}

// The failure groups keep, of each stage and model, the first unscored
// judgements in item order (those of one item as read), whatever order the
// records were read in, and count them all.
func TestFailureBookKeepsTheFirstInItemOrder(t *testing.T) {
	fail := func(item string, reasons ...string) *rundir.Record {
		r := &rundir.Record{Item: item}
		for _, why := range reasons {
			r.Failures = append(r.Failures, rundir.Failure{Stage: "judge", Model: "j", Reason: why})
		}
		return r
	}
	b := newFailureBook(3)
	for i, r := range []*rundir.Record{fail("d", "d1"), fail("b", "b1", "b2"), fail("c", "c1"), fail("a"), fail("b", "b3"), fail("a", "a1")} {
		b.add(r, i)
	}
	b.add(&rundir.Record{Item: "0", Failures: []rundir.Failure{{Stage: "judge", Model: "k", Reason: "k1"}}}, 6)
	gs := b.groups()
	if len(gs) != 2 || gs[0].Model != "j" || gs[0].Count != 6 || gs[1].Model != "k" || gs[1].Count != 1 {
		t.Fatalf("groups %+v", gs)
	}
	var got []string
	for i, f := range gs[0].Examples {
		got = append(got, gs[0].Items[i]+":"+f.Reason)
	}
	if g := strings.Join(got, " "); g != "a:a1 b:b1 b:b2" {
		t.Errorf("kept %s, want a:a1 b:b1 b:b2", g)
	}
}
