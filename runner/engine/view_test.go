package engine

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"testing"

	"halu/metrics"
	"halu/runner/rundir"
	"halu/runner/summary"
)

// The engine's part of a summary and the run's books are made from what
// engineView keeps of each record: for the records of a run of every
// suite (testdata/runs-v1) and for records holding each kind of call the
// engine counts, every part made from the views is the part made from
// the whole records. A part that reads something the view leaves out
// fails here.
func TestEngineViewSummarisesAlike(t *testing.T) {
	runs, err := filepath.Glob(filepath.Join("..", "..", "testdata", "runs-v1", "*", rundir.ManifestFile))
	if err != nil || len(runs) < 6 {
		t.Fatalf("runs-v1: %v, %v", runs, err)
	}
	sets := map[string][]rundir.Record{"calls of every kind": everyKindOfCall()}
	for _, mp := range runs {
		_, recs, err := ReadRun(filepath.Dir(mp))
		if err != nil {
			t.Fatal(err)
		}
		sets[filepath.Base(filepath.Dir(mp))] = recs
	}
	for name, recs := range sets {
		var view []rundir.Record
		for _, r := range recs {
			if v, ok := engineView(r); ok {
				view = append(view, v)
			}
		}
		if name == "calls of every kind" && len(view) != 2 {
			t.Errorf("%s: the view keeps %d records, want 2 (a record of generations alone is left out)", name, len(view))
		}
		parts := func(recs []rundir.Record) map[string]any {
			card, notes := summary.JudgeCard(recs, map[string]string{"j1": "fam"}, nil)
			lt, ok := summary.LogprobTable(recs)
			var c rundir.Counts
			tallyRecords(&c, recs)
			sum := &summary.Summary{Metrics: map[string]float64{}}
			beside := summary.AddBeside(sum, func(*rundir.Records) (*summary.Summary, error) { return &summary.Summary{}, nil }, nil, nil, recs, "halu")
			return map[string]any{
				"card": card, "card notes": notes, "logprobs": lt, "logprobs asked": ok,
				"reading": summary.ReadingNotes(recs, "halu"), "thinking": summary.ThinkingNotes(recs), "reasked": summary.ReaskedNote(recs),
				"measure": summary.Measure(&summary.Summary{}, recs), "books": c, "beside": beside, "beside notes": sum.Notes,
			}
		}
		whole, viewed := parts(recs), parts(view)
		for k := range whole {
			a, _ := json.Marshal(whole[k])
			b, _ := json.Marshal(viewed[k])
			if !reflect.DeepEqual(whole[k], viewed[k]) && string(a) != string(b) {
				t.Errorf("%s: %s from the views differs:\n%s\nwhole:\n%s", name, k, b, a)
			}
		}
	}
}

// everyKindOfCall are records holding each kind of call the engine's part
// counts, and generations it does not.
func everyKindOfCall() []rundir.Record {
	conf := &metrics.TokenConfidence{Tokens: 3, MeanLogprob: -0.2, MinLogprob: -0.5}
	return []rundir.Record{
		{Item: "a", Calls: []rundir.CallLog{
			{Stage: "generate", Kind: "chat", Model: "g"},
			{Stage: "generate", Kind: "chat", Model: "g", Logprobs: 5, Confidence: conf, EvalTokens: 4, DoneReason: "stop"},
			{Stage: "generate", Kind: "chat", Model: "t", NoThink: true},
			{Stage: "generate", Kind: "chat", Model: "g", OverContext: 2048},
			{Stage: "generate", Kind: "chat", Model: "g", Reasked: &rundir.Reasked{Identical: 1}},
			{Stage: "embed", Kind: "embed", Model: "e", Reasked: &rundir.Reasked{Texts: 3, Identical: 2}},
		}},
		{Item: "b", Calls: []rundir.CallLog{
			{Stage: "judge", Kind: "judge", Model: "j1", Parsed: `{"v":1}`, PromptTokens: 10, EvalTokens: 2},
			{Stage: "judge", Kind: "repair", Model: "j1", Counted: true},
		},
			Failures: []rundir.Failure{{Stage: "judge", Model: "j1", Reason: "two values", TwoValues: true}},
			Readings: []rundir.Reading{{Stage: "judge", Model: "j1", How: "disagree"}, {Stage: "judge", Model: "j1", How: "fallback"}, {Stage: "judge", Model: "j1", How: "held"}},
			Verdicts: []rundir.Verdict{{Stage: "judge", Judge: "j1", Unit: "u1", Subject: "g", Chars: 300, Values: map[string]float64{"v": 1}}}},
		{Item: "c", Calls: []rundir.CallLog{{Stage: "generate", Kind: "chat", Model: "g", EvalTokens: 9}}},
	}
}

// A suite whose summary reads only some of the records (or none) leaves
// the engine's part whole: the engine reads them itself. One that reads
// them twice has them counted once.
func TestEnginePartWhateverTheSuiteReads(t *testing.T) {
	recs := everyKindOfCall()
	var want rundir.Counts
	tallyRecords(&want, recs)
	for name, read := range map[string]func(*rundir.Records){
		"none": func(*rundir.Records) {},
		"first": func(rs *rundir.Records) {
			for range rs.All() {
				break
			}
		},
		"twice": func(rs *rundir.Records) { rs.Sorted(); rs.Sorted() },
	} {
		s := Suite{Name: "t", Summarize: func(rs *rundir.Records) (*summary.Summary, error) {
			read(rs)
			return &summary.Summary{}, nil
		}}
		sum, _, view, err := summarize(s, &rundir.Manifest{}, rundir.RecordsOf(recs))
		if err != nil {
			t.Fatal(err)
		}
		var got rundir.Counts
		tallyRecords(&got, view)
		if !reflect.DeepEqual(got, want) || sum.JudgeReplies != 2 {
			t.Errorf("%s: books %+v, judge replies %d; want %+v, 2", name, got, sum.JudgeReplies, want)
		}
	}
}
