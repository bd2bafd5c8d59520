package summary

import (
	"fmt"
	"strings"

	"halu/runner/setting"
)

// AssumptionNote lists the values halu chose where the paper is silent.
func AssumptionNote(as []setting.Assumption) string {
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
func DepartureNote(protocol string, deps []setting.Departure) string {
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

// MethodNote names the ways a suite's method departs from the paper's
// whatever its settings (Manifest.Methods).
func MethodNote(methods []string) string {
	what := "departures"
	if len(methods) == 1 {
		what = "departure"
	}
	return fmt.Sprintf("method: %d %s from the paper's method that no setting turns off — %s; published numbers are not comparable with this run",
		len(methods), what, strings.Join(methods, "; "))
}
