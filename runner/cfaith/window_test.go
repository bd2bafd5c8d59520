package cfaith

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"halu/localmodels/fakeollama"
	"halu/runner/engine"
	"halu/runner/engine/enginetest"
	"halu/runner/rundir"
)

// longDoc is a knowledge document of three paragraphs, the second far
// longer than the others, of numbered English sentences.
func longDoc(id string, sentences int) Doc {
	var mid []string
	for i := 0; i < sentences; i++ {
		mid = append(mid, fmt.Sprintf("Sentence %d tells of the river, the bridge and the town hall built in %d.", i, 1800+i))
	}
	return Doc{ID: id, Knowledge: "A short opening paragraph.\n" + strings.Join(mid, " ") + "\nA short closing paragraph."}
}

// A document longer than n tokens is split into parts of at most n at
// paragraph and sentence ends, losing and repeating nothing; one that fits
// keeps its ID; Chinese text splits at 。.
func TestChunk(t *testing.T) {
	var tok engine.Tokenizer
	short := Doc{ID: "s", Knowledge: "Short."}
	zh := Doc{ID: "z", Knowledge: strings.Repeat("这座桥建于一八零零年，横跨城中的河流。", 40)}
	out, err := Chunk([]Doc{short, longDoc("l", 60), zh}, 200)
	if err != nil {
		t.Fatal(err)
	}
	byDoc := map[string][]string{}
	for _, d := range out {
		base, _, _ := strings.Cut(d.ID, "#")
		byDoc[base] = append(byDoc[base], d.Knowledge)
		if n, _ := tok.Count(d.Knowledge); n > 200 {
			t.Errorf("%s: %d tokens", d.ID, n)
		}
		if base != "s" && !strings.Contains(d.ID, "#") {
			t.Errorf("a part without its number: %s", d.ID)
		}
	}
	if len(byDoc["s"]) != 1 || out[0].ID != "s" || len(byDoc["l"]) < 5 || len(byDoc["z"]) < 2 {
		t.Fatalf("parts: %d short, %d long, %d zh", len(byDoc["s"]), len(byDoc["l"]), len(byDoc["z"]))
	}
	squash := func(s string) string { return strings.Join(strings.Fields(s), "") }
	if squash(strings.Join(byDoc["l"], " ")) != squash(longDoc("l", 60).Knowledge) || strings.Join(byDoc["z"], "") != zh.Knowledge {
		t.Error("the parts do not make up the document")
	}
	if !strings.HasPrefix(byDoc["l"][0], "A short opening paragraph.\nSentence 0 tells") || !strings.HasSuffix(byDoc["z"][0], "。") {
		t.Errorf("parts do not end at a paragraph or sentence: %.60q, %q", byDoc["l"][0], byDoc["z"][0][len(byDoc["z"][0])-6:])
	}
}

// The question agent's prompt holds each document whole, as the authors'
// code sends it: the run's window is sized to hold the longest beside the
// reply's cap, and a model whose trained context cannot is refused before
// the first call, naming the document and --chunk-tokens; chunking is a
// named departure.
func TestBuildWindow(t *testing.T) {
	for _, tc := range []struct {
		ctxLen, chunk int
		refused       bool
	}{{2048, 0, true}, {32768, 0, false}, {4096, 400, false}} {
		srv := fakeollama.New(func(r fakeollama.ChatRequest) fakeollama.Reply { return fakeollama.Reply{Content: "x"} },
			fakeollama.Model{Name: "m:latest", Digest: "d", ParameterCount: 1e9, ContextLength: tc.ctxLen})
		cfg := DefaultBuildConfig()
		cfg.Lang, cfg.Agent, cfg.Verifier, cfg.Types, cfg.ChunkTokens = "en", "m", "m", []string{"EntErr"}, tc.chunk
		cfg.Rules, _ = BuiltinRules("en", "original")
		docs := []Doc{{ID: "short", Knowledge: "A bridge was built in 1800."}, longDoc("long", 150)}
		if tc.chunk > 0 {
			docs, _ = Chunk(docs, tc.chunk)
		}
		b := &Builder{cfg: cfg, docs: docs}
		e := enginetest.New(t, srv.Host(), 1)
		w, err := b.Window(context.Background(), e.NewCalls("window"))
		srv.Close()
		if tc.refused {
			if err == nil || !strings.Contains(err.Error(), "item long") || !strings.Contains(err.Error(), "--chunk-tokens") {
				t.Errorf("context %d: %d, %v", tc.ctxLen, w, err)
			}
			continue
		}
		if err != nil || w < 2048+400 || tc.chunk == 0 && w < 2048+2500 || w%1024 != 0 || w > tc.ctxLen {
			t.Errorf("context %d, chunks %d: window %d, %v", tc.ctxLen, tc.chunk, w, err)
		}
		if d := cfg.Settings().Departures(); (tc.chunk > 0) != (len(d) == 1 && d[0].Setting == "chunk-tokens") {
			t.Errorf("chunks %d: departures %v", tc.chunk, d)
		}
	}
}

// Under the paper protocol rule optimisation asks the authors' corrector:
// its correction instruction (corrector/qa_corrector.py) with the part's
// prompt as the rules render it, without its examples, one failed check and
// its feedback, sampled as their agents; the rewritten prompt's
// requirements (or the blamed definition) become the candidate. A part
// with no failed check has nothing to correct.
func TestAuthorsCorrector(t *testing.T) {
	var mu sync.Mutex
	var asked []fakeollama.ChatRequest
	srv := fakeollama.New(func(r fakeollama.ChatRequest) fakeollama.Reply {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, r)
		u := r.LastUser()
		if strings.Contains(u, "假设你是一个幻觉分类器") {
			return fakeollama.Reply{Content: "好的。\n假设你是一个幻觉分类器，请判断类型。具体的幻觉类型的定义和要求如下：\n时空幻觉：问题询问时间或地点，回复给出错误的时间或地点。"}
		}
		return fakeollama.Reply{Content: "假设你是一个中文问题生成者。具体要求如下：\n1. 新一\n2. 新二\n3. 新三\n4. 新四\n5. 依据\n6. 实体"}
	}, fakeollama.Model{Name: "m:latest", Digest: "d", ParameterCount: 1e9})
	defer srv.Close()
	rs, _ := BuiltinRules("zh", "original")
	fail := &Verdict{Verdict: Fail, Reason: "答案不在依据中"}
	training := []DocResult{{Doc: "d", Questions: []Question{{Mode: "EntErr", QA: QA{Question: "长江有多长？", Answer: "6300公里", Evidence: "长江全长6300公里。"},
		Correct: fail, Responses: []Response{{Text: "5000公里", Label: "SpaErr", Halu: &Verdict{Verdict: Pass}, Type: &Verdict{Verdict: Uncertain, Reason: "不是时间"}}}}}}}
	p := &proposer{model: "m", lang: "zh", seed: 1, round: 1, rules: rs, training: training, corrector: "authors",
		parts: []Part{QAPart, LabelPart("SpaErr"), HaluPart}}
	dir := t.TempDir()
	if _, err := RunOrResume(context.Background(), enginetest.New(t, srv.Host(), 1), p.Task(), dir, map[string]any{"round": 1}); err != nil {
		t.Fatal(err)
	}
	_, recs, _ := engine.ReadRun(dir)
	ps, _ := rundir.DecodeRecords[Proposal](recs)
	if len(ps) != 3 || ps[0].Rules == nil || strings.Join(ps[0].Rules.QARules, "|") != "新一|新二|新三|新四" ||
		ps[1].Rules == nil || ps[1].Rules.LabelDefs["SpaErr"] != "问题询问时间或地点，回复给出错误的时间或地点。" || ps[1].Rules.LabelDefs["EntErr"] != rs.LabelDefs["EntErr"] ||
		ps[2].Rules != nil || !ps[2].NoFeedback {
		t.Fatalf("proposals %+v", ps)
	}
	if len(asked) != 2 {
		t.Fatalf("%d requests", len(asked))
	}
	qa := asked[0].LastUser()
	for _, want := range []string{"原始prompt：假设你是一个中文问题生成者", "4. 生成的答案符合事实和逻辑。\n5. 生成的依据", "问题：长江有多长？\n正确回答：6300公里\n评估反馈：[正确回答]不符合 答案不在依据中",
		"请以“假设你是一个中文问题生成者”开头"} {
		if !strings.Contains(qa, want) {
			t.Errorf("the correction instruction lacks %q:\n%s", want, qa)
		}
	}
	if strings.Contains(qa, "给定如下例子") || len(asked[0].Format) != 0 {
		t.Errorf("the prompt is shown with its examples, or a format is asked for: %s", asked[0].Format)
	}
	if !strings.Contains(asked[1].LastUser(), "幻觉类型：时空幻觉\n评估反馈：[幻觉类型]不确定 不是时间") {
		t.Errorf("label correction:\n%s", asked[1].LastUser())
	}
	if o := asked[0].Options; o["top_k"] != 50.0 || o["frequency_penalty"] != 0.5 || o["temperature"] != 0.7 || o["num_predict"] != 2048.0 {
		t.Errorf("options %v", o)
	}
	// The corrector is the paper's only when the rules are optimised; json is halu's.
	cfg := DefaultBuildConfig()
	cfg.Docs, cfg.Agent = "d", "a"
	cfg.Corrector = "json"
	if d := cfg.Settings().Departures(); len(d) != 0 {
		t.Errorf("no --optimize: departures %v", d)
	}
	cfg.Optimized = true
	if d := cfg.Settings().Departures(); len(d) != 1 || d[0].String() != "--corrector json (paper: authors)" {
		t.Errorf("--optimize: departures %v", d)
	}
}
