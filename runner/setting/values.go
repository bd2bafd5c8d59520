package setting

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Value is a setting's value, bound to a config field: a flag value
// (pflag.Value) in flag syntax, and its JSON form in the manifest.
type Value interface {
	String() string
	Set(string) error
	Type() string
	MarshalJSON() ([]byte, error)
	UnmarshalJSON([]byte) error
	// Same reports whether the value equals v in flag syntax (so "1" and
	// "1.0" are the same temperature).
	Same(v string) bool
	// Empty reports a zero value (nothing given).
	Empty() bool
	// Items are the value's parts: a list's elements, a string itself.
	Items() []string
	// Choices are the values allowed (nil: any the type parses).
	Choices() []string
	// Reset makes the next Set replace a list rather than add to it.
	Reset()
}

// scalar is a one-value setting of type T.
type scalar[T comparable] struct {
	p       *T
	typ     string
	parse   func(string) (T, error)
	format  func(T) string
	choices []string
	// text: the JSON form is the value's text (a duration as "10m0s").
	text bool
}

func (v *scalar[T]) String() string { return v.format(*v.p) }
func (v *scalar[T]) Type() string   { return v.typ }
func (v *scalar[T]) Set(s string) error {
	x, err := v.parse(strings.TrimSpace(s))
	if err != nil {
		return err
	}
	*v.p = x
	return nil
}
func (v *scalar[T]) MarshalJSON() ([]byte, error) {
	if v.text {
		return json.Marshal(v.format(*v.p))
	}
	return json.Marshal(*v.p)
}
func (v *scalar[T]) UnmarshalJSON(b []byte) error {
	if v.text {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		return v.Set(s)
	}
	var x T
	if err := json.Unmarshal(b, &x); err != nil {
		return err
	}
	if v.choices != nil {
		if err := oneOf(v.format(x), v.choices); err != nil {
			return err
		}
	}
	*v.p = x
	return nil
}
func (v *scalar[T]) Same(s string) bool {
	x, err := v.parse(strings.TrimSpace(s))
	return err == nil && v.format(x) == v.format(*v.p)
}
func (v *scalar[T]) Empty() bool {
	var zero T
	return *v.p == zero
}
func (v *scalar[T]) Items() []string {
	if v.Empty() {
		return nil
	}
	return []string{v.String()}
}
func (v *scalar[T]) Choices() []string { return v.choices }
func (v *scalar[T]) Reset()            {}

func oneOf(s string, allowed []string) error {
	if slices.Contains(allowed, s) {
		return nil
	}
	return fmt.Errorf("%q: want %s", s, orList(allowed))
}

// orList is "a, b or c".
func orList(xs []string) string {
	if len(xs) < 2 {
		return strings.Join(xs, "")
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " or " + xs[len(xs)-1]
}

func formatFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

func parseFloat(s string) (float64, error) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	return f, nil
}

func parseInt(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a whole number", s)
	}
	return n, nil
}

// Int declares a whole-number setting.
func Int(name string, p *int, help string) Setting {
	return Setting{Name: name, Help: help, Value: &scalar[int]{p: p, typ: "int", parse: parseInt, format: strconv.Itoa}}
}

// Uint64 declares a non-negative whole-number setting.
func Uint64(name string, p *uint64, help string) Setting {
	return Setting{Name: name, Help: help, Value: &scalar[uint64]{p: p, typ: "uint64",
		parse: func(s string) (uint64, error) {
			n, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				return 0, fmt.Errorf("%q is not a whole number ≥ 0", s)
			}
			return n, nil
		}, format: func(n uint64) string { return strconv.FormatUint(n, 10) }}}
}

// Float declares a number setting.
func Float(name string, p *float64, help string) Setting {
	return Setting{Name: name, Help: help, Value: &scalar[float64]{p: p, typ: "float64", parse: parseFloat, format: formatFloat}}
}

// String declares a free-text setting (a name, a path).
func String(name string, p *string, help string) Setting {
	return Setting{Name: name, Help: help, Value: &scalar[string]{p: p, typ: "string",
		parse: func(s string) (string, error) { return s, nil }, format: func(s string) string { return s }}}
}

// Choice declares a setting that takes one of a few words.
func Choice(name string, p *string, help string, choices ...string) Setting {
	return Setting{Name: name, Help: help, Value: &scalar[string]{p: p, typ: "string", choices: choices,
		parse: func(s string) (string, error) { return s, oneOf(s, choices) }, format: func(s string) string { return s }}}
}

// Bool declares an on/off setting (--name alone turns it on).
func Bool(name string, p *bool, help string) Setting {
	return Setting{Name: name, Help: help, Value: &scalar[bool]{p: p, typ: "bool",
		parse: func(s string) (bool, error) {
			b, err := strconv.ParseBool(s)
			if err != nil {
				return false, fmt.Errorf("%q: want true or false", s)
			}
			return b, nil
		}, format: strconv.FormatBool}}
}

// Duration declares a time span ("90s", "10m").
func Duration(name string, p *time.Duration, help string) Setting {
	return Setting{Name: name, Help: help, Value: &scalar[time.Duration]{p: p, typ: "duration", text: true,
		parse: func(s string) (time.Duration, error) {
			d, err := time.ParseDuration(s)
			if err != nil {
				return 0, fmt.Errorf("%q is not a duration (90s, 10m)", s)
			}
			return d, nil
		}, format: func(d time.Duration) string { return d.String() }}}
}

// optional is a number that may be left unset ("none": not sent, the
// server's or model's own default).
type optional struct {
	p    **float64
	none string
}

func (v *optional) String() string {
	if *v.p == nil {
		return v.none
	}
	return formatFloat(**v.p)
}
func (v *optional) Type() string { return "string" }
func (v *optional) parse(s string) (*float64, error) {
	s = strings.TrimSpace(s)
	if s == v.none || s == "" {
		return nil, nil
	}
	f, err := parseFloat(s)
	if err != nil {
		return nil, fmt.Errorf("%q: want a number, or %s", s, v.none)
	}
	return &f, nil
}
func (v *optional) Set(s string) error {
	x, err := v.parse(s)
	if err == nil {
		*v.p = x
	}
	return err
}
func (v *optional) MarshalJSON() ([]byte, error) { return json.Marshal(*v.p) }
func (v *optional) UnmarshalJSON(b []byte) error {
	var x *float64
	if err := json.Unmarshal(b, &x); err != nil {
		return err
	}
	*v.p = x
	return nil
}
func (v *optional) Same(s string) bool {
	x, err := v.parse(s)
	if err != nil {
		return false
	}
	return (x == nil) == (*v.p == nil) && (x == nil || *x == **v.p)
}
func (v *optional) Empty() bool       { return *v.p == nil }
func (v *optional) Items() []string   { return nil }
func (v *optional) Choices() []string { return nil }
func (v *optional) Reset()            {}

// OptFloat declares a number that may be left unset: the word none (not
// sent: the model's or server's own default).
func OptFloat(name string, p **float64, help, none string) Setting {
	return Setting{Name: name, Help: help, Value: &optional{p: p, none: none}}
}

// list is a comma-separated list of T; given again on one command line,
// it adds to the list given before.
type list[T any] struct {
	p       *[]T
	typ     string
	parse   func(string) (T, error)
	format  func(T) string
	choices []string
	added   bool
}

func (v *list[T]) String() string {
	parts := make([]string, len(*v.p))
	for i, x := range *v.p {
		parts[i] = v.format(x)
	}
	return strings.Join(parts, ",")
}
func (v *list[T]) Type() string { return v.typ }
func (v *list[T]) parseAll(s string) ([]T, error) {
	var out []T
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		x, err := v.parse(part)
		if err != nil {
			return nil, err
		}
		out = append(out, x)
	}
	return out, nil
}
func (v *list[T]) Set(s string) error {
	xs, err := v.parseAll(s)
	if err != nil {
		return err
	}
	if v.added {
		*v.p = append(*v.p, xs...)
	} else {
		*v.p = xs
	}
	v.added = true
	return nil
}
func (v *list[T]) MarshalJSON() ([]byte, error) {
	if len(*v.p) == 0 {
		return []byte("[]"), nil
	}
	return json.Marshal(*v.p)
}
func (v *list[T]) UnmarshalJSON(b []byte) error {
	var xs []T
	if err := json.Unmarshal(b, &xs); err != nil {
		return err
	}
	if len(xs) == 0 {
		xs = nil
	}
	if v.choices != nil {
		for _, x := range xs {
			if err := oneOf(v.format(x), v.choices); err != nil {
				return err
			}
		}
	}
	*v.p = xs
	return nil
}
func (v *list[T]) Same(s string) bool {
	xs, err := v.parseAll(s)
	if err != nil || len(xs) != len(*v.p) {
		return false
	}
	for i, x := range xs {
		if v.format(x) != v.format((*v.p)[i]) {
			return false
		}
	}
	return true
}
func (v *list[T]) Empty() bool { return len(*v.p) == 0 }
func (v *list[T]) Items() []string {
	out := make([]string, len(*v.p))
	for i, x := range *v.p {
		out[i] = v.format(x)
	}
	return out
}
func (v *list[T]) Choices() []string { return v.choices }
func (v *list[T]) Reset()            { v.added = false }

// Strings declares a comma-separated list of words.
func Strings(name string, p *[]string, help string) Setting {
	return Setting{Name: name, Help: help, Value: &list[string]{p: p, typ: "stringSlice",
		parse: func(s string) (string, error) { return s, nil }, format: func(s string) string { return s }}}
}

// Choices declares a comma-separated list of words, each one of choices.
func Choices(name string, p *[]string, help string, choices ...string) Setting {
	return Setting{Name: name, Help: help, Value: &list[string]{p: p, typ: "stringSlice", choices: choices,
		parse: func(s string) (string, error) { return s, oneOf(s, choices) }, format: func(s string) string { return s }}}
}

// Floats declares a comma-separated list of numbers.
func Floats(name string, p *[]float64, help string) Setting {
	return Setting{Name: name, Help: help, Value: &list[float64]{p: p, typ: "float64Slice", parse: parseFloat, format: formatFloat}}
}

// pairs is a map given as repeated KEY=VALUE.
type pairs struct {
	p     *map[string]string
	added bool
}

func (v *pairs) String() string {
	keys := make([]string, 0, len(*v.p))
	for k := range *v.p {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + (*v.p)[k]
	}
	return strings.Join(parts, ",")
}
func (v *pairs) Type() string { return "stringArray" }
func (v *pairs) parse(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		if strings.TrimSpace(kv) == "" {
			continue
		}
		k, x, ok := strings.Cut(kv, "=")
		k, x = strings.TrimSpace(k), strings.TrimSpace(x)
		if !ok || k == "" || x == "" {
			return nil, fmt.Errorf("%q: want KEY=VALUE", kv)
		}
		out[k] = x
	}
	return out, nil
}
func (v *pairs) Set(s string) error {
	m, err := v.parse(s)
	if err != nil {
		return err
	}
	if !v.added || *v.p == nil {
		*v.p = map[string]string{}
	}
	for k, x := range m {
		(*v.p)[k] = x
	}
	if len(*v.p) == 0 {
		*v.p = nil
	}
	v.added = true
	return nil
}
func (v *pairs) MarshalJSON() ([]byte, error) {
	if len(*v.p) == 0 {
		return []byte("{}"), nil
	}
	return json.Marshal(*v.p)
}
func (v *pairs) UnmarshalJSON(b []byte) error {
	var m map[string]string
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	if len(m) == 0 {
		m = nil
	}
	*v.p = m
	return nil
}
func (v *pairs) Same(s string) bool {
	m, err := v.parse(s)
	if err != nil || len(m) != len(*v.p) {
		return false
	}
	for k, x := range m {
		if (*v.p)[k] != x {
			return false
		}
	}
	return true
}
func (v *pairs) Empty() bool       { return len(*v.p) == 0 }
func (v *pairs) Items() []string   { return nil }
func (v *pairs) Choices() []string { return nil }
func (v *pairs) Reset()            { v.added = false }

// Pairs declares a map given as KEY=VALUE, repeated (or comma-separated).
func Pairs(name string, p *map[string]string, help string) Setting {
	return Setting{Name: name, Help: help, Value: &pairs{p: p}}
}

// groups is a list of comma-separated groups, one per use of the flag;
// groups are separated by ";" in the value's text.
type groups struct {
	p     *[][]string
	added bool
}

func (v *groups) String() string {
	parts := make([]string, len(*v.p))
	for i, g := range *v.p {
		parts[i] = strings.Join(g, ",")
	}
	return strings.Join(parts, ";")
}
func (v *groups) Type() string { return "stringArray" }
func (v *groups) parse(s string) [][]string {
	var out [][]string
	for _, g := range strings.Split(s, ";") {
		var members []string
		for _, m := range strings.Split(g, ",") {
			if m = strings.TrimSpace(m); m != "" {
				members = append(members, m)
			}
		}
		if len(members) > 0 {
			out = append(out, members)
		}
	}
	return out
}
func (v *groups) Set(s string) error {
	gs := v.parse(s)
	if v.added {
		*v.p = append(*v.p, gs...)
	} else {
		*v.p = gs
	}
	v.added = true
	return nil
}
func (v *groups) MarshalJSON() ([]byte, error) {
	if len(*v.p) == 0 {
		return []byte("[]"), nil
	}
	return json.Marshal(*v.p)
}
func (v *groups) UnmarshalJSON(b []byte) error {
	var gs [][]string
	if err := json.Unmarshal(b, &gs); err != nil {
		return err
	}
	if len(gs) == 0 {
		gs = nil
	}
	*v.p = gs
	return nil
}
func (v *groups) Same(s string) bool {
	gs := v.parse(s)
	return (&groups{p: &gs}).String() == v.String()
}
func (v *groups) Empty() bool       { return len(*v.p) == 0 }
func (v *groups) Items() []string   { return nil }
func (v *groups) Choices() []string { return nil }
func (v *groups) Reset()            { v.added = false }

// Groups declares a list of groups of words: each use of the flag gives
// one comma-separated group (in a value's text, groups are separated by
// ";").
func Groups(name string, p *[][]string, help string) Setting {
	return Setting{Name: name, Help: help, Value: &groups{p: p}}
}

// record is a value kept in the config's JSON but set by no flag: what a
// command worked out (a rule set it loaded or optimised).
type record[T any] struct{ p *T }

func (v *record[T]) String() string {
	b, _ := json.Marshal(*v.p)
	return string(b)
}
func (v *record[T]) Type() string                 { return "json" }
func (v *record[T]) Set(s string) error           { return json.Unmarshal([]byte(s), v.p) }
func (v *record[T]) MarshalJSON() ([]byte, error) { return json.Marshal(*v.p) }
func (v *record[T]) UnmarshalJSON(b []byte) error { return json.Unmarshal(b, v.p) }
func (v *record[T]) Same(s string) bool           { return s == v.String() }
func (v *record[T]) Empty() bool                  { return v.String() == "null" }
func (v *record[T]) Items() []string              { return nil }
func (v *record[T]) Choices() []string            { return nil }
func (v *record[T]) Reset()                       {}

// Record declares a value a command works out rather than a flag sets (a
// rule set): it is in the config's JSON and the resume check, but no
// command line or run file names it.
func Record[T any](name string, p *T, help string) Setting {
	return Setting{Name: name, Help: help, Value: &record[T]{p: p}, internal: true}
}
