package cfaith

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"halu/localmodels/fakeollama"
	"halu/metrics"
	"halu/runner/engine"
	"halu/runner/engine/enginetest"
	"halu/runner/rundir"
)

func TestRenderingBothLanguages(t *testing.T) {
	for _, lang := range Langs {
		orig, err := BuiltinRules(lang, "original")
		if err != nil {
			t.Fatal(err)
		}
		opt, err := BuiltinRules(lang, "optimized")
		if err != nil {
			t.Fatal(err)
		}
		for _, rs := range []RuleSet{orig, opt} {
			if err := rs.Validate(); err != nil {
				t.Fatalf("%s: %v", lang, err)
			}
		}
		for _, typ := range Types {
			p := QAPrompt(lang, typ, orig, "KNOWLEDGE-TEXT")
			if !strings.HasSuffix(strings.TrimSpace(p), "KNOWLEDGE-TEXT") || strings.Contains(p, "{}") {
				t.Errorf("%s/%s: knowledge not filled:\n%s", lang, typ, p)
			}
			// The original rules reproduce the template exactly.
			if lang == "zh" && p != fillPositional(tmpl(lang, "datagen_qa_"+typ), "KNOWLEDGE-TEXT") {
				t.Errorf("zh/%s: original rules changed the authors' template", typ)
			}
			po := QAPrompt(lang, typ, opt, "K")
			if !strings.Contains(po, "1. "+opt.QARules[0]) || !strings.Contains(po, "4. "+opt.QARules[3]) || !strings.Contains(po, "\n5. ") || !strings.Contains(po, "\n6. ") {
				t.Errorf("%s/%s: optimized rules not in place:\n%s", lang, typ, po)
			}
			v := VerifyTypePrompt(lang, typ, "Q?", "A.", "H.")
			if !strings.Contains(v, "Q?") || !strings.HasSuffix(strings.TrimSpace(v), TypeName(lang, typ)) {
				t.Errorf("%s/%s: verify prompt:\n%s", lang, typ, v)
			}
		}
		h := HaluAnswerPrompt(lang, opt, "Q?", "A.", "E.")
		if !strings.Contains(h, "4. "+opt.HaluRules[3]) || strings.Contains(h, "{}") || !strings.Contains(h, "E.") {
			t.Errorf("%s: halu prompt:\n%s", lang, h)
		}
		l := LabelPrompt(lang, opt, "Q?", "H.", "A.")
		if !strings.Contains(l, opt.LabelDefs["SpaErr"]) || strings.Contains(l, "{}") {
			t.Errorf("%s: label prompt lacks the optimized SpaErr definition:\n%s", lang, l)
		}
		if lang == "zh" && LabelPrompt(lang, orig, "Q", "H", "A") != fillPositional(tmpl(lang, "datagen_halu_label"), "Q", "H", "A") {
			t.Error("zh: original definitions changed the authors' label template")
		}
		sc := SingleChoicePrompt(lang, "Q?", [4]string{"a1", "b1", "c1", "d1"})
		if !strings.Contains(sc, "A. a1\nB. b1\nC. c1\nD. d1") {
			t.Errorf("%s: single choice:\n%s", lang, sc)
		}
		if op := OptimizerPrompt(lang, orig, QAPart, "FEEDBACK"); !strings.Contains(op, "FEEDBACK") || !strings.Contains(op, "4. "+orig.QARules[3]) ||
			!strings.Contains(op, partNames[lang][QAPart]+"\n1. "+orig.QARules[0]) || !strings.Contains(op, `{"rules": [`) || strings.Contains(op, "{output}") {
			t.Errorf("%s: optimizer prompt for the question rules:\n%s", lang, op)
		}
		if op := OptimizerPrompt(lang, orig, LabelPart("SpaErr"), "FB"); !strings.Contains(op, " "+TypeName(lang, "SpaErr")+"\n"+orig.LabelDefs["SpaErr"]+"\n") ||
			!strings.Contains(op, `{"definition": "..."}`) {
			t.Errorf("%s: optimizer prompt for a label:\n%s", lang, op)
		}
	}
}

func TestParseVerdict(t *testing.T) {
	tests := []struct {
		lang, check, reply, want, err string
	}{
		{"zh", "correct", "[正确检测]：符合。答案与背景知识一致。", Pass, ""},
		{"zh", "correct", "[正确检测]：不符合。背景知识中提到……", Fail, ""},
		{"zh", "halu", "**[幻觉检测]**: 不确定，信息不足", Uncertain, ""},
		{"zh", "type", "分析如下……\n[类型检测]：符合。理由：……", Pass, ""},
		{"zh", "correct", "符合。", "", "no [正确检测]"},
		{"zh", "correct", "[正确检测]：我认为答案可能是对的", "", "no [正确检测] verdict"},
		{"en", "type", "[Type check]: Pass. Reason: …", Pass, ""},
		{"en", "halu", "[Hallucination check]: fail — the answer agrees", Fail, ""},
		{"en", "correct", "[Correctness check]: Uncertain", Uncertain, ""},
		{"en", "correct", "Pass.", "", "no [Correctness check]"},
	}
	for _, tc := range tests {
		v, err := ParseVerdict(tc.lang, tc.check, tc.reply)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: err %v, want %q", tc.reply, err, tc.err)
			}
			continue
		}
		if err != nil || v.Verdict != tc.want {
			t.Errorf("%q: %+v %v, want %s", tc.reply, v, err, tc.want)
		}
	}
}

func TestParseAgents(t *testing.T) {
	qas, err := ParseQA("zh", "[问题1]：长江有多长？\n[答案1]：约6300千米。\n[依据1]：长江全长约6300千米。\n\n[问题2]：缺答案？\n[依据2]：x\n\n[问题3]：三峡大坝在哪里？\n[答案3]：湖北省宜昌市。\n[依据3]：三峡大坝位于湖北省宜昌市。")
	if err != nil || len(qas) != 2 || qas[1].Answer != "湖北省宜昌市。" {
		t.Errorf("zh QA: %+v %v", qas, err)
	}
	qas, err = ParseQA("en", "[Question 1]: How long is the Danube?\n[Answer 1]: About 2,850 km.\n[Evidence 1]: It flows for about 2,850 kilometres.")
	if err != nil || len(qas) != 1 || qas[0].Evidence != "It flows for about 2,850 kilometres." {
		t.Errorf("en QA: %+v %v", qas, err)
	}
	if qas, err := ParseQA("zh", "无法生成"); err != nil || qas != nil {
		t.Errorf("declining: %v %v", qas, err)
	}
	if _, err := ParseQA("en", "Here are some questions."); err == nil {
		t.Error("no blocks parsed")
	}
	labels := []struct{ lang, reply, want string }{
		{"zh", "实体错误", "EntErr"}, {"zh", "时空幻觉。因为……", "SpaErr"}, {"zh", "[幻觉标签]：虚假引用", "RefErr"},
		{"en", "SpaErr", "SpaErr"}, {"en", "This is an Entity Error.", "EntErr"}, {"en", "**RelErr**", "RelErr"},
	}
	for _, l := range labels {
		if got, err := ParseLabel(l.lang, l.reply); err != nil || got != l.want {
			t.Errorf("label %q: %s %v", l.reply, got, err)
		}
	}
	if _, err := ParseLabel("en", "Either AttrErr or EntErr"); err == nil {
		t.Error("two types accepted")
	}
	if h, err := ParseHaluAnswer("[幻觉回复]：李白最长的一首诗是《长相思》。\n"); err != nil || h != "李白最长的一首诗是《长相思》。" {
		t.Errorf("halu answer %q %v", h, err)
	}
	for _, c := range []struct {
		reply  string
		letter string
		ok     bool
	}{{"B", "B", true}, {"答案：C", "C", true}, {" d. because", "D", true}, {"我不知道", "", false}} {
		if l, ok := ParseChoice(c.reply); l != c.letter || ok != c.ok {
			t.Errorf("choice %q: %q %v", c.reply, l, ok)
		}
	}
	for _, c := range []struct {
		reply      string
		judged, ok bool
	}{{"正确", true, true}, {"错误", false, true}, {"不正确", false, true}, {"True", true, true}, {"false.", false, true}, {"Incorrect", false, true}, {"…", false, false}} {
		if j, ok := ParseTrueFalse(c.reply); j != c.judged || ok != c.ok {
			t.Errorf("true/false %q: %v %v", c.reply, j, ok)
		}
	}
	if c, err := ParseConflict("zh", "[冲突检测]：不冲突"); err != nil || c.Conflict {
		t.Errorf("conflict zh: %v %v", c, err)
	}
	if c, err := ParseConflict("en", "[Conflict check]: Conflict"); err != nil || !c.Conflict {
		t.Errorf("conflict en: %v %v", c, err)
	}
}

func pass() *Verdict { return &Verdict{Verdict: Pass} }
func fail() *Verdict { return &Verdict{Verdict: Fail} }

func TestFilteringAndLabels(t *testing.T) {
	ok := Response{Text: "x", Label: "EntErr", Halu: pass(), Type: pass()}
	tests := []struct {
		r    Response
		drop string
	}{
		{ok, ""},
		{Response{Text: "x", Halu: pass()}, "label: unparseable"},
		{Response{Text: "x", Label: "EntErr", Halu: fail(), Type: pass()}, "hallucination check: fail"},
		{Response{Text: "x", Label: "EntErr", Halu: &Verdict{Verdict: Uncertain}, Type: pass()}, "hallucination check: uncertain"},
		{Response{Text: "x", Label: "EntErr", Halu: pass()}, "label check: unparseable"},
	}
	for _, tc := range tests {
		if got := responseDrop(tc.r); got != tc.drop {
			t.Errorf("%+v: %q, want %q", tc.r, got, tc.drop)
		}
	}
	q := Question{Mode: "SpaErr", Correct: pass(), Responses: []Response{
		{Label: "EntErr", Halu: pass(), Type: pass()}, {Label: "SpaErr", Halu: pass(), Type: pass()}, {Label: "EntErr", Halu: fail(), Type: pass()}}}
	if d := questionDrop(q); d != "" {
		t.Errorf("drop %q", d)
	}
	// EntErr and SpaErr tie among verified responses: the generation mode wins.
	if l := questionLabel(q); l != "SpaErr" {
		t.Errorf("label %q, want SpaErr", l)
	}
	q.Mode = "RelErr"
	if l := questionLabel(q); l != "EntErr" {
		t.Errorf("label %q, want EntErr (first in type order)", l)
	}
	q.Correct = &Verdict{Verdict: Uncertain}
	if d := questionDrop(q); d != "correctness check: uncertain" {
		t.Errorf("drop %q", d)
	}
	q.Correct = nil
	if d := questionDrop(q); d != "correctness check: unparseable" {
		t.Errorf("drop %q", d)
	}
}

func rates(o float64) Rates { return Rates{Overall: o} }

func TestOptimisationLoop(t *testing.T) {
	type step struct{ round, cand int }
	run := func(val map[step]float64, rounds int) (RuleSet, []Round, []string) {
		var proposed []string
		l := Loop{
			Rounds: rounds,
			Validate: func(_ context.Context, r, c int, rs RuleSet) (Rates, error) {
				return rates(val[step{r, c}]), nil
			},
			Train: func(_ context.Context, r int, rs RuleSet) ([]DocResult, error) { return nil, nil },
			Propose: func(_ context.Context, r int, rs RuleSet, _ []DocResult) ([]Candidate, error) {
				proposed = append(proposed, rs.Name)
				return []Candidate{{QAPart, RuleSet{Name: fmt.Sprintf("r%dc1", r)}}, {HaluPart, RuleSet{Name: fmt.Sprintf("r%dc2", r)}}}, nil
			},
		}
		final, rows, err := l.Run(context.Background(), RuleSet{Name: "start"})
		if err != nil {
			t.Fatal(err)
		}
		return final, rows, proposed
	}
	// Paper-like: 0.625 → 0.81 → 0.88 → 0.86 (drop: stop, keep round 2's).
	val := map[step]float64{{0, 0}: 0.625, {1, 1}: 0.81, {1, 2}: 0.70, {2, 1}: 0.80, {2, 2}: 0.88, {3, 1}: 0.86, {3, 2}: 0.85}
	final, rows, proposed := run(val, 5)
	if final.Name != "r2c2" || len(rows) != 4 || !rows[3].Stopped || rows[3].Rates.Overall != 0.86 ||
		!reflect.DeepEqual(rows[1].Revised, []Part{QAPart, HaluPart}) {
		t.Errorf("final %s, rows %+v", final.Name, rows)
	}
	if !reflect.DeepEqual(proposed, []string{"start", "r1c1", "r2c2"}) {
		t.Errorf("each round starts from the kept prompt: %v", proposed)
	}
	// Never worse: runs all rounds; an equal score keeps going (ties go to
	// the earlier candidate).
	val = map[step]float64{{0, 0}: 0.5, {1, 1}: 0.5, {1, 2}: 0.5, {2, 1}: 0.6, {2, 2}: 0.6}
	final, rows, _ = run(val, 2)
	if final.Name != "r2c1" || len(rows) != 3 || rows[2].Stopped {
		t.Errorf("final %s rows %+v", final.Name, rows)
	}
	// Split is deterministic and disjoint.
	var docs []Doc
	for i := 0; i < 10; i++ {
		docs = append(docs, Doc{ID: fmt.Sprint("d", i)})
	}
	tr1, va1 := Split(docs, 60, 20, 3)
	tr2, va2 := Split(docs, 60, 20, 3)
	if !reflect.DeepEqual(tr1, tr2) || !reflect.DeepEqual(va1, va2) || len(va1) != 2 || len(tr1) != 8 {
		t.Errorf("split %v %v", tr1, va1)
	}
	if _, err := ParseRuleSet(`{"qa_rules":["a","b","c"],"halu_rules":["a","b","c","d"],"label_definitions":{}}`, "x"); err == nil {
		t.Error("three rules accepted")
	}
}

// TestProposalParts: failed checks blame parts, the most blamed are
// revised first, feedback goes to the part it blames, and a proposal
// replaces that part only.
func TestProposalParts(t *testing.T) {
	fail := &Verdict{Verdict: Fail, Reason: "why"}
	unsure := &Verdict{Verdict: Uncertain, Reason: "unsure"}
	docs := []DocResult{{Doc: "d1", Questions: []Question{
		{QA: QA{Question: "Q1"}, Correct: pass(), Responses: []Response{
			{Text: "r1", Label: "EntErr", Halu: pass(), Type: fail},
			{Text: "r2", Label: "EntErr", Halu: fail, Type: unsure},
			{Text: "r3", Label: "RelErr", Halu: pass(), Type: fail},
		}},
		{QA: QA{Question: "Q2"}, Correct: fail, Responses: []Response{{Text: "r4", Label: "RelErr", Halu: pass(), Type: pass()}}},
	}}}
	// Blame: EntErr 2, RelErr 1, qa 1, halu 1 → EntErr, then qa, halu,
	// RelErr (ties in fixed order), cycling.
	got := Targets(docs, []string{"EntErr", "RelErr"}, 6)
	want := []Part{LabelPart("EntErr"), QAPart, HaluPart, LabelPart("RelErr"), LabelPart("EntErr"), QAPart}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("targets %v, want %v", got, want)
	}
	if got := Targets(nil, []string{"SpaErr"}, 4); !reflect.DeepEqual(got, []Part{QAPart, HaluPart, LabelPart("SpaErr"), QAPart}) {
		t.Errorf("targets without failures %v", got)
	}
	fb := Feedback(docs, LabelPart("EntErr"), 40)
	if want := "- label check EntErr (fail) — question: Q1 — response: r1 — reason: why\n- label check EntErr (uncertain) — question: Q1 — response: r2 — reason: unsure"; fb != want {
		t.Errorf("feedback:\n%s\nwant:\n%s", fb, want)
	}
	if fb := Feedback(docs, QAPart, 1); fb != "- correctness check (fail) — question: Q2 — reason: why" {
		t.Errorf("qa feedback %q", fb)
	}
	if fb := Feedback(docs, LabelPart("SpaErr"), 40); fb != "(no failed check)" {
		t.Errorf("no feedback %q", fb)
	}

	orig, _ := BuiltinRules("en", "original")
	rs, err := QAPart.Apply(orig, "```json\n{\"rules\": [\"one\", \"two\\nlines\", \"three\", \"four\"]}\n```", "r1c1")
	if err != nil || !reflect.DeepEqual(rs.QARules, []string{"one", "two lines", "three", "four"}) || rs.Name != "r1c1" ||
		!reflect.DeepEqual(rs.HaluRules, orig.HaluRules) || !reflect.DeepEqual(rs.LabelDefs, orig.LabelDefs) {
		t.Errorf("apply qa: %v %+v", err, rs)
	}
	rs, err = LabelPart("SpaErr").Apply(orig, `{"definition": "Wrong  time or place."}`, "x")
	if err != nil || rs.LabelDefs["SpaErr"] != "Wrong time or place." || orig.LabelDefs["SpaErr"] == rs.LabelDefs["SpaErr"] || rs.LabelDefs["EntErr"] != orig.LabelDefs["EntErr"] {
		t.Errorf("apply label: %v %+v (original changed: %v)", err, rs.LabelDefs, orig.LabelDefs["SpaErr"])
	}
	for _, bad := range []struct {
		part  Part
		reply string
	}{{HaluPart, `{"rules": ["a", "b", "c"]}`}, {LabelPart("EntErr"), `{"definition": ""}`}, {LabelPart("Nope"), `{"definition": "x"}`}, {QAPart, `not json`}} {
		if _, err := bad.part.Apply(orig, bad.reply, "x"); err == nil {
			t.Errorf("%s %s accepted", bad.part, bad.reply)
		}
	}
}

func verified(doc string, sims ...float64) DocResult {
	d := DocResult{Doc: doc}
	for i, s := range sims {
		q := Question{Mode: "EntErr", Label: "EntErr", QA: QA{Question: fmt.Sprintf("%s Q%d", doc, i), Answer: "right"}, Correct: pass()}
		for k := 0; k < 3; k++ {
			q.Responses = append(q.Responses, Response{Text: fmt.Sprintf("wrong %d", k), Label: "EntErr", Halu: pass(), Type: pass()})
		}
		if s >= 0 {
			s := s
			q.MaxOptionSimilarity = &s
		}
		d.Questions = append(d.Questions, q)
	}
	return d
}

func TestAggregate(t *testing.T) {
	d := verified("doc", 0.5, 0.95, -1)
	// A fourth question with only one verified response.
	q := Question{Mode: "SpaErr", Label: "SpaErr", QA: QA{Question: "when?", Answer: "1420"}, Correct: pass(),
		Responses: []Response{{Text: "1421", Label: "SpaErr", Halu: pass(), Type: pass()}, {Text: "x", Label: "SpaErr", Halu: fail(), Type: pass()}}}
	// A fifth whose options repeat a text.
	dup := verified("doc", -1).Questions[0]
	dup.Responses[2].Text = "  WRONG 0 "
	bad := Question{Drop: "correctness check: fail"}
	d.Questions = append(d.Questions, q, dup, bad)
	ds := Aggregate([]DocResult{d}, 7, 0.9)
	if len(ds.Generative) != 5 || len(ds.TrueFalse) != 10 || len(ds.Choice) != 2 {
		t.Fatalf("gen %d tf %d choice %d, dropped %v", len(ds.Generative), len(ds.TrueFalse), len(ds.Choice), ds.Dropped)
	}
	want := map[string]int{"near-duplicate options (similarity ≥ 0.9)": 1, "fewer than three verified responses": 1, "duplicate options (same text)": 1}
	if !reflect.DeepEqual(ds.Dropped, want) {
		t.Errorf("dropped %v", ds.Dropped)
	}
	// True/false: one true (the correct answer), one false (a verified
	// response) per question.
	for i := 0; i < len(ds.TrueFalse); i += 2 {
		a, b := ds.TrueFalse[i], ds.TrueFalse[i+1]
		if !a.True || b.True || a.Question != b.Question || b.Statement == a.Statement {
			t.Errorf("true/false pair %+v %+v", a, b)
		}
	}
	// The shuffle is deterministic per seed, keeps the correct option's
	// label, and differs across seeds for some item.
	again := Aggregate([]DocResult{d}, 7, 0.9)
	other := Aggregate([]DocResult{d}, 8, 0.9)
	if !reflect.DeepEqual(ds.Choice, again.Choice) {
		t.Error("same seed, different order")
	}
	differs := false
	for i, it := range ds.Choice {
		slot := it.CorrectOption[0] - 'A'
		if it.Options[slot] != "right" || it.Labels[slot] != "correct" {
			t.Errorf("%s: correct option %s holds %q", it.ID, it.CorrectOption, it.Options[slot])
		}
		differs = differs || it.Options != other.Choice[i].Options
	}
	if !differs {
		t.Error("seeds 7 and 8 shuffle every item alike")
	}
}

// The rates of Table 5, Table 6 and Figure 5 on a hand-made set of answers.
func TestRateArithmetic(t *testing.T) {
	tr, fa := true, false
	answers := []Answer{
		{Model: "m", Format: "generative", HaluType: "EntErr", Scored: true, Hallucinated: true},
		{Model: "m", Format: "generative", HaluType: "EntErr", Scored: true},
		{Model: "m", Format: "generative", HaluType: "SpaErr", Scored: true, Hallucinated: true},
		{Model: "m", Format: "generative", HaluType: "SpaErr", Scored: false}, // unscored: left out
		{Model: "m", Format: "choice", Scored: true, Hallucinated: true},
		{Model: "m", Format: "choice", Scored: true},
		{Model: "m", Format: "choice", Scored: true},
		{Model: "m", Format: "choice", Scored: true},
		{Model: "m", Format: "truefalse", Scored: true, Statement: &tr, JudgedTrue: &tr},
		{Model: "m", Format: "truefalse", Scored: true, Statement: &fa, JudgedTrue: &tr, Hallucinated: true}, // FN
		{Model: "m", Format: "truefalse", Scored: true, Statement: &fa, JudgedTrue: &fa},
		{Model: "m", Format: "truefalse", Scored: true, Statement: &tr, JudgedTrue: &fa, Hallucinated: true}, // FP
		{Model: "m", Format: "truefalse", Scored: true, Statement: &fa, JudgedTrue: &tr, Hallucinated: true}, // FN
	}
	var recs []rundir.Record
	for i, a := range answers {
		b, _ := json.Marshal(a)
		recs = append(recs, rundir.Record{Item: fmt.Sprint(i), Data: b})
	}
	s := &Suite{}
	sum, err := s.Summarize(rundir.RecordsOf(recs))
	if err != nil {
		t.Fatal(err)
	}
	// Gen 2/3, choice 1/4, true/false 3/5; overall (2/3+1/4+3/5)/3 = 91/180.
	want := map[string]float64{"m/generative": 2.0 / 3, "m/choice": 0.25, "m/truefalse": 0.6, "m/overall": 91.0 / 180,
		"m/truefalse/fn_rate": 2.0 / 3, "m/truefalse/fp_rate": 0.5}
	for k, v := range want {
		if math.Abs(sum.Metrics[k]-v) > 1e-12 {
			t.Errorf("%s = %v, want %v", k, sum.Metrics[k], v)
		}
	}
	if row := sum.Tables[1].Rows[0]; row[4] != "50.00 (n=2)" || row[6] != "100.00 (n=1)" {
		t.Errorf("Table 6 row %v", row)
	}
	if row := sum.Tables[0].Rows[0]; row[5] != "1" {
		t.Errorf("unscored count %v", row)
	}
}

// Build and evaluate against the fake, in both languages.
// TestBuildAndRunAgainstFake builds with the authors' text formats (the
// paper protocol's default) and with structured output, replies written
// in each; the same verdicts give the same pass rates and dataset.
func TestBuildAndRunAgainstFake(t *testing.T) {
	for _, lang := range Langs {
		for _, format := range []string{"text", "json"} {
			t.Run(lang+"/"+format, func(t *testing.T) { buildAndRunAgainstFake(t, lang, format) })
		}
	}
}

// textReply is the build agents' and verifier's reply in the prompts' own
// format for what the JSON reply says, or "" when it is not one of theirs.
func textReply(lang, u, jsonReply string) string {
	var v struct {
		Items     []QA     `json:"items"`
		Responses []string `json:"responses"`
		Label     string   `json:"label"`
		Verdict   string   `json:"verdict"`
		Reason    string   `json:"reason"`
	}
	if json.Unmarshal([]byte(jsonReply), &v) != nil {
		return ""
	}
	var b strings.Builder
	zh := lang == "zh"
	switch {
	case len(v.Items) > 0:
		b.WriteString("好的，以下是生成的问题。\n\n")
		for i, q := range v.Items {
			if zh {
				fmt.Fprintf(&b, "[问题%d]：%s\n[答案%d]：%s\n[依据%d]：%s\n\n", i+1, q.Question, i+1, q.Answer, i+1, q.Evidence)
			} else {
				fmt.Fprintf(&b, "[Question%d]: %s\n[Answer%d]: %s\n[Evidence%d]: %s\n\n", i+1, q.Question, i+1, q.Answer, i+1, q.Evidence)
			}
		}
	case len(v.Responses) > 0:
		for i, r := range v.Responses {
			if zh {
				fmt.Fprintf(&b, "[幻觉回复%d]：%s\n", i+1, r)
			} else {
				fmt.Fprintf(&b, "[Hallucinated response %d]: %s\n", i+1, r)
			}
		}
	case v.Label != "":
		if zh {
			return "[幻觉标签]：" + v.Label
		}
		return "[Hallucination label]: " + v.Label
	case v.Verdict != "":
		check := "type"
		switch {
		case strings.Contains(u, "正确性检验者") || strings.Contains(u, "correctness of question answering"):
			check = "correct"
		case strings.Contains(u, "错误性检验者") || strings.Contains(u, "checker of wrong answers"):
			check = "halu"
		}
		word := map[string][2]string{"pass": {"符合", "Pass"}, "fail": {"不符合", "Fail"}, "uncertain": {"不确定", "Uncertain"}}[v.Verdict]
		if zh {
			return checkTags[lang][check] + "：" + word[0] + "\n理由：" + v.Reason
		}
		return checkTags[lang][check] + ": " + word[1] + "\nReason: " + v.Reason
	}
	return b.String()
}

func buildAndRunAgainstFake(t *testing.T, lang, format string) {
	var mu sync.Mutex
	halluCalls, singleCalls, textCalls := 0, 0, 0
	var badCaps []string
	evaluating := false
	ignoresFormat := false // later: a server that ignores format
	srv := fakeollama.New(func(r fakeollama.ChatRequest) fakeollama.Reply {
		mu.Lock()
		defer mu.Unlock()
		u := r.LastUser()
		// The authors' caps: 2,048 for the agents, 1,024 for the verifier
		// (their generator's and evaluator's max_tokens); the evaluation's
		// own requests are not the construction's.
		caps := 2048.0
		if strings.Contains(u, "检验者") || strings.Contains(u, "检测员") || strings.Contains(u, "checker") || strings.Contains(u, "correctness of question answering") {
			caps = 1024
		}
		if np, _ := r.Options["num_predict"].(float64); np != caps && !evaluating && !strings.Contains(u, "Calibration passage") {
			badCaps = append(badCaps, fmt.Sprintf("num_predict %v for %.60q", np, u))
		}
		rep := buildReply(lang, u, r, &halluCalls, &singleCalls, ignoresFormat)
		if len(r.Format) == 0 && format == "text" {
			if txt := textReply(lang, u, rep.Content); txt != "" {
				textCalls++
				rep.Content = txt
			}
		}
		return rep
	}, fakeollama.Model{Name: "m:latest", Digest: "d1", ParameterCount: 1e9})
	defer srv.Close()
	dir := t.TempDir()
	cfg := DefaultBuildConfig()
	cfg.Lang, cfg.Agent, cfg.Types, cfg.Format = lang, "m", []string{"EntErr", "SpaErr"}, format
	cfg.Docs = filepath.Join("..", "..", "testdata", "cfaith", "docs_"+lang+".jsonl")
	cfg.Rules, _ = BuiltinRules(lang, "optimized")
	b, err := NewBuilder(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e := enginetest.New(t, srv.Host(), 2)
	res, err := RunOrResume(context.Background(), e, b.Task(), filepath.Join(dir, "run"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, recs, _ := engine.ReadRun(res.Dir)
	docs, _ := decodeDocs(recs)
	pr := PassRates(docs)
	// The paper protocol asks for a question's three responses in
	// one call (the authors' generate_multi_halu).
	if halluCalls == 0 || singleCalls != 0 {
		t.Errorf("%d one-call requests for hallucinated responses, %d single ones; want all in one call", halluCalls, singleCalls)
	}
	// Per document: 2 types × 2 questions, Q2 uncertain; 3 responses
	// each, the third one failing its label check.
	if pr.Questions != 16 || pr.Corr != 0.5 || pr.Halu != 1 || math.Abs(pr.Label-2.0/3) > 1e-12 || math.Abs(pr.Overall-1.0/3) > 1e-12 {
		t.Errorf("rates %+v", pr)
	}
	ds := Aggregate(docs, 1, 0.9)
	if len(ds.Generative) != 8 || len(ds.TrueFalse) != 16 || len(ds.Choice) != 0 || ds.Dropped["fewer than three verified responses"] != 8 {
		t.Errorf("dataset: %d gen, %d tf, %d choice, dropped %v", len(ds.Generative), len(ds.TrueFalse), len(ds.Choice), ds.Dropped)
	}
	if err := WriteDataset(dir, ds, DatasetInfo{Lang: lang, Agent: "m", Verifier: "m"}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	evaluating = true
	mu.Unlock()
	ecfg := DefaultConfig()
	ecfg.Data, ecfg.Models, ecfg.Judge = dir, []string{"m"}, "m"
	s, err := New(ecfg)
	if err != nil {
		t.Fatal(err)
	}
	er, err := e.Run(context.Background(), s.Task(), engine.RunSpec{Dir: filepath.Join(dir, "eval")})
	if err != nil {
		t.Fatal(err)
	}
	// Every generative answer conflicts; true/false always says true
	// (so every false statement is a false negative).
	if er.Summary.Metrics["m/generative"] != 1 || er.Summary.Metrics["m/truefalse"] != 0.5 || er.Summary.Metrics["m/truefalse/fn_rate"] != 1 {
		t.Errorf("metrics %v", er.Summary.Metrics)
	}
	// The same evaluation against a server that ignores format: the
	// judge's text verdicts are read by the fallback, same numbers.
	mu.Lock()
	ignoresFormat = true
	mu.Unlock()
	er2, err := enginetest.New(t, srv.Host(), 2).Run(context.Background(), s.Task(), engine.RunSpec{Dir: filepath.Join(dir, "eval-noformat")})
	if err != nil {
		t.Fatal(err)
	}
	if er2.Summary.Metrics["m/generative"] != 1 || er2.Counts.TextFallbacks != 8 || er2.Counts.JudgeFailures != 0 {
		t.Errorf("ignoring format: metrics %v counts %+v", er2.Summary.Metrics, er2.Counts)
	}
	if format == "text" && textCalls == 0 {
		t.Error("no build reply was in the authors' text format")
	}
	if len(badCaps) > 0 {
		t.Errorf("%d requests with another cap than the authors', first: %s", len(badCaps), badCaps[0])
	}
}

// buildReply is the fake server's JSON (or plain) reply to a build or
// evaluation request, counting the hallucinated-response requests.
func buildReply(lang, u string, r fakeollama.ChatRequest, halluCalls, singleCalls *int, ignoresFormat bool) fakeollama.Reply {
	seed, _ := r.Options["seed"].(float64)
	switch {
	case ignoresFormat && strings.Contains(u, "[冲突检测]"):
		return fakeollama.Reply{Content: "模型回复与正确答案不一致。\n**[冲突检测]：** 冲突"}
	case ignoresFormat && strings.Contains(u, "[Conflict check]"):
		return fakeollama.Reply{Content: "The years differ.\n[Conflict check]: Conflict"}
	case strings.Contains(u, "3个问题") || strings.Contains(u, "Generate 3 questions"):
		return fakeollama.Reply{Content: `{"items":[{"question":"Q1?","answer":"A1","evidence":"E1"},{"question":"Q2?","answer":"A2","evidence":"E2"}]}`}
	case strings.Contains(u, "生成3个不同的幻觉回复") || strings.Contains(u, "Generate 3 different hallucinated responses"):
		*halluCalls++
		return fakeollama.Reply{Content: `{"responses":["wrong answer 1","wrong answer 2","wrong answer 3"]}`}
	case strings.Contains(u, "幻觉回复生成者") || strings.Contains(u, "hallucinated-response writer"):
		*singleCalls++
		return fakeollama.Reply{Content: fmt.Sprintf(`{"response":"wrong answer %v"}`, seed)}
	case strings.Contains(u, "幻觉分类器") || strings.Contains(u, "hallucination classifier"):
		return fakeollama.Reply{Content: fmt.Sprintf(`{"label":"%s"}`, TypeName(lang, "EntErr"))}
	case strings.Contains(u, "正确性检验者") || strings.Contains(u, "correctness of question answering"):
		if strings.Contains(u, "Q2?") {
			return fakeollama.Reply{Content: `{"verdict":"uncertain","reason":"not in the evidence"}`}
		}
		return fakeollama.Reply{Content: `{"verdict":"pass","reason":"ok"}`}
	case strings.Contains(u, "错误性检验者") || strings.Contains(u, "checker of wrong answers"):
		return fakeollama.Reply{Content: `{"verdict":"pass","reason":"ok"}`}
	case strings.Contains(u, "幻觉类型检测员") || strings.Contains(u, "hallucination-type checker"):
		if strings.Contains(u, "wrong answer 3") {
			return fakeollama.Reply{Content: `{"verdict":"fail","reason":"not an entity"}`}
		}
		return fakeollama.Reply{Content: `{"verdict":"pass","reason":"ok"}`}
	case strings.Contains(u, "[冲突检测]") || strings.Contains(u, "[Conflict check]"):
		return fakeollama.Reply{Content: `{"conflict": true}`}
	case strings.Contains(u, "四个可能的选项") || strings.Contains(u, "four possible options"):
		return fakeollama.Reply{Content: "A"}
	case strings.Contains(u, "一个回答") || strings.Contains(u, "a question and an answer"):
		return fakeollama.Reply{Content: "True 正确"}
	}
	return fakeollama.Reply{Content: "an answer"}
}

func TestReadDocsErrors(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "d.jsonl")
	os.WriteFile(p, []byte("{\"id\":\"a\",\"knowledge\":\"x\"}\n{\"id\":\"b\"}\n"), 0o644)
	if _, err := ReadDocs(p); err == nil || !strings.Contains(err.Error(), "d.jsonl:2") {
		t.Errorf("err %v", err)
	}
	docs, err := ReadDocs(filepath.Join("..", "..", "testdata", "pubmed", "pubmedqa_contexts.jsonl"))
	if err != nil || len(docs) != 1000 {
		t.Errorf("PubMedQA abstracts: %d, %v", len(docs), err)
	}
	docs, err = ReadDocs(filepath.Join("..", "hic", "data", "CDID.csv"))
	if err != nil || len(docs) != 100 {
		t.Errorf("CDID knowledge: %d, %v", len(docs), err)
	}
	if _, err := ReadDocs(filepath.Join(dir, "missing")); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing: %v", err)
	}
}

// TestNoRateFromNothing: a model whose true/false replies about correct
// statements all went unscored has no false-positive rate: Figure 5 shows
// "–" and the summary has no such metric (never 0 from 0/0).
func TestNoRateFromNothing(t *testing.T) {
	tr, fa := true, false
	answers := []Answer{
		{Model: "m", Format: "truefalse", Scored: true, Statement: &fa, JudgedTrue: &tr, Hallucinated: true},
		{Model: "m", Format: "truefalse", Scored: false, Statement: &tr},
	}
	var recs []rundir.Record
	for i, a := range answers {
		b, _ := json.Marshal(a)
		recs = append(recs, rundir.Record{Item: fmt.Sprint(i), Data: b})
	}
	sum, err := (&Suite{}).Summarize(rundir.RecordsOf(recs))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := sum.Metrics["m/truefalse/fp_rate"]; ok {
		t.Errorf("fp_rate %v from no correct statement", sum.Metrics["m/truefalse/fp_rate"])
	}
	if row := sum.Tables[2].Rows[0]; row[1] != "100.00" || row[2] != "–" || row[4] != "0" {
		t.Errorf("Figure 5 row %v", row)
	}
	if row := sum.Tables[0].Rows[0]; row[1] != "–" || row[3] != "100.00 (n=1)" || row[4] != "–" {
		t.Errorf("Table 5 row %v", row)
	}
}

// TestReleasedLayoutErrors: a record of the released layout that lacks a
// field, names an unknown type, or marks a wrong option correct is an error
// naming the file and line, found before any model call.
func TestReleasedLayoutErrors(t *testing.T) {
	for _, tc := range []struct{ file, lines, want string }{
		{genFile, `{"question":"q","correct_answer":"a","halu_type":"实体错误","halu_answer":"h"}` + "\n" + `{"question":"q","halu_type":"实体错误","halu_answer":"h"}`,
			"generative_qa.jsonl:2: a generative record needs"},
		{genFile, `{"question":"q","correct_answer":"a","halu_type":"胡说","halu_answer":"h"}`, `generative_qa.jsonl:1: halu_type "胡说"`},
		{choiceFile, `{"question":"p","answers":["a","b","c","d"],"labels":["correct","实体错误","实体错误","实体错误"],"correct_option":"B"}`,
			`single_choice_qa.jsonl:1: correct_option B is labelled "EntErr"`},
	} {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, tc.file), []byte(tc.lines+"\n"), 0o644)
		if _, _, err := ReadDataset(dir); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want %q", tc.file, err, tc.want)
		}
	}
	if _, _, err := ReadDataset(t.TempDir()); err == nil || !strings.Contains(err.Error(), "dataset.json") {
		t.Errorf("empty directory: %v", err)
	}
}

// A reply to the one-call prompt: its numbered lines, whatever else the
// agent wrote around them; a missing, repeated or empty response loses
// the reply (the authors' code drops the question's responses).
func TestParseHaluAnswers(t *testing.T) {
	for _, c := range []struct {
		name, reply string
		want        []string
	}{
		{"verbatim", "[幻觉回复1]：甲\n[幻觉回复2]：乙\n[幻觉回复3]：丙", []string{"甲", "乙", "丙"}},
		{"preamble and markdown", "好的，以下是三个幻觉回复：\n\n**[幻觉回复1]**：甲\n- [幻觉回复2]: 乙\n[幻觉回复3]：丙\n希望有帮助。", []string{"甲", "乙", "丙"}},
		{"english, out of order", "[Hallucinated response 2]: b\n[Hallucinated response 1]: a\n[Hallucinated response 3]: c", []string{"a", "b", "c"}},
		{"one missing", "[幻觉回复1]：甲\n[幻觉回复3]：丙", nil},
		{"repeated", "[幻觉回复1]：甲\n[幻觉回复1]：乙\n[幻觉回复3]：丙", nil},
		{"placeholder left", "[幻觉回复1]：甲\n[幻觉回复2]：...\n[幻觉回复3]：丙", nil},
		{"fourth", "[幻觉回复1]：甲\n[幻觉回复2]：乙\n[幻觉回复3]：丙\n[幻觉回复4]：丁", nil},
	} {
		got, err := ParseHaluAnswers(c.reply, 3)
		if (c.want == nil) != (err != nil) || strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("%s: %q, %v; want %q", c.name, got, err, c.want)
		}
	}
	// Two asked for: the prompt's count and format lines say two.
	p := HaluAnswersPrompt("zh", RuleSet{}, 2, "Q", "A", "E")
	if !strings.Contains(p, "生成2个不同") || !strings.Contains(p, "[幻觉回复2]：...请为") || strings.Contains(p, "[幻觉回复3]") {
		t.Errorf("two responses asked as:\n%s", p)
	}
	if p3 := HaluAnswersPrompt("zh", RuleSet{}, 3, "Q", "A", "E"); !strings.Contains(p3, "[幻觉回复3]：...请为以下问题生成3个不同的幻觉回复：\n[问题]：Q\n[答案]：A\n[依据]：E\n") {
		t.Errorf("the authors' prompt not verbatim:\n%s", p3)
	}
}

// Table 5 counts unscored answers (an answer not read, or its judge reply
// not read) and names them so; the run's counts line counts judge replies
// never read. Two counts, two names: the demo's "unscored 9" beside
// "unscored judgements 0" was one name for both. An unscored choice answer
// (no letter read; no judge asked) is one unscored answer and no judge
// reply.
func TestUnscoredAnswersAreNotJudgeReplies(t *testing.T) {
	s := &Suite{}
	b, _ := json.Marshal(Answer{Model: "m", Format: "choice", ID: "c1", Response: "I am not sure.", Scored: false})
	sum, err := s.Summarize(rundir.RecordsOf([]rundir.Record{{Item: "c1", Data: b}}))
	if err != nil {
		t.Fatal(err)
	}
	t5 := sum.Tables[0]
	last := t5.Columns[len(t5.Columns)-1]
	if !strings.Contains(last, "unscored answers") || t5.Rows[0][len(t5.Rows[0])-1] != "1" {
		t.Errorf("Table 5: %q = %v", last, t5.Rows)
	}
	if sum.Tables[2].Rows != nil || !strings.Contains(sum.Tables[2].WhyEmpty(), "no true/false answer") {
		t.Errorf("Figure 5 with no true/false answer: %+v", sum.Tables[2])
	}
}

// --answer-format labels holds single-choice and true/false replies to
// {"answer": LABEL}: the request carries the schema (letters A–D, or
// true/false), a reply held to it is read as its label, and one cut before
// its object closed is unscored, never guessed. Generative answers are
// asked as the paper asks them.
func TestAnswerFormatLabels(t *testing.T) {
	var mu sync.Mutex
	var formats []string
	srv := fakeollama.New(func(r fakeollama.ChatRequest) fakeollama.Reply {
		mu.Lock()
		formats = append(formats, string(r.Format))
		mu.Unlock()
		switch f := string(r.Format); {
		case strings.Contains(f, `"A","B","C","D"`):
			return fakeollama.Reply{Content: `{"answer": "B"}`}
		case strings.Contains(f, `"true","false"`):
			if strings.Contains(r.LastUser(), "1928") {
				return fakeollama.Reply{Content: `{"answer": "tr`} // cut at the cap
			}
			return fakeollama.Reply{Content: `{"answer":"false"}`}
		case f != "":
			return fakeollama.Reply{Content: `{"conflict": false}`}
		}
		return fakeollama.Reply{Content: "an answer"}
	}, fakeollama.Model{Name: "m:latest", Digest: "d1", ParameterCount: 1e9})
	defer srv.Close()
	cfg := DefaultConfig()
	cfg.Data, cfg.Models, cfg.Judge, cfg.AnswerFormat = filepath.Join("..", "..", "testdata", "cfaith", "sample_en"), []string{"m"}, "m", "labels"
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e := enginetest.New(t, srv.Host(), 1)
	dir := filepath.Join(t.TempDir(), "run")
	if _, err := e.Run(context.Background(), s.Task(), engine.RunSpec{Dir: dir, Config: &cfg}); err != nil {
		t.Fatal(err)
	}
	_, recs, _ := engine.ReadRun(dir)
	count := map[string]int{}
	for _, r := range recs {
		a, err := rundir.Decode[Answer](r)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case a.Format == "choice" && a.Scored && a.Choice == "B":
			count["choice B"]++
		case a.Format == "truefalse" && a.Scored && a.JudgedTrue != nil && !*a.JudgedTrue:
			count["false"]++
		case a.Format == "truefalse" && !a.Scored:
			count["tf unscored"]++
		case a.Format == "generative":
			count["generative"]++
		default:
			t.Errorf("answer %+v", a)
		}
	}
	t.Logf("%v", count)
	if count["choice B"] != 3 || count["false"] != 5 || count["tf unscored"] != 1 || count["generative"] != 3 {
		t.Errorf("answers read: %v", count)
	}
}

// C-FAITH's confidence check: every record holds the answer's truth and
// its call's token scores. Hand-computed: four scored choice answers whose
// mean log-probabilities order the right ones (−0.1, −0.3) above the
// wrong (−0.5, −0.9) — AUROC 1 (too few of each for an interval), AURC
// 0.208 beside the error rate 0.5 — and a fifth unscored answer, left out;
// an answer whose call returned no log-probabilities is "not known".
func TestConfidenceAgainstTheGoldAnswers(t *testing.T) {
	conf := func(lp float64) []rundir.CallLog {
		return []rundir.CallLog{{Stage: "generate", Kind: "chat", Model: "m", Confidence: &metrics.TokenConfidence{Tokens: 3, MeanLogprob: lp, MinLogprob: lp, NegEntropy: lp}}}
	}
	type ans struct {
		a     Answer
		calls []rundir.CallLog
	}
	answers := []ans{
		{Answer{Model: "m", Format: "choice", Scored: true, Hallucinated: false, Choice: "A"}, conf(-0.1)},
		{Answer{Model: "m", Format: "choice", Scored: true, Hallucinated: true, Choice: "B"}, conf(-0.5)},
		{Answer{Model: "m", Format: "choice", Scored: true, Hallucinated: false, Choice: "A"}, conf(-0.3)},
		{Answer{Model: "m", Format: "choice", Scored: true, Hallucinated: true, Choice: "C"}, conf(-0.9)},
		{Answer{Model: "m", Format: "choice", Scored: false}, conf(-0.2)},
		{Answer{Model: "m", Format: "choice", Scored: true, Hallucinated: false, Choice: "A"}, []rundir.CallLog{{Stage: "generate", Kind: "chat", Model: "m"}}},
	}
	var recs []rundir.Record
	for i, x := range answers {
		b, _ := json.Marshal(x.a)
		recs = append(recs, rundir.Record{Item: fmt.Sprint(i), Data: b, Calls: x.calls})
	}
	sum, err := (&Suite{}).Summarize(rundir.RecordsOf(recs))
	if err != nil {
		t.Fatal(err)
	}
	var row []string
	for _, tb := range sum.Tables {
		if strings.HasPrefix(tb.Title, "Model-side confidence") {
			for _, r := range tb.Rows {
				if r[2] == "mean token log-prob" {
					row = r
				}
			}
		}
	}
	if got := strings.Join(row, " | "); got != "m | choice | mean token log-prob | 4 | 1 | 2 | 1.000 (no interval: 2 right, 2 wrong; it needs 5 of each) | 0.208 (0.500) | 0% of 1" {
		t.Errorf("confidence row: %q", got)
	}
	if a := sum.Metrics["m/choice.confidence.mean_logprob.aurc"]; math.Abs(a-5.0/24) > 1e-12 {
		t.Errorf("AURC figure %v, want 5/24", a)
	}
}
