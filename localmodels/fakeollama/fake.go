// Package fakeollama is an in-process stand-in for an Ollama server that
// speaks the parts of its HTTP API halu uses (version, tags, show, chat,
// embed, blobs, create, pull). It is for unit tests only: the demo, the
// end-to-end tests and CI use a real server.
package fakeollama

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"
)

// ChatRequest is the chat request as the fake received it, options as the
// raw map that crossed the wire.
type ChatRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
	Options map[string]any  `json:"options"`
	Format  json.RawMessage `json:"format"`
	Stream  *bool           `json:"stream"`
	// Think is the think value sent (null when none was).
	Think json.RawMessage `json:"think"`
	// Logprobs and TopLogprobs are what the request asked of token
	// log-probabilities.
	Logprobs    bool `json:"logprobs"`
	TopLogprobs int  `json:"top_logprobs"`
}

// Logprob is a generated token's log-probability as the fake reports it,
// with its alternatives (Top, cut to the request's top_logprobs).
type Logprob struct {
	Token   string
	Logprob float64
	Top     []Logprob
}

// LastUser returns the content of the last user message.
func (r ChatRequest) LastUser() string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return r.Messages[i].Content
		}
	}
	return ""
}

// Reply is what the fake answers a chat with. A non-zero Status makes it
// answer with that HTTP status and Error; Delay holds the answer back;
// Chunks, when set, are streamed one per line instead of Content.
type Reply struct {
	Content string
	Chunks  []string
	Status  int
	Error   string
	Delay   time.Duration
	// Logprobs are reported, with the first chunk, when the request asks
	// for them.
	Logprobs []Logprob
	// ChunkDelay is the pause before each chunk after the first.
	ChunkDelay time.Duration
	// PromptEvalCount, when set, is the prompt_eval_count reported
	// (default: the prompt's word count).
	PromptEvalCount int
	// DoneReason is the final message's done_reason (default "stop").
	DoneReason string
	// Load is the load_duration reported, as a server that loaded the
	// model for the call says (the fake does not take the time: Delay
	// does).
	Load time.Duration
	// Cut drops the connection after the chunks, before the final "done"
	// message, as a server that dies mid-generation (or a proxy that drops
	// the stream) does.
	Cut bool
}

// Model is a model the fake serves.
type Model struct {
	Name           string
	Digest         string
	Family         string
	ParameterSize  string
	Quantization   string
	ParameterCount int64
	Template       string
	// ContextLength is the trained context reported by show (default 4096).
	ContextLength int
	// Capabilities are reported by show (default: completion).
	Capabilities []string
	// Blob is the content digest of the weights file show's Modelfile
	// names in its FROM line, as Ollama does (default: Digest).
	Blob string
	// Parameters are the model's default options, as show lists them.
	Parameters string
}

// Server is the fake.
type Server struct {
	*httptest.Server

	mu        sync.Mutex
	models    []Model
	blobs     map[string][]byte
	chat      func(ChatRequest) Reply
	chats     []ChatRequest
	embeds    int
	embedIn   int
	embedReqs []EmbedRequest
	embedDim  int
	version   string
	// slots, when set, holds one token per chat the fake answers at once:
	// the rest wait, as Ollama queues calls beyond OLLAMA_NUM_PARALLEL.
	slots chan struct{}
}

// SetSlots makes the fake answer at most n chats at once (0: no limit),
// queueing the rest as Ollama does beyond its parallel slots. Call it
// before the first chat.
func (s *Server) SetSlots(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.slots = nil
	if n > 0 {
		s.slots = make(chan struct{}, n)
	}
}

// New starts a fake serving models; chat answers every chat request.
func New(chat func(ChatRequest) Reply, models ...Model) *Server {
	s := &Server{models: models, blobs: map[string][]byte{}, chat: chat, embedDim: 8, version: "0.17.4-fake"}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/version", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		v := s.version
		s.mu.Unlock()
		writeJSON(w, map[string]string{"version": v})
	})
	mux.HandleFunc("GET /api/tags", s.tags)
	mux.HandleFunc("POST /api/show", s.show)
	mux.HandleFunc("POST /api/chat", s.chatHandler)
	mux.HandleFunc("POST /api/embed", s.embed)
	mux.HandleFunc("POST /api/blobs/{digest}", s.blob)
	mux.HandleFunc("POST /api/create", s.create)
	mux.HandleFunc("POST /api/pull", s.pull)
	s.Server = httptest.NewServer(mux)
	return s
}

// Host returns host:port of the fake.
// SetVersion changes the version the fake reports (default 0.17.4-fake).
func (s *Server) SetVersion(v string) {
	s.mu.Lock()
	s.version = v
	s.mu.Unlock()
}

func (s *Server) Host() string { return strings.TrimPrefix(s.URL, "http://") }

// SetChat replaces the chat handler.
func (s *Server) SetChat(f func(ChatRequest) Reply) {
	s.mu.Lock()
	s.chat = f
	s.mu.Unlock()
}

// Chats returns every chat request received so far.
func (s *Server) Chats() []ChatRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]ChatRequest(nil), s.chats...)
}

// EmbedCalls returns how many /api/embed calls and inputs arrived.
// EmbedRequest is what an /api/embed request asked besides its texts.
type EmbedRequest struct {
	Model     string
	Options   map[string]any
	KeepAlive any
}

// EmbedRequests are the embedding requests received, in order.
func (s *Server) EmbedRequests() []EmbedRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]EmbedRequest(nil), s.embedReqs...)
}

func (s *Server) EmbedCalls() (calls, inputs int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.embeds, s.embedIn
}

// SetModelDigest changes a model's digest, as re-pulling a tag would.
func (s *Server) SetModelDigest(name, digest string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.models {
		if s.models[i].Name == name {
			s.models[i].Digest = digest
		}
	}
}

// Blob returns an uploaded blob.
func (s *Server) Blob(digest string) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.blobs[digest]
}

func (s *Server) find(name string) (Model, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range s.models {
		if m.Name == name || m.Name == name+":latest" {
			return m, true
		}
	}
	return Model{}, false
}

func (s *Server) tags(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var list []map[string]any
	for _, m := range s.models {
		list = append(list, map[string]any{
			"name": m.Name, "model": m.Name, "digest": m.Digest, "size": 1234,
			"details": map[string]any{"format": "gguf", "family": m.Family, "families": []string{m.Family},
				"parameter_size": m.ParameterSize, "quantization_level": m.Quantization},
		})
	}
	writeJSON(w, map[string]any{"models": list})
}

func (s *Server) show(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model string `json:"model"`
	}
	_ = json.NewDecoder(r.Body).Decode(&req)
	m, ok := s.find(req.Model)
	if !ok {
		w.WriteHeader(http.StatusNotFound)
		writeJSON(w, map[string]string{"error": "model '" + req.Model + "' not found"})
		return
	}
	caps := m.Capabilities
	if caps == nil {
		caps = []string{"completion"}
	}
	blob := cmp.Or(m.Blob, m.Digest)
	writeJSON(w, map[string]any{
		"capabilities": caps,
		"template":     m.Template,
		"parameters":   m.Parameters,
		"modelfile":    "# Modelfile generated by \"ollama show\"\nFROM /models/blobs/sha256-" + strings.TrimPrefix(blob, "sha256:") + "\nTEMPLATE \"\"\"" + m.Template + "\"\"\"\n",
		"details":      map[string]any{"family": m.Family, "parameter_size": m.ParameterSize, "quantization_level": m.Quantization},
		"model_info": map[string]any{"general.parameter_count": m.ParameterCount,
			"llama.context_length": cmp.Or(m.ContextLength, 4096)},
	})
}

func (s *Server) chatHandler(w http.ResponseWriter, r *http.Request) {
	var req ChatRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		writeJSON(w, map[string]string{"error": err.Error()})
		return
	}
	if _, ok := s.find(req.Model); !ok {
		w.WriteHeader(http.StatusNotFound)
		writeJSON(w, map[string]string{"error": "model '" + req.Model + "' not found"})
		return
	}
	arrived := time.Now()
	s.mu.Lock()
	s.chats = append(s.chats, req)
	f, slots := s.chat, s.slots
	s.mu.Unlock()
	if slots != nil {
		select {
		case slots <- struct{}{}:
			defer func() { <-slots }()
		case <-r.Context().Done():
			return
		}
	}
	// Ollama's durations: the time in a slot up to the first chunk is
	// reading the prompt, from it to the end generating; before the
	// slot, waiting; the whole is total.
	inSlot := time.Now()
	rep := f(req)
	if rep.Status != 0 {
		w.WriteHeader(rep.Status)
		writeJSON(w, map[string]string{"error": rep.Error})
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	fl, _ := w.(http.Flusher)
	chunks := rep.Chunks
	if chunks == nil {
		chunks = []string{rep.Content}
	}
	if rep.Delay > 0 {
		select {
		case <-time.After(rep.Delay):
		case <-r.Context().Done():
			return
		}
	}
	evals := 0
	var promptDur time.Duration
	var first time.Time
	for i, c := range chunks {
		if i == 0 {
			first = time.Now()
			promptDur = first.Sub(inSlot)
		}
		if i > 0 && rep.ChunkDelay > 0 {
			select {
			case <-time.After(rep.ChunkDelay):
			case <-r.Context().Done():
				return
			}
		}
		evals += len(strings.Fields(c))
		msg := map[string]any{"model": req.Model, "message": map[string]string{"role": "assistant", "content": c}, "done": false}
		if i == 0 && req.Logprobs && len(rep.Logprobs) > 0 {
			var lps []map[string]any
			for _, l := range rep.Logprobs {
				m := map[string]any{"token": l.Token, "logprob": l.Logprob}
				var top []map[string]any
				for k, a := range l.Top {
					if k < req.TopLogprobs {
						top = append(top, map[string]any{"token": a.Token, "logprob": a.Logprob})
					}
				}
				if len(top) > 0 {
					m["top_logprobs"] = top
				}
				lps = append(lps, m)
			}
			msg["logprobs"] = lps
		}
		writeJSON(w, msg)
		if fl != nil {
			fl.Flush()
		}
	}
	if rep.Cut {
		panic(http.ErrAbortHandler) // closes the connection, quietly
	}
	prompt := rep.PromptEvalCount
	if prompt == 0 {
		for _, m := range req.Messages {
			prompt += len(strings.Fields(m.Content))
		}
	}
	done := rep.DoneReason
	if done == "" {
		done = "stop"
	}
	writeJSON(w, map[string]any{"model": req.Model, "message": map[string]string{"role": "assistant", "content": ""},
		"done": true, "done_reason": done, "prompt_eval_count": prompt, "eval_count": evals,
		"total_duration": time.Since(arrived), "load_duration": rep.Load, "prompt_eval_duration": promptDur, "eval_duration": evalDur(first)})
}

// evalDur is the time since the first chunk (zero without one).
func evalDur(first time.Time) time.Duration {
	if first.IsZero() {
		return 0
	}
	return time.Since(first)
}

func (s *Server) embed(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model     string         `json:"model"`
		Input     any            `json:"input"`
		Options   map[string]any `json:"options"`
		KeepAlive any            `json:"keep_alive"`
	}
	_ = json.NewDecoder(r.Body).Decode(&req)
	var inputs []string
	switch v := req.Input.(type) {
	case string:
		inputs = []string{v}
	case []any:
		for _, x := range v {
			s, _ := x.(string)
			inputs = append(inputs, s)
		}
	}
	s.mu.Lock()
	s.embeds++
	s.embedIn += len(inputs)
	s.embedReqs = append(s.embedReqs, EmbedRequest{Model: req.Model, Options: req.Options, KeepAlive: req.KeepAlive})
	dim := s.embedDim
	s.mu.Unlock()
	var out [][]float32
	for _, in := range inputs {
		out = append(out, Vector(in, dim))
	}
	writeJSON(w, map[string]any{"model": req.Model, "embeddings": out})
}

// Vector is the fake's embedding of text: a deterministic unit vector drawn
// from the text's hash, so equal texts embed equally and different ones
// (almost surely) do not.
func Vector(text string, dim int) []float32 {
	v := make([]float32, dim)
	var norm float64
	for i := range v {
		h := sha256.Sum256([]byte(text + "#" + string(rune('a'+i))))
		x := float64(binary.LittleEndian.Uint32(h[:4]))/float64(math.MaxUint32) - 0.5
		v[i] = float32(x)
		norm += x * x
	}
	for i := range v {
		v[i] /= float32(math.Sqrt(norm))
	}
	return v
}

func (s *Server) blob(w http.ResponseWriter, r *http.Request) {
	digest := r.PathValue("digest")
	b, _ := io.ReadAll(r.Body)
	sum := sha256.Sum256(b)
	if "sha256:"+hex.EncodeToString(sum[:]) != digest {
		w.WriteHeader(http.StatusBadRequest)
		writeJSON(w, map[string]string{"error": "digest mismatch"})
		return
	}
	s.mu.Lock()
	s.blobs[digest] = b
	s.mu.Unlock()
	w.WriteHeader(http.StatusCreated)
}

func (s *Server) create(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model    string            `json:"model"`
		Files    map[string]string `json:"files"`
		Template string            `json:"template"`
	}
	_ = json.NewDecoder(r.Body).Decode(&req)
	for _, d := range req.Files {
		if s.Blob(d) == nil {
			w.WriteHeader(http.StatusBadRequest)
			writeJSON(w, map[string]string{"error": "missing blob " + d})
			return
		}
	}
	sum := sha256.Sum256([]byte(req.Model + req.Template + strings.Join(mapValues(req.Files), ",")))
	s.mu.Lock()
	s.models = append(s.models, Model{Name: req.Model + ":latest", Digest: hex.EncodeToString(sum[:]), Family: "llama",
		ParameterSize: "128K", Quantization: "F32", ParameterCount: 127552, Template: req.Template})
	s.mu.Unlock()
	writeJSON(w, map[string]string{"status": "success"})
}

func (s *Server) pull(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model string `json:"model"`
	}
	_ = json.NewDecoder(r.Body).Decode(&req)
	if strings.HasPrefix(req.Model, "offline/") {
		// What Ollama streams when its registry cannot be reached (a
		// machine with no network).
		writeJSON(w, map[string]any{"status": "pulling manifest"})
		writeJSON(w, map[string]any{"error": `pull model manifest: Get "https://registry.ollama.ai/v2/` + req.Model + `/manifests/latest": dial tcp: lookup registry.ollama.ai on 127.0.0.53:53: server misbehaving`})
		return
	}
	writeJSON(w, map[string]any{"status": "pulling manifest"})
	writeJSON(w, map[string]any{"status": "pulling abc", "completed": 50, "total": 100})
	writeJSON(w, map[string]any{"status": "pulling abc", "completed": 100, "total": 100})
	sum := sha256.Sum256([]byte(req.Model))
	s.mu.Lock()
	s.models = append(s.models, Model{Name: req.Model, Digest: hex.EncodeToString(sum[:]), Family: "qwen2", ParameterSize: "494M", Quantization: "Q4_K_M", ParameterCount: 494_000_000})
	s.mu.Unlock()
	writeJSON(w, map[string]any{"status": "success"})
}

func mapValues(m map[string]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

func writeJSON(w io.Writer, v any) {
	b, _ := json.Marshal(v)
	_, _ = w.Write(append(b, '\n'))
}
