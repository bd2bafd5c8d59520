package cfaith

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"halu/localmodels/fakeollama"
	"halu/runner/engine"
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
		e := srv.Engine(t, 1)
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
