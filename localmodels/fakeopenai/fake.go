// Package fakeopenai is an in-process OpenAI-compatible server for tests,
// answering as vLLM or llama.cpp's llama-server do: model listing with
// their extra fields, streamed chat completions with a usage event,
// embeddings, and the failures real servers have (a refused
// response_format, 429/503, a stream cut before its end).
package fakeopenai

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
)

// Server is the fake. Kind is "vllm", "llama.cpp" or "" (neither: a plain
// OpenAI-compatible server). Set its fields before the calls they shape.
type Server struct {
	*httptest.Server
	Kind string
	// Token, when set, is required as the bearer token.
	Token string
	// RefuseFormat answers 400 to a request with response_format.
	RefuseFormat bool
	// Reply is the content streamed back, in chunks of 4 bytes (ReplyFor,
	// when set, gives it per request), and Finish its finish_reason.
	Reply    string
	ReplyFor func(body map[string]any) string
	Finish   string
	// NoDone ends the stream without "data: [DONE]".
	NoDone bool
	// Models are the ids listed (default per Kind).
	Models []string
	// Cached, when set, is reported as the prompt tokens served from the
	// prefix cache (usage.prompt_tokens_details.cached_tokens) of each of
	// the 17 prompt tokens the usage reports.
	Cached *int

	mu     sync.Mutex
	status []int
	bodies []map[string]any
	auth   []string
}

// New starts a fake of kind.
func New(kind string) *Server {
	f := &Server{Kind: kind, Reply: `{"score": 4}`, Finish: "stop"}
	mux := http.NewServeMux()
	authOK := func(w http.ResponseWriter, r *http.Request) bool {
		f.mu.Lock()
		f.auth = append(f.auth, r.Header.Get("Authorization"))
		f.mu.Unlock()
		if f.Token != "" && r.Header.Get("Authorization") != "Bearer "+f.Token {
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"error":{"message":"invalid api key"}}`)
			return false
		}
		return true
	}
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		if !authOK(w, r) {
			return
		}
		if len(f.Models) > 0 {
			var data []string
			for _, m := range f.Models {
				data = append(data, fmt.Sprintf(`{"id":%q,"object":"model"}`, m))
			}
			fmt.Fprintf(w, `{"object":"list","data":[%s]}`, strings.Join(data, ","))
			return
		}
		switch f.Kind {
		case "vllm":
			io.WriteString(w, `{"object":"list","data":[{"id":"Qwen/Qwen2.5-7B-Instruct","object":"model","owned_by":"vllm","root":"/models/qwen2.5-7b","max_model_len":32768},{"id":"bge-m3","object":"model","root":"BAAI/bge-m3","max_model_len":8192}]}`)
		case "llama.cpp":
			io.WriteString(w, `{"object":"list","data":[{"id":"qwen2.5-1.5b-instruct-q4_k_m.gguf","object":"model","meta":{"n_ctx_train":32768,"n_params":1543714304,"size":1117320736}}]}`)
		default:
			io.WriteString(w, `{"object":"list","data":[{"id":"local-model","object":"model"}]}`)
		}
	})
	mux.HandleFunc("GET /version", func(w http.ResponseWriter, r *http.Request) {
		if f.Kind != "vllm" {
			http.NotFound(w, r)
			return
		}
		io.WriteString(w, `{"version":"0.6.3"}`)
	})
	mux.HandleFunc("GET /props", func(w http.ResponseWriter, r *http.Request) {
		if f.Kind != "llama.cpp" {
			http.NotFound(w, r)
			return
		}
		io.WriteString(w, `{"default_generation_settings":{"n_ctx":8192},"total_slots":4,"model_path":"/srv/models/qwen2.5-1.5b-instruct-q4_k_m.gguf","build_info":"b4500-abcdef"}`)
	})
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		if !authOK(w, r) {
			return
		}
		var body map[string]any
		json.NewDecoder(r.Body).Decode(&body)
		f.mu.Lock()
		f.bodies = append(f.bodies, body)
		var code int
		if len(f.status) > 0 {
			code, f.status = f.status[0], f.status[1:]
		}
		reply := f.Reply
		if f.ReplyFor != nil {
			reply = f.ReplyFor(body)
		}
		f.mu.Unlock()
		if code != 0 {
			w.WriteHeader(code)
			fmt.Fprintf(w, `{"error":{"message":"status %d"}}`, code)
			return
		}
		if _, has := body["response_format"]; has && f.RefuseFormat {
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"error":{"message":"Unsupported response_format type"}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n")
		for i := 0; i < len(reply); i += 4 {
			part, _ := json.Marshal(reply[i:min(i+4, len(reply))])
			fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":%s},\"finish_reason\":null}]}\n\n", part)
			fl.Flush()
		}
		fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":%q}]}\n\n", f.Finish)
		details := ""
		if f.Cached != nil {
			details = fmt.Sprintf(",\"prompt_tokens_details\":{\"cached_tokens\":%d}", *f.Cached)
		}
		fmt.Fprintf(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":17,\"completion_tokens\":5,\"total_tokens\":22%s}}\n\n", details)
		if !f.NoDone {
			fmt.Fprint(w, "data: [DONE]\n\n")
		}
	})
	mux.HandleFunc("POST /v1/embeddings", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Input []string `json:"input"`
		}
		json.NewDecoder(r.Body).Decode(&body)
		var data []string
		// Out of order on purpose: the index says which text is which.
		for i := len(body.Input) - 1; i >= 0; i-- {
			data = append(data, fmt.Sprintf(`{"object":"embedding","index":%d,"embedding":[%d,1,0]}`, i, len(body.Input[i])))
		}
		fmt.Fprintf(w, `{"object":"list","data":[%s]}`, strings.Join(data, ","))
	})
	f.Server = httptest.NewServer(mux)
	return f
}

// SetStatus answers the next chat requests with these HTTP codes, in turn.
func (f *Server) SetStatus(codes ...int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.status = append(f.status, codes...)
}

// Bodies are the chat request bodies received.
func (f *Server) Bodies() []map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]map[string]any(nil), f.bodies...)
}

// LastBody is the last chat request body.
func (f *Server) LastBody() map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.bodies[len(f.bodies)-1]
}

// Auth are the Authorization headers received.
func (f *Server) Auth() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.auth...)
}
