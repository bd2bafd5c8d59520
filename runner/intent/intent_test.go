package intent

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"halu/localmodels/fakeollama"
	"halu/metrics"
	"halu/runner/engine"
	"halu/runner/engine/enginetest"
	"halu/runner/judging"
	"halu/runner/rundir"
	"halu/runner/setting"
)

func TestParseMapping(t *testing.T) {
	tests := []struct {
		name    string
		reply   string
		clarify bool // allowClarification
		want    []Constraint
		clar    bool
		err     string
	}{
		{name: "inline template lines, analysis before START ignored", reply: `1. Core elements: Subject: explorers. Action: list.
Mandatory: Subject must be European explorers (analysis, not the listing)
START:
Mandatory: Subject must be European explorers
Mandatory: Action must list explorers who circumnavigated the globe
Mandatory: Time must be before the 18th century
Important: Quantity must be exactly three explorers
Important: Qualifiers must exclude explorers born in England or Portugal
Optional: None`, want: []Constraint{
			{"mandatory", "Subject", "Subject must be European explorers"},
			{"mandatory", "Action", "Action must list explorers who circumnavigated the globe"},
			{"mandatory", "Time", "Time must be before the 18th century"},
			{"important", "Quantity", "Quantity must be exactly three explorers"},
			{"important", "Qualifiers", "Qualifiers must exclude explorers born in England or Portugal"},
		}},
		{name: "grouped under markdown headings with bullets and brackets", reply: `Here is my analysis...

**START:**

**Mandatory Constraints:**
- [Subject] must be a poem
- 1. [Action] must compose four stanzas

### Important:
* Quantity should be exactly seven words per line.

Optional (C_O):
- None`, want: []Constraint{
			{"mandatory", "Subject", "[Subject] must be a poem"},
			{"mandatory", "Action", "[Action] must compose four stanzas"},
			{"important", "Quantity", "Quantity should be exactly seven words per line."},
		}},
		{name: "bracketed priority, dash separator, duplicates dropped, unknown component", reply: `START:
[Mandatory] - Location must be England
[Mandatory] - Location must be England.
[Optional] – Style should be festive`, want: []Constraint{
			{"mandatory", "Location", "Location must be England"},
			{"optional", "Other", "Style should be festive"},
		}},
		{name: "the last START wins", reply: "START: (draft)\nMandatory: Subject must be X\nSTART:\nMandatory: Subject must be Y", want: []Constraint{
			{"mandatory", "Subject", "Subject must be Y"},
		}},
		{name: "clarification where content was withheld", clarify: true, reply: "The query mentions three articles but Article 3 is missing. Could you please provide it?\nSTART:\n(none)", clar: true},
		{name: "clarification without START", clarify: true, reply: "Article 2 was not provided; please provide it.", clar: true},
		{name: "clarification not acceptable on a complete query", reply: "Article 2 was not provided; please provide it.", err: `no "START:"`},
		{name: "no START", reply: "Mandatory: Subject must be X", err: `no "START:"`},
		{name: "START with nothing under a priority", reply: "START:\nThe constraints are listed above.", err: "no constraint after"},
		{name: "empty", reply: "", err: `no "START:"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := ParseMapping(tc.reply, tc.clarify)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if m.Clarification != tc.clar || !reflect.DeepEqual(m.Constraints, tc.want) {
				t.Errorf("got %+v (clarification %v)\nwant %+v", m.Constraints, m.Clarification, tc.want)
			}
		})
	}
}

func TestMajorityMapping(t *testing.T) {
	a := &Mapping{Constraints: []Constraint{{"mandatory", "Subject", "Subject must be X"}, {"important", "Quantity", "Quantity must be 3"}}}
	aReordered := &Mapping{Constraints: []Constraint{{"important", "Quantity", "quantity must be 3."}, {"mandatory", "Subject", "Subject  must be X"}}}
	b := &Mapping{Constraints: []Constraint{{"mandatory", "Subject", "Subject must be Y"}}}
	tests := []struct {
		name    string
		samples []*Mapping
		want    int
	}{
		{"majority after a different first sample", []*Mapping{b, a, aReordered}, 1},
		{"tie goes to the earliest", []*Mapping{b, a}, 0},
		{"failed samples abstain", []*Mapping{nil, b, nil}, 1},
		{"none parsed", []*Mapping{nil, nil}, -1},
	}
	for _, tc := range tests {
		if got := MajorityMapping(tc.samples); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

// The hand-computed example: 3 mandatory (2 satisfied), 2 important (1),
// 1 optional (0), under every weight preset of Appendix G.1.
func TestConstraintScoreUnderEveryPreset(t *testing.T) {
	want := map[string]float64{
		"default":  10 * (3*2 + 2*1) / (3*3 + 2*2 + 1*1.0), // 80/14
		"uniform":  10 * 3 / 6.0,                           // 5
		"steep":    10 * (5*2 + 2*1) / (5*3 + 2*2 + 1*1.0), // 6
		"flat":     10 * (2*2 + 1.5) / (2*3 + 1.5*2 + 1),   // 5.5
		"inverted": 10 * (1*2 + 2*1) / (1*3 + 2*2 + 3*1.0), // 4
	}
	lit := map[string]float64{"default": 5.714285714285714, "uniform": 5, "steep": 6, "flat": 5.5, "inverted": 4}
	r := ItemResult{Scored: true}
	for i, sat := range []bool{true, true, false} {
		r.Constraints = append(r.Constraints, ScoredConstraint{Constraint: Constraint{Priority: "mandatory", Text: string(rune('a' + i))}, Satisfied: sat})
	}
	r.Constraints = append(r.Constraints,
		ScoredConstraint{Constraint: Constraint{Priority: "important"}, Satisfied: true},
		ScoredConstraint{Constraint: Constraint{Priority: "important"}, Satisfied: false},
		ScoredConstraint{Constraint: Constraint{Priority: "optional"}, Satisfied: false})
	ratios := Ratios{"mandatory": {2, 3}, "important": {1, 2}, "optional": {0, 1}}
	for _, p := range PresetOrder {
		got, ok := rescore(r, WeightPresets[p])
		if !ok || math.Abs(got-want[p]) > 1e-12 || math.Abs(got-lit[p]) > 1e-12 {
			t.Errorf("%s: verdicts give %v, want %v", p, got, lit[p])
		}
		fromRatios, err := ScoreFromRatios(ratios, WeightPresets[p])
		if err != nil || math.Abs(fromRatios-lit[p]) > 1e-12 {
			t.Errorf("%s: ratios give %v (%v), want %v", p, fromRatios, err, lit[p])
		}
	}
	if got := metrics.PerfectRate([]float64{10, 5.5, 10, 9.99}); got != 0.5 {
		t.Errorf("Perfect rate %v, want 0.5", got)
	}
}

func TestParseRatios(t *testing.T) {
	cs := []Constraint{{Priority: "mandatory"}, {Priority: "mandatory"}, {Priority: "important"}}
	tests := []struct {
		reply string
		want  Ratios
		err   string
	}{
		{"Evaluation...\nSTART:\nMandatory: 2/2\nImportant: 0/1", Ratios{"mandatory": {2, 2}, "important": {0, 1}}, ""},
		{"START:\n- **[Mandatory]**: 1 / 2\n- Important: 1/1\n- Optional: 0/0", Ratios{"mandatory": {1, 2}, "important": {1, 1}, "optional": {0, 0}}, ""},
		{"START:\nMandatory: 2/3\nImportant: 1/1", nil, "there are 2 mandatory"},
		{"START:\nMandatory: 3/2\nImportant: 1/1", nil, "satisfies more"},
		{"START:\nMandatory: 2/2", nil, "no important ratio"},
		{"START:\nMandatory: 2/2\nMandatory: 1/2\nImportant: 1/1", nil, "two different mandatory"},
	}
	for _, tc := range tests {
		got, err := ParseRatios(tc.reply, cs)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: err %v, want %q", tc.reply, err, tc.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: %v %v, want %v", tc.reply, got, err, tc.want)
		}
	}
}

func TestScoreVerdicts(t *testing.T) {
	tests := []struct {
		json string
		want []bool
		err  string
	}{
		{`{"constraint_2": false, "constraint_1": true}`, []bool{true, false}, ""},
		{`{"constraint_1": true}`, nil, "no verdict for constraint 2"},
		{`{"constraint_1": true, "constraint_2": true, "constraint_3": false}`, nil, `verdict "constraint_3": there are 2`},
		{`{"constraint_1": true, "constraint_2": "yes"}`, nil, "cannot unmarshal"},
	}
	for _, tc := range tests {
		var v ScoreVerdicts
		err := judging.DecodeJSON(tc.json, &v)
		var got []bool
		if err == nil {
			got, err = v.Satisfied(2)
		}
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err %v", tc.json, err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %v %v", tc.json, got, err)
		}
	}
	var schema struct {
		Required []string `json:"required"`
	}
	if err := json.Unmarshal([]byte(scoreSchema(3)), &schema); err != nil || len(schema.Required) != 3 || schema.Required[2] != "constraint_3" {
		t.Fatalf("schema: %+v %v", schema, err)
	}
}

func TestCheckCountable(t *testing.T) {
	poem := "**Winter**\nsnow falls soft on quiet hills tonight\nwind sings low through every empty tree\n\nstars burn bright above the sleeping town\nmoon keeps watch while the children dream"
	tests := []struct {
		constraint, response string
		sat                  bool
		rule                 string
	}{
		{"Quantity must be exactly seven words per line", poem, true, "words-per-line"},
		{"Qualifiers: each line must be exactly eight words long", poem, false, "words-per-line"},
		{"Quantity must be four stanzas", poem, false, "stanzas"},
		{"Quantity must have two stanzas", poem, true, "stanzas"},
		{"Each stanza must contain two lines", poem, true, "lines-per-stanza"},
		{"Quantity must be 4 lines", poem, true, "lines"},
		{"The poem must have at least five lines", poem, false, "lines"},
		{"Every line must end with the letter 't'", "a cat\nthe hat sat\nbright light", true, "line-end-letter"},
		{"Every line must end with the letter 'w'", "a cat\nthe cow", false, "line-end-letter"},
		{"Each line should end with the word \"night\"", "in the night\nall night.", true, "line-end-word"},
		{"The story must not use the letter 'e'", "A cat sat on a mat", true, "forbid-letter"},
		{"The story must not use the word \"ocean\"", "The Ocean was calm.", false, "forbid-word"},
		{"The story must not use the word \"ocean\"", "The oceanic calm.", true, "forbid-word"},
		{"The story must include the word \"lantern\"", "He lit the lantern.", true, "require-word"},
		{"The story must include the word \"lantern\"", "He lit the lanterns.", false, "require-word"},
		{"Qualifiers must be at most 5 words", "one two three four five", true, "max-words"},
		{"Qualifiers must be fewer than 5 words", "one two three four five", false, "max-words"},
		{"The answer should be at least ten words", "one two three", false, "min-words"},
		{"The reply must be exactly three words", "one, two - three", true, "exact-words"},
		{"Subject must be European explorers", "anything", false, ""},
	}
	for _, tc := range tests {
		sat, rule, ok := CheckCountable(tc.constraint, tc.response)
		if rule != tc.rule || ok != (tc.rule != "") || (ok && sat != tc.sat) {
			t.Errorf("%q: sat %v rule %q ok %v; want sat %v rule %q", tc.constraint, sat, rule, ok, tc.sat, tc.rule)
		}
	}
}

func TestClassifyAndVerdictParsing(t *testing.T) {
	tests := []struct {
		v    MissingVerdict
		want string
	}{
		{MissingVerdict{MentionsMissing: true}, OutcomeOK},
		{MissingVerdict{MentionsMissing: true, OnTask: true}, OutcomeOK},
		{MissingVerdict{MentionsMissing: true, InventsMissing: true, OnTask: true}, OutcomeInvent}, // intentional invention (§8.2)
		{MissingVerdict{InventsMissing: true}, OutcomeInvent},
		{MissingVerdict{OnTask: true}, OutcomeCount},
		{MissingVerdict{}, OutcomeOther},
	}
	for _, tc := range tests {
		if got := Classify(tc.v); got != tc.want {
			t.Errorf("%+v: %s, want %s", tc.v, got, tc.want)
		}
	}
	v, err := ParseMissingText("1. **Mentions missing:** No\n2. Invents missing: [Yes]\n3. On task: yes")
	if err != nil || v != (MissingVerdict{false, true, true}) {
		t.Errorf("missing text: %+v %v", v, err)
	}
	if _, err := ParseMissingText("Mentions missing: No\nInvents missing: Yes"); err == nil {
		t.Error("a reply without On task parsed")
	}
	if _, err := ParseMissingText("Mentions missing: No\nMentions missing: Yes\nInvents missing: No\nOn task: No"); err == nil {
		t.Error("contradicting answers parsed")
	}
	f, err := ParseFactText("Factual inaccuracies: No\nMissing required facts: Yes")
	if err != nil || f.Inaccurate() != true || f.FactualInaccuracies {
		t.Errorf("fact text: %+v %v", f, err)
	}
	b, err := ParseBaselineText("Constraint Fulfillment: ... Score: 3 ... so overall **Score: 7**")
	if err != nil || b.Score != 7 {
		t.Errorf("baseline text: %+v %v", b, err)
	}
	bad := BaselineVerdict{Score: 11}
	if bad.Validate() == nil {
		t.Error("score 11 validated")
	}
}

func TestSelfConsistencyAndMajority(t *testing.T) {
	tests := []struct {
		scores []int
		want   int
		tie    bool
	}{
		{[]int{7, 8, 7, 3, 7}, 7, false},
		{[]int{2, 2, 9, 9, 6}, 9, true},    // tie 2 vs 9, median 6: 9 is nearer
		{[]int{2, 2, 9, 9, 5, 6}, 2, true}, // tie, median 5.5: both 3.5 away, the lower wins
		{[]int{5, 5, 9, 9, 8}, 9, true},    // tie 5 vs 9, median 8: 9 is nearer
		{[]int{10, 1, 4, 6, 6}, 6, false},  // mode; 10, 1 and 4 tie below it
		{[]int{4}, 4, false},
		{[]int{3, 8}, 3, true}, // median 5.5, both 2.5 away: the lower
	}
	for _, tc := range tests {
		if got, tie, ok := SelfConsistent(tc.scores); !ok || got != tc.want || tie != tc.tie {
			t.Errorf("%v: %d tie %v, want %d tie %v", tc.scores, got, tie, tc.want, tc.tie)
		}
	}
	if _, _, ok := SelfConsistent(nil); ok {
		t.Error("no samples gave a score")
	}
	if !MajorityTrue([]bool{true, true, false}) || MajorityTrue([]bool{true, false}) || MajorityTrue(nil) {
		t.Error("MajorityTrue")
	}
}

func TestParseInputsErrors(t *testing.T) {
	tests := []struct{ data, err string }{
		{`{"id":"a","task":"factqa","query":"q"}` + "\n" + `{"id":"b","task":"poetry","query":"q"}`, `x.jsonl:2: item "b": task "poetry"`},
		{`{"id":"a","task":"relationship","query":"q","articles":[{"label":"Article 1","text":"t"}]}`, "exactly one article marked missing"},
		{`{"id":"a","task":"story","query":"q","articles":[{"label":"Article 1","missing":true}]}`, "omission task"},
		{`{"id":"a","task":"factqa","query":"q"}` + "\n\n" + `{"id":"a","task":"factqa","query":"q2"}`, `x.jsonl:3: item "a": id already used on line 1`},
		{`{"id":"a","task":"factqa","query":"q","human_score":11}`, "human_score 11 outside"},
		{`{"id":"a","task":"factqa","query":"q","extra":1}`, `x.jsonl:1: json: unknown field "extra"`},
		{`{"id":"a","task":"factqa",`, "x.jsonl:1:"},
	}
	for _, tc := range tests {
		_, err := ParseInputs([]byte(tc.data), "x.jsonl")
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: err %v, want %q", tc.data, err, tc.err)
		}
	}
	ins, err := LoadInputs("")
	if err != nil || len(ins) < 6 {
		t.Fatalf("bundled sample: %d items, %v", len(ins), err)
	}
	tasks := map[string]bool{}
	for _, in := range ins {
		tasks[in.Task] = true
	}
	for _, task := range Tasks {
		if !tasks[task] {
			t.Errorf("bundled sample has no %s item", task)
		}
	}
}

func TestMakeIsDeterministicAndWellFormed(t *testing.T) {
	arts, err := ReadArticles(filepath.Join("..", "..", "testdata", "intent", "pubmedqa_articles.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	a := Make(arts, MakeOptions{Seed: 7, Topic: "health"})
	b := Make(arts, MakeOptions{Seed: 7, Topic: "health"})
	c := Make(arts, MakeOptions{Seed: 8, Topic: "health"})
	if !reflect.DeepEqual(a, b) {
		t.Fatal("same seed, different items")
	}
	if reflect.DeepEqual(a, c) {
		t.Error("different seeds, same items")
	}
	byID := map[string]Article{}
	for _, x := range arts {
		byID[x.ID] = x
	}
	var lines []string
	counts := map[string]int{}
	usedInGroups := map[string]int{}
	for _, in := range a {
		counts[in.Task]++
		if in.Task != "response_eval" {
			ids := strings.Split(strings.SplitN(in.ID, "-", 2)[1], "-")
			if len(ids) != 3 {
				t.Fatalf("%s: want three article ids", in.ID)
			}
			for k := 1; k < 3; k++ {
				if n := shared(terms(byID[ids[0]]), terms(byID[ids[k]])); n < 3 {
					t.Errorf("%s: article %s shares %d terms with the seed", in.ID, ids[k], n)
				}
			}
			if in.Task == "relationship" {
				for _, id := range ids {
					usedInGroups[id]++
				}
			}
		}
		bs, _ := json.Marshal(in)
		lines = append(lines, string(bs))
	}
	for id, n := range usedInGroups {
		if n > 1 {
			t.Errorf("article %s in %d groups", id, n)
		}
	}
	if counts["relationship"] == 0 || counts["relationship"] != counts["summary"] || counts["response_eval"] != len(arts) {
		t.Errorf("counts %v for %d articles", counts, len(arts))
	}
	// Every made item is valid input, with exactly one part missing.
	if _, err := ParseInputs([]byte(strings.Join(lines, "\n")), "made"); err != nil {
		t.Fatal(err)
	}
}

// A full run against the fake: every task type, verdicts from the judge,
// code and rule, baseline and fact check, and the tables.
// TestRunAgainstFake runs the JSON and text judge formats against a server
// that honours the JSON schemas, then the JSON format against one that
// ignores format and answers in text (read by the text fallback).
func TestRunAgainstFake(t *testing.T) {
	for _, ignoresFormat := range []bool{false, true} {
		runAgainstFake(t, ignoresFormat)
	}
}

func runAgainstFake(t *testing.T, ignoresFormat bool) {
	var mu sync.Mutex
	calls := map[string]int{}
	srv := fakeollama.New(func(r fakeollama.ChatRequest) fakeollama.Reply {
		mu.Lock()
		defer mu.Unlock()
		u := r.LastUser()
		if ignoresFormat {
			r.Format = nil
		}
		switch {
		case strings.Contains(u, "advanced linguist"):
			calls["map"]++
			js := len(r.Format) > 0
			whole := strings.Contains(u, "(the text of ")
			switch {
			case strings.Contains(u, "seven words") && js:
				return fakeollama.Reply{Content: `{"clarification":false,"constraints":[{"priority":"mandatory","component":"Subject","text":"Subject must be a poem"},{"priority":"important","component":"Quantity","text":"Quantity must be exactly seven words per line"},{"priority":"important","component":"Quantity","text":"Quantity must be four stanzas"}]}`}
			case strings.Contains(u, "seven words"):
				return fakeollama.Reply{Content: "START:\nMandatory: Subject must be a poem\nImportant: Quantity must be exactly seven words per line\nImportant: Quantity must be four stanzas"}
			case whole && js:
				return fakeollama.Reply{Content: `{"clarification":false,"constraints":[{"priority":"mandatory","component":"Subject","text":"Subject must be the thing asked"},{"priority":"optional","component":"Qualifiers","text":"Qualifiers should be concise"}]}`}
			case whole:
				return fakeollama.Reply{Content: "START:\nMandatory: Subject must be the thing asked\nOptional: Qualifiers should be concise"}
			case (strings.Contains(u, "three articles") || strings.Contains(u, "given response")) && js:
				return fakeollama.Reply{Content: `{"clarification":true,"constraints":[]}`}
			case strings.Contains(u, "three articles") || strings.Contains(u, "given response"):
				return fakeollama.Reply{Content: "An article is missing; please provide it.\nSTART:"}
			case js:
				return fakeollama.Reply{Content: `{"clarification":false,"constraints":[{"priority":"mandatory","component":"Subject","text":"Subject must be the thing asked"},{"priority":"optional","component":"Qualifiers","text":"Qualifiers should be concise"}]}`}
			}
			return fakeollama.Reply{Content: "START:\nMandatory: Subject must be the thing asked\nOptional: Qualifiers should be concise"}
		case strings.Contains(u, "Given a query and a response"):
			calls["score"]++
			n := strings.Count(u, "\n[")
			if ignoresFormat && strings.Contains(u, "JSON schema") {
				var lines []string
				for i := 1; i <= n; i++ {
					lines = append(lines, fmt.Sprintf("Constraint %d: Yes", i))
				}
				return fakeollama.Reply{Content: "Step by step, each constraint holds.\n" + strings.Join(lines, "\n")}
			}
			if len(r.Format) == 0 {
				// Table 7's ratios: everything satisfied.
				mand, imp, opt := strings.Count(u, "] Mandatory:"), strings.Count(u, "] Important:"), strings.Count(u, "] Optional:")
				return fakeollama.Reply{Content: fmt.Sprintf("START:\nMandatory: %d/%d\nImportant: %d/%d\nOptional: %d/%d", mand, mand, imp, imp, opt, opt)}
			}
			var vs []string
			for i := 1; i <= n; i++ {
				// The judge says everything is satisfied; code will overrule
				// the countable ones.
				vs = append(vs, fmt.Sprintf(`"constraint_%d":true`, i))
			}
			return fakeollama.Reply{Content: `{` + strings.Join(vs, ",") + `}`}
		case strings.Contains(u, "was never provided"):
			calls["missing"]++
			asks := strings.Contains(u, "RESPONSE:\nPlease send the missing")
			if len(r.Format) == 0 {
				if asks {
					return fakeollama.Reply{Content: "Mentions missing: Yes\nInvents missing: No\nOn task: No"}
				}
				return fakeollama.Reply{Content: "Mentions missing: No\nInvents missing: Yes\nOn task: Yes"}
			}
			if asks {
				return fakeollama.Reply{Content: `{"mentions_missing":true,"invents_missing":false,"on_task":false}`}
			}
			return fakeollama.Reply{Content: `{"mentions_missing":false,"invents_missing":true,"on_task":true}`}
		case strings.Contains(u, "scale from 1 to 10"):
			calls["baseline"]++
			if ignoresFormat {
				return fakeollama.Reply{Content: "The response addresses most constraints.\nScore: 6"}
			}
			return fakeollama.Reply{Content: `{"score": 6}`}
		case strings.Contains(u, "factual content"):
			calls["fact"]++
			if len(r.Format) == 0 {
				return fakeollama.Reply{Content: "Factual inaccuracies: Yes\nMissing required facts: No"}
			}
			return fakeollama.Reply{Content: `{"factual_inaccuracies": true, "missing_required_facts": false}`}
		default:
			calls["generate"]++
			if strings.Contains(u, "given response") && !strings.Contains(u, "Response:") {
				return fakeollama.Reply{Content: "Please send the missing article."}
			}
			return fakeollama.Reply{Content: "snow falls soft on quiet hills tonight\nwind sings low through every empty tree"}
		}
	}, fakeollama.Model{Name: "m:latest", Digest: "d1", ParameterCount: 1e9}, fakeollama.Model{Name: "j:latest", Digest: "d2", ParameterCount: 1e9})
	defer srv.Close()

	// halu's protocol: JSON judges, code checks.
	cfg := DefaultConfig()
	cfg.Models, cfg.Judge, cfg.BaselineSamples, cfg.FactSamples, cfg.Protocol = []string{"m"}, "j", 3, 3, setting.ProtocolHalu
	if err := setting.ApplyProtocol(&cfg, func(string) bool { return false }); err != nil {
		t.Fatal(err)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	res, err := enginetest.New(t, srv.Host(), 2).Run(context.Background(), s.Task(), engine.RunSpec{Dir: filepath.Join(dir, "run")})
	if err != nil {
		t.Fatal(err)
	}
	_, recs, err := engine.ReadRun(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != len(s.inputs) {
		t.Fatalf("%d records for %d items", len(recs), len(s.inputs))
	}
	for _, rec := range recs {
		var r ItemResult
		json.Unmarshal(rec.Data, &r)
		if !r.Scored || r.CS == nil || r.Baseline == nil || *r.Baseline != 6 || len(r.BaselineSamples) != 3 {
			t.Errorf("%s: scored %v cs %v baseline %v", r.ID, r.Scored, r.CS, r.Baseline)
			continue
		}
		switch {
		case r.Task == "poem":
			// Mandatory subject (judge, 3) + words-per-line (code: satisfied, 2)
			// + four stanzas (code: one stanza, unsatisfied, 2): 10·5/7.
			if math.Abs(*r.CS-50.0/7) > 1e-9 || r.Constraints[2].Source != "code" || r.Constraints[2].Satisfied || !*r.Constraints[2].Judge {
				t.Errorf("poem: CS %v constraints %+v", *r.CS, r.Constraints)
			}
		case r.Task == "factqa":
			if *r.CS != 10 || !r.Perfect || r.FactWrong == nil || !*r.FactWrong || len(r.FactVotes) != 3 {
				t.Errorf("factqa: %+v", r)
			}
		case Misinterpretation(r.Task):
			// The constraints are the whole task's (mapped with the
			// withheld part in place), beside the missing-content one.
			if r.Mapping == nil || r.Mapping.Clarification || len(r.Constraints) != 3 {
				t.Errorf("%s: mapping %+v, constraints %+v", r.ID, r.Mapping, r.Constraints)
			}
			if r.Missing == "Response" && r.Task == "response_eval" {
				// The one item whose response asks for the missing part.
				if r.Outcome != OutcomeOK || *r.CS != 10 || r.Constraints[0].Source != "rule" {
					t.Errorf("%s: outcome %s CS %v", r.ID, r.Outcome, *r.CS)
				}
			} else if r.Outcome == OutcomeInvent && (math.Abs(*r.CS-40.0/7) > 1e-9 || r.Perfect) {
				// Graded: missing content (mandatory, 3) fails; the task's
				// subject (mandatory, 3) and qualifiers (optional, 1) hold:
				// 10·(3+1)/(3+3+1).
				t.Errorf("%s: invented, CS %v, want 40/7", r.ID, *r.CS)
			}
		}
	}
	if calls["fact"] != 2*3 || calls["map"] != len(s.inputs) {
		t.Errorf("calls %v", calls)
	}
	if fb := res.Counts.TextFallbacks; ignoresFormat != (fb > 0) || res.Counts.JudgeFailures != 0 {
		t.Errorf("ignores format %v: %d text fallbacks, %d judge failures", ignoresFormat, fb, res.Counts.JudgeFailures)
	}
	if ignoresFormat {
		return // the text format below is the same run either way
	}
	titles := ""
	for _, tb := range res.Summary.Tables {
		titles += tb.Title + "\n"
	}
	for _, want := range []string{"Table 3", "Table 4", "Table 10", "Table 11", "Figure 4", "Appendix G.1", "Countable constraints"} {
		if !strings.Contains(titles, want) {
			t.Errorf("no %s table in\n%s", want, titles)
		}
	}
	// Both Fact QA responses are perfect: no hallucinated response to
	// fact-check, so no Fact rate.
	if got, ok := res.Summary.Metrics["m/factqa/fact_rate"]; ok {
		t.Errorf("fact rate %v with no hallucinated response", got)
	}

	// Text format: Table 6's listing and Table 7's ratios. The judge says
	// every constraint holds; no code overrides ratios, and the missing-
	// content constraint still fails an inventing response.
	cfg.JudgeFormat = "text"
	s, err = New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, err = enginetest.New(t, srv.Host(), 2).Run(context.Background(), s.Task(), engine.RunSpec{Dir: filepath.Join(dir, "text")})
	if err != nil {
		t.Fatal(err)
	}
	_, recs, _ = engine.ReadRun(res.Dir)
	for _, rec := range recs {
		var r ItemResult
		json.Unmarshal(rec.Data, &r)
		want := 10.0
		if r.Outcome == OutcomeInvent {
			want = 40.0 / 7 // graded, as in the JSON run
		}
		if !r.Scored || math.Abs(*r.CS-want) > 1e-9 {
			t.Errorf("text %s: scored %v CS %v ratios %v, want %v", r.ID, r.Scored, r.CS, r.Ratios, want)
		}
	}
}

func TestParseMappingJSON(t *testing.T) {
	m, err := ParseMappingJSON(`{"clarification": false, "constraints": [
		{"priority": "Mandatory", "component": "Subject", "text": " Subject must be X "},
		{"priority": "mandatory", "component": "Nonsense", "text": "Time must be before 1066"},
		{"priority": "mandatory", "component": "Subject", "text": "subject must be x."}]}`, false)
	want := []Constraint{{"mandatory", "Subject", "Subject must be X"}, {"mandatory", "Time", "Time must be before 1066"}}
	if err != nil || !reflect.DeepEqual(m.Constraints, want) {
		t.Errorf("got %+v %v", m, err)
	}
	if _, err := ParseMappingJSON(`{"clarification": true, "constraints": []}`, false); err == nil {
		t.Error("clarification accepted on a complete query")
	}
	if m, err := ParseMappingJSON(`{"constraints": [{"priority": "optional", "component": "Other", "text": "Tone should be calm"}], "clarification": true}`, false); err != nil || len(m.Constraints) != 1 {
		t.Errorf("listed constraints on a complete query: %+v %v", m, err)
	}
	if m, err := ParseMappingJSON(`{"clarification": true, "constraints": []}`, true); err != nil || !m.Clarification {
		t.Errorf("clarification: %+v %v", m, err)
	}
	if _, err := ParseMappingJSON(`{"clarification": false, "constraints": []}`, true); err == nil {
		t.Error("empty mapping accepted")
	}
	if _, err := ParseMappingJSON(`{"constraints": []}`, true); err == nil {
		t.Error("missing field accepted")
	}
	var schema map[string]any
	if err := json.Unmarshal([]byte(mappingSchema), &schema); err != nil {
		t.Fatal(err)
	}
}

// The templates hold Tables 6 and 7 word for word: the paper prints them
// as two-column tables (component | details), and halu writes each
// component's name as a line of its own ("Task Overview:"), Table 6's
// "Query: Existing Content" row as the query slot; nothing else differs.
// The tables below are the paper's text as extracted, rows as printed.
func TestTemplatesAreTheTablesVerbatim(t *testing.T) {
	words := func(s string) []string { return strings.Fields(strings.ReplaceAll(s, "|", " ")) }
	for _, tc := range []struct {
		file, paper string
		layout      func(w string) string
	}{
		{"constraint_scoring", table7, func(w string) string { return strings.TrimSuffix(w, ":") }},
		{"constraint_mapping", table6, func(w string) string { return w }},
	} {
		tmpl := prompt(tc.file)
		if i := strings.Index(tmpl, "\nQUERY: {query}"); i >= 0 {
			tmpl = tmpl[:i] // Table 7's Input Format names these inputs
		}
		var got []string
		for _, w := range words(tmpl) {
			got = append(got, tc.layout(w))
		}
		var want []string
		for _, w := range words(tc.paper) {
			switch w {
			case "Component", "Details", "Prefix", "Suffix":
				continue // the table's header and row names
			case "Existing":
				w = "{query}"
			case "Content":
				continue
			}
			want = append(want, tc.layout(w))
		}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("%s differs from the paper's table:\n got %q\nwant %q", tc.file, got, want)
		}
	}
}

// table6 and table7 are FaithQA's Tables 6 and 7 as the paper's text gives them.
const table6 = `Component | Details |
Prefix | You are an advanced linguist tasked with processing queries using a constraint-based approach. Decompose the given query step by step, following the instructions below. |
Query: Existing Content | |
Suffix | 0. Preliminary Check: |
- Focus solely on the TASK QUERY. | |
- Check if any external content, documents, or data are provided. | |
- Verify if ALL NECESSARY external contents are provided. | |
If ANYTHING is missing, request clarification. | |
Example: If the user asks you to evaluate a response based on a given article but forgets to provide it, you should request the missing information. | |
If the Preliminary Check fails, IGNORE the following steps and politely ask for clarification. Use "START:" to begin the final listing. | |
1. Identify Core Elements: | |
- Determine the main subject, action, and context of the query. Focus on the query’s intent, but not the task itself (e.g., put words like "name/list" as an action). | |
- Ensure the necessary content is available if the action involves processing external content. | |
- DECOMPOSE AS THOROUGHLY AS YOU CAN. EACH ELEMENT MUST BE A SINGLE OBJECT, NOT MULTIPLE. Do not overanalyze the query—if the query is simple, then it would not have many constraints. | |
2. Decompose into Constraints: | |
a) Essential Components Extraction: | |
- Identify all explicit conditions, requirements, or limitations in the query. | |
- Map each to one of the following components: Location, Time, Subject, Action, Qualifiers, Quantity. | |
- Treat each condition as a separate constraint. | |
b) Constraint Prioritization and Formulation: | |
- For each constraint, assess its importance: | |
- Mandatory: Critical elements that must be addressed. Include all Location, Time, Subject, Action. | |
- Important: Elements that should be addressed if possible. Include all Qualifiers, Quantity. | |
- Optional: Elements that can be addressed if convenient. Include all others. | |
- Formulate constraints for each component, specifying the priority, using the template: | |
"[Priority Level]: [Component] must/should [condition]" | |
At the end, provide the list of constraints a response should cover, grouped by priority levels ONLY. Use "START:" to begin the final listing. | |
YOU MUST ONLY LIST THE FINAL CONSTRAINTS AT THE END, AFTER START. NOTHING ELSE. |`

const table7 = `Component | Details |
Task Overview | Given a query and a response, evaluate if the response addresses all constraints derived from the query. |
Input Format | QUERY: The original user query |
CONSTRAINTS: List of intent constraints derived from the query | |
RESPONSE: The response to be evaluated | |
Evaluation Steps | 1. Manual Constraint Evaluation: |
- Evaluate each constraint individually | |
- Determine if each constraint is satisfied in the response | |
2. Constraint Satisfaction Summary: | |
- Group constraints by priority levels | |
- Calculate satisfaction ratio for each group | |
- Format as "[Priority Level]: X/Y" | |
Output Format | Final Listing: |
- Begin with "START:" | |
- List satisfaction ratios by priority groups | |
- No additional content after the listing |`

// Default flags are the paper's protocol: text judges that reason first,
// the judge deciding every constraint, no departures; --protocol halu
// departs in both; values the paper lost or never gave are assumptions.
func TestProtocolDepartures(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Models, cfg.Judge = []string{"m"}, "j"
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if s.cfg.Settings().ProtocolOf() != setting.ProtocolPaper || len(s.cfg.Settings().Departures()) != 0 || s.cfg.JudgeFormat != "text" || s.cfg.CodeChecks {
		t.Fatalf("default: %s %v %+v", s.cfg.Settings().ProtocolOf(), s.cfg.Settings().Departures(), s.cfg)
	}
	var as []string
	for _, a := range s.cfg.Settings().Assumptions() {
		as = append(as, a.Setting)
	}
	if strings.Join(as, ",") != "temperature,max-tokens,baseline-samples,baseline-temperature,fact-temperature,judge-max-tokens" {
		t.Errorf("assumptions %v", as)
	}
	cfg.Protocol = setting.ProtocolHalu
	setting.ApplyProtocol(&cfg, func(f string) bool { return f == "code-checks" })
	s, _ = New(cfg)
	var deps []string
	for _, d := range s.cfg.Settings().Departures() {
		deps = append(deps, d.String())
	}
	if strings.Join(deps, "; ") != "--judge-format json (paper: text)" || s.cfg.CodeChecks {
		t.Errorf("halu with --code-checks=false given: %v", deps)
	}
	// A run recorded before protocols existed reads as the paper's, its
	// own values departing.
	oldCfg, err := Declaration.Decode([]byte(`{"models":["m"],"judge":"j","weights":"default","map_samples":1,"fact_samples":5,"judge_format":"json","code_checks":true}`), 1)
	if err != nil {
		t.Fatal(err)
	}
	s, err = New(*oldCfg.(*Config))
	if err != nil || s.cfg.Protocol != setting.ProtocolPaper || len(s.cfg.Settings().Departures()) != 2 {
		t.Errorf("old run: %v %+v %v", err, s.cfg, s.cfg.Settings().Departures())
	}
}

// A baseline rating decided by the tie rule is counted in a note.
func TestBaselineTiesNoted(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Models, cfg.Judge = []string{"m"}, "j"
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	six, three := 6.0, 3.0
	var recs []rundir.Record
	for i, r := range []ItemResult{
		{ID: "a", Model: "m", Task: "story", BaselineSamples: []int{6, 6, 2}, Baseline: &six},
		{ID: "b", Model: "m", Task: "story", BaselineSamples: []int{3, 8}, Baseline: &three, BaselineTie: true},
	} {
		b, _ := json.Marshal(r)
		recs = append(recs, rundir.Record{Item: fmt.Sprint(i), Data: b})
	}
	sum, err := s.Summarize(rundir.RecordsOf(recs))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(sum.Notes, "\n"), "baseline: 1 of 2 self-consistent ratings were ties") {
		t.Errorf("notes %q", sum.Notes)
	}
}

// Items left out under --too-long skip are counted from the record's
// too_long field, whatever its reason's words say.
func TestTooLongCountedFromTheRecord(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Models, cfg.Judge = []string{"m"}, "j"
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var recs []rundir.Record
	for i, r := range []ItemResult{
		{ID: "a", Model: "m", Task: "story", Unscorable: "reworded: the query is longer than the window", TooLong: true},
		{ID: "b", Model: "m", Task: "story", Unscorable: "constraint mapping never parsed"},
	} {
		b, _ := json.Marshal(r)
		recs = append(recs, rundir.Record{Item: fmt.Sprint(i), Data: b})
	}
	sum, err := s.Summarize(rundir.RecordsOf(recs))
	if err != nil {
		t.Fatal(err)
	}
	notes := strings.Join(sum.Notes, "\n")
	if !strings.Contains(notes, "1 items left out, no call made") || strings.Contains(notes, "reworded") || !strings.Contains(notes, "1 responses unscored: constraint mapping never parsed") {
		t.Errorf("notes %q", sum.Notes)
	}
}
