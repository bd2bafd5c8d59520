package runner

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Protocols. A run under ProtocolPaper (the default) follows the paper, and
// the authors' code where the paper is silent: their defaults, sampling,
// parsing, exclusions and scales. ProtocolHalu switches on halu's
// improvements (more samples, structured judges, stricter filters). Either
// way, every setting that differs from the paper's is a Departure, named in
// the manifest, the summary and the report; published numbers are
// comparable with a run only when it has none.
const (
	ProtocolPaper = "paper"
	ProtocolHalu  = "halu"
)

// CheckProtocol validates a suite config's protocol, taking the paper's
// for a config made before protocols existed.
func CheckProtocol(suite string, p *string) error {
	return CheckChoice(suite, "protocol", p, ProtocolPaper, ProtocolPaper, ProtocolHalu)
}

// CheckChoice validates a setting that takes one of a few values: empty
// (a config made before the setting existed) takes def; anything else
// outside allowed is an error naming the flag.
func CheckChoice(suite, flag string, v *string, def string, allowed ...string) error {
	if *v == "" {
		*v = def
	}
	for _, a := range allowed {
		if *v == a {
			return nil
		}
	}
	return fmt.Errorf("%s: --%s %q (want %s)", suite, flag, *v, strings.Join(allowed, " or "))
}

// ProtocolValues is a suite's config under protocol: the paper's (from
// paper), or the paper's changed by halu for ProtocolHalu; another
// protocol is an error naming the suite's flag.
func ProtocolValues[C any](suite, protocol string, paper func() C, halu func(*C)) (C, error) {
	p := paper()
	switch protocol {
	case ProtocolPaper:
	case ProtocolHalu:
		halu(&p)
	default:
		return p, fmt.Errorf("%s: --protocol %q (want %s or %s)", suite, protocol, ProtocolPaper, ProtocolHalu)
	}
	return p, nil
}

// ApplyDefaults runs each setter of defaults whose flag was not given:
// a protocol's values fill what the user left open.
func ApplyDefaults(given func(flag string) bool, defaults map[string]func()) {
	for flag, set := range defaults {
		if !given(flag) {
			set()
		}
	}
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

// Protocoled is a suite with a paper protocol: it says which protocol its
// defaults followed and which of its settings depart from the paper's.
type Protocoled interface {
	Protocol() string
	Departures() []Departure
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

// Assumed is a suite that names the values it had to choose where the
// paper and the authors' code are silent.
type Assumed interface {
	Assumptions() []Assumption
}

// AssumptionNote lists the values halu chose where the paper is silent.
func AssumptionNote(as []Assumption) string {
	parts := make([]string, len(as))
	for i, a := range as {
		parts[i] = a.String()
	}
	return "values the paper and the authors' code do not record, chosen by halu: " + strings.Join(parts, "; ")
}

// ProtocolSetting ties a suite config's JSON key to the flag that sets it,
// for Departures.
type ProtocolSetting struct {
	Key  string
	Flag string
}

// Departures compares the settings of config cfg with the paper's config,
// key by key (both any value that encodes to a JSON object), and returns
// those that differ, values in their JSON form.
func Departures(paper, cfg any, settings []ProtocolSetting) []Departure {
	p, c := jsonObject(paper), jsonObject(cfg)
	var out []Departure
	for _, s := range settings {
		pv, cv := valueText(p[s.Key]), valueText(c[s.Key])
		if pv != cv {
			out = append(out, Departure{Setting: s.Flag, Value: cv, Paper: pv})
		}
	}
	return out
}

func jsonObject(v any) map[string]json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("protocol: %v", err)) // configs are plain data
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		panic(fmt.Sprintf("protocol: config is not an object: %v", err))
	}
	return m
}

// valueText is a config value as a reader sees it: strings unquoted, an
// absent or null value "none" (not sent: the model's own default).
func valueText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return "none"
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

// ComparabilityNote says whether published numbers may be read beside a
// run with these departures, and if not, which settings prevent it.
func ComparabilityNote(protocol string, deps []Departure) string {
	if len(deps) == 0 {
		return fmt.Sprintf("protocol %s: no setting departs from the paper's protocol; published numbers of the same layout are comparable (other models, same method)", protocol)
	}
	parts := make([]string, len(deps))
	for i, d := range deps {
		parts[i] = d.String()
	}
	return fmt.Sprintf("protocol %s: %d settings depart from the paper's protocol — %s; published numbers are not comparable with this run",
		protocol, len(deps), strings.Join(parts, ", "))
}
