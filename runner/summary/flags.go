package summary

import (
	"halu/localmodels"
	"halu/runner/rundir"
)

// Flags are what a report's sample browser filters a record by. The engine
// sets Unscored (a judgement never read) and CutShort (a generation stopped
// by its token cap, the time budget or a repetition loop) from the record
// itself; a suite that knows more says so through its Flag.
type Flags struct {
	// Hallucinated: a unit of the record was judged hallucinated, in the
	// suite's own sense (HIC-Bench's DH, FaithQA's CS < 10, …).
	Hallucinated bool `json:"hallucinated"`
	// Disagree: the judges of one unit gave different verdicts.
	Disagree bool `json:"judges_disagree"`
	// Refused: the model declined to answer.
	Refused  bool `json:"refused"`
	Unscored bool `json:"unscored"`
	CutShort bool `json:"cut_short"`
	// Labelled: people labelled the record's unit (judges validate);
	// AgainstPeople: a judge's verdict differs from their label — the
	// disagreements behind a judge's κ, listed in the sample browser.
	Labelled      bool `json:"labelled,omitempty"`
	AgainstPeople bool `json:"judge_vs_people,omitempty"`
}

// RecordFlags are rec's flags: the suite's (flag, when it flags its
// records) and the engine's own.
func RecordFlags(flag func(rundir.Record) (Flags, error), rec rundir.Record) (Flags, error) {
	var f Flags
	if flag != nil {
		var err error
		if f, err = flag(rec); err != nil {
			return f, err
		}
	}
	f.Unscored = f.Unscored || len(rec.Failures) > 0
	for _, c := range rec.Calls {
		if c.Kind == "chat" && localmodels.CutShort(c.DoneReason) {
			f.CutShort = true
		}
	}
	return f, nil
}
