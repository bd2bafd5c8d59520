package runner

import (
	"fmt"
	"strings"

	"halu/runner/setting"
)

// Protocols. A run under ProtocolPaper (the default) follows the paper, and
// the authors' code where the paper is silent: their defaults, sampling,
// parsing, exclusions and scales. ProtocolHalu switches on halu's
// improvements (more samples, structured judges, stricter filters). Either
// way, every setting that differs from the paper's is a Departure, named in
// the manifest, the summary and the report. Which settings a protocol
// fixes, and to what, is part of each setting's declaration
// (setting.Setting.Paper, Halu).
const (
	ProtocolPaper = setting.ProtocolPaper
	ProtocolHalu  = setting.ProtocolHalu
)

// Departure is one setting of a run that differs from the paper's
// protocol; Assumption a value halu chose where the paper is silent.
type (
	Departure  = setting.Departure
	Assumption = setting.Assumption
)

// ApplyProtocol sets every setting of cfg not given (given reports by flag
// name) to its value under cfg's protocol.
func ApplyProtocol(cfg setting.Config, given func(flag string) bool) error {
	return cfg.Settings().ApplyProtocol(func(s setting.Setting) bool { return given(s.Name) })
}

// AssumptionNote lists the values halu chose where the paper is silent.
func AssumptionNote(as []Assumption) string {
	parts := make([]string, len(as))
	for i, a := range as {
		parts[i] = a.String()
	}
	return "values the paper and the authors' code do not record, chosen by halu: " + strings.Join(parts, "; ")
}

// DepartureNote says which settings of a run depart from the paper's
// protocol. Whether published numbers may be read beside the run is more
// than this: the report proves it setting by setting against what each
// published table was made with.
func DepartureNote(protocol string, deps []Departure) string {
	if len(deps) == 0 {
		return fmt.Sprintf("protocol %s: no setting departs from the paper's protocol (whether a published table is comparable also depends on its data, judges and serving settings: see the report)", protocol)
	}
	parts := make([]string, len(deps))
	for i, d := range deps {
		parts[i] = d.String()
	}
	return fmt.Sprintf("protocol %s: %d settings depart from the paper's protocol — %s; published numbers are not comparable with this run",
		protocol, len(deps), strings.Join(parts, ", "))
}
