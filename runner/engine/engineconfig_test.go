package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"halu/localmodels"
	"halu/localmodels/fakeollama"
	"halu/metrics"
	"halu/runner/engine"
	"halu/runner/rundir"
	"halu/runner/summary"
)

// Every field of EngineConfig is a declared setting: set each to a value
// other than its default and the manifest's engine section, written from
// the declaration alone, gives the same config back. A field added without
// its setting line is lost on the way and fails here; the declaration is
// the only place an engine setting is written down.
func TestEveryEngineSettingIsDeclaredAndRecorded(t *testing.T) {
	var ec engine.EngineConfig
	v := reflect.ValueOf(&ec).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString("x" + v.Type().Field(i).Name)
		case reflect.Int, reflect.Int64:
			if f.Type() == reflect.TypeOf(time.Duration(0)) {
				f.SetInt(int64(time.Duration(i+1) * time.Second))
			} else {
				f.SetInt(int64(i + 2))
			}
		case reflect.Float64:
			f.SetFloat(0.25)
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Slice:
			f.Set(reflect.ValueOf([]string{"ollama=127.0.0.1:1", "ollama=127.0.0.1:2"}))
		case reflect.Pointer:
			x := float64(i)
			f.Set(reflect.ValueOf(&x))
		default:
			t.Fatalf("field %s of kind %s: extend this test", v.Type().Field(i).Name, f.Kind())
		}
	}
	ec.Readers = "paper" // a choice: one of its values
	b, err := json.Marshal(&ec)
	if err != nil {
		t.Fatal(err)
	}
	back := engine.EngineConfig{}
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, ec) {
		t.Errorf("the engine section loses a setting:\n wrote %+v\n read  %+v\n json %s", ec, back, b)
	}
	var keys map[string]json.RawMessage
	json.Unmarshal(b, &keys)
	if len(keys) != len(ec.Settings()) || len(ec.Settings()) != v.NumField() {
		t.Errorf("%d keys, %d settings, %d fields: one setting a field", len(keys), len(ec.Settings()), v.NumField())
	}
}

// The manifest records the settings the engine ran with — the window a
// suite's Window raised included — in its engine section, and nothing of
// them in the serving section, which holds the fingerprints alone.
func TestManifestRecordsTheEngineItRanWith(t *testing.T) {
	srv := server(t, goodJudge)
	dir := filepath.Join(t.TempDir(), "run")
	e := newEngine(t, srv.Host(), t.TempDir())
	e.Config.NumCtx, e.Config.NumThread, e.Config.KeepAlive, e.Config.Retries = 2048, 1, 7*time.Minute, 2
	if _, err := e.Run(context.Background(), (&testSuite{n: 3}).Task(), engine.RunSpec{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	m, err := rundir.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := engine.Recorded(m)
	if err != nil {
		t.Fatal(err)
	}
	want := e.Config
	want.Readers = "halu" // unset is the careful readers, recorded by name
	if !reflect.DeepEqual(got, want) {
		t.Errorf("recorded %+v\nran with %+v", got, want)
	}
	var raw struct {
		Serving map[string]json.RawMessage `json:"serving"`
	}
	b, _ := json.Marshal(m)
	json.Unmarshal(b, &raw)
	var keys []string
	for k := range raw.Serving {
		keys = append(keys, k)
	}
	if !slices.Equal(keys, []string{"fingerprints"}) {
		t.Errorf("serving section holds %v, want the fingerprints alone", keys)
	}
}

// With --logprobs N every generation asks for its tokens' log-probabilities
// and N alternatives; the record's call log carries the reply's confidence,
// computed by hand here. The cache keys say they were asked: the same run
// again is answered by the cache with the same figures, and a run that
// does not ask is not answered by replies cached with them, nor they by it.
func TestLogprobsRecordedAndKeyed(t *testing.T) {
	srv := server(t, goodJudge)
	srv.SetChat(func(r fakeollama.ChatRequest) fakeollama.Reply {
		if r.Model == "judge" {
			return fakeollama.Reply{Content: `{"score": 4}`}
		}
		// Tokens at log-probabilities −0.2 and −1.0; alternatives at the
		// first position two equal ones (entropy ln 2), at the second one
		// (entropy 0).
		return fakeollama.Reply{Content: "answer to " + r.LastUser(), Logprobs: []fakeollama.Logprob{
			{Token: "answer", Logprob: -0.2, Top: []fakeollama.Logprob{{Token: "answer", Logprob: -0.7}, {Token: "reply", Logprob: -0.7}}},
			{Token: " to", Logprob: -1.0, Top: []fakeollama.Logprob{{Token: " to", Logprob: -1.0}}},
		}}
	})
	cache := t.TempDir()
	run := func(logprobs int) (*engine.Result, []rundir.Record) {
		e := newEngine(t, srv.Host(), cache)
		e.Config.Logprobs = logprobs
		dir := filepath.Join(t.TempDir(), "run")
		res, err := e.Run(context.Background(), (&testSuite{n: 3}).Task(), engine.RunSpec{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		_, recs, _ := engine.ReadRun(dir)
		return res, recs
	}
	res, recs := run(2)
	if res.Counts.ModelCalls != 6 {
		t.Fatalf("%d calls, want 6", res.Counts.ModelCalls)
	}
	for _, c := range srv.Chats() {
		if !c.Logprobs || c.TopLogprobs != 2 {
			t.Fatalf("a call asked logprobs %v, top %d", c.Logprobs, c.TopLogprobs)
		}
	}
	// What came back, counted per model: the generations' 4 tokens (the
	// fake counts words) with 2 log-probabilities, so 1 missing besides
	// the end-of-sequence token; the judge's replies, held to a schema,
	// came with none.
	var lt []string
	for _, tb := range res.Summary.Tables {
		if strings.HasPrefix(tb.Title, "Token log-probabilities asked for") {
			for _, r := range tb.Rows {
				lt = append(lt, strings.Join(r, " "))
			}
		}
	}
	if strings.Join(lt, "; ") != "gen 3 0 0 12 6 3; judge 3 3 0 6 0 0" {
		t.Errorf("log-probability counts: %q", lt)
	}
	gen := recs[0].Calls[0]
	want := "tokens 2, mean −0.600000, min −1.000000, seq 0.548812, neg entropy −0.346574, top 2"
	got := func(c *metrics.TokenConfidence) string {
		if c == nil {
			return "none"
		}
		return strings.ReplaceAll(fmt.Sprintf("tokens %d, mean %f, min %f, seq %f, neg entropy %f, top %d", c.Tokens, c.MeanLogprob, c.MinLogprob, c.SeqProb, c.NegEntropy, c.TopK), "-", "−")
	}
	if g := got(gen.Confidence); gen.Stage != "generate" || g != want {
		t.Errorf("%s call's confidence: %s\nwant %s", gen.Stage, g, want)
	}
	again, recs2 := run(2)
	gen2 := recs2[0].Calls[0]
	if again.Counts.ModelCalls != 0 || got(gen2.Confidence) != want {
		t.Errorf("cached rerun: %d calls, confidence %s", again.Counts.ModelCalls, got(gen2.Confidence))
	}
	plain, recs3 := run(0)
	gen3 := recs3[0].Calls[0]
	if plain.Counts.ModelCalls != 6 || gen3.Confidence != nil {
		t.Errorf("a run not asking: %d calls (want 6: none answered by replies asked with logprobs), confidence %v", plain.Counts.ModelCalls, gen3.Confidence)
	}
}

// P(True) by hand: the first token's alternatives " A" 0.6, "A" 0.1, "B"
// 0.2 and "The" 0.05 give A 0.7 of A and B's 0.9: 0.7778. With neither
// letter among them, no alternatives or no log-probabilities, it is not
// known.
func TestPTrueOf(t *testing.T) {
	ln := math.Log
	lp := func(tok string, p float64) localmodels.Alternative {
		return localmodels.Alternative{Token: tok, Logprob: ln(p)}
	}
	resp := localmodels.ChatResponse{Logprobs: []localmodels.TokenLogprob{{Token: " A", Logprob: ln(0.6),
		Top: []localmodels.Alternative{lp(" A", 0.6), lp("A", 0.1), lp("B", 0.2), lp("The", 0.05)}}}}
	if p, why := engine.PTrueOf(resp); why != "" || math.Abs(p-0.7/0.9) > 1e-12 {
		t.Errorf("P(True) %v (%s), want 0.7778", p, why)
	}
	resp.Logprobs[0].Top = []localmodels.Alternative{lp("The", 0.5), lp("Yes", 0.3)}
	if p, why := engine.PTrueOf(resp); why != engine.PTrueNoLetter || !math.IsNaN(p) {
		t.Errorf("no letter: %v %q", p, why)
	}
	if _, why := engine.PTrueOf(localmodels.ChatResponse{}); why != engine.PTrueNoLogprobs {
		t.Errorf("no log-probabilities: %q", why)
	}
	// A server that ignores top_logprobs: the chosen "A" alone is no
	// P(True) of 1.
	if p, why := engine.PTrueOf(localmodels.ChatResponse{Logprobs: []localmodels.TokenLogprob{{Token: "A", Logprob: ln(0.4)}}}); why != engine.PTrueNoAlternative {
		t.Errorf("no alternatives: P(True) %v (%q)", p, why)
	}
}

// A judge's P(verdict), by hand, on the token streams of
// testdata/replies/tokens/verdict.yaml (real judges' styles): at the token
// that begins the value after the field's one mention, the chosen value's
// probability over it and its opposite among the alternatives; not known
// for two mentions (a revision, a quoted fake verdict), no alternatives,
// or a value other than the verdict read. Also: the separator and the
// value in one token, and no such field.
func TestVerdictProb(t *testing.T) {
	var cases []struct {
		Style   string  `yaml:"style"`
		Verdict bool    `yaml:"verdict"`
		Tokens  [][]any `yaml:"tokens"`
		Want    string  `yaml:"want"`
	}
	readTokenCases(t, "verdict.yaml", &cases)
	for _, c := range cases {
		resp := tokenStream(t, c.Tokens)
		p, ok := engine.VerdictProb(resp, "hallucination", c.Verdict)
		got := "unknown"
		if ok {
			got = fmt.Sprintf("%.6f", p)
		}
		if got != c.Want {
			t.Errorf("%s: %s, want %s", c.Style, got, c.Want)
		}
	}
	ln := math.Log
	joined := localmodels.ChatResponse{Logprobs: []localmodels.TokenLogprob{{Token: `{"hallucination`, Logprob: ln(0.9)},
		{Token: `": true`, Logprob: ln(0.9), Top: []localmodels.Alternative{{Token: `": true`, Logprob: ln(0.9)}, {Token: `": false`, Logprob: ln(0.1)}}}}}
	if p, ok := engine.VerdictProb(joined, "hallucination", true); !ok || math.Abs(p-0.9) > 1e-12 {
		t.Errorf("separator and value in one token: %v %v, want 0.9", p, ok)
	}
	if _, ok := engine.VerdictProb(localmodels.ChatResponse{Logprobs: []localmodels.TokenLogprob{{Token: "Score: 4", Logprob: 0}}}, "hallucination", true); ok {
		t.Error("no such field, yet a P(verdict)")
	}
}

// A judge's G-Eval expected score, on realistic token streams
// (testdata/replies/tokens/scores.yaml, each value computed by hand there).
func TestExpectedScore(t *testing.T) {
	var cases []struct {
		Style  string  `yaml:"style"`
		Field  string  `yaml:"field"`
		Read   int     `yaml:"read"`
		Tokens [][]any `yaml:"tokens"`
		Want   string  `yaml:"want"`
	}
	readTokenCases(t, "scores.yaml", &cases)
	if len(cases) < 10 {
		t.Fatalf("%d cases", len(cases))
	}
	for _, c := range cases {
		e, ok := engine.ExpectedScore(tokenStream(t, c.Tokens), c.Field, c.Read, 1, 5)
		got := "unknown"
		if ok {
			got = fmt.Sprintf("%.6f", e)
		}
		if got != c.Want {
			t.Errorf("%s: %s, want %s", c.Style, got, c.Want)
		}
	}
}

// readTokenCases reads testdata/replies/tokens/NAME into cases.
func readTokenCases(t *testing.T, name string, cases any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "replies", "tokens", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, cases); err != nil {
		t.Fatal(err)
	}
}

// tokenStream is a reply of tokens written [token, probability,
// [alternative, probability]…].
func tokenStream(t *testing.T, tokens [][]any) localmodels.ChatResponse {
	t.Helper()
	num := func(v any) float64 {
		switch x := v.(type) {
		case float64:
			return x
		case int:
			return float64(x)
		}
		t.Fatalf("not a number: %v", v)
		return 0
	}
	var resp localmodels.ChatResponse
	for _, tk := range tokens {
		tl := localmodels.TokenLogprob{Token: tk[0].(string), Logprob: math.Log(num(tk[1]))}
		for _, a := range tk[2:] {
			pair := a.([]any)
			tl.Top = append(tl.Top, localmodels.Alternative{Token: pair[0].(string), Logprob: math.Log(num(pair[1]))})
		}
		resp.Logprobs = append(resp.Logprobs, tl)
	}
	return resp
}

// A reply held to a schema (the judge's JSON format) comes with the
// unconstrained model's log-probabilities: its confidence is kept, marked,
// counted per model, and gives no token score to any confidence check.
func TestGrammarHeldLogprobsMarked(t *testing.T) {
	srv := server(t, goodJudge)
	srv.SetChat(func(r fakeollama.ChatRequest) fakeollama.Reply {
		if r.Model == "judge" {
			return fakeollama.Reply{Content: `{"score": 4}`, Logprobs: []fakeollama.Logprob{{Token: `{"score":`, Logprob: -0.01}, {Token: " 4}", Logprob: -3}}}
		}
		return fakeollama.Reply{Content: "an answer", Logprobs: []fakeollama.Logprob{{Token: "an", Logprob: -0.5}, {Token: " answer", Logprob: -0.5}}}
	})
	e := newEngine(t, srv.Host(), t.TempDir())
	e.Config.Logprobs = 1
	dir := filepath.Join(t.TempDir(), "run")
	if _, err := e.Run(context.Background(), (&testSuite{n: 2}).Task(), engine.RunSpec{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	_, recs, _ := engine.ReadRun(dir)
	for _, c := range recs[0].Calls {
		held := c.Kind == "judge"
		if c.Confidence == nil || c.Confidence.Grammar != held || (summary.TokenScores(c.Confidence) == nil) != held {
			t.Errorf("%s call: confidence %+v, token scores %v", c.Kind, c.Confidence, summary.TokenScores(c.Confidence))
		}
	}
	lt, _ := summary.LogprobTable(recs)
	if got := fmt.Sprint(lt.Rows); got != "[[gen 2 0 0 4 4 0] [judge 2 0 2 4 4 0]]" {
		t.Errorf("log-probability counts %s", got)
	}
}
