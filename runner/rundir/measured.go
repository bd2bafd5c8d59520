package rundir

import (
	"fmt"
	"strings"
)

// Measured is what a run's headline figures rest on, booked when a session
// ends: a run can finish every item and still measure nothing (every judge
// reply unread, every item skipped), and its status says which it did.
type Measured struct {
	// Figures is how many headline figures the run's summary holds, and
	// Scored how many of them rest on at least one scored unit.
	Figures int `json:"figures"`
	Scored  int `json:"scored"`
	// Nothing names each part of the run that measured nothing — the
	// whole run, or a stage whose every judgement went unscored — in a
	// sentence that says why and what fixes it.
	Nothing []string `json:"nothing,omitempty"`
	// Fix says what to do about the parts in Nothing, when one thing
	// fixes them all.
	Fix string `json:"fix,omitempty"`
}

// Closing is the one line a command ends with when the run measured
// nothing in whole or in part ("" when it measured what it set out to).
func (m *Measured) Closing() string {
	if m == nil || len(m.Nothing) == 0 {
		return ""
	}
	what := "part of the run measured nothing"
	if m.None() {
		what = "the run measured nothing"
	}
	line := what + ": " + strings.Join(m.Nothing, "; ")
	if m.Fix != "" {
		line += " — " + m.Fix
	}
	return line
}

// Whole reports whether every headline figure rests on a scored unit and
// no part of the run measured nothing.
func (m Measured) Whole() bool { return m.Scored == m.Figures && len(m.Nothing) == 0 }

// None reports whether the run measured nothing at all.
func (m Measured) None() bool { return m.Figures > 0 && m.Scored == 0 }

// StatusText is the run's status as a reader should see it: a complete
// run says what it measured when that is not everything ("complete,
// measured nothing", "complete, 3 of 8 headline figures measured").
func (m *Manifest) StatusText() string {
	if m.Status != "complete" || m.Measured == nil || m.Measured.Whole() {
		return m.Status
	}
	ms := m.Measured
	switch {
	case ms.None():
		return "complete, measured nothing"
	case ms.Scored < ms.Figures:
		return fmt.Sprintf("complete, %d of %d headline figures measured", ms.Scored, ms.Figures)
	case len(ms.Nothing) == 1:
		return "complete, one part measured nothing"
	}
	return fmt.Sprintf("complete, %d parts measured nothing", len(ms.Nothing))
}
