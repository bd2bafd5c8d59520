package localmodels_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"halu/localmodels"
	"halu/localmodels/fakeopenai"
)

// A streamed chat through a vLLM-like server: the chunks are joined, the
// usage event gives the counts, finish_reason "length" is a length stop,
// and the request carries temperature 0, seed, top_p, max_tokens, stop and
// the bearer token explicitly — num_ctx and num_thread, which the API has
// no place for, are not sent.
func TestOpenAIChatStreams(t *testing.T) {
	f := newFake(t, "vllm")
	f.Token, f.Reply, f.Finish = "s3cret", "The answer is 42, as the text says.", "length"
	o, err := localmodels.NewOpenAI(f.URL+"/v1", time.Minute, "s3cret")
	if err != nil {
		t.Fatal(err)
	}
	v, err := o.Version(context.Background())
	if err != nil || v != "vllm 0.6.3" || o.Kind() != localmodels.ServerVLLM {
		t.Fatalf("version %q kind %q: %v", v, o.Kind(), err)
	}
	resp, err := o.Chat(context.Background(), localmodels.ChatRequest{Model: "Qwen/Qwen2.5-7B-Instruct",
		Messages: []localmodels.Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "What is the answer?"}},
		Options:  localmodels.Options{Temperature: localmodels.Float(0), Seed: localmodels.Int(7), TopP: localmodels.Float(0.9), NumPredict: localmodels.Int(64), NumCtx: localmodels.Int(4096), NumThread: localmodels.Int(2), Stop: []string{"\n\n"}},
	}, localmodels.StreamLimits{Idle: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Content != f.Reply || resp.DoneReason != localmodels.DoneLength || !localmodels.CutShort(resp.DoneReason) || resp.PromptEvalCount != 17 || resp.EvalCount != 5 {
		t.Fatalf("response %+v", resp)
	}
	b := f.LastBody()
	for k, want := range map[string]any{"temperature": 0.0, "seed": 7.0, "top_p": 0.9, "max_tokens": 64.0, "stream": true} {
		if b[k] != want {
			t.Errorf("%s = %v, want %v (body %v)", k, b[k], want, b)
		}
	}
	if fmt.Sprint(b["stop"]) != "[\n\n]" || b["num_ctx"] != nil || b["num_thread"] != nil || b["response_format"] != nil {
		t.Errorf("body %v", b)
	}
	if so, _ := b["stream_options"].(map[string]any); so["include_usage"] != true {
		t.Errorf("stream_options %v", b["stream_options"])
	}
	for _, a := range f.Auth() {
		if a != "Bearer s3cret" {
			t.Errorf("authorization header %q", a)
		}
	}
	// A wrong token is a final error naming the status, without the token.
	bad, _ := localmodels.NewOpenAI(f.URL, time.Minute, "wrong")
	_, err = bad.Chat(context.Background(), localmodels.ChatRequest{Model: "Qwen/Qwen2.5-7B-Instruct", Messages: []localmodels.Message{{Role: "user", Content: "x"}}}, localmodels.StreamLimits{})
	if err == nil || localmodels.IsTransient(err) || localmodels.StatusCode(err) != http.StatusUnauthorized || strings.Contains(err.Error(), "wrong") {
		t.Fatalf("wrong token: %v (transient %v)", err, localmodels.IsTransient(err))
	}
}

// Structured output goes as response_format with the JSON schema; a server
// that refuses it (400) is asked again without, said once, and not asked
// with it again.
func TestOpenAIStructuredOutput(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"score":{"type":"integer"}},"required":["score"]}`)
	req := localmodels.ChatRequest{Model: "local-model", Messages: []localmodels.Message{{Role: "user", Content: "Score it."}}, Format: schema, Options: localmodels.Options{Temperature: localmodels.Float(0)}}

	f := newFake(t, "")
	o, _ := localmodels.NewOpenAI(f.URL, time.Minute, "")
	if _, err := o.Chat(context.Background(), req, localmodels.StreamLimits{}); err != nil {
		t.Fatal(err)
	}
	rf, _ := f.LastBody()["response_format"].(map[string]any)
	js, _ := rf["json_schema"].(map[string]any)
	if rf["type"] != "json_schema" || js["strict"] != true || fmt.Sprint(js["schema"]) != "map[properties:map[score:map[type:integer]] required:[score] type:object]" {
		t.Fatalf("response_format %v", rf)
	}

	g := newFake(t, "llama.cpp")
	g.RefuseFormat = true
	o, _ = localmodels.NewOpenAI(g.URL, time.Minute, "")
	var said []string
	o.Logf = func(format string, args ...any) { said = append(said, fmt.Sprintf(format, args...)) }
	req.Model = "qwen2.5-1.5b-instruct-q4_k_m.gguf"
	for i := 0; i < 3; i++ {
		resp, err := o.Chat(context.Background(), req, localmodels.StreamLimits{})
		if err != nil || resp.Content != `{"score": 4}` {
			t.Fatalf("call %d: %+v %v", i, resp, err)
		}
	}
	if len(said) != 1 || !strings.Contains(said[0], "refuses response_format") || len(g.Bodies()) != 4 {
		t.Fatalf("said %q; %d requests (want 4: one refused, three without)", said, len(g.Bodies()))
	}
	if g.LastBody()["response_format"] != nil {
		t.Fatal("response_format sent again")
	}
}

// 429 and 503 are transient (the engine backs off and retries), with their
// status; 400 and 404 are final. A stream cut before "data: [DONE]" is
// localmodels.ErrIncomplete, never an answer.
func TestOpenAIErrors(t *testing.T) {
	f := newFake(t, "vllm")
	o, _ := localmodels.NewOpenAI(f.URL, time.Minute, "")
	req := localmodels.ChatRequest{Model: "Qwen/Qwen2.5-7B-Instruct", Messages: []localmodels.Message{{Role: "user", Content: "x"}}}
	for _, code := range []int{http.StatusTooManyRequests, http.StatusServiceUnavailable, http.StatusBadRequest, http.StatusNotFound} {
		f.SetStatus(code)
		_, err := o.Chat(context.Background(), req, localmodels.StreamLimits{})
		want := code == 429 || code == 503
		if localmodels.StatusCode(err) != code || localmodels.IsTransient(err) != want {
			t.Errorf("%d: %v (transient %v)", code, err, localmodels.IsTransient(err))
		}
	}
	f.NoDone = true
	resp, err := o.Chat(context.Background(), req, localmodels.StreamLimits{})
	if !errors.Is(err, localmodels.ErrIncomplete) || !localmodels.IsTransient(err) {
		t.Fatalf("stream without [DONE]: %+v %v", resp, err)
	}
}

// /v1/models gives each model's identity and window: vLLM's root path and
// max_model_len; llama.cpp's /props its model path, n_ctx and parameters;
// a model the server does not serve is localmodels.ErrModelNotFound listing those it
// does.
func TestOpenAIModels(t *testing.T) {
	f := newFake(t, "vllm")
	o, _ := localmodels.NewOpenAI(f.URL, time.Minute, "")
	info, err := o.Info(context.Background(), "Qwen/Qwen2.5-7B-Instruct")
	if err != nil || !info.FixedContext || info.ContextLength != 32768 || info.Identity != localmodels.IdentityPath || info.Weights != "/models/qwen2.5-7b" {
		t.Fatalf("vllm info %+v %v", info, err)
	}
	_, err = o.Info(context.Background(), "qwen2.5:7b")
	if !errors.Is(err, localmodels.ErrModelNotFound) || !strings.Contains(err.Error(), "Qwen/Qwen2.5-7B-Instruct, bge-m3") {
		t.Fatalf("missing model: %v", err)
	}
	l := newFake(t, "llama.cpp")
	o, _ = localmodels.NewOpenAI(l.URL, time.Minute, "")
	if v, _ := o.Version(context.Background()); v != "llama.cpp b4500-abcdef" {
		t.Fatalf("version %q", v)
	}
	info, err = o.Info(context.Background(), "qwen2.5-1.5b-instruct-q4_k_m.gguf")
	if err != nil || info.ContextLength != 8192 || info.Weights != "/srv/models/qwen2.5-1.5b-instruct-q4_k_m.gguf" || info.ParameterCount != 1543714304 || info.Tiny {
		t.Fatalf("llama.cpp info %+v %v", info, err)
	}
	n := newFake(t, "")
	o, _ = localmodels.NewOpenAI(n.URL, time.Minute, "")
	info, err = o.Info(context.Background(), "local-model")
	if v, _ := o.Version(context.Background()); err != nil || v != localmodels.ServerOpenAI || info.Identity != localmodels.IdentityName || info.ContextLength != 0 {
		t.Fatalf("plain server: %q %+v %v", v, info, err)
	}
}

// Embeddings come back in the order of the texts, whatever order the data
// list has; batches are sent apart.
func TestOpenAIEmbeddings(t *testing.T) {
	f := newFake(t, "vllm")
	o, _ := localmodels.NewOpenAI(f.URL, time.Minute, "")
	vecs, err := o.Embed(context.Background(), localmodels.EmbedRequest{Model: "bge-m3", Texts: []string{"a", "bbb", "cc"}, Batch: 2})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(vecs) != "[[1 1 0] [3 1 0] [2 1 0]]" {
		t.Fatalf("vectors %v", vecs)
	}
}

func newFake(t *testing.T, kind string) *fakeopenai.Server {
	f := fakeopenai.New(kind)
	t.Cleanup(f.Close)
	return f
}
