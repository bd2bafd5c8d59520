package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"halu/localmodels"
	"halu/localmodels/fakeollama"
	"halu/metrics"
	"halu/runner/engine"
	"halu/runner/rundir"
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
// Windowed suite raised included — in its engine section, and nothing of
// them in the serving section, which holds the fingerprints alone.
func TestManifestRecordsTheEngineItRanWith(t *testing.T) {
	srv := server(t, goodJudge)
	dir := filepath.Join(t.TempDir(), "run")
	e := newEngine(t, srv.Host(), t.TempDir())
	e.Config.NumCtx, e.Config.NumThread, e.Config.KeepAlive, e.Config.Retries = 2048, 1, 7*time.Minute, 2
	if _, err := e.Run(context.Background(), &testSuite{n: 3}, engine.RunSpec{Dir: dir}); err != nil {
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
		res, err := e.Run(context.Background(), &testSuite{n: 3}, engine.RunSpec{Dir: dir})
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
// letter among them, or no alternatives, it is not known.
func TestPTrueOf(t *testing.T) {
	ln := math.Log
	lp := func(tok string, p float64) localmodels.Alternative {
		return localmodels.Alternative{Token: tok, Logprob: ln(p)}
	}
	resp := localmodels.ChatResponse{Logprobs: []localmodels.TokenLogprob{{Token: " A", Logprob: ln(0.6),
		Top: []localmodels.Alternative{lp(" A", 0.6), lp("A", 0.1), lp("B", 0.2), lp("The", 0.05)}}}}
	if p, ok := engine.PTrueOf(resp); !ok || math.Abs(p-0.7/0.9) > 1e-12 {
		t.Errorf("P(True) %v %v, want 0.7778", p, ok)
	}
	resp.Logprobs[0].Top = []localmodels.Alternative{lp("The", 0.5), lp("Yes", 0.3)}
	if p, ok := engine.PTrueOf(resp); ok || !math.IsNaN(p) {
		t.Errorf("no letter: %v %v", p, ok)
	}
	if _, ok := engine.PTrueOf(localmodels.ChatResponse{}); ok {
		t.Error("no log-probabilities, yet a P(True)")
	}
}

// A judge's P(verdict), by hand, at the token that begins the value after
// the field's last mention: JSON " true" 0.7 against " false" 0.2 (" maybe"
// neither): 0.7/0.9; text " No" 0.6 and "No" 0.05 against " Yes" 0.3:
// 0.65/0.95; a token holding the separator and the value, `": true` 0.9
// against `": false` 0.1: 0.9. Not known: a value other than the verdict
// read, no alternatives, no such field.
func TestVerdictProb(t *testing.T) {
	ln := math.Log
	tok := func(s string, p float64, top ...localmodels.Alternative) localmodels.TokenLogprob {
		return localmodels.TokenLogprob{Token: s, Logprob: ln(p), Top: top}
	}
	alt := func(s string, p float64) localmodels.Alternative {
		return localmodels.Alternative{Token: s, Logprob: ln(p)}
	}
	reply := func(ts ...localmodels.TokenLogprob) localmodels.ChatResponse {
		return localmodels.ChatResponse{Logprobs: ts}
	}
	inJSON := reply(tok(`{"`, 0.9), tok("hall", 0.9), tok("ucination", 0.9), tok(`":`, 0.9),
		tok(" true", 0.7, alt(" true", 0.7), alt(" false", 0.2), alt(" maybe", 0.05)), tok("}", 0.9))
	text := reply(tok("Hallucination", 0.5), tok(": yes", 0.5), tok(" —", 0.5), tok(" revised", 0.5), tok("\nHall", 0.9), tok("ucination", 0.9), tok(":", 0.9),
		tok(" No", 0.6, alt(" No", 0.6), alt(" Yes", 0.3), alt("No", 0.05)))
	joined := reply(tok(`{"hallucination`, 0.9), tok(`": true`, 0.9, alt(`": true`, 0.9), alt(`": false`, 0.1)), tok("}", 0.9))
	for _, tc := range []struct {
		name    string
		resp    localmodels.ChatResponse
		verdict bool
		want    float64 // NaN: not known
	}{
		{"json", inJSON, true, 0.7 / 0.9},
		{"text, its last mention", text, false, 0.65 / 0.95},
		{"separator and value in one token", joined, true, 0.9},
		{"another verdict read", inJSON, false, math.NaN()},
		{"no alternatives", reply(tok("hallucination", 1), tok(": ", 1), tok("no", 0.8)), false, math.NaN()},
		{"no such field", reply(tok("Score: 4", 1, alt("Score: 4", 1))), true, math.NaN()},
	} {
		p, ok := engine.VerdictProb(tc.resp, "hallucination", tc.verdict)
		if math.IsNaN(tc.want) != !ok || ok && math.Abs(p-tc.want) > 1e-12 {
			t.Errorf("%s: %v %v, want %v", tc.name, p, ok, tc.want)
		}
	}
}
