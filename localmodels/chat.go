package localmodels

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ollama/ollama/api"
)

// Message is one chat turn.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Options are the sampling options halu sets. A nil field is left to the
// model's default; a set field is always sent, zero included (temperature 0
// means greedy decoding and must reach the server as such).
type Options struct {
	Temperature *float64 `json:"temperature,omitempty"`
	TopP        *float64 `json:"top_p,omitempty"`
	TopK        *int     `json:"top_k,omitempty"`
	// FrequencyPenalty is Ollama's frequency_penalty (honoured by the
	// llama.cpp runner).
	FrequencyPenalty *float64 `json:"frequency_penalty,omitempty"`
	// RepeatPenalty is Ollama's repeat_penalty (1: off).
	RepeatPenalty *float64 `json:"repeat_penalty,omitempty"`
	Seed          *int     `json:"seed,omitempty"`
	NumPredict    *int     `json:"num_predict,omitempty"`
	NumCtx        *int     `json:"num_ctx,omitempty"`
	// NumThread is the CPU threads the server uses for the call (Ollama's
	// num_thread); it changes the speed, not the reply.
	NumThread *int     `json:"num_thread,omitempty"`
	Stop      []string `json:"stop,omitempty"`
}

// Float returns a pointer to v, for Options fields.
func Float(v float64) *float64 { return &v }

// Int returns a pointer to v, for Options fields.
func Int(v int) *int { return &v }

// Map returns the options as the map Ollama's API takes.
func (o Options) Map() map[string]any {
	m := map[string]any{}
	if o.Temperature != nil {
		m["temperature"] = *o.Temperature
	}
	if o.TopP != nil {
		m["top_p"] = *o.TopP
	}
	if o.TopK != nil {
		m["top_k"] = *o.TopK
	}
	if o.FrequencyPenalty != nil {
		m["frequency_penalty"] = *o.FrequencyPenalty
	}
	if o.RepeatPenalty != nil {
		m["repeat_penalty"] = *o.RepeatPenalty
	}
	if o.Seed != nil {
		m["seed"] = *o.Seed
	}
	if o.NumPredict != nil {
		m["num_predict"] = *o.NumPredict
	}
	if o.NumCtx != nil {
		m["num_ctx"] = *o.NumCtx
	}
	if o.NumThread != nil {
		m["num_thread"] = *o.NumThread
	}
	if len(o.Stop) > 0 {
		m["stop"] = o.Stop
	}
	return m
}

// ChatRequest is one chat generation. Format, when set, is a JSON schema (or
// the string "json") that constrains the reply.
type ChatRequest struct {
	Model    string          `json:"model"`
	Messages []Message       `json:"messages"`
	Options  Options         `json:"options"`
	Format   json.RawMessage `json:"format,omitempty"`
	// Think asks reasoning models to think (true) or not (false); nil leaves
	// the model's default.
	Think *bool `json:"think,omitempty"`
	// KeepAlive is how long the model stays loaded after the call; zero
	// leaves the server's default.
	KeepAlive time.Duration `json:"keep_alive,omitempty"`
	// Logprobs asks for each generated token's log-probability, and
	// TopLogprobs for that many of the most likely tokens at each position
	// (0–20). Both are part of the request, so of its cache key: a reply
	// cached without them is not one with them.
	Logprobs    bool `json:"logprobs,omitempty"`
	TopLogprobs int  `json:"top_logprobs,omitempty"`
}

// TokenLogprob is a generated token's natural-log probability, with the
// most likely tokens at its position (Top) when they were asked for.
type TokenLogprob struct {
	Token   string        `json:"t"`
	Logprob float64       `json:"lp"`
	Top     []Alternative `json:"top,omitempty"`
}

// Alternative is one of the most likely tokens at a position.
type Alternative struct {
	Token   string  `json:"t"`
	Logprob float64 `json:"lp"`
}

// ChatResponse is a finished generation with Ollama's token counts.
type ChatResponse struct {
	Content         string `json:"content"`
	Thinking        string `json:"thinking,omitempty"`
	DoneReason      string `json:"done_reason,omitempty"`
	PromptEvalCount int    `json:"prompt_eval_count"`
	EvalCount       int    `json:"eval_count"`
	// TotalDuration is the server's own time for the call.
	TotalDuration time.Duration `json:"total_duration_ns,omitempty"`
	// Timing is where the call's time went, as far as the server says,
	// and Reuse how much of its prompt the server had cached (neither is
	// cached: they describe one call, not the reply).
	Timing Timing `json:"-"`
	Reuse  Reuse  `json:"-"`
	// Logprobs are the generated tokens' log-probabilities, when the
	// request asked for them (thinking tokens excluded where the server
	// tells them apart).
	Logprobs []TokenLogprob `json:"logprobs,omitempty"`
}

// Reuse is how much of a call's prompt the server took from its prefix
// cache (the key-value state of an earlier prompt that began alike) rather
// than reading it again: Cached of Prompt tokens. Known is false when the
// server does not say (Ollama's API does not; an OpenAI-compatible server
// may, as usage.prompt_tokens_details.cached_tokens).
type Reuse struct {
	Known          bool
	Cached, Prompt int
}

// Timing is how the server says it spent one call, on its own clock (so
// the time on the wire is not in it): Total from the request's arrival to
// the reply's end, Load waiting for the model to load, Prompt reading the
// prompt up to the first token and Eval generating the rest (Ollama's
// total_duration, load_duration, prompt_eval_duration, eval_duration).
// Known is false when the server gives no account (OpenAI-compatible
// servers report no durations).
type Timing struct {
	Known                     bool
	Total, Load, Prompt, Eval time.Duration
}

// Wait is the part of the call the server spent neither loading the model,
// reading the prompt nor generating: mostly the call queued for one of its
// slots (a server answers as many calls at once as it has slots —
// Ollama's OLLAMA_NUM_PARALLEL — and queues the rest), and a few
// milliseconds of its own handling. Zero when the server gives no account.
func (t Timing) Wait() time.Duration {
	if !t.Known {
		return 0
	}
	return max(0, t.Total-t.Load-t.Prompt-t.Eval)
}

// QueuedFloor is the least time queued that Queued counts: a server's own
// handling of a call takes a few milliseconds.
const QueuedFloor = 10 * time.Millisecond

// Queued reports whether the call spent at least half its time at the
// server, and QueuedFloor, queued before the server started on it: the
// server had no slot free for it.
func (t Timing) Queued() bool {
	w := t.Wait()
	return w >= QueuedFloor && 2*w >= t.Total
}

// Complete reports whether r is a whole reply: one the server ended with
// a done reason. A reply without one was cut off before the server's final
// message (ErrIncomplete), and is never cached or read from a cache.
func (r *ChatResponse) Complete() error {
	if r.DoneReason == "" {
		return fmt.Errorf("%w: no done reason", ErrIncomplete)
	}
	return nil
}

// StreamLimits bound a streamed generation. Zero fields are no limit.
type StreamLimits struct {
	// Idle fails the call (ErrIdle, a transient error) when no token
	// arrived for this long: the server stalled.
	Idle time.Duration
	// Budget stops a generation that ran this long in all: the text so far
	// is returned with DoneReason "budget", as a length cap would.
	Budget time.Duration
	// Repetition stops a generation caught in a loop: the text so far is
	// returned with DoneReason "repetition".
	Repetition Repetition
	// OnChunk sees the text so far after every chunk; returning a non-nil
	// error stops the call with that error.
	OnChunk func(content string) error
}

// Done reasons: Ollama's DoneLength (num_predict reached; it also says
// "stop") and the two halu adds when it stops a stream itself.
const (
	DoneLength     = "length"
	DoneBudget     = "budget"
	DoneRepetition = "repetition"
)

// CutShort reports whether a generation that ended for reason was stopped
// before the model finished: at its length cap, its time budget or in a
// repetition loop.
func CutShort(reason string) bool {
	return reason == DoneLength || reason == DoneBudget || reason == DoneRepetition
}

// Repetition detects a generation looping: its text ends in the same span
// repeated back to back at least MinRepeats times and over at least
// MinChars bytes in all (so a legitimate "----" rule or a short refrain
// does not trip it). Spans up to MaxSpan bytes are looked for. The zero
// value detects nothing.
type Repetition struct {
	MinRepeats int
	MinChars   int
	MaxSpan    int
}

// DefaultRepetition stops a span repeated 8 times over 200 bytes or more.
var DefaultRepetition = Repetition{MinRepeats: 8, MinChars: 200, MaxSpan: 256}

// Loops reports whether text ends in a loop, and the repeated span.
func (r Repetition) Loops(text string) (span string, ok bool) {
	if r.MinRepeats < 2 || r.MaxSpan < 1 {
		return "", false
	}
	for p := 1; p <= r.MaxSpan && p*r.MinRepeats <= len(text); p++ {
		unit := text[len(text)-p:]
		n := 1
		for end := len(text) - p; end >= p && text[end-p:end] == unit; end -= p {
			n++
		}
		if n >= r.MinRepeats && n*p >= r.MinChars {
			return unit, true
		}
	}
	return "", false
}

// Chat runs one generation, streamed, and returns it complete.
func (c *Client) Chat(ctx context.Context, req ChatRequest, lim StreamLimits) (ChatResponse, error) {
	if req.Model == "" {
		return ChatResponse{}, fmt.Errorf("chat: no model named")
	}
	msgs := make([]api.Message, len(req.Messages))
	for i, m := range req.Messages {
		msgs[i] = api.Message{Role: m.Role, Content: m.Content}
	}
	ar := &api.ChatRequest{
		Model:    req.Model,
		Messages: msgs,
		Options:  req.Options.Map(),
		Format:   req.Format,
	}
	if req.Think != nil {
		ar.Think = &api.ThinkValue{Value: *req.Think}
	}
	if req.KeepAlive > 0 {
		ar.KeepAlive = &api.Duration{Duration: req.KeepAlive}
	}
	ar.Logprobs, ar.TopLogprobs = req.Logprobs, req.TopLogprobs

	return runStream(ctx, lim, func(ctx context.Context, on func(streamChunk) error) error {
		return c.chatStream(ctx, ar, func(r api.ChatResponse) error {
			return on(streamChunk{content: r.Message.Content, thinking: r.Message.Thinking, done: r.Done,
				doneReason: r.DoneReason, promptEval: r.PromptEvalCount, eval: r.EvalCount, total: r.TotalDuration,
				load: r.LoadDuration, prompt: r.PromptEvalDuration, evalDur: r.EvalDuration, logprobs: fromAPILogprobs(r.Logprobs)})
		})
	}, func(err error) error { return c.wrap("chat "+req.Model, err) })
}

// fromAPILogprobs converts Ollama's token log-probabilities.
func fromAPILogprobs(in []api.Logprob) []TokenLogprob {
	if len(in) == 0 {
		return nil
	}
	out := make([]TokenLogprob, len(in))
	for i, l := range in {
		out[i] = TokenLogprob{Token: l.Token, Logprob: l.Logprob}
		for _, a := range l.TopLogprobs {
			out[i].Top = append(out[i].Top, Alternative{Token: a.Token, Logprob: a.Logprob})
		}
	}
	return out
}

// idleWatch calls fail when no chunk of a stream came for d. A chunk only
// notes its time; the one timer, when it fires before d has passed since
// the last chunk, waits again for the time left — so a long reply costs
// no timer work per token.
type idleWatch struct {
	d     time.Duration
	last  atomic.Int64 // UnixNano of the last chunk (or the start)
	mu    sync.Mutex
	timer *time.Timer
	done  bool
}

func watchIdle(d time.Duration, fail func()) *idleWatch {
	w := &idleWatch{d: d}
	w.last.Store(time.Now().UnixNano())
	w.mu.Lock()
	defer w.mu.Unlock()
	w.timer = time.AfterFunc(d, func() {
		left := w.d - time.Since(time.Unix(0, w.last.Load()))
		w.mu.Lock()
		defer w.mu.Unlock()
		switch {
		case w.done:
		case left > 0:
			w.timer.Reset(left)
		default:
			w.done = true
			fail()
		}
	})
	return w
}

// seen notes a chunk.
func (w *idleWatch) seen() { w.last.Store(time.Now().UnixNano()) }

// stop ends the watch.
func (w *idleWatch) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.done = true
	w.timer.Stop()
}

// maxLine is the longest line of a streamed reply read (api's limit).
const maxLine = 8 << 20

// chatStream posts ar to /api/chat and hands each streamed message to fn,
// as api.Client.Chat does — with its errors: api.StatusError for an error
// status, the server's error line as an error — but reads the lines with a
// buffer that grows as a line needs (up to maxLine), where api allocates
// its 8 MB limit whole for every call: that allocation, zeroed and
// collected, was most of halu's own CPU per call, on machines whose
// cores the model server needs. (api's sign-in for ollama.com is not
// needed: halu's servers are local.)
func (c *Client) chatStream(ctx context.Context, ar *api.ChatRequest, fn func(api.ChatResponse) error) error {
	body, err := json.Marshal(ar)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base.JoinPath("/api/chat").String(), bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/x-ndjson")
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 4096), maxLine)
	for sc.Scan() {
		var msg struct {
			api.ChatResponse
			Error string `json:"error,omitempty"`
		}
		line := sc.Bytes()
		if err := json.Unmarshal(line, &msg); err != nil {
			if resp.StatusCode >= http.StatusBadRequest {
				return api.StatusError{StatusCode: resp.StatusCode, Status: resp.Status, ErrorMessage: string(line)}
			}
			return errors.New(string(line))
		}
		switch {
		case resp.StatusCode >= http.StatusBadRequest:
			return api.StatusError{StatusCode: resp.StatusCode, Status: resp.Status, ErrorMessage: msg.Error}
		case msg.Error != "":
			return errors.New(msg.Error)
		}
		if err := fn(msg.ChatResponse); err != nil {
			return err
		}
	}
	// A read that failed (the connection dropped, a line over maxLine)
	// ends the stream as api's does: runStream tells a reply that ended
	// before the server's final message (ErrIncomplete) from a whole one.
	return nil
}

// streamChunk is one piece of a streamed reply, whatever the server's API.
type streamChunk struct {
	content, thinking string
	// done marks the server's final message, with its reason and counts.
	done             bool
	doneReason       string
	promptEval, eval int
	// total, load, prompt and evalDur are the server's durations for the
	// call (Ollama's total_duration, load_duration, prompt_eval_duration
	// and eval_duration; zero when it reports none).
	total, load, prompt, evalDur time.Duration
	// cached is the prompt tokens the server took from its prefix cache,
	// when it says (cachedKnown).
	cached      int
	cachedKnown bool
	// logprobs are the chunk's tokens' log-probabilities, when asked.
	logprobs []TokenLogprob
}

// runStream runs a streamed generation under lim. transport sends the
// request and hands each chunk to on, returning when the stream ends; wrap
// adds the server and operation to an error. A stream that ends without
// the server's final message is ErrIncomplete; a stream halu stops (time
// budget, repetition) returns the text so far with that done reason.
func runStream(ctx context.Context, lim StreamLimits, transport func(ctx context.Context, on func(streamChunk) error) error, wrap func(error) error) (ChatResponse, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var idle *idleWatch
	if lim.Idle > 0 {
		idle = watchIdle(lim.Idle, func() {
			cancel(fmt.Errorf("no token for %s: %w", lim.Idle, ErrIdle))
		})
		defer idle.stop()
	}
	if lim.Budget > 0 {
		budget := time.AfterFunc(lim.Budget, func() { cancel(errStopped{DoneBudget}) })
		defer budget.Stop()
	}

	var content, thinking strings.Builder
	var out ChatResponse
	chunks := 0
	done := false
	err := transport(ctx, func(r streamChunk) error {
		if idle != nil {
			idle.seen()
		}
		content.WriteString(r.content)
		thinking.WriteString(r.thinking)
		out.Logprobs = append(out.Logprobs, r.logprobs...)
		out.EvalCount++ // chunks so far; the final count replaces it
		if r.done {
			done = true
			out.DoneReason = r.doneReason
			out.PromptEvalCount = r.promptEval
			out.EvalCount = r.eval
			out.TotalDuration = r.total
			out.Timing = Timing{Known: r.total > 0, Total: r.total, Load: r.load, Prompt: r.prompt, Eval: r.evalDur}
			out.Reuse = Reuse{Known: r.cachedKnown, Cached: r.cached, Prompt: r.promptEval}
		}
		chunks++
		// Checking every 16th chunk keeps the cost linear in practice.
		if !r.done && chunks%16 == 0 {
			if _, loops := lim.Repetition.Loops(content.String()); loops {
				return errStopped{DoneRepetition}
			}
		}
		if lim.OnChunk != nil {
			return lim.OnChunk(content.String())
		}
		return nil
	})
	out.Content = content.String()
	out.Thinking = thinking.String()
	if cause := context.Cause(ctx); cause != nil && cause != context.Canceled && ctx.Err() != nil {
		err = cause // the stream may end quietly when its context is cancelled
	}
	var stop errStopped
	if errors.As(err, &stop) {
		// Stopped by halu on purpose: the text so far is the answer.
		out.DoneReason = stop.reason
		return out, nil
	}
	if err == nil && !done {
		// A client may return without error when the stream ends early
		// (the server died, a proxy dropped the connection): the text so
		// far is a fragment, not an answer.
		err = fmt.Errorf("%w: the stream ended after %d chunks (%d bytes) without the server's final message", ErrIncomplete, chunks, content.Len())
	}
	if err != nil {
		return out, wrap(err)
	}
	return out, nil
}

// ErrIncomplete marks a reply the server did not finish sending: a stream
// that ended before its final "done" message, or an embedding response
// that lacks vectors. It is transient: the call is retried and its partial
// text is never an answer.
var ErrIncomplete = errors.New("incomplete reply")

// errStopped ends a stream that halu stopped on purpose.
type errStopped struct{ reason string }

func (e errStopped) Error() string { return "generation stopped: " + e.reason }

// ErrIdle marks a generation stopped because no token arrived in time.
var ErrIdle = fmt.Errorf("idle timeout")
