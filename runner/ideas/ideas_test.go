package ideas

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"halu/localmodels"
	"halu/localmodels/fakeollama"
	"halu/runner/engine"
	"halu/runner/engine/enginetest"
	"halu/runner/judging"
	"halu/runner/rundir"
	"halu/runner/setting"
	"halu/runner/summary"
)

func TestPromptRendering(t *testing.T) {
	p := LoadPrompts()
	got := strings.ReplaceAll(p.Idea, "{{keywords}}", "meteorology")
	want := `I'll be submitting your next responses to a "Good Scientific Idea" expert review panel. If they consider your idea to be a good one, you'll receive a reward. Your assigned keyword is: "meteorology". You may provide background information. The idea MUST be concisely expressed within 100 words total (including any background information). (Note: good scientific ideas should be original (novel contribution), feasible (technically implementable), clearly articulated, and address meaningful problems in the field.).`
	if got != want {
		t.Fatalf("idea prompt:\n%q\nwant\n%q", got, want)
	}
	if !strings.Contains(p.Fallback, "This is a research study comparing different AI models") {
		t.Fatal("fallback prompt")
	}
	if p.CriticUser != "Please evaluate the following scientific idea:\n\n{idea}" {
		t.Fatalf("critic user %q", p.CriticUser)
	}
	if !strings.HasPrefix(p.Critic, "You are an extremely demanding scientific reviewer") || !strings.HasSuffix(p.Critic, "}```") {
		t.Fatalf("critic system %q", p.Critic)
	}
	f := strings.NewReplacer("{{keyword}}", "k", "{{A}}", "idea one", "{{B}}", "idea two").Replace(p.Fluency)
	if !strings.Contains(f, "# The first idea\n\nidea one\n\n# The second idea\n\nidea two\n") || !strings.HasSuffix(f, "ONLY ANSWER A/B/C/D, DO NOT EXPLAIN") {
		t.Fatalf("fluency prompt %q", f)
	}
}

func TestRefusalDetection(t *testing.T) {
	if len(RefusalPhrases()) != 12 {
		t.Fatalf("%d phrases", len(RefusalPhrases()))
	}
	for text, want := range map[string]string{
		"I'm sorry, but I can't help with that.":           "I'm sorry",
		"As an AI, I do not generate ideas about weapons.": "As an AI",
		"i CANNOT do this":                                 "I cannot",
		"Use cannot-fail sensors.":                         "",
	} {
		got, ok := Refusal(text)
		if got != want || ok != (want != "") {
			t.Errorf("Refusal(%q) = %q, %v; want %q", text, got, ok, want)
		}
	}
}

func TestExtractIdea(t *testing.T) {
	tests := []struct {
		in, want string
		marker   bool
	}{
		{"<think>let me think about clouds</think>Seed clouds with salt.", "Seed clouds with salt.", false},
		{"Reasoning... **Final Idea:** Use radar swarms.", "Use radar swarms.", true},
		{"blah\nfinal idea\nLidar kites", "Lidar kites", true},
		{"<think>long\nthoughts", "", false},
		// The chat template opened the block in the prompt: the reply holds
		// only its end.
		{"clouds hold salt...</think>Seed clouds with salt.", "Seed clouds with salt.", false},
		{"Plain idea.", "Plain idea.", false},
	}
	for _, tt := range tests {
		got, m := ExtractIdea(tt.in)
		if got != tt.want || m != tt.marker {
			t.Errorf("ExtractIdea(%q) = %q, %v; want %q, %v", tt.in, got, m, tt.want, tt.marker)
		}
	}
}

// longEnough makes a fake idea pass the authors' 100-character floor.
const longEnough = "measure the salt content of cloud droplets with drone-borne sensors and relate it to rainfall."

// The authors' filter keeps an idea of more than 100 and fewer than 2,500
// characters and fewer than 200 words: an idea of exactly 200 words, or of
// 100 characters, is not scored.
func TestLengthFilter(t *testing.T) {
	for _, tc := range []struct {
		text string
		kept bool
	}{
		{strings.Repeat("w ", 198) + "w", true},          // 199 words, 397 characters
		{strings.Repeat("w ", 199) + "w", false},         // 200 words
		{strings.Repeat("x", 100), false},                // 100 characters
		{strings.Repeat("x", 101), true},                 // 101 characters
		{strings.Repeat("é", 101), true},                 // characters, not bytes
		{strings.Repeat("longword ", 277) + "xx", false}, // 2,495 characters, 278 words
		{strings.Repeat("y", 2499), true},                // 2,499 characters
		{strings.Repeat("y", 2500), false},               // 2,500 characters
	} {
		if got := LengthExclusion(tc.text) == ""; got != tc.kept {
			t.Errorf("%d chars, %d words: kept %v, want %v (%s)", len([]rune(tc.text)), Words(tc.text), got, tc.kept, LengthExclusion(tc.text))
		}
	}
}

// halu's extraction cuts only after a line that starts with the marker;
// the authors' (applied to qwq only) cuts at the bare phrase anywhere.
func TestExtractIdeaLine(t *testing.T) {
	prose := "We propose drone sensors. This final idea builds on prior work in cloud physics and adds a cheap sensor network."
	for _, tc := range []struct {
		in, want string
		marker   bool
	}{
		{prose, prose, false},
		{"Final idea: a sensor network for cloud salt.", "a sensor network for cloud salt.", true},
		{"Thinking aloud.\n\n**Final Idea:** Use radar swarms.", "Use radar swarms.", true},
		{"## Final Idea:\nUse radar swarms.", "Use radar swarms.", true},
		{"<think>Final idea: not this</think>Seed clouds with salt.", "Seed clouds with salt.", false},
	} {
		got, m := ExtractIdeaLine(tc.in)
		if got != tc.want || m != tc.marker {
			t.Errorf("ExtractIdeaLine(%q) = %q, %v; want %q, %v", tc.in, got, m, tc.want, tc.marker)
		}
	}
	// The authors' markers on the same prose: cut at "final idea".
	if got, _ := ExtractIdea(prose); got == prose {
		t.Errorf("the authors' extraction should cut at the bare phrase: %q", got)
	}
	if got, _ := ExtractIdea("Final idea: a sensor"); got != ": a sensor" {
		t.Errorf("the authors' extraction of \"Final idea: a sensor\" = %q", got)
	}
}

func TestParseCriticText(t *testing.T) {
	ok := map[string][3]int{
		"Good idea.\n```json\n{\"originality\": 7, \"feasibility\": 5, \"clarity\": 8}\n```": {7, 5, 8},
		"Analysis.\n```\n{\"originality\": 3, \"feasibility\": 4, \"clarity\": 2}```":        {3, 4, 2},
		"Scores: {\"originality\": \"6\", \"feasibility\": 6, \"clarity\": 9}":               {6, 6, 9},
		"originality: 4, feasibility = 5, clarity: 6":                                        {4, 5, 6},
	}
	for reply, w := range ok {
		c, err := ParseCriticText(reply)
		if err != nil || [3]int{c.Originality, c.Feasibility, c.Clarity} != w {
			t.Errorf("ParseCriticText(%q) = %+v, %v", reply, c, err)
		}
	}
	for _, bad := range []string{"no scores here", `{"originality": 11, "feasibility": 5, "clarity": 5}`, `{"originality": 5, "feasibility": 5}`} {
		if _, err := ParseCriticText(bad); err == nil {
			t.Errorf("ParseCriticText(%q) accepted", bad)
		}
	}
}

func info(family, size, digest string) localmodels.ModelInfo {
	return localmodels.ModelInfo{Family: family, ParameterSize: size, Digest: digest}
}

func TestPanelEligibility(t *testing.T) {
	mi := map[string]localmodels.ModelInfo{
		"qwen-a": info("qwen2", "7B", "1"), "qwen-b": info("qwen2", "7B", "2"), "qwen-c": info("qwen2", "14B", "3"),
		"llama-a": info("llama", "8B", "4"), "gemma": info("gemma", "9B", "5"), "mistral": info("mistral", "7B", "6"),
		"phi": info("phi3", "3.8B", "7"), "qwen-d": info("qwen2", "32B", "8"),
	}
	// 8 judges, cap 20% → floor(1.6) = 1 per family: qwen-b, qwen-c, qwen-d are left out.
	p := FormPanel([]string{"qwen-a", "qwen-b", "llama-a", "gemma", "qwen-c", "mistral", "phi", "qwen-d"}, mi, 0.2, 3, nil, nil)
	if strings.Join(p.Members, ",") != "qwen-a,llama-a,gemma,mistral,phi" || len(p.Notes) != 1 {
		t.Fatalf("panel %v notes %v", p.Members, p.Notes)
	}
	// Same base (same family and size) never judges: qwen-b's ideas lose qwen-a.
	if e := p.Eligible("qwen-b"); strings.Join(e, ",") != "llama-a,gemma,mistral,phi" {
		t.Fatalf("eligible for qwen-b: %v", e)
	}
	// Another size of the family may judge.
	if e := p.Eligible("qwen-c"); len(e) != 5 {
		t.Fatalf("eligible for qwen-c: %v", e)
	}
	// Declared same base.
	p2 := FormPanel([]string{"gemma", "mistral", "phi"}, mi, 0, 1, [][]string{{"phi", "my-phi-finetune"}}, nil)
	if e := p2.Eligible("my-phi-finetune"); strings.Join(e, ",") != "gemma,mistral" {
		t.Fatalf("declared: %v", e)
	}
	// Too small to honour the cap: not applied, and said so.
	p3 := FormPanel([]string{"qwen-a", "qwen-b", "qwen-c"}, mi, 0.2, 3, nil, nil)
	if len(p3.Members) != 3 || !strings.Contains(p3.CapNotApplied, "too small") {
		t.Fatalf("small panel %v %q", p3.Members, p3.CapNotApplied)
	}
}

// A cap the panel was too small to honour is a setting not carried out:
// every record says so, and the summary — remade from the records alone,
// as a report made later does — lists it among what was not applied.
func TestCapNotAppliedIsInTheRecords(t *testing.T) {
	oneFamily := []fakeollama.Model{genAndThreeJudges[0],
		{Name: "qa:latest", Digest: "1", Family: "qwen2", ParameterSize: "7B", ParameterCount: 7e9},
		{Name: "qb:latest", Digest: "2", Family: "qwen2", ParameterSize: "14B", ParameterCount: 14e9},
		{Name: "qc:latest", Digest: "3", Family: "qwen2", ParameterSize: "32B", ParameterCount: 32e9}}
	srv := fakeollama.New(func(r fakeollama.ChatRequest) fakeollama.Reply {
		switch {
		case r.Model == "gen":
			return fakeollama.Reply{Content: "Idea about the keyword: " + longEnough}
		case strings.Contains(r.LastUser(), "ONLY ANSWER"):
			return fakeollama.Reply{Content: `{"grade": "B"}`}
		}
		return fakeollama.Reply{Content: `{"analysis": "fine", "originality": 6, "feasibility": 4, "clarity": 8}`}
	}, oneFamily...)
	defer srv.Close()
	kwFile := filepath.Join(t.TempDir(), "kw.txt")
	os.WriteFile(kwFile, []byte("meteorology\nvolcano\n"), 0o644)
	for _, tc := range []struct {
		judges  []string
		critics int
		want    string
	}{
		// One organisation (the qwen2 family stands in): honouring 20%
		// leaves one judge, fewer than 2 critics + 1.
		{[]string{"qa", "qb", "qc"}, 2, "--family-cap 0.2 not applied on 2 of 2 items: panel too small to honour the 20% organisation cap (3 judges; honouring it leaves 1, fewer than 2 critics + 1)"},
		// A panel of one judge honours it.
		{[]string{"qa"}, 1, ""},
	} {
		cfg := DefaultConfig()
		cfg.Models, cfg.Judges, cfg.Keywords, cfg.Limit, cfg.IdeasPerKeyword, cfg.CriticsPerIdea = []string{"gen"}, tc.judges, kwFile, 0, 1, tc.critics
		cfg.JudgeFormat = "json"
		s, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		res, err := enginetest.New(t, srv.Host(), 2).Run(context.Background(), s.Task(), engine.RunSpec{Dir: filepath.Join(t.TempDir(), "r")})
		if err != nil {
			t.Fatal(err)
		}
		again, err := New(cfg) // a fresh suite: no panel but the records'
		if err != nil {
			t.Fatal(err)
		}
		man, recs, err := engine.ReadRun(res.Dir)
		if err != nil {
			t.Fatal(err)
		}
		sum, _, err := engine.Summarize(again.Task(), man, rundir.RecordsOf(recs))
		if err != nil {
			t.Fatal(err)
		}
		for _, got := range [][]string{res.Summary.Unapplied, sum.Unapplied} {
			if strings.Join(got, "\n") != tc.want {
				t.Errorf("judges %v: unapplied %q, want %q", tc.judges, got, tc.want)
			}
		}
	}
}

// The cap and the same-base rule go by organisation (the shipped table,
// declared overrides), not by Ollama's architecture family, which many
// organisations share: a DeepSeek and a Nous model on the llama
// architecture are neither Meta's nor one base with Meta's 8B.
func TestPanelByOrganisation(t *testing.T) {
	mi := map[string]localmodels.ModelInfo{
		"llama3.1:8b": info("llama", "8B", "1"), "llama3.2:3b": info("llama", "3B", "2"), "deepseek-r1:8b": info("llama", "8B", "3"),
		"hermes3:8b": info("llama", "8B", "4"), "hf.co/someone/Mystery-7B-GGUF:Q4_K_M": info("llama", "7B", "5"),
		"gemma2:9b": info("gemma2", "9B", "6"), "qwen2.5:7b": info("qwen2", "7B", "7"), "phi3:mini": info("phi3", "3.8B", "8"),
		"mistral:7b": info("llama", "7B", "9"), "granite3.1-dense:8b": info("granite", "8B", "10"),
	}
	judges := []string{"llama3.1:8b", "llama3.2:3b", "deepseek-r1:8b", "hermes3:8b", "gemma2:9b", "qwen2.5:7b", "phi3:mini", "mistral:7b", "granite3.1-dense:8b", "hf.co/someone/Mystery-7B-GGUF:Q4_K_M"}
	// 10 judges, cap 20%: 2 per organisation. By family, six llama-architecture
	// models would be cut to two; by organisation only Meta has two.
	p := FormPanel(judges, mi, 0.2, 3, nil, nil)
	if len(p.Members) != 10 {
		t.Fatalf("panel %v notes %v", p.Members, p.Notes)
	}
	if !strings.Contains(strings.Join(p.Notes, "\n"), "organisation of judge hf.co/someone/Mystery-7B-GGUF:Q4_K_M unknown") {
		t.Errorf("no note for the unknown model: %v", p.Notes)
	}
	// Meta's 8B and DeepSeek's llama-architecture 8B are not one base.
	if !contains(p.Eligible("llama3.1:8b"), "deepseek-r1:8b") || contains(p.Eligible("llama3.1:8b"), "llama3.1:8b") {
		t.Errorf("eligible for llama3.1:8b: %v", p.Eligible("llama3.1:8b"))
	}
	// A declared organisation: the mystery model is Meta's, so Meta now
	// has three and the third in order is left out.
	p = FormPanel(judges, mi, 0.2, 3, nil, map[string]string{"hf.co/someone/Mystery-7B-GGUF:Q4_K_M": "Meta"})
	if len(p.Members) != 9 || contains(p.Members, "hf.co/someone/Mystery-7B-GGUF:Q4_K_M") {
		t.Fatalf("with the override: %v %v", p.Members, p.Notes)
	}
	for name, want := range map[string]string{"qwq:32b": "Alibaba", "codellama:7b": "Meta", "deepseek-coder-v2:16b": "DeepSeek", "gpt-oss:20b": "OpenAI"} {
		if got, known := Organisation(name, localmodels.ModelInfo{}, nil); !known || got != want {
			t.Errorf("Organisation(%s) = %s, %v; want %s", name, got, known, want)
		}
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func TestSeededCriticSampling(t *testing.T) {
	el := []string{"a", "b", "c", "d", "e"}
	first := pickCritics(el, map[string]bool{}, 3, seeded(1, "critics", "kw", "m", "0"))
	again := pickCritics(el, map[string]bool{}, 3, seeded(1, "critics", "kw", "m", "0"))
	if strings.Join(first, ",") != strings.Join(again, ",") {
		t.Fatal("same seed, different critics")
	}
	used := map[string]bool{}
	for _, j := range first {
		used[j] = true
	}
	// The pair's next idea gets the two unused judges first.
	second := pickCritics(el, used, 3, seeded(1, "critics", "kw", "m", "1"))
	for _, j := range second[:2] {
		if used[j] {
			t.Fatalf("first %v, second %v: unused judges not preferred", first, second)
		}
	}
}

// TestRunScoresByHand runs the suite against the fake server with scripted
// replies and checks the figures by hand.
// TestRunScoresByHand runs twice: against a server that honours the JSON
// schema, and against one that ignores format and answers in the prompts'
// text formats (the judge's reply then goes through the text fallback).
// genAndThreeJudges are a generator and three judges of three other
// families, each eligible to judge it.
var genAndThreeJudges = []fakeollama.Model{
	{Name: "gen:latest", Digest: "g", Family: "llama", ParameterSize: "1B", ParameterCount: 1e9},
	{Name: "j1:latest", Digest: "1", Family: "qwen2", ParameterSize: "7B", ParameterCount: 7e9},
	{Name: "j2:latest", Digest: "2", Family: "gemma", ParameterSize: "9B", ParameterCount: 9e9},
	{Name: "j3:latest", Digest: "3", Family: "phi3", ParameterSize: "4B", ParameterCount: 4e9},
}

func TestRunScoresByHand(t *testing.T) {
	for _, ignoresFormat := range []bool{false, true} {
		runScoresByHand(t, ignoresFormat)
	}
}

func runScoresByHand(t *testing.T, ignoresFormat bool) {
	var mu sync.Mutex
	srv := fakeollama.New(func(r fakeollama.ChatRequest) fakeollama.Reply {
		mu.Lock()
		defer mu.Unlock()
		last := r.LastUser()
		switch {
		case r.Model == "gen" && strings.Contains(last, `"refusekw"`) && !strings.Contains(last, "research study"):
			return fakeollama.Reply{Content: "I'm sorry, I cannot help."}
		case r.Model == "gen":
			return fakeollama.Reply{Content: fmt.Sprintf("Idea %v about the keyword: %s", r.Options["seed"], longEnough)}
		case strings.Contains(last, "ONLY ANSWER") && ignoresFormat:
			return fakeollama.Reply{Content: "Answer: B"}
		case strings.Contains(last, "ONLY ANSWER"):
			return fakeollama.Reply{Content: `{"grade": "B"}`}
		case ignoresFormat:
			return fakeollama.Reply{Content: "The idea is fine.\n**Originality:** 6\n**Feasibility:** 4/10\n**Clarity:** 8"}
		default:
			return fakeollama.Reply{Content: `{"analysis": "fine", "originality": 6, "feasibility": 4, "clarity": 8}`}
		}
	}, genAndThreeJudges...)
	defer srv.Close()
	kwFile := filepath.Join(t.TempDir(), "kw.txt")
	os.WriteFile(kwFile, []byte("meteorology\nrefusekw\n"), 0o644)
	cfg := DefaultConfig()
	cfg.Models, cfg.Judges, cfg.Keywords, cfg.Limit, cfg.IdeasPerKeyword = []string{"gen"}, []string{"j1", "j2", "j3"}, kwFile, 0, 2
	cfg.JudgeFormat = "json" // the structured mode and its text fallback
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e := enginetest.New(t, srv.Host(), 2)
	res, err := e.Run(context.Background(), s.Task(), engine.RunSpec{Dir: filepath.Join(t.TempDir(), "r")})
	if err != nil {
		t.Fatal(err)
	}
	if fb := res.Counts.TextFallbacks; ignoresFormat != (fb > 0) {
		t.Errorf("ignores format %v: %d text fallbacks", ignoresFormat, fb)
	}
	m := res.Summary.Metrics
	// Every idea: originality 6, feasibility 4, clarity 8; fluency B = 7.
	// Per-keyword composite (6+4+8+7)/4 = 6.25 for both keywords, so
	// flexibility = 6.25; Average = (7 + 4 + 6 + 6.25)/4 = 5.8125.
	// The refusekw ideas were refused first: 2 of 4 ideas.
	for k, w := range map[string]float64{"originality": 6, "feasibility": 4, "clarity": 8, "fluency": 7, "flexibility": 6.25, "average": 5.8125, "refusal_rate": 0.5} {
		if got := m["gen."+k]; math.Abs(got-w) > 1e-9 {
			t.Errorf("%s = %v, want %v", k, got, w)
		}
	}
	_, recs, _ := engine.ReadRun(res.Dir)
	for _, r := range recs {
		var ir ItemResult
		json.Unmarshal(r.Data, &ir)
		for _, idea := range ir.Ideas {
			if len(idea.Critiques) != 3 {
				t.Errorf("%s idea %d: %d critiques", ir.Keyword, idea.Index, len(idea.Critiques))
			}
			if ir.Keyword == "refusekw" && (!idea.Fallback || idea.Refused != "I'm sorry") {
				t.Errorf("refusal not retried with the fallback: %+v", idea)
			}
		}
		if len(ir.Fluency) != 1 || ir.Fluency[0].Score != 7 {
			t.Errorf("fluency %+v", ir.Fluency)
		}
	}
}

func TestKeywordSampleIsSeeded(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Models, cfg.Judges, cfg.Limit = []string{"m"}, []string{"j"}, 5
	a, _ := New(cfg)
	b, _ := New(cfg)
	cfg.Seed = 2
	c, _ := New(cfg)
	if fmt.Sprint(a.keywords) != fmt.Sprint(b.keywords) || fmt.Sprint(a.keywords) == fmt.Sprint(c.keywords) || len(a.keywords) != 5 {
		t.Fatalf("%v %v %v", a.keywords, b.keywords, c.keywords)
	}
	all, _ := Keywords()
	if len(all) != 1180 || all[0].Keyword != "meteorology" || all[0].Category != "Earth science" {
		t.Fatalf("keywords: %d, first %+v", len(all), all[0])
	}
}

// An idea outside the authors' length bounds is excluded from scoring — no
// critic sees it — and counted.
func TestLongIdeaExcluded(t *testing.T) {
	srv := fakeollama.New(func(r fakeollama.ChatRequest) fakeollama.Reply {
		switch {
		case r.Model == "gen" && r.Options["seed"].(float64) == 1:
			return fakeollama.Reply{Content: strings.Repeat("word ", 201)}
		case r.Model == "gen":
			return fakeollama.Reply{Content: "A short idea. " + longEnough}
		default:
			return fakeollama.Reply{Content: `{"analysis": "a", "originality": 5, "feasibility": 5, "clarity": 5}`}
		}
	}, fakeollama.Model{Name: "gen:latest", Digest: "g", Family: "llama", ParameterSize: "1B", ParameterCount: 1e9},
		fakeollama.Model{Name: "j1:latest", Digest: "1", Family: "qwen2", ParameterSize: "7B", ParameterCount: 7e9})
	defer srv.Close()
	cfg := DefaultConfig()
	cfg.Models, cfg.Judges, cfg.Limit, cfg.IdeasPerKeyword, cfg.CriticsPerIdea = []string{"gen"}, []string{"j1"}, 1, 2, 1
	s, _ := New(cfg)
	res, err := enginetest.New(t, srv.Host(), 1).Run(context.Background(), s.Task(), engine.RunSpec{Dir: filepath.Join(t.TempDir(), "r")})
	if err != nil {
		t.Fatal(err)
	}
	_, recs, _ := engine.ReadRun(res.Dir)
	var ir ItemResult
	json.Unmarshal(recs[0].Data, &ir)
	long := ir.Ideas[0]
	if long.Words != 201 || long.Excluded != "201 words, not under 200" || len(long.Critiques) != 0 || len(ir.Ideas[1].Critiques) != 1 {
		t.Fatalf("ideas %+v", ir.Ideas)
	}
	if !strings.Contains(strings.Join(res.Summary.Tables[1].Rows[0], "|"), "gen|2|0|0|1|") {
		t.Fatalf("counts row %v", res.Summary.Tables[1].Rows[0])
	}
}

// Under the paper's protocol "Final Idea" extraction applies to qwq alone,
// whose prompt then carries the authors' instruction; another model's
// reply is scored whole. A reply refused twice is scored as written.
func TestFinalIdeaOnlyForQwQAndSecondRefusalScored(t *testing.T) {
	reply := "Some thoughts first. This final idea builds on prior work. **Final Idea:** " + longEnough
	var mu sync.Mutex
	prompts := map[string]string{}
	srv := fakeollama.New(func(r fakeollama.ChatRequest) fakeollama.Reply {
		switch r.Model {
		case "qwq", "gen":
			mu.Lock()
			prompts[r.Model] = r.LastUser()
			mu.Unlock()
			return fakeollama.Reply{Content: reply}
		case "refuser":
			return fakeollama.Reply{Content: "I'm sorry, but " + longEnough}
		}
		return fakeollama.Reply{Content: `Fine. {"originality": 5, "feasibility": 5, "clarity": 5}`}
	}, fakeollama.Model{Name: "qwq:latest", Digest: "q", Family: "qwen2", ParameterSize: "32B", ParameterCount: 32e9},
		fakeollama.Model{Name: "gen:latest", Digest: "g", Family: "llama", ParameterSize: "1B", ParameterCount: 1e9},
		fakeollama.Model{Name: "refuser:latest", Digest: "r", Family: "phi3", ParameterSize: "1B", ParameterCount: 1e9},
		fakeollama.Model{Name: "j1:latest", Digest: "1", Family: "gemma", ParameterSize: "7B", ParameterCount: 7e9})
	defer srv.Close()
	cfg := DefaultConfig()
	cfg.Models, cfg.Judges, cfg.Limit, cfg.CriticsPerIdea = []string{"qwq", "gen", "refuser"}, []string{"j1"}, 1, 1
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := enginetest.New(t, srv.Host(), 1).Run(context.Background(), s.Task(), engine.RunSpec{Dir: filepath.Join(t.TempDir(), "r")})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(prompts["qwq"], FinalIdeaInstruction) || strings.Contains(prompts["gen"], "Final Idea") {
		t.Errorf("prompt suffixes: qwq %q, gen %q", prompts["qwq"][max(0, len(prompts["qwq"])-60):], prompts["gen"][max(0, len(prompts["gen"])-60):])
	}
	_, recs, _ := engine.ReadRun(res.Dir)
	for _, r := range recs {
		var ir ItemResult
		json.Unmarshal(r.Data, &ir)
		idea := ir.Ideas[0]
		switch ir.Model {
		case "qwq":
			if idea.Text != longEnough || !idea.Marker {
				t.Errorf("qwq idea %q (marker %v), want the text after the marker", idea.Text, idea.Marker)
			}
		case "gen":
			if idea.Text != reply || idea.Marker {
				t.Errorf("gen idea %q, want the whole reply", idea.Text)
			}
		case "refuser":
			if idea.Refusal2 == "" || idea.Excluded != "" || len(idea.Critiques) != 1 {
				t.Errorf("an idea refused twice should be scored as written: %+v", idea)
			}
		}
	}
}

// A run with default flags follows the paper's protocol and has no
// departure; each setting changed from the paper's is one, named.
func TestDepartures(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Models, cfg.Judges = []string{"m"}, []string{"j"}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The default 10 keywords are a sample of the paper's 1,180: named.
	if d := s.cfg.Settings().Departures(); s.cfg.Settings().ProtocolOf() != setting.ProtocolPaper || len(d) != 1 || d[0].String() != "--limit 10 (paper: 0)" {
		t.Fatalf("defaults: protocol %s, departures %v", s.cfg.Settings().ProtocolOf(), d)
	}
	cfg.Limit = 0
	if s, _ := New(cfg); len(s.cfg.Settings().Departures()) != 0 {
		t.Fatalf("every keyword: departures %v", s.cfg.Settings().Departures())
	}
	cfg.IdeasPerKeyword = 3
	cfg.Scoring = "first-release"
	s, _ = New(cfg)
	deps := s.cfg.Settings().Departures()
	if len(deps) != 2 || deps[0].String() != "--ideas-per-keyword 3 (paper: 2)" || deps[1].String() != "--scoring first-release (paper: current)" {
		t.Fatalf("departures %v", deps)
	}
	// --protocol halu: every halu default is a departure.
	h := DefaultConfig()
	h.Protocol = setting.ProtocolHalu
	if err := setting.ApplyProtocol(&h, func(string) bool { return false }); err != nil {
		t.Fatal(err)
	}
	h.Models, h.Judges = []string{"m"}, []string{"j"}
	s, _ = New(h)
	var names []string
	for _, d := range s.cfg.Settings().Departures() {
		names = append(names, d.Setting)
	}
	if got := strings.Join(names, ","); got != "limit,ideas-per-keyword,fluency-pairs,temperature,critic-temperature,max-tokens,judge-format,final-idea,judge-max-tokens,fluency-max-tokens" {
		t.Fatalf("halu departures: %s", got)
	}
}

// The authors' readers: the critic's first JSON block, and fluency's first
// letter left after stripping non-letters ("Answer: C" grades A). halu's
// readers take the stated grade; under --protocol halu the critics and the
// fluency judge answer in JSON and a reply without it is read by halu's
// reader, so the same reply grades C.
func TestPaperAndHaluReaders(t *testing.T) {
	c, err := ParseCriticPaper(`First pass: {"originality": 3, "feasibility": 3, "clarity": 3}. On reflection: {"originality": 8, "feasibility": 7, "clarity": 9}`)
	if err != nil || c.Originality != 3 || c.Clarity != 3 {
		t.Errorf("paper critic reader: %+v, %v; want the first block", c, err)
	}
	if g, err := ParseFluencyPaper("Answer: C"); err != nil || g.Grade != "A" {
		t.Errorf("paper fluency reader on %q: %+v, %v; want A (the first letter)", "Answer: C", g, err)
	}
	if g, err := ReadFluency("Answer: C"); err != nil || g != "C" {
		t.Errorf("halu fluency reader on %q: %+v, %v; want C", "Answer: C", g, err)
	}
	// The careful reading makes the headline under either protocol (the
	// protocol is what the judge is asked); the authors' rule's reading is
	// kept beside it, and decides only when --readers paper is chosen.
	for _, tc := range []struct {
		protocol, readers string
		want, other       string
	}{{setting.ProtocolPaper, "", "C", "A"}, {setting.ProtocolPaper, judging.ReadersPaper, "A", "C"}} {
		res := runOneKeyword(t, tc.protocol, tc.readers, func(r fakeollama.ChatRequest) fakeollama.Reply {
			switch {
			case r.Model == "gen":
				return fakeollama.Reply{Content: fmt.Sprintf("Idea %v: %s", r.Options["seed"], longEnough)}
			case strings.Contains(r.LastUser(), "ONLY ANSWER"):
				return fakeollama.Reply{Content: "Answer: C"}
			}
			return fakeollama.Reply{Content: `{"originality": 6, "feasibility": 4, "clarity": 8}`}
		})
		_, recs, _ := engine.ReadRun(res.Dir)
		var ir ItemResult
		json.Unmarshal(recs[0].Data, &ir)
		if len(ir.Fluency) == 0 || ir.Fluency[0].Grade != tc.want || ir.Fluency[0].OtherGrade != tc.other {
			t.Errorf("protocol %s readers %q: fluency %+v, want grade %s, other %s", tc.protocol, tc.readers, ir.Fluency, tc.want, tc.other)
		}
		// Identical critic scores are no disagreement, though the two
		// readers cut the analysis differently.
		if c := ir.Ideas[0].Critiques; len(c) == 0 || c[0].Other != nil || c[0].OtherUnread {
			t.Errorf("protocol %s: critic scores read alike counted as a disagreement: %+v", tc.protocol, c)
		}
		if len(res.Manifest.Departures) > 0 && tc.protocol == setting.ProtocolPaper {
			for _, d := range res.Manifest.Departures {
				if d.Setting == "readers" {
					t.Errorf("protocol %s readers %q: reading counted as a departure", tc.protocol, tc.readers)
				}
			}
		}
		b := res.Summary.Beside
		if b == nil || b.Replies != 1 {
			t.Fatalf("protocol %s readers %q: no figures under the other reading: %+v", tc.protocol, tc.readers, b)
		}
		h, o := res.Summary.Metrics["gen.fluency"], b.Metrics["gen.fluency"]
		if h == o {
			t.Errorf("protocol %s readers %q: fluency the same under both readings (%v), though the grade differs; metrics %v", tc.protocol, tc.readers, h, res.Summary.Metrics)
		}
		found := false
		for _, tb := range res.Summary.Tables {
			found = found || strings.Contains(tb.Title, "1 judge replies read differently")
		}
		if !found {
			t.Errorf("protocol %s readers %q: no table of the figures beside the headline", tc.protocol, tc.readers)
		}
	}
}

// The paper protocol sends no reply cap — to the generator, the critics or
// the fluency judge — as the authors' code sends none; --protocol halu
// sends halu's caps (600, 300, 20).
func TestPaperProtocolSendsNoCaps(t *testing.T) {
	for _, tc := range []struct {
		protocol string
		want     map[string]any // stage → num_predict sent (nil: none)
	}{
		{setting.ProtocolPaper, map[string]any{"generate": nil, "critic": nil, "fluency": nil}},
		{setting.ProtocolHalu, map[string]any{"generate": float64(600), "critic": float64(300), "fluency": float64(20)}},
	} {
		var mu sync.Mutex
		got := map[string]any{}
		runOneKeyword(t, tc.protocol, "", func(r fakeollama.ChatRequest) fakeollama.Reply {
			stage := "critic"
			switch {
			case r.Model == "gen":
				stage = "generate"
			case strings.Contains(r.LastUser(), "ONLY ANSWER"):
				stage = "fluency"
			}
			mu.Lock()
			got[stage] = r.Options["num_predict"]
			mu.Unlock()
			switch stage {
			case "generate":
				return fakeollama.Reply{Content: fmt.Sprintf("Idea %v: %s", r.Options["seed"], longEnough)}
			case "fluency":
				return fakeollama.Reply{Content: "B"}
			}
			return fakeollama.Reply{Content: `{"originality": 6, "feasibility": 4, "clarity": 8}`}
		})
		for stage, want := range tc.want {
			if v, ok := got[stage]; !ok || v != want {
				t.Errorf("protocol %s: %s sent num_predict %v (seen %v), want %v", tc.protocol, stage, v, ok, want)
			}
		}
	}
}

// A format-2 run's keyword file and sample size are kept (format 1's
// keyword migration is not applied again), and its fluency judge had the
// 20-token cap format 2 sent.
func TestFormatTwoConfigKeepsItsSettings(t *testing.T) {
	c, err := Declaration.Decode([]byte(`{"models":["m"],"judges":["j"],"keywords":"kw.txt","limit":7,"max_tokens":600,"judge_max_tokens":300}`), 2)
	if err != nil {
		t.Fatal(err)
	}
	cfg := c.(*Config)
	if cfg.Keywords != "kw.txt" || cfg.Limit != 7 || cfg.FluencyMaxTokens != 20 || cfg.MaxTokens != 600 {
		t.Errorf("format-2 config read as %+v", cfg)
	}
}

// runOneKeyword runs one keyword for model gen with one critic j1 under
// protocol on a fake server answering with reply, and returns the result.
func runOneKeyword(t *testing.T, protocol, readers string, reply func(fakeollama.ChatRequest) fakeollama.Reply) *engine.Result {
	t.Helper()
	srv := fakeollama.New(reply, fakeollama.Model{Name: "gen:latest", Digest: "g", Family: "llama", ParameterSize: "1B", ParameterCount: 1e9},
		fakeollama.Model{Name: "j1:latest", Digest: "1", Family: "qwen2", ParameterSize: "7B", ParameterCount: 7e9})
	defer srv.Close()
	cfg := DefaultConfig()
	cfg.Models, cfg.Judges, cfg.Limit, cfg.CriticsPerIdea, cfg.Protocol = []string{"gen"}, []string{"j1"}, 1, 1, protocol
	if err := setting.ApplyProtocol(&cfg, func(string) bool { return false }); err != nil {
		t.Fatal(err)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e := enginetest.New(t, srv.Host(), 1)
	e.Config.Readers = readers
	res, err := e.Run(context.Background(), s.Task(), engine.RunSpec{Dir: filepath.Join(t.TempDir(), "r")})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestJudgeCardFindsOrderAndLengthBias: a fluency judge that grades by
// which idea it is shown first (A when the lower-numbered idea comes
// first, D otherwise) and a critic whose originality grows with the
// idea's length. With every judgement checked, the card shows the
// fluency grades flip under the swap (α below 0.667, warned) and j1's
// length bias (interval above 0) where j2's slope is 0.
func TestJudgeCardFindsOrderAndLengthBias(t *testing.T) {
	ideaRE := regexp.MustCompile(`Idea (\d+) about`)
	srv := fakeollama.New(func(r fakeollama.ChatRequest) fakeollama.Reply {
		last := r.LastUser()
		switch {
		case r.Model == "gen":
			seed := int(r.Options["seed"].(float64))
			return fakeollama.Reply{Content: fmt.Sprintf("Idea %d about the keyword: %s", seed, strings.Repeat(longEnough+" ", 1+seed%4))}
		case strings.Contains(last, "ONLY ANSWER"):
			m := ideaRE.FindAllStringSubmatch(last, -1)
			if len(m) >= 2 {
				a, _ := strconv.Atoi(m[0][1])
				b, _ := strconv.Atoi(m[1][1])
				if a < b {
					return fakeollama.Reply{Content: "A"}
				}
			}
			return fakeollama.Reply{Content: "D"}
		case r.Model == "j1":
			or := 1 + min(9, len(last)/150)
			return fakeollama.Reply{Content: fmt.Sprintf("Originality: %d\nFeasibility: 5\nClarity: 5", or)}
		}
		return fakeollama.Reply{Content: "Originality: 5\nFeasibility: 5\nClarity: 5"}
	}, genAndThreeJudges...)
	defer srv.Close()
	kwFile := filepath.Join(t.TempDir(), "kw.txt")
	os.WriteFile(kwFile, []byte("meteorology\nbotany\ngeology\noceanography\nvolcanology\nglaciology\nseismology\nhydrology\nlimnology\nmineralogy\nentomology\nmycology\nvirology\nastronomy\npetrology\nbiophysics\nethology\noncology\n"), 0o644) // over 20 swap pairs a judge: enough to warn of a low α
	cfg := DefaultConfig()
	cfg.Models, cfg.Judges, cfg.Keywords, cfg.Limit, cfg.IdeasPerKeyword, cfg.FluencyPairs = []string{"gen"}, []string{"j1", "j2", "j3"}, kwFile, 0, 3, "all"
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e := enginetest.New(t, srv.Host(), 2)
	e.Config.JudgeChecks = 1
	res, err := e.Run(context.Background(), s.Task(), engine.RunSpec{Dir: filepath.Join(t.TempDir(), "r")})
	if err != nil {
		t.Fatal(err)
	}
	if testing.Verbose() {
		res.Summary.Print(os.Stdout)
	}
	cells := map[string][]string{}
	for _, tb := range res.Summary.Tables {
		if tb.Title == summary.CardJudgeTitle {
			for _, row := range tb.Rows {
				cells[row[0]+" "+row[1]+" "+row[2]] = row
			}
		}
	}
	swapped := 0
	for _, j := range []string{"j1", "j2", "j3"} {
		row, ok := cells[j+" fluency fluency"]
		if !ok {
			continue
		}
		swapped++
		if c := row[4]; !strings.Contains(c, "pairs)") || strings.HasPrefix(c, "all") {
			t.Errorf("%s swap: %q", j, c)
		}
	}
	if swapped == 0 {
		t.Fatalf("no fluency judge in the card: %v", cells)
	}
	if !strings.Contains(strings.Join(res.Summary.Notes, "\n"), "fluency fluency: swap α") {
		t.Errorf("no warning on the order-biased fluency judge:\n%s", strings.Join(res.Summary.Notes, "\n"))
	}
	if c := cells["j1 critic originality"][5]; !strings.HasSuffix(c, "(≠ 0)") || !strings.HasPrefix(c, "+") {
		t.Errorf("j1 length bias: %q", c)
	}
	if c := cells["j2 critic originality"][5]; !strings.HasPrefix(c, "+0.00 [+0.00, +0.00]") {
		t.Errorf("j2 length bias: %q", c)
	}
}
