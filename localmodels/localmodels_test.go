package localmodels_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"halu/localmodels"
	"halu/localmodels/fakeollama"
)

func TestParseHost(t *testing.T) {
	tests := []struct {
		in, want string
		wantErr  bool
	}{
		{"", "http://127.0.0.1:11434", false},
		{"127.0.0.1:11434", "http://127.0.0.1:11434", false},
		{":9999", "http://127.0.0.1:9999", false},
		{"localhost", "http://localhost:11434", false},
		{"http://10.0.0.5:8080/", "http://10.0.0.5:8080", false},
		{"https://gpu-box:443", "https://gpu-box:443", false},
		{"ftp://x:1", "", true},
	}
	for _, tt := range tests {
		u, err := localmodels.ParseHost(tt.in)
		if (err != nil) != tt.wantErr {
			t.Errorf("ParseHost(%q) error = %v, wantErr %v", tt.in, err, tt.wantErr)
			continue
		}
		if err == nil && u.String() != tt.want {
			t.Errorf("ParseHost(%q) = %s, want %s", tt.in, u, tt.want)
		}
	}
}

func TestIsLoopback(t *testing.T) {
	for host, want := range map[string]bool{
		"127.0.0.1:1": true, "localhost:1": true, "[::1]:1": true, "10.1.2.3:1": false, "example.org": false,
	} {
		c, err := localmodels.New(host, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.IsLoopback(); got != want {
			t.Errorf("IsLoopback(%s) = %v, want %v", host, got, want)
		}
	}
}

func fake(t *testing.T, chat func(fakeollama.ChatRequest) fakeollama.Reply) (*fakeollama.Server, *localmodels.Client) {
	t.Helper()
	s := fakeollama.New(chat, fakeollama.Model{Name: "m:latest", Digest: "d1", Family: "llama", ParameterSize: "7B",
		Quantization: "Q4_0", ParameterCount: 7_000_000_000, Template: "{{ .Prompt }}"})
	t.Cleanup(s.Close)
	c, err := localmodels.New(s.Host(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return s, c
}

// Temperature 0 must reach the server as 0: api.Options would drop it and
// the server would sample at its default.
func TestChatSendsZeroTemperature(t *testing.T) {
	s, c := fake(t, func(fakeollama.ChatRequest) fakeollama.Reply {
		return fakeollama.Reply{Chunks: []string{"Hello", " world"}}
	})
	resp, err := c.Chat(context.Background(), localmodels.ChatRequest{
		Model:    "m",
		Messages: []localmodels.Message{{Role: "user", Content: "hi there"}},
		Options: localmodels.Options{Temperature: localmodels.Float(0), Seed: localmodels.Int(7),
			NumPredict: localmodels.Int(10), NumCtx: localmodels.Int(4096), TopK: localmodels.Int(1),
			TopP: localmodels.Float(0.5), Stop: []string{"\n"}},
	}, localmodels.StreamLimits{})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Content != "Hello world" || resp.EvalCount != 2 || resp.PromptEvalCount != 2 {
		t.Fatalf("response = %+v", resp)
	}
	opts := s.Chats()[0].Options
	temp, ok := opts["temperature"]
	if !ok || temp.(float64) != 0 {
		t.Fatalf("temperature on the wire = %v (present %v), want 0", temp, ok)
	}
	for _, k := range []string{"seed", "num_predict", "num_ctx", "top_k", "top_p", "stop"} {
		if _, ok := opts[k]; !ok {
			t.Errorf("option %s not sent", k)
		}
	}
}

func TestChatIdleTimeout(t *testing.T) {
	_, c := fake(t, func(fakeollama.ChatRequest) fakeollama.Reply {
		return fakeollama.Reply{Content: "late", Delay: 2 * time.Second}
	})
	_, err := c.Chat(context.Background(), localmodels.ChatRequest{Model: "m"}, localmodels.StreamLimits{Idle: 100 * time.Millisecond})
	if !errors.Is(err, localmodels.ErrIdle) {
		t.Fatalf("err = %v, want idle timeout", err)
	}
}

// A stream that ends before the server's final message is a fragment: an
// error the engine retries, never a reply.
func TestChatCutStreamIsIncomplete(t *testing.T) {
	for _, tc := range []struct {
		name    string
		reply   fakeollama.Reply
		wantErr bool
	}{
		{"cut after chunks", fakeollama.Reply{Chunks: []string{"The answer ", "is"}, Cut: true}, true},
		{"cut before any chunk", fakeollama.Reply{Chunks: []string{}, Cut: true}, true},
		{"finished", fakeollama.Reply{Chunks: []string{"The answer ", "is B."}}, false},
		{"finished at its cap", fakeollama.Reply{Chunks: []string{"The answer "}, DoneReason: "length"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, c := fake(t, func(fakeollama.ChatRequest) fakeollama.Reply { return tc.reply })
			resp, err := c.Chat(context.Background(), localmodels.ChatRequest{Model: "m"}, localmodels.StreamLimits{})
			if !tc.wantErr {
				if err != nil || resp.DoneReason == "" {
					t.Fatalf("finished stream: %+v, %v", resp, err)
				}
				return
			}
			// Cut before the headers, the client sees the POST fail (EOF).
			if err == nil || !localmodels.IsTransient(err) || len(tc.reply.Chunks) > 0 && !errors.Is(err, localmodels.ErrIncomplete) {
				t.Fatalf("cut stream: err = %v (transient %v), want a transient ErrIncomplete", err, localmodels.IsTransient(err))
			}
		})
	}
}

// An embedding response with a vector missing, empty, of another dimension
// or not finite is incomplete, never used.
func TestEmbedRejectsBrokenVectors(t *testing.T) {
	for _, body := range []string{
		`{"embeddings":[[0.1,0.2]]}`,
		`{"embeddings":[[0.1,0.2],[]]}`,
		`{"embeddings":[[0.1,0.2],[0.3]]}`,
		`{"embeddings":[[0.1,0.2],[0.3,1e999]]}`,
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, body)
		}))
		c, err := localmodels.New(srv.Listener.Addr().String(), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Embed(context.Background(), localmodels.EmbedRequest{Model: "m", Texts: []string{"a", "b"}})
		srv.Close()
		if err == nil {
			t.Errorf("%s: accepted", body)
		}
	}
}

func TestChatErrorsAreClassified(t *testing.T) {
	_, c := fake(t, func(fakeollama.ChatRequest) fakeollama.Reply {
		return fakeollama.Reply{Status: 503, Error: "server busy"}
	})
	_, err := c.Chat(context.Background(), localmodels.ChatRequest{Model: "m"}, localmodels.StreamLimits{})
	if localmodels.StatusCode(err) != 503 || !localmodels.IsTransient(err) {
		t.Fatalf("503: status %d transient %v: %v", localmodels.StatusCode(err), localmodels.IsTransient(err), err)
	}
	_, err = c.Chat(context.Background(), localmodels.ChatRequest{Model: "nope"}, localmodels.StreamLimits{})
	if localmodels.StatusCode(err) != 404 || localmodels.IsTransient(err) {
		t.Fatalf("404: status %d transient %v: %v", localmodels.StatusCode(err), localmodels.IsTransient(err), err)
	}
	dead, _ := localmodels.New("127.0.0.1:1", time.Second)
	_, err = dead.Version(context.Background())
	if !localmodels.IsUnreachable(err) || !localmodels.IsTransient(err) || !strings.Contains(err.Error(), "halu doctor") {
		t.Fatalf("refused connection: unreachable %v: %v", localmodels.IsUnreachable(err), err)
	}
}

func TestInfoTakesDigestFromList(t *testing.T) {
	_, c := fake(t, nil)
	info, err := c.Info(context.Background(), "m")
	if err != nil {
		t.Fatal(err)
	}
	if info.Name != "m:latest" || info.Digest != "d1" || info.Family != "llama" || info.ParameterSize != "7B" ||
		info.Quantization != "Q4_0" || info.ContextLength != 4096 || info.TemplateSHA256 == "" || info.Tiny {
		t.Fatalf("info = %+v", info)
	}
	_, err = c.Info(context.Background(), "absent")
	if !errors.Is(err, localmodels.ErrModelNotFound) || !strings.Contains(err.Error(), "halu models pull absent") {
		t.Fatalf("missing model error = %v", err)
	}
}

func TestEmbedBatches(t *testing.T) {
	s, c := fake(t, nil)
	texts := []string{"a", "b", "c", "d", "e"}
	vecs, err := c.Embed(context.Background(), localmodels.EmbedRequest{Model: "m", Texts: texts, Batch: 2})
	if err != nil {
		t.Fatal(err)
	}
	calls, inputs := s.EmbedCalls()
	if len(vecs) != 5 || calls != 3 || inputs != 5 {
		t.Fatalf("got %d vectors in %d calls (%d inputs), want 5 in 3", len(vecs), calls, inputs)
	}
	if !equal(vecs[0], fakeollama.Vector("a", 8)) {
		t.Fatal("vectors out of order")
	}
}

func equal(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestImportUploadsBlobAndCreates(t *testing.T) {
	s, c := fake(t, nil)
	path := filepath.Join(t.TempDir(), "tiny.gguf")
	if err := localmodels.WriteTinyGGUFFile(path, 3); err != nil {
		t.Fatal(err)
	}
	var statuses []string
	info, err := c.Import(context.Background(), path, "tiny", localmodels.ImportOptions{
		Template: localmodels.TinyTemplate, Progress: func(s string) { statuses = append(statuses, s) }})
	if err != nil {
		t.Fatal(err)
	}
	if info.Name != "tiny:latest" || info.Digest == "" || !info.Tiny {
		t.Fatalf("info = %+v", info)
	}
	data, _ := os.ReadFile(path)
	var found bool
	for _, st := range statuses {
		found = found || strings.Contains(st, "uploading")
	}
	if !found {
		t.Errorf("no upload status in %q", statuses)
	}
	_ = s
	bad := filepath.Join(t.TempDir(), "bad.gguf")
	os.WriteFile(bad, []byte("not a model"), 0o644)
	if _, err := c.Import(context.Background(), bad, "x", localmodels.ImportOptions{}); err == nil || !strings.Contains(err.Error(), "bad.gguf") {
		t.Fatalf("importing a non-GGUF file: %v", err)
	}
	if len(data) == 0 {
		t.Fatal("empty model file")
	}
}

func TestTinyGGUFDeterministic(t *testing.T) {
	var a, b, c bytes.Buffer
	if err := localmodels.WriteTinyGGUF(&a, 1); err != nil {
		t.Fatal(err)
	}
	localmodels.WriteTinyGGUF(&b, 1)
	localmodels.WriteTinyGGUF(&c, 2)
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("same seed gave different bytes")
	}
	if bytes.Equal(a.Bytes(), c.Bytes()) {
		t.Fatal("different seeds gave the same bytes")
	}
	if a.Len() != c.Len() {
		t.Fatal("seed changed the file's layout")
	}
}

// TestTinyGGUFLayout reads the file back: GGUF v3 header, the metadata the
// issue fixes, 21 tensors, vocabulary of 3+256+95 tokens, data aligned to 32
// bytes, and norm weights of exactly 1.
func TestTinyGGUFLayout(t *testing.T) {
	var buf bytes.Buffer
	if err := localmodels.WriteTinyGGUF(&buf, 1); err != nil {
		t.Fatal(err)
	}
	g := parseGGUF(t, buf.Bytes())
	if g.version != 3 || len(g.tensors) != 21 {
		t.Fatalf("version %d, %d tensors", g.version, len(g.tensors))
	}
	wantKV := map[string]any{
		"general.architecture": "llama", "llama.block_count": uint32(2), "llama.embedding_length": uint32(64),
		"llama.feed_forward_length": uint32(128), "llama.attention.head_count": uint32(4),
		"llama.context_length": uint32(2048), "tokenizer.ggml.model": "llama", "llama.vocab_size": uint32(354),
	}
	for k, v := range wantKV {
		if g.kv[k] != v {
			t.Errorf("%s = %v, want %v", k, g.kv[k], v)
		}
	}
	// --context writes another trained context, and nothing else changes.
	var long bytes.Buffer
	if err := localmodels.WriteTinyGGUFContext(&long, 1, 8192); err != nil {
		t.Fatal(err)
	}
	if gl := parseGGUF(t, long.Bytes()); gl.kv["llama.context_length"] != uint32(8192) || len(gl.tensors) != 21 || long.Len() != buf.Len() {
		t.Errorf("context 8192: %v, %d tensors, %d bytes (2048: %d)", gl.kv["llama.context_length"], len(gl.tensors), long.Len(), buf.Len())
	}
	toks := g.kv["tokenizer.ggml.tokens"].([]string)
	types := g.kv["tokenizer.ggml.token_type"].([]int32)
	if len(toks) != 354 || toks[0] != "<unk>" || toks[3] != "<0x00>" || toks[258] != "<0xFF>" || toks[259] != "\u2581" || toks[260] != "!" || toks[353] != "~" {
		t.Fatalf("vocabulary wrong: %d tokens, %q %q %q %q", len(toks), toks[0], toks[3], toks[259], toks[353])
	}
	if types[3] != 6 || types[259] != 1 || types[1] != 3 {
		t.Fatalf("token types wrong: %v %v %v", types[1], types[3], types[259])
	}
	norm := g.tensors["blk.0.attn_norm.weight"]
	for i := 0; i < 64; i++ {
		if f := binary.LittleEndian.Uint32(buf.Bytes()[norm+uint64(4*i):]); f != 0x3f800000 {
			t.Fatalf("norm weight %d = %#x, want 1.0", i, f)
		}
	}
}

type gguf struct {
	version uint32
	kv      map[string]any
	tensors map[string]uint64 // name -> absolute data offset
}

func parseGGUF(t *testing.T, b []byte) gguf {
	t.Helper()
	r := bytes.NewReader(b)
	le := binary.LittleEndian
	var magic [4]byte
	r.Read(magic[:])
	if string(magic[:]) != "GGUF" {
		t.Fatal("no magic")
	}
	var g gguf
	var nt, nkv uint64
	binary.Read(r, le, &g.version)
	binary.Read(r, le, &nt)
	binary.Read(r, le, &nkv)
	str := func() string {
		var n uint64
		binary.Read(r, le, &n)
		s := make([]byte, n)
		r.Read(s)
		return string(s)
	}
	val := func(typ uint32) any {
		switch typ {
		case 4:
			var v uint32
			binary.Read(r, le, &v)
			return v
		case 5:
			var v int32
			binary.Read(r, le, &v)
			return v
		case 6:
			var v float32
			binary.Read(r, le, &v)
			return v
		case 8:
			return str()
		case 9:
			var et uint32
			var n uint64
			binary.Read(r, le, &et)
			binary.Read(r, le, &n)
			switch et {
			case 8:
				out := make([]string, n)
				for i := range out {
					out[i] = str()
				}
				return out
			case 5:
				out := make([]int32, n)
				binary.Read(r, le, out)
				return out
			case 6:
				out := make([]float32, n)
				binary.Read(r, le, out)
				return out
			}
		}
		t.Fatalf("unexpected type %d", typ)
		return nil
	}
	g.kv = map[string]any{}
	for i := uint64(0); i < nkv; i++ {
		k := str()
		var typ uint32
		binary.Read(r, le, &typ)
		g.kv[k] = val(typ)
	}
	offs := map[string]uint64{}
	for i := uint64(0); i < nt; i++ {
		name := str()
		var nd uint32
		binary.Read(r, le, &nd)
		dims := make([]uint64, nd)
		binary.Read(r, le, dims)
		var typ uint32
		var off uint64
		binary.Read(r, le, &typ)
		binary.Read(r, le, &off)
		if typ != 0 || off%32 != 0 {
			t.Fatalf("tensor %s: type %d offset %d", name, typ, off)
		}
		offs[name] = off
	}
	pos := uint64(len(b) - r.Len())
	start := (pos + 31) / 32 * 32
	g.tensors = map[string]uint64{}
	for n, o := range offs {
		g.tensors[n] = start + o
	}
	return g
}

// The streamed chat is read line by line as Ollama's own client reads it:
// an error status is an HTTP status error with the server's message (JSON
// or not), an error line in a stream fails the call with its text, and a
// line longer than bufio's default 64 KB is read whole.
func TestChatStreamReading(t *testing.T) {
	long := strings.Repeat("x", 200<<10)
	for _, c := range []struct {
		name, body string
		status     int
		wantStatus int
		wantErr    string
		want       string
	}{
		{"json error status", `{"error":"model 'm' not found"}`, 404, 404, "model 'm' not found", ""},
		{"plain error status", "busy\n", 503, 503, "busy", ""},
		{"error line mid-stream", `{"message":{"role":"assistant","content":"a"},"done":false}` + "\n" + `{"error":"runner crashed"}` + "\n", 200, 0, "runner crashed", ""},
		{"long line", `{"message":{"role":"assistant","content":"` + long + `"},"done":false}` + "\n" +
			`{"message":{"role":"assistant","content":"!"},"done":true,"done_reason":"stop","eval_count":2}` + "\n", 200, 0, "", long + "!"},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/api/chat" || r.Header.Get("Accept") != "application/x-ndjson" {
					t.Errorf("request %s, accept %q", r.URL.Path, r.Header.Get("Accept"))
				}
				w.WriteHeader(c.status)
				io.WriteString(w, c.body)
			}))
			defer srv.Close()
			cl, err := localmodels.New(srv.URL, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := cl.Chat(context.Background(), localmodels.ChatRequest{Model: "m", Messages: []localmodels.Message{{Role: "user", Content: "hi"}}}, localmodels.StreamLimits{})
			if c.wantErr == "" {
				if err != nil || resp.Content != c.want || resp.DoneReason != "stop" {
					t.Fatalf("err %v, %d bytes, done %q", err, len(resp.Content), resp.DoneReason)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.wantErr) || localmodels.StatusCode(err) != c.wantStatus {
				t.Fatalf("err %v (status %d), want %q with status %d", err, localmodels.StatusCode(err), c.wantErr, c.wantStatus)
			}
		})
	}
}

// TestChatTiming: the time a call spent at the server beyond the model's
// load, the prompt's reading and the generation, as the server accounts
// them, is its wait for a slot; a server that reports no durations gives
// none.
func TestChatTiming(t *testing.T) {
	t.Run("durations", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, `{"message":{"role":"assistant","content":"a"},"done":false}`+"\n"+
				`{"message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","eval_count":1,`+
				`"total_duration":125000000,"load_duration":20000000,"prompt_eval_duration":30000000,"eval_duration":40000000}`+"\n")
		}))
		defer srv.Close()
		cl, _ := localmodels.New(srv.URL, 5*time.Second)
		resp, err := cl.Chat(context.Background(), localmodels.ChatRequest{Model: "m"}, localmodels.StreamLimits{})
		if err != nil {
			t.Fatal(err)
		}
		want := localmodels.Timing{Known: true, Total: 125 * time.Millisecond, Load: 20 * time.Millisecond, Prompt: 30 * time.Millisecond, Eval: 40 * time.Millisecond}
		if resp.Timing != want || resp.Timing.Wait() != 35*time.Millisecond {
			t.Fatalf("timing %+v, wait %s; want %+v, 35ms", resp.Timing, resp.Timing.Wait(), want)
		}
	})
	t.Run("no durations", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, `{"message":{"role":"assistant","content":"a"},"done":true,"done_reason":"stop","eval_count":1}`+"\n")
		}))
		defer srv.Close()
		cl, _ := localmodels.New(srv.URL, 5*time.Second)
		resp, err := cl.Chat(context.Background(), localmodels.ChatRequest{Model: "m"}, localmodels.StreamLimits{})
		if err != nil || resp.Timing.Known || resp.Timing.Wait() != 0 {
			t.Fatalf("timing %+v, wait %s, %v", resp.Timing, resp.Timing.Wait(), err)
		}
	})
	t.Run("one slot", func(t *testing.T) {
		// Two calls at once on a server with one slot: one is answered
		// at once, the other waits for the slot as long as the first
		// takes, less the time between their arrivals (on a loaded
		// machine the second goroutine's request can reach the server
		// 10–20 ms after the first's: a wait of 137 ms was seen in CI).
		srv := fakeollama.New(func(fakeollama.ChatRequest) fakeollama.Reply {
			return fakeollama.Reply{Content: "a", Delay: 150 * time.Millisecond}
		}, fakeollama.Model{Name: "m:latest", Digest: "d"})
		defer srv.Close()
		srv.SetSlots(1)
		cl, _ := localmodels.New(srv.Host(), 5*time.Second)
		waits := make(chan localmodels.Timing, 2)
		for range 2 {
			go func() {
				resp, err := cl.Chat(context.Background(), localmodels.ChatRequest{Model: "m"}, localmodels.StreamLimits{})
				if err != nil {
					t.Error(err)
				}
				waits <- resp.Timing
			}()
		}
		a, b := <-waits, <-waits
		if a.Wait() > b.Wait() {
			a, b = b, a
		}
		if !a.Known || !b.Known || a.Wait() > 50*time.Millisecond || b.Wait() < 100*time.Millisecond || b.Wait() > a.Total+10*time.Millisecond || a.Prompt < 150*time.Millisecond || b.Prompt < 150*time.Millisecond {
			t.Fatalf("first %+v (wait %s), second %+v (wait %s)", a, a.Wait(), b, b.Wait())
		}
	})
}
