package summary

import (
	"fmt"
	"sort"
	"strings"

	"halu/runner/rundir"
)

// Measure says what the summary's headline figures rest on (its other
// figures when it marks none headline) and which parts of the run measured
// nothing: the whole run when no headline figure rests on a scored unit,
// and each stage whose judge replies were all unread (every judgement of
// it unscored, none read from a repair turn either). A run that finished
// every item can still have measured nothing; the command that made it
// says so and exits with its own status instead of reporting a
// measurement.
func Measure(sum *Summary, recs []rundir.Record) rundir.Measured {
	stages := StageReplies{}
	for i := range recs {
		stages.Add(&recs[i])
	}
	return MeasureReplies(sum, stages)
}

// StageReplies are, per judging stage, the judge replies records hold
// (repair turns too), those read, and the judgements left unscored: what
// Measure reads of records, gathered one record at a time (Add).
type StageReplies map[string]*StageReply

// StageReply is one stage's count (StageReplies).
type StageReply struct{ Replies, Read, Unscored int }

// Add counts r's judge replies and unscored judgements.
func (st StageReplies) Add(r *rundir.Record) {
	at := func(name string) *StageReply {
		if st[name] == nil {
			st[name] = &StageReply{}
		}
		return st[name]
	}
	for _, c := range r.Calls {
		if c.Kind != "judge" && c.Kind != "repair" {
			continue
		}
		s := at(c.Stage)
		s.Replies++
		if c.Parsed != "" {
			s.Read++
		}
	}
	for _, f := range r.Failures {
		at(f.Stage).Unscored++
	}
}

// MeasureReplies is Measure with the records' judge replies counted
// (StageReplies).
func MeasureReplies(sum *Summary, stages StageReplies) rundir.Measured {
	var m rundir.Measured
	figs := headline(sum.Figures)
	for _, f := range figs {
		m.Figures++
		if f.Measured() {
			m.Scored++
		}
	}
	switch {
	case sum.Nothing != "":
		m.Nothing = append(m.Nothing, sum.Nothing)
	case m.None():
		unscored := 0
		for _, f := range figs {
			unscored += f.Unscored
		}
		why := "no unit was scored"
		if unscored > 0 {
			why = fmt.Sprintf("%d units were left unscored and none was scored", unscored)
		}
		m.Nothing = append(m.Nothing, fmt.Sprintf("none of the run's %d headline figures rests on a scored unit (%s): every one is \"–\"", m.Figures, why))
	default:
		// A headline figure whose every unit went unscored measured
		// nothing (one with no unit at all had nothing to measure): said
		// per model and group, its figures named.
		type part struct {
			name     string
			metrics  []string
			unscored int
		}
		var parts []*part
		at := map[string]*part{}
		for _, f := range figs {
			if f.Measured() || f.Unscored == 0 {
				continue
			}
			name := strings.TrimSpace(f.Model + " " + f.Group)
			p := at[name]
			if p == nil {
				p = &part{name: name}
				at[name] = p
				parts = append(parts, p)
			}
			p.metrics = append(p.metrics, f.Metric)
			p.unscored = max(p.unscored, f.Unscored)
		}
		for _, p := range parts {
			m.Nothing = append(m.Nothing, fmt.Sprintf("%s: %s rest on no scored unit (%d unscored)", p.name, strings.Join(p.metrics, ", "), p.unscored))
		}
	}
	names := make([]string, 0, len(stages))
	for n := range stages {
		names = append(names, n)
	}
	sort.Strings(names)
	stageNothing := false
	for _, n := range names {
		s := stages[n]
		if s.Replies > 0 && s.Read == 0 && s.Unscored > 0 {
			m.Nothing = append(m.Nothing, fmt.Sprintf("stage %s read none of its %d judge replies (%d judgements unscored)", n, s.Replies, s.Unscored))
			stageNothing = true
		}
	}
	if stageNothing {
		m.Fix = FixUnread
	}
	return m
}

// FixUnread is what to do about judge replies that do not read, said once
// after the parts of a run that measured nothing for that reason.
const FixUnread = "the raw replies are in the records; a judge that cannot write the reply its prompt asks for may read with --judge-format json (where the suite has it) or be a larger model"

// headline are the figures a run is judged by: those marked headline, or
// every figure when the suite marks none.
func headline(figs []Figure) []Figure {
	var out []Figure
	for _, f := range figs {
		if f.Headline {
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		return figs
	}
	return out
}
