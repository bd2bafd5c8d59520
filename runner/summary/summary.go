package summary

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"

	"halu/localmodels"
	"halu/metrics"
	"halu/runner/rundir"
	"halu/runner/setting"
)

// Summary is what a suite makes of a run's records: named figures, tables in
// the papers' layouts, and notes (rules applied, caveats).
type Summary struct {
	Suite   string             `json:"suite"`
	Metrics map[string]float64 `json:"metrics"`
	// Nothing, when set, says why the run measured nothing at all (every
	// figure it exists for rests on no unit): the command that made it
	// fails, saying so, rather than report a measurement.
	Nothing string   `json:"nothing,omitempty"`
	Tables  []Table  `json:"tables"`
	Charts  []Chart  `json:"charts,omitempty"`
	Notes   []string `json:"notes,omitempty"`
	// Support is, per metric (same key), what the figure rests on; gates
	// fail a metric that rests on nothing or on too few of its units.
	Support map[string]Support `json:"support,omitempty"`
	// Figures are the metrics in long form with their intervals (Figure):
	// what leaderboards and long exports read.
	Figures []Figure `json:"figures,omitempty"`
	// Protocol and Departures are the run's (see Manifest).
	Protocol    string               `json:"protocol,omitempty"`
	Departures  []setting.Departure  `json:"departures,omitempty"`
	Methods     []string             `json:"method_departures,omitempty"`
	Assumptions []setting.Assumption `json:"assumptions,omitempty"`
	Counts      rundir.Counts        `json:"counts"`
	TinyModel   bool                 `json:"tiny_model,omitempty"`
	// ContentCut counts the prompts that lost content they should hold to
	// fit the model's context window (hypo's documents and KG lines left
	// out), or were longer than it anyway: a published table shows all of
	// it, so a run with any is not comparable with one.
	ContentCut int `json:"content_cut,omitempty"`
	// Unapplied are the settings the run's records show were not carried
	// out as set (the ideas panel's organisation cap on a panel too small
	// to honour it), each in a sentence: a difference from any published
	// table made with the setting as set.
	Unapplied []string `json:"unapplied,omitempty"`
	// Scopes are, per kind of item a method departure touches (a scope the
	// suite names: intent's "misinterpretation" items), how many of the
	// run's records hold one; a scope not listed was not counted.
	Scopes map[string]int `json:"scopes,omitempty"`
	// MethodsInapplicable are the suite's method departures that cannot
	// apply to this run — their scope holds no item of its records — each
	// with the reason; Methods holds the rest.
	MethodsInapplicable []string `json:"method_departures_inapplicable,omitempty"`
	// Readers is how the run read text judge replies where the authors'
	// rule and halu's careful reader differ ("paper": the authors' rule
	// decided; "halu": the careful reading did), and JudgeReplies how many
	// judge replies it read; Counts.ReaderDisagreements says on how many
	// the two readings differed. Gates refuse figures the authors' rule
	// made when it disagrees with the careful reading too often.
	Readers      string `json:"readers,omitempty"`
	JudgeReplies int    `json:"judge_replies,omitempty"`
	// Beside is the run's figures under the reading that did not make the
	// headline (see AddBeside), for suites with two readers.
	Beside *Beside `json:"beside,omitempty"`
	// Glossary explains the abbreviations of the suite's tables and
	// leaderboard columns in the paper's words, shown above them.
	Glossary []Term `json:"glossary,omitempty"`
}

// Term is an abbreviation a suite's tables use and what it stands for.
type Term struct {
	Abbr    string `json:"abbr"`
	Meaning string `json:"meaning"`
}

// GlossaryLine is the glossary in one line ("IH: …; DH: …"), "" for none.
func (s *Summary) GlossaryLine() string {
	var parts []string
	for _, t := range s.Glossary {
		parts = append(parts, t.Abbr+": "+t.Meaning)
	}
	return strings.Join(parts, "; ")
}

// Disagreement is the share of the judge replies read that the authors'
// rule read differently from halu's careful reader (0 when none was read).
func (s *Summary) Disagreement() float64 {
	if s.JudgeReplies == 0 {
		return 0
	}
	return float64(s.Counts.ReaderDisagreements) / float64(s.JudgeReplies)
}

// Support is what a metric was computed from: N units scored and Unscored
// units left out because their judgement never parsed (or, by the suite's
// rule, could not be scored).
type Support struct {
	N        int `json:"n"`
	Unscored int `json:"unscored"`
}

// UnscoredShare is Unscored over all units, NaN when there were none.
func (s Support) UnscoredShare() float64 {
	if s.N+s.Unscored == 0 {
		return math.NaN()
	}
	return float64(s.Unscored) / float64(s.N+s.Unscored)
}

// SetSupport records the support of metric key (allocating the map).
func (s *Summary) SetSupport(key string, n, unscored int) {
	if s.Support == nil {
		s.Support = map[string]Support{}
	}
	s.Support[key] = Support{N: n, Unscored: unscored}
}

// Table is a titled grid of already formatted cells.
type Table struct {
	Title   string     `json:"title"`
	Columns []string   `json:"columns"`
	Rows    [][]string `json:"rows"`
	// Empty says why a table has no rows; a reader is never shown
	// headers over nothing (WhyEmpty).
	Empty string `json:"empty,omitempty"`
}

// WhyEmpty is what a table with no rows shows instead of its headers: its
// Empty, or that the run's records hold nothing it counts.
func (t Table) WhyEmpty() string {
	if t.Empty != "" {
		return t.Empty
	}
	return "the run's records hold nothing this table counts"
}

func WriteSummary(dir string, s *Summary) error {
	// JSON has no NaN: an undefined figure (no pair to compare, no scored
	// answer) is left out of the metrics rather than written as a number.
	for k, v := range s.Metrics {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			delete(s.Metrics, k)
		}
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return rundir.WriteFileAtomic(filepath.Join(dir, rundir.SummaryFile), append(b, '\n'))
}

// ReadSummary reads dir/summary.json.
func ReadSummary(dir string) (*Summary, error) {
	var s Summary
	b, err := rundir.ReadFile(dir, rundir.SummaryFile)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, rundir.SummaryFile), err)
	}
	return &s, nil
}

// Print writes the summary as plain-text tables.
func (s *Summary) Print(w io.Writer) {
	if s.TinyModel {
		fmt.Fprintln(w, "WARNING: a toy-sized test model (under 10M parameters, such as the random-weight tiny model) produced some of these numbers: they are meaningless.")
	}
	for _, t := range s.Tables {
		fmt.Fprintf(w, "\n%s\n", t.Title)
		if len(t.Rows) == 0 {
			fmt.Fprintf(w, "no rows: %s\n", t.WhyEmpty())
			continue
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, strings.Join(t.Columns, "\t"))
		for _, r := range t.Rows {
			fmt.Fprintln(tw, strings.Join(r, "\t"))
		}
		tw.Flush()
	}
	for _, n := range s.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	c := s.Counts
	fmt.Fprintf(w, "\nitems %d, completed %d, failed %d; unparseable judge replies (unscored) %d; model calls %d, cache hits %d, retries %d; tokens in %d, out %d\n",
		c.Items, c.Completed, c.Failed, c.JudgeFailures, c.ModelCalls, c.CacheHits, c.Retries, c.PromptTokens, c.GeneratedToken)
	if c.JudgeTwoValues+c.HeldRepairs > 0 {
		fmt.Fprintf(w, "judge replies that stated two values for one field: %d unscored, %d read from a repair turn held to the verdict's schema\n", c.JudgeTwoValues, c.HeldRepairs)
	}
	if c.StoppedBudget+c.StoppedRepetition+c.NearContext+c.Backoffs > 0 {
		fmt.Fprintf(w, "generations stopped: %d at the time budget, %d in a repetition loop; prompts near the context window: %d; 503 back-offs: %d\n",
			c.StoppedBudget, c.StoppedRepetition, c.NearContext, c.Backoffs)
	}
	if c.CacheUnchecked > 0 {
		fmt.Fprintf(w, "cache: %d entries of an older halu, written before entries carried a checksum, fetched again\n", c.CacheUnchecked)
	}
	if c.CacheDamaged+c.CacheWriteFailures > 0 {
		fmt.Fprintf(w, "cache: %d damaged entries dropped and fetched again; %d replies not cached (write failed)\n",
			c.CacheDamaged, c.CacheWriteFailures)
	}
	sched := fmt.Sprintf("model switches: %d", c.ModelSwitches)
	if use, ok := c.SlotUse(); ok && c.ModelCalls > 0 {
		mean, _ := c.InFlight()
		sched += fmt.Sprintf("; calls in flight %.2f on average of %.0f slots, slot use %.0f%% (over %.1f s of work)",
			mean, c.SlotSeconds/c.WorkSeconds, 100*use, c.WorkSeconds)
	}
	fmt.Fprintln(w, sched)
	if wait, ok := c.ServerWait(); ok {
		line := fmt.Sprintf("server timing (%d generations the server timed): queued at the server %.0f%% of their time, before it started on them; loading models %.1f s",
			c.TimedCalls, 100*wait, c.LoadSeconds)
		if c.Reloads > 0 {
			line += fmt.Sprintf(", %.1f s of it in %d reloads of a model the run had used (the server let it go for another)", c.ReloadSeconds, c.Reloads)
		}
		if wait >= serverWaitWarn && c.WaitSeconds/float64(c.TimedCalls) >= localmodels.QueuedFloor.Seconds() {
			slots := "the slots halu assumed (--parallel)"
			if c.WorkSeconds > 0 {
				slots = fmt.Sprintf("the %.0f slots halu assumed (--parallel)", c.SlotSeconds/c.WorkSeconds)
			}
			line += "; the server answered fewer calls at once than " + slots + ", or served other clients too: " +
				"match --parallel to its slots (Ollama: OLLAMA_NUM_PARALLEL; halu doctor measures them)"
		}
		if c.QueueBackoffs > 0 {
			line += fmt.Sprintf("; halu lowered its calls in flight by one %d times for a call queued there most of its time "+
				"(the server answers fewer calls at once than --parallel, or serves other clients too)", c.QueueBackoffs)
		}
		fmt.Fprintln(w, line)
	}
	if reuse, ok := c.PrefixReuse(); ok {
		fmt.Fprintf(w, "prefix reuse (%d generations the server said it for): %.0f%% of their %d prompt tokens came from its prefix cache\n",
			c.ReuseCalls, 100*reuse, c.ReusePromptTokens)
	}
	if len(c.Hosts) > 0 {
		var hosts []string
		for h := range c.Hosts {
			hosts = append(hosts, h)
		}
		sort.Strings(hosts)
		var parts []string
		for _, h := range hosts {
			part := fmt.Sprintf("%s %d", h, c.Hosts[h].Calls)
			if c.SlotSeconds > 0 && c.ModelCalls > 0 {
				// Each server of a pool has an equal share of the slots;
				// a server's busy time is that of the calls it answered
				// (a call that failed there is not counted).
				part += fmt.Sprintf(" (slot use %.0f%%", 100*c.Hosts[h].Seconds*float64(len(c.Hosts))/c.SlotSeconds)
				if wait, ok := c.Hosts[h].ServerWait(); ok {
					part += fmt.Sprintf(", queued %.0f%%", 100*wait)
				}
				if reuse, ok := c.Hosts[h].PrefixReuse(); ok {
					part += fmt.Sprintf(", prefix reuse %.0f%%", 100*reuse)
				}
				part += ")"
			}
			if f := c.Hosts[h].Failures; f > 0 {
				part += fmt.Sprintf(" (%d failed there", f)
				if u := c.Hosts[h].Unavailable; u > 0 {
					part += fmt.Sprintf(", %d of them 503", u)
				}
				part += ")"
			}
			parts = append(parts, part)
		}
		fmt.Fprintf(w, "calls per server: %s\n", strings.Join(parts, ", "))
	}
}

// serverWaitWarn is the share of the timed generations' time queued at
// the server from which the summary says it kept calls queued — when they
// also waited localmodels.QueuedFloor each on average: the server's own
// handling of a call takes a few milliseconds, most of a call answered at
// once (a test server's).
const serverWaitWarn = 0.2

// Gate is a quality gate on a summary metric: --fail-under NAME=VALUE fails
// a run whose metric is below VALUE, --fail-over one whose metric is above.
// A gate also fails a metric that was not measured (n = 0, or no value at
// all), one whose unscored share exceeds MaxUnscored, and — in a run whose
// figures the authors' reading rule decided (Summary.Readers "paper") —
// every metric when that rule disagreed with halu's careful reading on
// more than MaxUnscored of the judge replies: a bound met by a figure
// computed from nothing, from the few replies that happened to parse, or
// from readings a careful reader rejects, is not met. (Disagreements are
// counted per run, not per metric: every gate of the run fails.)
type Gate struct {
	Metric      string
	Bound       float64
	Over        bool
	MaxUnscored float64
}

// DefaultMaxUnscored is the largest unscored share a gated metric may have
// unless --max-unscored says otherwise.
const DefaultMaxUnscored = 0.10

// ParseGate reads NAME=VALUE.
func ParseGate(s string, over bool) (Gate, error) {
	name, val, ok := strings.Cut(s, "=")
	var f float64
	if ok {
		_, err := fmt.Sscanf(val, "%g", &f)
		ok = err == nil && strings.TrimSpace(name) != ""
	}
	if !ok {
		return Gate{}, fmt.Errorf("gate %q: want METRIC=NUMBER", s)
	}
	return Gate{Metric: strings.TrimSpace(name), Bound: f, Over: over, MaxUnscored: DefaultMaxUnscored}, nil
}

func (g Gate) String() string {
	if g.Over {
		return fmt.Sprintf("%s <= %g", g.Metric, g.Bound)
	}
	return fmt.Sprintf("%s >= %g", g.Metric, g.Bound)
}

// Check returns the metrics that fail g, each with the reason. A gate names
// a metric whole ("qwen2.5:1.5b/cs") or by its last part ("cs"), which then
// applies to every model's; naming none of the summary's metrics is an
// error.
func (s *Summary) Check(g Gate) (failed []string, err error) {
	match := func(k string) bool { return names(k, g.Metric) }
	seen := map[string]bool{}
	var keys []string
	for k := range s.Metrics {
		if match(k) && !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	for k := range s.Support {
		if match(k) && !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		var all []string
		for k := range s.Metrics {
			all = append(all, k)
		}
		sort.Strings(all)
		return nil, fmt.Errorf("gate %s: no metric %q in this run's summary (it has: %s)", g, g.Metric, strings.Join(all, ", "))
	}
	sort.Strings(keys)
	for _, k := range keys {
		v, measured := s.Metrics[k]
		sup, hasSup := s.Support[k]
		switch {
		case !measured || math.IsNaN(v) || hasSup && sup.N == 0:
			why := "no value"
			if hasSup {
				why = fmt.Sprintf("n = %d, %d unscored", sup.N, sup.Unscored)
			}
			failed = append(failed, fmt.Sprintf("%s not measured (%s; gate: %s)", k, why, g))
		case hasSup && sup.UnscoredShare() > g.MaxUnscored:
			failed = append(failed, fmt.Sprintf("%s = %.4g rests on %d of %d units: %d unscored (%.0f%%, over --max-unscored %.0f%%; gate: %s)",
				k, v, sup.N, sup.N+sup.Unscored, sup.Unscored, 100*sup.UnscoredShare(), 100*g.MaxUnscored, g))
		case s.Readers == "paper" && s.Disagreement() > g.MaxUnscored:
			failed = append(failed, fmt.Sprintf("%s = %.4g rests on the authors' reading rule, which read %d of %d judge replies (%.0f%%, over --max-unscored %.0f%%) otherwise than halu's careful reader (each record's readings hold both; --readers halu makes the careful reading decide; gate: %s)",
				k, v, s.Counts.ReaderDisagreements, s.JudgeReplies, 100*s.Disagreement(), 100*g.MaxUnscored, g))
		case (g.Over && v > g.Bound) || (!g.Over && v < g.Bound):
			failed = append(failed, fmt.Sprintf("%s = %.4g (gate: %s)", k, v, g))
		}
	}
	return failed, nil
}

// names reports whether name names the metric key: the key whole, or its
// last parts after a "/" or ".".
func names(key, name string) bool {
	return key == name || strings.HasSuffix(key, "/"+name) || strings.HasSuffix(key, "."+name)
}

// CheckGateNames refuses a gate whose metric can be no metric of suite's
// summary: its last part is none of the names the suite declares (known,
// the last part of every key of its summary: "cs" of "gen/rewrite/cs"),
// so that a gate naming none is refused before the run rather than after
// it. It is checked before the first model call; which models and groups
// a summary holds is known only after the run, when Summary.Check looks
// again. A suite that declares no names (known nil) is not checked here.
func CheckGateNames(suite string, known []string, gates []Gate) error {
	if known == nil {
		return nil
	}
	for _, g := range gates {
		found := false
		for _, n := range known {
			if names(g.Metric, n) {
				found = true
				break
			}
		}
		if !found {
			return fmt.Errorf("gate %s: suite %s has no metric %q (its metrics end in: %s)", g, suite, g.Metric, strings.Join(known, ", "))
		}
	}
	return nil
}

// UndeclaredMetrics returns the keys of sum that end in none of the names
// declared: a suite's tests check that its MetricNames cover its summary.
func UndeclaredMetrics(declared []string, sum *Summary) []string {
	var out []string
	for k := range sum.Metrics {
		found := false
		for _, n := range declared {
			if names(k, n) {
				found = true
				break
			}
		}
		if !found {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// Chart is the data of one figure, drawn by `halu report` as inline SVG. A
// suite fills the fields of its Kind:
//
//   - "bars": Groups along the x axis, one bar per Series in each, with an
//     optional interval (Lo, Hi: a 95% CI) drawn as an error bar;
//   - "scatter": labelled Points, those with Front set joined as a Pareto
//     front;
//   - "heatmap": Cells[row][col] over Rows × Groups;
//   - "histogram": each Series' Values binned into Bins bins over [Min, Max];
//   - "curves": each Series a line through (X[i], Values[i]), over the
//     unit square, with the diagonal dashed (an ROC curve's random).
type Chart struct {
	Kind   string   `json:"kind"`
	Title  string   `json:"title"`
	X      string   `json:"x_label,omitempty"`
	Y      string   `json:"y_label,omitempty"`
	Groups []string `json:"groups,omitempty"`
	Series []Series `json:"series,omitempty"`
	Points []Point  `json:"points,omitempty"`
	Rows   []string `json:"rows,omitempty"`
	Cells  [][]Num  `json:"cells,omitempty"`
	Bins   int      `json:"bins,omitempty"`
	Min    Num      `json:"min,omitempty"`
	Max    Num      `json:"max,omitempty"`
}

// Series is one named run of values of a chart (NaN: no value).
type Series struct {
	Name   string `json:"name"`
	X      []Num  `json:"x,omitempty"`
	Values []Num  `json:"values"`
	Lo     []Num  `json:"lo,omitempty"`
	Hi     []Num  `json:"hi,omitempty"`
	// N are the units each value rests on, where it is a share
	// (AddProportion; 0: not given): a bar chart writes n above each bar,
	// so a bar of 0 with its whisker reads as a share of few units, not
	// as a missing bar.
	N []int `json:"n,omitempty"`
}

// AddProportion appends the share k/n with its 95% Wilson interval (NaN
// when n is 0: no bar is drawn) and its n.
func (s *Series) AddProportion(k, n int) {
	for len(s.N) < len(s.Values) {
		s.N = append(s.N, 0)
	}
	s.add(metrics.WilsonCI(k, n, 0.95))
	s.N = append(s.N, n)
}

// AddInterval appends an estimate with its interval (the error bar).
func (s *Series) AddInterval(iv metrics.Interval) {
	s.add(iv)
	if s.N != nil {
		s.N = append(s.N, 0)
	}
}

func (s *Series) add(iv metrics.Interval) {
	s.Values = append(s.Values, Num(iv.Estimate))
	s.Lo = append(s.Lo, Num(iv.Low))
	s.Hi = append(s.Hi, Num(iv.High))
}

// Point is one labelled point of a scatter chart.
type Point struct {
	Label string `json:"label"`
	X     Num    `json:"x"`
	Y     Num    `json:"y"`
	Front bool   `json:"front,omitempty"`
}

// Num is a chart value: NaN (no data) is written to JSON as null, which
// JSON numbers cannot hold, and read back as NaN.
type Num float64

// Nums converts xs.
func Nums(xs ...float64) []Num {
	out := make([]Num, len(xs))
	for i, x := range xs {
		out[i] = Num(x)
	}
	return out
}

// MarshalJSON writes NaN and ±Inf as null.
func (n Num) MarshalJSON() ([]byte, error) {
	f := float64(n)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	return json.Marshal(f)
}

// UnmarshalJSON reads null as NaN.
func (n *Num) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*n = Num(math.NaN())
		return nil
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	*n = Num(f)
	return nil
}

// ReadingNotes says how many judge replies were read other than the plain
// way, per stage: text fallbacks in JSON mode, and replies on which the
// paper's reading rule and halu's reader disagree.
func ReadingNotes(recs []rundir.Record, readers string) []string {
	fallback, disagree := map[string]int{}, map[string]int{}
	for _, r := range recs {
		for _, rd := range r.Readings {
			switch rd.How {
			case "fallback":
				fallback[rd.Stage]++
			case "disagree":
				disagree[rd.Stage]++
			}
		}
	}
	var notes []string
	if len(fallback) > 0 {
		notes = append(notes, "reading: JSON-mode judge replies without a JSON verdict, read by the suite's text reader — "+countsByKey(fallback))
	}
	if len(disagree) > 0 {
		notes = append(notes, fmt.Sprintf("reading: text replies the paper's rule and halu's reader read differently (--readers %s decided; the other reading is in each record's readings) — %s",
			readers, countsByKey(disagree)))
	}
	return notes
}

// ThinkingNotes names the models asked not to think (think: false) and on
// how many calls.
func ThinkingNotes(recs []rundir.Record) []string {
	n := map[string]int{}
	for _, r := range recs {
		for _, c := range r.Calls {
			if c.NoThink {
				n[c.Model]++
			}
		}
	}
	if len(n) == 0 {
		return nil
	}
	return []string{"thinking models asked not to think (think: false) so that their reply caps go to the verdict — " + countsByKey(n)}
}

func countsByKey(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s: %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}
