package localmodels

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ollama/ollama/api"
)

// Backend is a model server as the engine uses it: streamed chat,
// embeddings and what the server says of its models. Two implementations:
// Client (Ollama's native API, the default) and OpenAI (any server with an
// OpenAI-compatible API: vLLM, llama.cpp's llama-server, SGLang, LM Studio,
// Ollama's own /v1).
type Backend interface {
	Chat(ctx context.Context, req ChatRequest, lim StreamLimits) (ChatResponse, error)
	Embed(ctx context.Context, req EmbedRequest) ([][]float32, error)
	Info(ctx context.Context, name string) (ModelInfo, error)
	List(ctx context.Context) ([]ModelInfo, error)
	// Version says which server and version answers ("0.17.4" for Ollama's
	// native API; "vllm 0.6.3", "llama.cpp b4500" … for OpenAI-compatible
	// servers).
	Version(ctx context.Context) (string, error)
	Host() string
	IsLoopback() bool
	// Protocol is "ollama" or "openai": part of every cache key, since the
	// two APIs set different defaults for what a request leaves out.
	Protocol() string
}

// Protocol is "ollama": Ollama's native API.
func (c *Client) Protocol() string { return "ollama" }

// Server kinds an OpenAI backend recognises.
const (
	ServerVLLM     = "vllm"
	ServerLlamaCpp = "llama.cpp"
	ServerOllama   = "ollama"
	ServerOpenAI   = "openai-compatible"
)

// OpenAI is a server speaking the OpenAI-compatible API:
// /v1/chat/completions (streamed), /v1/embeddings and /v1/models. What the
// API leaves out it reads where the server offers it: vLLM's /version and
// each model's root path and max_model_len, llama.cpp's /props (model path,
// context, build), and for Ollama's /v1 the native API's digests and
// templates.
//
// Requests carry temperature, seed, top_p, max_tokens and stop explicitly;
// structured output goes as response_format with a JSON schema, and a
// server that refuses it gets the request again without (said once through
// Logf; the judge's reply is then read as text). num_ctx and num_thread
// have no place in the API: the server fixes both.
type OpenAI struct {
	base  *url.URL
	http  *http.Client
	token string
	// Logf receives the few things worth saying once (a server that
	// refuses response_format). Nil discards them.
	Logf func(format string, args ...any)

	detect   sync.Once
	kind     string
	version  string
	detErr   error
	native   *Client // set when the server is Ollama
	noFormat atomic.Bool
	said     sync.Once
}

// NewOpenAI returns a backend for the OpenAI-compatible server at rawURL
// ("http://gpu1:8000", with or without "/v1"). token, when not empty, is
// sent as a bearer token; it is never logged. timeout bounds every HTTP
// exchange.
func NewOpenAI(rawURL string, timeout time.Duration, token string) (*OpenAI, error) {
	u, err := url.Parse(strings.TrimSpace(rawURL))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("openai server %q: want http://HOST:PORT (or https://)", rawURL)
	}
	u.Path = strings.TrimSuffix(strings.TrimRight(u.Path, "/"), "/v1")
	hc := &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			Proxy:               nil,
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
			MaxIdleConnsPerHost: minIdle,
			IdleConnTimeout:     90 * time.Second,
		},
	}
	return &OpenAI{base: u, http: hc, token: token}, nil
}

// Protocol is "openai".
func (o *OpenAI) Protocol() string { return "openai" }

// Host returns the server address, host:port.
func (o *OpenAI) Host() string { return o.base.Host }

// IsLoopback reports whether the server is on this machine.
func (o *OpenAI) IsLoopback() bool { return isLoopback(o.base) }

func (o *OpenAI) wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	if IsUnreachable(err) {
		return fmt.Errorf("openai server %s: %s: %w (is the server running? try `halu doctor`)", o.base.Host, op, err)
	}
	return fmt.Errorf("openai server %s: %s: %w", o.base.Host, op, err)
}

// do sends one request and decodes a JSON answer into out (nil: the body
// is returned unread to the caller through resp). An answer other than
// 2xx is an api.StatusError, so that IsTransient treats 429 and 5xx as
// worth retrying and other codes as final.
func (o *OpenAI) do(ctx context.Context, method, path string, body any, out any) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	u := *o.base
	u.Path += path
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	if o.token != "" {
		req.Header.Set("Authorization", "Bearer "+o.token)
	}
	resp, err := o.http.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		msg := strings.TrimSpace(string(b))
		var e struct {
			Error json.RawMessage `json:"error"`
		}
		if json.Unmarshal(b, &e) == nil && len(e.Error) > 0 {
			var m struct {
				Message string `json:"message"`
			}
			if json.Unmarshal(e.Error, &m) == nil && m.Message != "" {
				msg = m.Message
			} else {
				var s string
				if json.Unmarshal(e.Error, &s) == nil {
					msg = s
				}
			}
		}
		return nil, api.StatusError{StatusCode: resp.StatusCode, Status: resp.Status, ErrorMessage: msg}
	}
	if out == nil {
		return resp, nil
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	return resp, nil
}

// Version detects the server once: Ollama answers /api/version, vLLM
// /version, llama.cpp /props; any other server that lists its models is
// "openai-compatible" with no version.
func (o *OpenAI) Version(ctx context.Context) (string, error) {
	o.detect.Do(func() {
		var models struct {
			Data []json.RawMessage `json:"data"`
		}
		if _, err := o.do(ctx, http.MethodGet, "/v1/models", nil, &models); err != nil {
			o.detErr = o.wrap("list models", err)
			return
		}
		var v struct {
			Version string `json:"version"`
		}
		if _, err := o.do(ctx, http.MethodGet, "/api/version", nil, &v); err == nil && v.Version != "" {
			o.kind, o.version = ServerOllama, "ollama "+v.Version
			o.native = &Client{api: api.NewClient(o.base, o.http), base: o.base, http: o.http}
			return
		}
		v.Version = ""
		if _, err := o.do(ctx, http.MethodGet, "/version", nil, &v); err == nil && v.Version != "" {
			o.kind, o.version = ServerVLLM, "vllm "+v.Version
			return
		}
		var props llamaProps
		if _, err := o.do(ctx, http.MethodGet, "/props", nil, &props); err == nil && (props.BuildInfo != "" || props.ModelPath != "" || props.DefaultGeneration.NCtx > 0) {
			o.kind, o.version = ServerLlamaCpp, strings.TrimSpace("llama.cpp "+props.BuildInfo)
			return
		}
		o.kind, o.version = ServerOpenAI, ServerOpenAI
	})
	if o.detErr != nil {
		// Not kept: the next call tries again (the server may be starting).
		err := o.detErr
		o.detect, o.detErr = sync.Once{}, nil
		return "", err
	}
	return o.version, nil
}

// Kind is the server detected by Version ("" before it).
func (o *OpenAI) Kind() string { return o.kind }

type llamaProps struct {
	BuildInfo         string `json:"build_info"`
	ModelPath         string `json:"model_path"`
	DefaultGeneration struct {
		NCtx int `json:"n_ctx"`
	} `json:"default_generation_settings"`
	TotalSlots int `json:"total_slots"`
}

// openaiModel is an entry of /v1/models with the fields servers add: vLLM's
// root (the weights' path) and max_model_len, llama.cpp's meta.
type openaiModel struct {
	ID          string `json:"id"`
	OwnedBy     string `json:"owned_by"`
	Root        string `json:"root"`
	MaxModelLen int    `json:"max_model_len"`
	Meta        *struct {
		NCtxTrain int   `json:"n_ctx_train"`
		NParams   int64 `json:"n_params"`
		Size      int64 `json:"size"`
	} `json:"meta"`
}

// List returns the models the server serves, sorted by id.
func (o *OpenAI) List(ctx context.Context) ([]ModelInfo, error) {
	if _, err := o.Version(ctx); err != nil {
		return nil, err
	}
	var lr struct {
		Data []openaiModel `json:"data"`
	}
	if _, err := o.do(ctx, http.MethodGet, "/v1/models", nil, &lr); err != nil {
		return nil, o.wrap("list models", err)
	}
	out := make([]ModelInfo, 0, len(lr.Data))
	for _, m := range lr.Data {
		info := ModelInfo{Name: m.ID, FixedContext: true, Identity: IdentityName}
		if m.Root != "" && m.Root != m.ID {
			info.Weights, info.Identity = m.Root, IdentityPath
		}
		if m.MaxModelLen > 0 {
			info.ContextLength = m.MaxModelLen
		}
		if m.Meta != nil {
			info.ParameterCount, info.Size = m.Meta.NParams, m.Meta.Size
			if info.ParameterCount > 0 {
				info.Tiny = info.ParameterCount < TinyParameterLimit
			}
		}
		out = append(out, info)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Info returns what the server says of one model. For Ollama's /v1 the
// native API gives the digest, template and parameters; for llama.cpp,
// /props gives the weights' path and the context each slot has.
func (o *OpenAI) Info(ctx context.Context, name string) (ModelInfo, error) {
	models, err := o.List(ctx)
	if err != nil {
		return ModelInfo{}, err
	}
	var info ModelInfo
	found := false
	for _, m := range models {
		if m.Name == name || o.kind == ServerOllama && m.Name == CanonicalName(name) {
			info, found = m, true
			break
		}
	}
	if !found {
		var ids []string
		for _, m := range models {
			ids = append(ids, m.Name)
		}
		return ModelInfo{}, fmt.Errorf("openai server %s: %q: %w (it serves: %s)", o.base.Host, name, ErrModelNotFound, strings.Join(ids, ", "))
	}
	switch o.kind {
	case ServerOllama:
		n, err := o.native.Info(ctx, info.Name)
		if err != nil {
			return ModelInfo{}, err
		}
		// Ollama's /v1 takes no num_ctx: the server's default window
		// applies, which its API does not report.
		n.FixedContext, n.ContextLength, n.Identity = true, 0, IdentityDigest
		return n, nil
	case ServerLlamaCpp:
		var props llamaProps
		if _, err := o.do(ctx, http.MethodGet, "/props", nil, &props); err == nil {
			if props.ModelPath != "" {
				info.Weights, info.Identity = props.ModelPath, IdentityPath
			}
			if n := props.DefaultGeneration.NCtx; n > 0 {
				info.ContextLength = n
			}
		}
	}
	return info, nil
}

// Weights identities, from strongest to weakest.
const (
	// IdentityDigest: the server names the weights by content (Ollama).
	IdentityDigest = "digest"
	// IdentityPath: the server names the file or directory it loaded
	// (vLLM's root, llama.cpp's model path): other weights at that path
	// would not be told apart.
	IdentityPath = "path"
	// IdentityName: only the model's name is known.
	IdentityName = "name"
)

// chatCompletion is the request body of /v1/chat/completions.
type chatCompletion struct {
	Model         string         `json:"model"`
	Messages      []Message      `json:"messages"`
	Stream        bool           `json:"stream"`
	StreamOptions *streamOptions `json:"stream_options,omitempty"`
	Temperature   *float64       `json:"temperature,omitempty"`
	TopP          *float64       `json:"top_p,omitempty"`
	TopK          *int           `json:"top_k,omitempty"`
	FreqPenalty   *float64       `json:"frequency_penalty,omitempty"`
	// RepeatPenalty is sent under both names servers use: vLLM's
	// repetition_penalty and llama.cpp's repeat_penalty.
	RepetitionPenalty *float64        `json:"repetition_penalty,omitempty"`
	RepeatPenalty     *float64        `json:"repeat_penalty,omitempty"`
	Seed              *int            `json:"seed,omitempty"`
	MaxTokens         *int            `json:"max_tokens,omitempty"`
	Stop              []string        `json:"stop,omitempty"`
	ResponseFormat    *responseFormat `json:"response_format,omitempty"`
	ReasoningEff      string          `json:"reasoning_effort,omitempty"`
	TemplateKwargs    map[string]any  `json:"chat_template_kwargs,omitempty"`
	Logprobs          bool            `json:"logprobs,omitempty"`
	TopLogprobs       *int            `json:"top_logprobs,omitempty"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type responseFormat struct {
	Type       string          `json:"type"`
	JSONSchema *jsonSchemaSpec `json:"json_schema,omitempty"`
}

type jsonSchemaSpec struct {
	Name   string          `json:"name"`
	Schema json.RawMessage `json:"schema"`
	Strict bool            `json:"strict"`
}

// chatChunk is one server-sent event of a streamed completion.
type chatChunk struct {
	Choices []struct {
		Delta struct {
			Content          string `json:"content"`
			Reasoning        string `json:"reasoning"`
			ReasoningContent string `json:"reasoning_content"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
		Logprobs     *struct {
			Content []struct {
				Token       string  `json:"token"`
				Logprob     float64 `json:"logprob"`
				TopLogprobs []struct {
					Token   string  `json:"token"`
					Logprob float64 `json:"logprob"`
				} `json:"top_logprobs"`
			} `json:"content"`
		} `json:"logprobs"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		// PromptTokensDetails.CachedTokens is OpenAI's count of prompt
		// tokens served from the server's prefix cache (vLLM gives it
		// with --enable-prompt-tokens-details).
		PromptTokensDetails *struct {
			CachedTokens *int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
}

// body builds the request body of req.
func (o *OpenAI) body(req ChatRequest, withFormat bool) chatCompletion {
	op := req.Options
	b := chatCompletion{Model: req.Model, Messages: req.Messages, Stream: true, StreamOptions: &streamOptions{IncludeUsage: true},
		Temperature: op.Temperature, TopP: op.TopP, TopK: op.TopK, FreqPenalty: op.FrequencyPenalty, RepetitionPenalty: op.RepeatPenalty, RepeatPenalty: op.RepeatPenalty, Seed: op.Seed,
		MaxTokens: op.NumPredict, Stop: op.Stop}
	if withFormat && len(req.Format) > 0 {
		if string(req.Format) == `"json"` {
			b.ResponseFormat = &responseFormat{Type: "json_object"}
		} else {
			b.ResponseFormat = &responseFormat{Type: "json_schema", JSONSchema: &jsonSchemaSpec{Name: "reply", Schema: req.Format, Strict: true}}
		}
	}
	if req.Logprobs {
		b.Logprobs = true
		if req.TopLogprobs > 0 {
			b.TopLogprobs = &req.TopLogprobs
		}
	}
	if req.Think != nil && !*req.Think {
		if o.kind == ServerOllama {
			b.ReasoningEff = "none"
		} else {
			b.TemplateKwargs = map[string]any{"enable_thinking": false}
		}
	}
	return b
}

// Chat runs one generation through /v1/chat/completions, streamed, under
// lim. A server that refuses response_format (400) is asked again without
// it, and later requests leave it out.
func (o *OpenAI) Chat(ctx context.Context, req ChatRequest, lim StreamLimits) (ChatResponse, error) {
	if req.Model == "" {
		return ChatResponse{}, fmt.Errorf("chat: no model named")
	}
	if _, err := o.Version(ctx); err != nil {
		return ChatResponse{}, err
	}
	withFormat := len(req.Format) > 0 && !o.noFormat.Load()
	resp, err := o.chat(ctx, req, lim, withFormat)
	if !withFormat || StatusCode(err) != http.StatusBadRequest {
		return resp, err
	}
	// A 400 to a request with response_format: if the same request
	// without it is accepted, the server refuses structured output.
	refusal := err
	resp, err = o.chat(ctx, req, lim, false)
	if err == nil {
		o.noFormat.Store(true)
		o.said.Do(func() {
			if o.Logf != nil {
				o.Logf("openai server %s refuses response_format (%v): judges are asked without a schema and their replies read as text\n", o.base.Host, refusal)
			}
		})
	}
	return resp, err
}

func (o *OpenAI) chat(ctx context.Context, req ChatRequest, lim StreamLimits, withFormat bool) (ChatResponse, error) {
	body := o.body(req, withFormat)
	return runStream(ctx, lim, func(ctx context.Context, on func(streamChunk) error) error {
		resp, err := o.do(ctx, http.MethodPost, "/v1/chat/completions", body, nil)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		// The finish reason and the usage (its own event, before [DONE])
		// are kept for the final chunk: the reply is done only at [DONE].
		final := streamChunk{done: true}
		for sc.Scan() {
			data, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "data:")
			if !ok {
				continue // blank lines, comments, event names
			}
			data = strings.TrimSpace(data)
			if data == "[DONE]" {
				return on(final)
			}
			var c chatChunk
			if err := json.Unmarshal([]byte(data), &c); err != nil {
				return fmt.Errorf("%w: a stream event that is not JSON: %.80q", ErrIncomplete, data)
			}
			var ch streamChunk
			for _, choice := range c.Choices {
				ch.content += choice.Delta.Content
				ch.thinking += choice.Delta.Reasoning + choice.Delta.ReasoningContent
				if choice.FinishReason != nil && *choice.FinishReason != "" {
					final.doneReason = *choice.FinishReason
				}
				if lp := choice.Logprobs; lp != nil {
					for _, t := range lp.Content {
						tl := TokenLogprob{Token: t.Token, Logprob: t.Logprob}
						for _, a := range t.TopLogprobs {
							tl.Top = append(tl.Top, Alternative{Token: a.Token, Logprob: a.Logprob})
						}
						ch.logprobs = append(ch.logprobs, tl)
					}
				}
			}
			if c.Usage != nil {
				final.promptEval, final.eval = c.Usage.PromptTokens, c.Usage.CompletionTokens
				if d := c.Usage.PromptTokensDetails; d != nil && d.CachedTokens != nil {
					final.cached, final.cachedKnown = *d.CachedTokens, true
				}
			}
			if err := on(ch); err != nil {
				return err
			}
		}
		return sc.Err()
	}, func(err error) error { return o.wrap("chat "+req.Model, err) })
}

// Embed returns one embedding per text from /v1/embeddings, at most
// req.Batch texts per request (<= 0: all at once). The API has no
// serving options: the server was started with its own.
func (o *OpenAI) Embed(ctx context.Context, req EmbedRequest) ([][]float32, error) {
	model, texts, batch := req.Model, req.Texts, req.Batch
	if batch <= 0 {
		batch = len(texts)
	}
	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); start += batch {
		end := min(start+batch, len(texts))
		var er struct {
			Data []struct {
				Index     int       `json:"index"`
				Embedding []float32 `json:"embedding"`
			} `json:"data"`
		}
		if _, err := o.do(ctx, http.MethodPost, "/v1/embeddings", map[string]any{"model": model, "input": texts[start:end], "encoding_format": "float"}, &er); err != nil {
			return nil, o.wrap("embed "+model, err)
		}
		if len(er.Data) != end-start {
			return nil, fmt.Errorf("openai server %s: embed %s: %w: asked for %d embeddings, got %d", o.base.Host, model, ErrIncomplete, end-start, len(er.Data))
		}
		sort.Slice(er.Data, func(i, j int) bool { return er.Data[i].Index < er.Data[j].Index })
		vecs := make([][]float32, len(er.Data))
		for i, d := range er.Data {
			vecs[i] = d.Embedding
		}
		for i, v := range vecs {
			if err := checkVector(v, out, vecs[0]); err != nil {
				return nil, fmt.Errorf("openai server %s: embed %s: text %d: %w", o.base.Host, model, start+i+1, err)
			}
		}
		out = append(out, vecs...)
	}
	return out, nil
}
