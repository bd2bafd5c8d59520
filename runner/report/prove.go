package report

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"halu/localmodels"
	"halu/runner/engine"
	"halu/runner/registry"
	"halu/runner/rundir"
	"halu/runner/setting"
	"halu/runner/summary"
)

// Published is what a published table was made with, as far as the paper
// and the authors' code say: reference/NAME.yaml beside each transcribed
// table. It names every setting that can change the table's numbers —
// each setting of the suite and the engine that measures, except the
// models under test (the table's rows), seeds, and the serving settings
// whose effect comparability reads from the run's counts instead — so
// that a run is comparable only when each is shown equal
// (TestPublishedConfigurationsCoverEverySetting).
type Published struct {
	// Source says where the configuration is read from.
	Source string `yaml:"source"`
	// Dataset says what the table's items are.
	Dataset string `yaml:"dataset"`
	// Settings are by flag name.
	Settings map[string]Entry `yaml:"settings"`
	// Method lists where halu's way of measuring differs from the one that
	// made the table whatever the settings: a table with any is never
	// comparable. A difference in the instrument alone (how a judge or an
	// embedder is served) is a difference of the judges.
	Method []MethodEntry `yaml:"method"`
}

// MethodEntry is one method difference: a sentence, or {text, instrument:
// true} for one in the measuring models alone.
type MethodEntry struct {
	Text       string `yaml:"text"`
	Instrument bool   `yaml:"instrument"`
	// Scope names the kind of item the difference touches (a key of the
	// run summary's Scopes): a run whose records hold none of them is not
	// touched by it.
	Scope string `yaml:"scope"`
}

// UnmarshalYAML reads a method entry written as a sentence or a mapping.
func (m *MethodEntry) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		m.Text = n.Value
		return nil
	}
	type plain MethodEntry
	var p plain
	if err := n.Decode(&p); err != nil {
		return err
	}
	*m = MethodEntry(p)
	return nil
}

// Entry is one setting of a published table: the value it was made with
// (in flag syntax; Text says it in words), or why that value is not known
// (Unknown: never equal to a run's), or why the setting does not bear on
// the table (Ignore).
type Entry struct {
	Value string `yaml:"value"`
	Text  string `yaml:"text"`
	// SHA256 is the hash of the data file the value stands for: a run
	// that names a file with this hash used the same data.
	SHA256 string `yaml:"sha256"`
	// Unknown: the table's value cannot be known or shown equal offline
	// (its data or corpus is not to be had): a difference.
	Unknown string `yaml:"unknown"`
	// Assumed: the paper and the authors' code leave the value unstated
	// (a cap, a provider's default, a tie rule): the run's value is an
	// assumption, listed with it, never a difference by itself.
	Assumed string `yaml:"assumed"`
	Ignore  string `yaml:"ignore"`
	// Conflict, beside a value: the paper states another value than the
	// authors' code sends, and says so here — which each says, and why
	// the published numbers came from Value. Never "unstated": a run at
	// Value rests on that reading (listed with the assumptions), a run at
	// another value differs from the numbers, whatever the text says.
	Conflict string `yaml:"conflict"`
	// Models say what each model the value names was, for a setting that
	// names models (judges, embedder): a name is only a name, and a model
	// served offline under it is held against these facts.
	Models []PublishedModel `yaml:"models"`
	// Unordered: the value is a set (a panel whose scores the method
	// averages), compared without regard to order.
	Unordered bool `yaml:"unordered"`
}

// PublishedModel is what a published table's model was: a closed API model
// (never served offline, whatever a local model is called), or open
// weights of a family and parameter count.
type PublishedModel struct {
	Name       string `yaml:"name"`
	Closed     bool   `yaml:"closed"`
	Family     string `yaml:"family"`
	Parameters int64  `yaml:"parameters"`
	Source     string `yaml:"source"`
}

// UnmarshalYAML reads an entry written as a plain value or as a mapping.
func (e *Entry) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		e.Value = n.Value
		return nil
	}
	type plain Entry
	var p plain
	if err := n.Decode(&p); err != nil {
		return err
	}
	*e = Entry(p)
	kinds := 0
	for _, set := range []bool{e.Value != "" || e.Text != "", e.Unknown != "", e.Assumed != "", e.Ignore != ""} {
		if set {
			kinds++
		}
	}
	if kinds != 1 {
		return fmt.Errorf("line %d: an entry is a value (with its text), unknown: why, or ignore: why", n.Line)
	}
	if e.Conflict != "" && e.Value == "" {
		return fmt.Errorf("line %d: a paper–code conflict names the value the published numbers came from (value:)", n.Line)
	}
	return nil
}

func (e Entry) String() string {
	switch {
	case e.Unknown != "":
		return "not known: " + e.Unknown
	case e.Text != "":
		return e.Text
	}
	return e.Value
}

// Labels of a published table beside a run: what the report may claim.
const (
	// LabelComparable: the data, every setting that can change the
	// numbers and the judges are shown equal to the table's.
	LabelComparable = "comparable"
	// LabelOtherJudges: only the models that judge, verify or embed
	// differ — the usual offline case.
	LabelOtherJudges = "same method, other judges"
	// LabelReference: anything else differs or cannot be shown equal;
	// every difference is listed.
	LabelReference = "reference only"
)

// Verdict is how a published table may be read beside a run, and why.
type Verdict struct {
	Label string
	// Differences are the settings, data and method that differ from the
	// table's or cannot be shown equal; Judges the models that measure.
	Differences []string
	Judges      []string
	// Assumptions are the run's values where the paper leaves them
	// unstated: what a comparable or same-method label rests on.
	Assumptions []string
	// Inapplicable are differences dropped because the run's own records
	// show they change nothing, each with the reason.
	Inapplicable []string
	// Rows are the same, one per setting or count, for a table that reads
	// at a glance (ProofTable): what, this run's value, the paper's, and which
	// kind of entry it is.
	Rows []ProofRow
}

// ProofRow is one line of a verdict's table.
type ProofRow struct {
	// What is the setting (--name) or the count compared; Run and Paper
	// the values (Paper "" where the paper has none to show).
	What, Run, Paper string
	// Kind is KindDifference, KindJudge, KindAssumption or
	// KindInapplicable, with the reason after it where there is one.
	Kind string
}

// The kinds of a ProofRow: a difference from the table, a difference of
// the models that measure only, a value the paper leaves unstated that the
// verdict rests on, and a difference that cannot apply to this run.
const (
	KindDifference   = "difference"
	KindJudge        = "difference (a model that measures)"
	KindAssumption   = "assumption (the paper is silent)"
	KindInapplicable = "cannot apply"
	// KindConflict: the paper and the authors' code state two values; the
	// run took the one the published numbers came from.
	KindConflict = "paper–code conflict, read as the published numbers were made"
)

// Headline is the verdict in one line, its reasons counted: the table
// (ProofTable) lists them.
func (v Verdict) Headline() string {
	var n [4]int
	for _, r := range v.Rows {
		switch {
		case strings.HasPrefix(r.Kind, KindJudge):
			n[1]++
		case strings.HasPrefix(r.Kind, KindDifference):
			n[0]++
		case strings.HasPrefix(r.Kind, KindAssumption), strings.HasPrefix(r.Kind, KindConflict):
			n[2]++
		case strings.HasPrefix(r.Kind, KindInapplicable):
			n[3]++
		}
	}
	var parts []string
	for i, what := range [][2]string{{"difference", "differences"}, {"difference of the models that measure", "differences of the models that measure"},
		{"assumption (the paper silent, or at odds with its code)", "assumptions (the paper silent, or at odds with its code)"}, {"difference that cannot apply to this run", "differences that cannot apply to this run"}} {
		switch {
		case n[i] == 1:
			parts = append(parts, "1 "+what[0])
		case n[i] > 1:
			parts = append(parts, fmt.Sprintf("%d %s", n[i], what[1]))
		}
	}
	if len(parts) == 0 {
		return v.Label
	}
	return v.Label + ": " + strings.Join(parts, ", ") + " (the table below)"
}

// ProofTable is the verdict as a small table: setting · this run · the paper ·
// difference, assumption or a difference that cannot apply.
func (v Verdict) ProofTable() summary.Table {
	t := summary.Table{Title: "Why: " + v.Label, Columns: []string{"setting or count", "this run", "the paper", "difference or assumption"}}
	for _, r := range v.Rows {
		t.Rows = append(t.Rows, []string{r.What, r.Run, orDash(r.Paper), r.Kind})
	}
	if len(t.Rows) == 0 {
		t.Empty = "nothing differs from what the table was made with, and nothing rests on an assumption"
	}
	return t
}

func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

// Why says the verdict in a sentence.
func (v Verdict) Why() string {
	rests := ""
	if len(v.Assumptions) > 0 {
		rests = fmt.Sprintf(" (resting on %d assumptions where the paper is silent or at odds with its code: %s)", len(v.Assumptions), strings.Join(v.Assumptions, "; "))
	}
	switch v.Label {
	case LabelComparable:
		return "comparable: the data, every setting that can change these numbers and the judges are the ones they were made with" + rests
	case LabelOtherJudges:
		return "same method, other judges: the data and every setting that can change these numbers are the ones they were made with; the models that judge differ — " + strings.Join(v.Judges, "; ") + rests
	}
	all := append(append([]string(nil), v.Differences...), v.Judges...)
	return fmt.Sprintf("reference only: %d differences — %s%s", len(all), strings.Join(all, "; "), rests)
}

// RunFacts are what a run's numbers rest on, for a Verdict.
type RunFacts struct {
	// Settings are the suite's and the engine's, as the run used them;
	// nil when the run's settings could not be read.
	Settings setting.List
	Counts   rundir.Counts
	// ContentCut counts prompts that lost content to fit the context
	// window (summary.Summary.ContentCut).
	ContentCut int
	// Unapplied are the settings the records show were not carried out as
	// set (summary.Summary.Unapplied).
	Unapplied []string
	// Scopes count the run's items of each kind a method difference may
	// touch (summary.Summary.Scopes); nil when not counted.
	Scopes   map[string]int
	Datasets map[string]rundir.DatasetInfo
	// Models are the models the run was served, by canonical name (the
	// manifest's: family, parameter count, digest).
	Models map[string]localmodels.ModelInfo
	// Assumed are, by setting, the values halu assumes where a paper is
	// silent (AssumedValues): an assumption holds only for a run that used
	// that value.
	Assumed map[string]string
	// Format is the run's format: only a run of the current one records
	// every reply the two readers read differently.
	Format int
	// UncountedRepairs counts the judges' repair turns recorded before
	// halu counted the verdicts read from them (Counts.JudgeRepaired; a
	// repair turn's log without CallLog.Counted), in an old run or in the
	// sessions before an old run was resumed: any of them may have given a
	// verdict, so each is a difference until shown otherwise.
	UncountedRepairs int
}

// Facts reads a run's facts from its manifest and summary: its settings
// through the suite's declaration (migrating an older run format).
func Facts(m *rundir.Manifest, sum *summary.Summary) RunFacts {
	f := RunFacts{Counts: m.Counts, Datasets: m.Datasets, Models: map[string]localmodels.ModelInfo{}, Format: m.Format}
	for _, mi := range m.Models {
		f.Models[localmodels.CanonicalName(mi.Name)] = mi
	}
	if sum != nil {
		f.ContentCut = sum.ContentCut
		f.Unapplied = sum.Unapplied
		f.Scopes = sum.Scopes
	}
	def, ok := registry.Find(m.Suite)
	if !ok {
		return f
	}
	cfg, err := def.Decode(m.Config, m.Format)
	if err != nil {
		return f
	}
	ec, err := engine.Recorded(m)
	if err != nil {
		return f
	}
	f.Settings = append(cfg.Settings(), ec.Settings()...)
	f.Assumed = AssumedValues(def)
	return f
}

// AssumedValues are, by setting, the values a run of suite d takes where
// the paper is silent: the value its paper protocol declares, else its
// default. A published table's "assumed" entry is an assumption for a run
// with that value; another value is a difference like any other.
func AssumedValues(d engine.Declaration) map[string]string {
	ec := engine.DefaultEngineConfig()
	out := map[string]string{}
	for _, s := range append(d.Config().Settings(), ec.Settings()...) {
		if v, ok := s.ProtocolValue(setting.ProtocolPaper); ok {
			out[s.Name] = v
		} else {
			out[s.Name] = s.Display()
		}
	}
	return out
}

// compared reports whether a setting is one a published table is compared
// on: it measures, it is set by a flag, and it is not a model under test, a
// seed, an addition beside the paper's figures, a serving setting (read
// from the counts) or the protocol (whose effects are the other settings).
func compared(s setting.Setting) bool {
	if s.Effect != setting.Measures || s.Internal() || s.Name == "protocol" {
		return false
	}
	switch s.Role {
	case setting.Subject, setting.Draw, setting.Beside, setting.Serving:
		return false
	}
	return true
}

// Prove compares a run with what the table was made with, setting by
// setting, and labels it. Nothing is assumed equal: a setting the table's
// configuration does not name, or names as not known, is a difference.
func (r Reference) Prove(f RunFacts) Verdict {
	var v Verdict
	if r.Published == nil {
		v.Label, v.Differences = LabelReference, []string{"halu does not know what these numbers were made with"}
		v.Rows = []ProofRow{{What: "the published configuration", Run: "–", Paper: "not known", Kind: KindDifference + ": halu does not know what these numbers were made with"}}
		return v
	}
	p := r.Published
	if f.Settings == nil {
		v.Differences = append(v.Differences, "the run's settings cannot be read here")
		v.Rows = append(v.Rows, ProofRow{What: "the run's settings", Run: "cannot be read here", Kind: KindDifference})
	}
	for _, s := range f.Settings {
		if !compared(s) || !s.Applies() {
			continue
		}
		e, ok := p.Settings[s.Name]
		name := "--" + s.Name
		var diff, paper, why string
		switch {
		case !ok:
			diff = fmt.Sprintf("--%s %s (the published configuration does not say)", s.Name, s.Display())
			paper = "not said"
		case e.Ignore != "":
		case e.Assumed != "" && f.assumes(s):
			v.Assumptions = append(v.Assumptions, fmt.Sprintf("--%s %s (unstated: %s)", s.Name, s.Display(), e.Assumed))
			v.Rows = append(v.Rows, ProofRow{What: name, Run: s.Display(), Paper: "unstated: " + e.Assumed, Kind: KindAssumption})
			continue
		case e.Assumed != "":
			diff = fmt.Sprintf("--%s %s (unstated by the paper — %s; the value halu assumes is %s)", s.Name, s.Display(), e.Assumed, f.Assumed[s.Name])
			paper, why = "unstated: "+e.Assumed, "halu assumes "+f.Assumed[s.Name]
		case s.Name == "readers" && !sameValue(s, e) && f.Counts.ReaderDisagreements == 0 && f.Format == rundir.FormatVersion:
			v.Inapplicable = append(v.Inapplicable, fmt.Sprintf("--%s %s (published: %s): the run's records hold no reply the two readers read differently, so the reading rule changes no number", s.Name, s.Display(), e))
			v.Rows = append(v.Rows, ProofRow{What: name, Run: s.Display(), Paper: e.String(), Kind: KindInapplicable + ": no reply the two readers read differently"})
			continue
		case e.Unknown != "":
			diff = fmt.Sprintf("--%s %s (published: not known — %s)", s.Name, s.Display(), e.Unknown)
			paper = "not known: " + e.Unknown
		case e.Conflict != "" && sameValue(s, e):
			v.Assumptions = append(v.Assumptions, fmt.Sprintf("--%s %s (a paper–code conflict: %s)", s.Name, s.Display(), e.Conflict))
			v.Rows = append(v.Rows, ProofRow{What: name, Run: s.Display(), Paper: e.String() + " — " + e.Conflict, Kind: KindConflict})
			continue
		case e.Conflict != "":
			diff = fmt.Sprintf("--%s %s (published: %s — a paper–code conflict: %s)", s.Name, s.Display(), e, e.Conflict)
			paper, why = e.String()+" — "+e.Conflict, "the published numbers came from "+e.Value
		case !sameValue(s, e) && !sameFile(s, e, f.Datasets):
			diff = fmt.Sprintf("--%s %s (published: %s)", s.Name, s.Display(), e)
			paper = e.String()
		case s.IsModels():
			// The same names: the models must be shown to be the same.
			if w := notTheModels(s, e, f.Models); len(w) > 0 {
				diff = fmt.Sprintf("--%s %s names the published models, but %s", s.Name, s.Display(), strings.Join(w, "; "))
				paper, why = e.String(), strings.Join(w, "; ")
			}
		}
		if diff == "" {
			continue
		}
		kind := KindDifference
		if s.Role == setting.Instrument {
			v.Judges = append(v.Judges, diff)
			kind = KindJudge
		} else {
			v.Differences = append(v.Differences, diff)
		}
		if why != "" {
			kind += ": " + why
		}
		v.Rows = append(v.Rows, ProofRow{What: name, Run: s.Display(), Paper: paper, Kind: kind})
	}
	v.addCounts(f)
	for _, m := range p.Method {
		if n, counted := f.Scopes[m.Scope]; m.Scope != "" && counted && n == 0 {
			v.Inapplicable = append(v.Inapplicable, fmt.Sprintf("%s: the run's records hold no %s item, so it changes no number", m.Text, m.Scope))
			v.Rows = append(v.Rows, ProofRow{What: "method", Run: m.Text, Kind: KindInapplicable + ": no " + m.Scope + " item in the run"})
			continue
		}
		kind := KindDifference
		if m.Instrument {
			v.Judges = append(v.Judges, m.Text)
			kind = KindJudge
		} else {
			v.Differences = append(v.Differences, m.Text)
		}
		v.Rows = append(v.Rows, ProofRow{What: "method", Run: m.Text, Kind: kind})
	}
	switch {
	case len(v.Differences) > 0:
		v.Label = LabelReference
	case len(v.Judges) > 0:
		v.Label = LabelOtherJudges
	default:
		v.Label = LabelComparable
	}
	return v
}

// addCounts adds the differences the run's counts show — prompts near
// or past the context window, content cut to fit it, settings not carried
// out as set, generations halu stopped, verdicts read from repair turns —
// none of which the published runs had.
func (v *Verdict) addCounts(f RunFacts) {
	count := func(what, run, paper, text string) {
		v.Differences = append(v.Differences, text)
		v.Rows = append(v.Rows, ProofRow{What: what, Run: run, Paper: paper, Kind: KindDifference})
	}
	c := f.Counts
	if c.NearContext > 0 {
		count("prompts near the context window", fmt.Sprint(c.NearContext), "0", fmt.Sprintf("%d prompts filled 90%% of the context window: the server may have cut them", c.NearContext))
	}
	if c.OverContext > 0 {
		count("calls past the context window", fmt.Sprint(c.OverContext), "0", fmt.Sprintf("%d calls ran past their context window (prompt and reply together longer than num_ctx): the server dropped each prompt's beginning while generating", c.OverContext))
	}
	if f.ContentCut > 0 {
		count("prompts that lost content to fit the window", fmt.Sprint(f.ContentCut), "0", fmt.Sprintf("%d prompts lost content to fit the context window (documents or KG lines left out, or the prompt longer than the window)", f.ContentCut))
	}
	for _, u := range f.Unapplied {
		count("a setting not carried out as set", u, "", u)
	}
	if n := c.StoppedBudget + c.StoppedRepetition; n > 0 {
		count("generations stopped by halu (budget, repetition)", fmt.Sprint(n), "0", fmt.Sprintf("%d generations stopped by halu (time budget or repetition), a stop the published runs did not have", n))
	}
	if c.JudgeRepaired > 0 {
		count("verdicts read from a repair turn", fmt.Sprint(c.JudgeRepaired), "no repair turn", fmt.Sprintf("%d judge verdicts were read from a repair turn (the judge asked again after a reply that did not read; --judge-repairs), a turn the published configuration does not name", c.JudgeRepaired))
	}
	if f.UncountedRepairs > 0 {
		count("repair turns asked (verdicts from them not counted)", fmt.Sprint(f.UncountedRepairs), "no repair turn", fmt.Sprintf("repair turns asked of the judges: %d (asked again after a reply that did not read), a turn the published configuration does not name; they were recorded before halu counted the verdicts read from them, so any may have given one", f.UncountedRepairs))
	}
}

// assumes reports whether the run used the value halu assumes for s (a
// run whose assumed values are not known assumes nothing).
func (f RunFacts) assumes(s setting.Setting) bool {
	v, ok := f.Assumed[s.Name]
	return ok && (s.Value.Same(v) || s.Display() == v)
}

// sameValue compares a run's value with the published one: as a set where
// the published entry says the method pools the models (Unordered).
func sameValue(s setting.Setting, e Entry) bool {
	if !e.Unordered {
		return s.Value.Same(e.Value)
	}
	a := append([]string(nil), s.Value.Items()...)
	var b []string
	for _, x := range strings.Split(e.Value, ",") {
		if x = strings.TrimSpace(x); x != "" {
			b = append(b, x)
		}
	}
	sort.Strings(a)
	sort.Strings(b)
	return strings.Join(a, ",") == strings.Join(b, ",")
}

// paramTolerance is how far a served model's parameter count may lie from
// the published one's and still be the same size (quantization and
// counting conventions differ by a few percent).
const paramTolerance = 0.10

// notTheModels holds the models a run served under the published names
// against what the published configuration says they were: a closed API
// model is never the local model of its name; open weights must match in
// parameter count (and family, where both say). A published model the
// configuration says nothing of cannot be shown to be the same.
func notTheModels(s setting.Setting, e Entry, served map[string]localmodels.ModelInfo) []string {
	facts := map[string]PublishedModel{}
	for _, pm := range e.Models {
		facts[pm.Name] = pm
	}
	var why []string
	for _, name := range s.Value.Items() {
		pm, ok := facts[name]
		mi, isServed := served[localmodels.CanonicalName(name)]
		desc := "not recorded"
		if isServed {
			desc = describeServed(mi)
		}
		switch {
		case !ok:
			why = append(why, fmt.Sprintf("%s: the published configuration does not say what it was, so the served model (%s) cannot be shown to be it", name, desc))
		case pm.Closed:
			why = append(why, fmt.Sprintf("%s is a closed API model: no model served offline is it, whatever its name (served: %s)", name, desc))
		case !isServed || mi.ParameterCount == 0:
			why = append(why, fmt.Sprintf("%s: the server does not say the served model's size, so it cannot be shown to be the published %s", name, describePublished(pm)))
		case math.Abs(float64(mi.ParameterCount)-float64(pm.Parameters)) > paramTolerance*float64(pm.Parameters):
			why = append(why, fmt.Sprintf("%s: the served model has %s parameters, the published %s", name, humanCount(mi.ParameterCount), describePublished(pm)))
		case pm.Family != "" && mi.Family != "" && !strings.EqualFold(pm.Family, mi.Family):
			why = append(why, fmt.Sprintf("%s: the served model is of family %s, the published %s", name, mi.Family, describePublished(pm)))
		}
	}
	return why
}

func describeServed(mi localmodels.ModelInfo) string {
	var parts []string
	if mi.Family != "" {
		parts = append(parts, "family "+mi.Family)
	}
	if mi.ParameterCount > 0 {
		parts = append(parts, humanCount(mi.ParameterCount)+" parameters")
	}
	if mi.Tiny {
		parts = append(parts, "a toy-sized model")
	}
	if mi.Digest != "" {
		parts = append(parts, "digest "+localmodels.ShortDigest(mi.Digest))
	}
	return strings.Join(parts, ", ")
}

func describePublished(pm PublishedModel) string {
	s := humanCount(pm.Parameters) + " parameters"
	if pm.Family != "" {
		s = pm.Family + ", " + s
	}
	return s
}

// humanCount writes a count with thousands separators.
func humanCount(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// sameFile reports whether a path setting names a file whose hash (as the
// run's manifest recorded it) is the published one's (Entry.SHA256).
func sameFile(s setting.Setting, e Entry, ds map[string]rundir.DatasetInfo) bool {
	if e.SHA256 == "" || !s.IsPath() || s.Value.Empty() {
		return false
	}
	for _, d := range ds {
		if d.Path == s.Value.String() && d.SHA256 == e.SHA256 {
			return true
		}
	}
	return false
}

// loadPublished reads reference/name.yaml.
func loadPublished(name string) (*Published, error) {
	b, err := referenceFS.ReadFile("reference/" + name)
	if err != nil {
		return nil, err
	}
	var p Published
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	dec.KnownFields(true)
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("reference %s: %w", name, err)
	}
	return &p, nil
}

// uncovered lists the settings a published configuration does not name
// among those a table is compared on, and the names it gives that are no
// setting of the suite or the engine.
func (p *Published) uncovered(settings setting.List) (missing, unknown []string) {
	known := map[string]bool{}
	for _, s := range settings {
		known[s.Name] = true
		if _, ok := p.Settings[s.Name]; compared(s) && !ok {
			missing = append(missing, s.Name)
		}
	}
	for k := range p.Settings {
		if !known[k] {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	return missing, unknown
}
