// Package setting declares settings once. A suite (or the engine) lists its
// settings as a List bound to the fields of its config; from that one
// declaration come the command-line flag, the JSON key of the config in
// the manifest, the run-file key and the HALU_ environment variable (all
// the same name: --max-tokens, max_tokens, max-tokens, HALU_MAX_TOKENS),
// the help line, validation, the value under each protocol, whether a
// resume may change it, and what it is to a published table (a method
// setting, the models under test, a judge, the data). Nothing else keeps
// a list of a suite's settings: commands, resume checks, departures and
// comparability all read the declaration.
package setting

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
)

// Effect says whether a setting changes what a run measures.
type Effect uint8

const (
	// Measures: another value gives other numbers. A resume must keep
	// the run's value, and a published table is compared on it.
	Measures Effect = iota
	// Conduct: the setting changes how a run is carried out (where the
	// server is, how many calls at once, timeouts, the cache), never
	// what it measures; a resume may change it.
	Conduct
)

// Role is what a measuring setting is to a published table.
type Role uint8

const (
	// Method settings decide how the numbers are made: a table is
	// comparable only where they equal the values it was made with.
	Method Role = iota
	// Subject settings choose what a run's rows are — the models under
	// test, the strategies, the knowledge settings — not how each row is
	// measured.
	Subject
	// Instrument settings name the models that measure: judges, critics,
	// verifiers, embedding models. Compared by identity; a run that
	// differs from a table only in these is "same method, other judges".
	Instrument
	// Data settings choose the items: the dataset and the sample drawn
	// from it.
	Data
	// Draw settings choose a random draw (a seed), not a method.
	Draw
	// Beside settings add figures next to the paper's (human labels, an
	// external score to correlate with) without changing them.
	Beside
	// Serving settings say how requests reach the server (the API, the
	// context window, halu's stops of a runaway generation, its repair
	// turns for a judge reply that does not read). They change numbers
	// only through what a run's counts show — prompts that neared the
	// window, content left out to fit it, generations stopped, verdicts
	// read from a repair turn — and comparability checks those counts
	// instead of the values.
	Serving
)

func (r Role) String() string {
	return [...]string{"method", "subject", "instrument", "data", "draw", "beside", "serving"}[r]
}

// Setting is one declared setting. Make one with a constructor (Int,
// Choice, Strings, …) and refine it with its methods, which return the
// changed setting:
//
//	setting.Int("answers", &c.Answers, "answers per question").Paper("10").Min(1)
type Setting struct {
	// Name is the flag's name; the JSON and run-file keys are derived
	// from it (Key).
	Name   string
	Help   string
	Value  Value
	Effect Effect
	Role   Role
	// protocols are the setting's values (in flag syntax) under each
	// protocol that fixes it; the paper's also makes its Departures.
	protocols map[string]string
	// applies, when set, says whether the setting bears on the run at
	// all (DHP's answers only when a DHP strategy runs); a setting that
	// does not apply is never a departure or a difference.
	applies func() bool
	// assumed says why halu chose the value where the paper and the
	// authors' code are silent.
	assumed string
	// deprecated are older names still read, each with a deprecation line.
	deprecated []string
	// path marks a setting that names a file or directory (doctor checks
	// it exists).
	path bool
	// model marks a setting that names models (doctor checks the server
	// has them).
	model bool
	// required: an empty value is a usage error.
	required bool
	check    func() error
	// internal: set by a command, never by a flag (Record).
	internal bool
	// unset is what an empty value means, in words ("the bundled
	// sample").
	unset string
}

// Unset says what an empty value means, for whoever reads a setting's
// value (a report's list of differences).
func (s Setting) Unset(meaning string) Setting { s.unset = meaning; return s }

// Display is the value as a reader should see it: an empty value in the
// words Unset gave.
func (s Setting) Display() string {
	if s.unset != "" && s.Value.Empty() {
		return s.unset
	}
	return s.Value.String()
}

// Internal reports a setting no flag sets (Record).
func (s Setting) Internal() bool { return s.internal }

// Key is the setting's JSON and run-file key: its name with underscores.
func (s Setting) Key() string { return strings.ReplaceAll(s.Name, "-", "_") }

// EnvName is the environment variable that sets a flag of any halu
// command: HALU_ and the flag's name in capitals, dashes as underscores
// (--max-tokens: HALU_MAX_TOKENS).
func EnvName(flag string) string {
	return "HALU_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// Paper sets the value under the paper's protocol (the authors' code where
// the paper is silent). A run whose value differs has a departure.
func (s Setting) Paper(v string) Setting { return s.Under(ProtocolPaper, v) }

// Halu sets the value under halu's protocol, where it differs from the
// paper's.
func (s Setting) Halu(v string) Setting { return s.Under(ProtocolHalu, v) }

// Under sets the value under protocol p.
func (s Setting) Under(p, v string) Setting {
	m := map[string]string{}
	for k, x := range s.protocols {
		m[k] = x
	}
	m[p] = v
	s.protocols = m
	return s
}

// ProtocolValue is the setting's value under protocol p, and whether p
// fixes it (halu's protocol keeps the paper's value unless it sets one).
func (s Setting) ProtocolValue(p string) (string, bool) {
	if v, ok := s.protocols[p]; ok {
		return v, true
	}
	v, ok := s.protocols[ProtocolPaper]
	return v, ok
}

// Conducts marks a setting of how a run is carried out (Conduct).
func (s Setting) Conducts() Setting { s.Effect = Conduct; return s }

// As sets the setting's role.
func (s Setting) As(r Role) Setting { s.Role = r; return s }

// When makes the setting bear on a run only when applies says so.
func (s Setting) When(applies func() bool) Setting { s.applies = applies; return s }

// Assumed says why halu chose the default where the paper is silent: the
// value is named beside the protocol in every run.
func (s Setting) Assumed(why string) Setting { s.assumed = why; return s }

// Deprecated keeps older names of the setting, each read with a
// deprecation line.
func (s Setting) Deprecated(names ...string) Setting { s.deprecated = names; return s }

// Path marks a setting naming a file or directory.
func (s Setting) Path() Setting { s.path = true; return s }

// Models marks a setting naming models.
func (s Setting) Models() Setting { s.model = true; return s }

// Min refuses a number below n.
func (s Setting) Min(n float64) Setting {
	v := s.Value
	return s.Check(func() error {
		if f, err := strconv.ParseFloat(v.String(), 64); err == nil && f < n {
			return fmt.Errorf("want at least %g", n)
		}
		return nil
	})
}

// Required makes an empty value a usage error.
func (s Setting) Required() Setting { s.required = true; return s }

// Check adds a validation of the setting's value.
func (s Setting) Check(check func() error) Setting {
	prev := s.check
	s.check = func() error {
		if prev != nil {
			if err := prev(); err != nil {
				return err
			}
		}
		return check()
	}
	return s
}

// Applies reports whether the setting bears on the run.
func (s Setting) Applies() bool { return s.applies == nil || s.applies() }

// AssumedWhy is why halu chose the value ("" when the paper fixes it or
// the setting is not a chosen one).
func (s Setting) AssumedWhy() string { return s.assumed }

// IsPath and IsModels report the markers of Path and Models.
func (s Setting) IsPath() bool   { return s.path }
func (s Setting) IsModels() bool { return s.model }

// DeprecatedNames are the setting's older names.
func (s Setting) DeprecatedNames() []string { return s.deprecated }

// Validate checks the setting's current value.
func (s Setting) Validate() error {
	if s.required && s.Value.Empty() {
		return fmt.Errorf("--%s is required", s.Name)
	}
	if s.check != nil {
		if err := s.check(); err != nil {
			return fmt.Errorf("--%s %s: %w", s.Name, s.Value, err)
		}
	}
	return nil
}

// List is a config's settings, in the order they are shown.
type List []Setting

// Config is a config that declares its settings.
type Config interface {
	Settings() List
}

// Lookup finds a setting by name (or an older name).
func (l List) Lookup(name string) (Setting, bool) {
	for _, s := range l {
		if s.Name == name {
			return s, true
		}
		for _, d := range s.deprecated {
			if d == name {
				return s, true
			}
		}
	}
	return Setting{}, false
}

// Validate checks every setting.
func (l List) Validate() error {
	for _, s := range l {
		if err := s.Validate(); err != nil {
			return err
		}
	}
	return nil
}

// Bind adds the settings as flags to fs. Flags already in fs (a setting
// two lists share) are left.
func (l List) Bind(fs *pflag.FlagSet) {
	for _, s := range l {
		if s.internal || fs.Lookup(s.Name) != nil {
			continue
		}
		f := fs.VarPF(s.Value, s.Name, "", s.Help)
		if s.Value.Type() == "bool" {
			f.NoOptDefVal = "true"
		}
		for _, d := range s.deprecated {
			g := fs.VarPF(s.Value, d, "", s.Help)
			g.NoOptDefVal = f.NoOptDefVal
			g.Deprecated = "use --" + s.Name
			g.Hidden = true
		}
	}
}

// Given reports whether fs set the setting (by its name or an older one).
func (s Setting) Given(fs *pflag.FlagSet) bool {
	for _, n := range append([]string{s.Name}, s.deprecated...) {
		if f := fs.Lookup(n); f != nil && f.Changed {
			return true
		}
	}
	return false
}

// Values are the settings' values in flag syntax, by name.
func (l List) Values() map[string]string {
	out := make(map[string]string, len(l))
	for _, s := range l {
		out[s.Name] = s.Value.String()
	}
	return out
}

// MarshalJSON encodes the settings as one JSON object, keys in the
// declared order.
func (l List) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, s := range l {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(s.Key())
		v, err := s.Value.MarshalJSON()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.Name, err)
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// UnmarshalJSON sets the settings from a JSON object as MarshalJSON
// writes it. A key no setting has is an error (an older run format is
// migrated first); a setting the object lacks keeps its value.
func (l List) UnmarshalJSON(b []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	byKey := map[string]Setting{}
	for _, s := range l {
		byKey[s.Key()] = s
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		s, ok := byKey[k]
		if !ok {
			return fmt.Errorf("unknown setting %q", k)
		}
		if err := s.Value.UnmarshalJSON(m[k]); err != nil {
			return fmt.Errorf("setting %q: %w", k, err)
		}
	}
	return nil
}

// Protocols. A run under ProtocolPaper (the default) follows the paper, and
// the authors' code where the paper is silent. ProtocolHalu switches on
// halu's improvements. Either way, every setting that differs from the
// paper's is a Departure.
const (
	ProtocolPaper = "paper"
	ProtocolHalu  = "halu"
)

// Protocol declares a suite's --protocol: choosing one sets every setting
// not given to that protocol's value (ApplyProtocol).
func Protocol(p *string, halu string) Setting {
	return Choice("protocol", p, "paper (the authors' settings) or halu ("+halu+"); settings given override either", ProtocolPaper, ProtocolHalu).Paper(ProtocolPaper)
}

// ProtocolOf is the list's protocol ("" when it declares none).
func (l List) ProtocolOf() string {
	if s, ok := l.Lookup("protocol"); ok {
		return s.Value.String()
	}
	return ""
}

// ApplyProtocol sets every setting on which the protocols differ, and that
// was not given (given reports it), to its value under the list's
// protocol. Settings the protocols agree on keep their values (a rerun
// that switches protocols changes only what the protocols disagree on).
func (l List) ApplyProtocol(given func(Setting) bool) error {
	p := l.ProtocolOf()
	if p == "" {
		return nil
	}
	for _, s := range l {
		if s.Name == "protocol" || given(s) || len(s.protocols) < 2 {
			continue
		}
		if v, ok := s.ProtocolValue(p); ok {
			if err := s.Value.Set(v); err != nil {
				return fmt.Errorf("--%s under protocol %s: %w", s.Name, p, err)
			}
			s.Value.Reset()
		}
	}
	return nil
}

// Departure is one setting of a run that differs from the paper's protocol.
type Departure struct {
	// Setting is the flag that sets it (without dashes).
	Setting string `json:"setting"`
	Value   string `json:"value"`
	Paper   string `json:"paper"`
}

func (d Departure) String() string {
	return fmt.Sprintf("--%s %s (paper: %s)", d.Setting, d.Value, d.Paper)
}

// Departures are the measuring settings that bear on the run and differ
// from their value under the paper's protocol.
func (l List) Departures() []Departure {
	var out []Departure
	for _, s := range l {
		if s.Effect != Measures || s.Name == "protocol" || !s.Applies() {
			continue
		}
		paper, ok := s.protocols[ProtocolPaper]
		if !ok {
			continue
		}
		if v := s.Value.String(); !s.Value.Same(paper) {
			out = append(out, Departure{Setting: s.Name, Value: v, Paper: paper})
		}
	}
	return out
}

// Assumption is a value halu had to choose because neither the paper nor
// the authors' code records it (a sampling temperature, a reply cap). It
// is not a departure — there is nothing to depart from — but it is named
// beside the protocol, so that "no departures" is not read as "every value
// is the authors'".
type Assumption struct {
	Setting string `json:"setting"`
	Value   string `json:"value"`
	// Why says what the paper leaves open.
	Why string `json:"why"`
}

func (a Assumption) String() string {
	return fmt.Sprintf("--%s %s (%s)", a.Setting, a.Value, a.Why)
}

// Assumptions are the values halu chose, of the settings that bear on the
// run.
func (l List) Assumptions() []Assumption {
	var out []Assumption
	for _, s := range l {
		if s.assumed != "" && s.Applies() {
			out = append(out, Assumption{Setting: s.Name, Value: s.Value.String(), Why: s.assumed})
		}
	}
	return out
}

// Models are the models the settings marked Models name, in order.
func (l List) Models() []string {
	var out []string
	for _, s := range l {
		if s.model {
			out = append(out, s.Value.Items()...)
		}
	}
	return out
}

// Paths are the files and directories the settings marked Path name, by
// flag.
func (l List) Paths() map[string]string {
	out := map[string]string{}
	for _, s := range l {
		if s.path && !s.Value.Empty() {
			out["--"+s.Name] = s.Value.String()
		}
	}
	return out
}

// ApplyProtocol sets every setting of cfg on which the protocols differ,
// and that was not given (given reports by flag name), to its value under
// cfg's protocol (List.ApplyProtocol).
func ApplyProtocol(cfg Config, given func(flag string) bool) error {
	return cfg.Settings().ApplyProtocol(func(s Setting) bool { return given(s.Name) })
}
