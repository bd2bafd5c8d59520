package engine

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"halu/localmodels"
	"halu/metrics"
	"halu/runner/judging"
	"halu/runner/rundir"
)

// Calls is an item's handle on the models: every call goes through the
// cache, the per-host concurrency limit and the retry policy, and is logged
// into the item's record.
type Calls struct {
	e     *Engine
	item  string
	rerun *Rerun
	plan  *planner // set in a dry run: calls are counted, not made

	mu      sync.Mutex
	log     []rundir.CallLog
	fail    []rundir.Failure
	reads   []rundir.Reading
	verdict []rundir.Verdict
	ordinal map[string]int    // stage, judge → judgements so far (Checked)
	prompts map[string]string // SHA-256 → a generation's messages (Record.Prompts)
	// last is each stage and model's latest reply (LastReply).
	last map[[2]string]localmodels.ChatResponse
	// diverged is set once a reply asked again (halu verify) came back
	// otherwise: the item's later calls may then ask what the cache never
	// held.
	diverged bool
}

// uncached reports whether a call of a halu verify's run that the cache
// did not answer was not led to by a reply given otherwise (its entry is
// gone, or was never kept: a reply the time budget stopped): it is asked
// live and marked, never compared (rundir.CallLog.Uncached).
func (c *Calls) uncached() bool {
	if c.e.Reask == nil || c.e.Reask.Keep {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.diverged
}

// diverge records that a reply asked again came back otherwise.
func (c *Calls) diverge() {
	c.mu.Lock()
	c.diverged = true
	c.mu.Unlock()
}

// LastReply is the latest reply of model at stage in this item — for a
// judgement, the reply its verdict was read from (its last repair turn,
// when there was one) — with its token log-probabilities when asked.
func (c *Calls) LastReply(stage, model string) (localmodels.ChatResponse, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.last[[2]string{stage, model}]
	return r, ok
}

// NewCalls returns a Calls outside a run, for tools that make model calls
// without a suite (its log is discarded).
func (e *Engine) NewCalls(item string) *Calls {
	e.init()
	return &Calls{e: e, item: item}
}

// Engine returns the engine the calls go through.
func (c *Calls) Engine() *Engine { return c.e }

// Planning reports a dry run: every reply is empty. A suite whose later
// calls depend on what a reply says (an idea long enough to be judged)
// plans them as if the reply were usable, so that the plan counts them.
func (c *Calls) Planning() bool { return c.plan != nil }

func (c *Calls) logs() []rundir.CallLog {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]rundir.CallLog(nil), c.log...)
}

func (c *Calls) promptTexts() map[string]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.prompts) == 0 {
		return nil
	}
	out := make(map[string]string, len(c.prompts))
	for k, v := range c.prompts {
		out[k] = v
	}
	return out
}

// transcript fills l's Prompt (a generation's messages, kept once per
// record under their SHA-256) and Reply: what a reader of the report
// checks a score against. Judges' prompts are not kept (they are the
// published templates around the answer, and a KnowHD item asks hundreds).
func (c *Calls) transcript(l *rundir.CallLog, msgs []localmodels.Message, reply string) {
	l.Reply = ClipText(reply, ReplyKeep)
	if l.Kind != "chat" {
		return
	}
	var b strings.Builder
	for i, m := range msgs {
		if i > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString("[" + m.Role + "]\n" + m.Content)
	}
	text := ClipText(b.String(), PromptKeep)
	sum := sha256.Sum256([]byte(text))
	l.Prompt = hex.EncodeToString(sum[:])
	c.mu.Lock()
	if c.prompts == nil {
		c.prompts = map[string]string{}
	}
	c.prompts[l.Prompt] = text
	c.mu.Unlock()
}

// parsed records v as what the judge reply raw of stage was read as.
func (c *Calls) parsed(stage, model, raw string, v any) {
	reply := ClipText(raw, ReplyKeep)
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := len(c.log) - 1; i >= 0; i-- {
		l := &c.log[i]
		if l.Stage == stage && l.Model == model && l.Reply == reply && l.Parsed == "" && l.Kind != "chat" {
			l.Parsed = rundir.Show(v)
			return
		}
	}
}

// Transcripts keep this much of each reply and each generation prompt
// (bytes, cut at a character boundary).
const (
	ReplyKeep  = 8000
	PromptKeep = 32000
)

// ClipText cuts s to at most n bytes at a character boundary, marking the
// cut.
func ClipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf(" …[%d more bytes]", len(s)-cut)
}

func (c *Calls) failures() []rundir.Failure {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]rundir.Failure(nil), c.fail...)
}

func (c *Calls) record(l rundir.CallLog) {
	c.mu.Lock()
	c.log = append(c.log, l)
	c.mu.Unlock()
	c.e.called(l.Stage, l.Model)
}

// chatKey is everything that determines a chat reply. Sample separates the
// draws of a sampled call, so n samples at temperature > 0 are n entries that
// a rerun reproduces.
type chatKey struct {
	Kind     string                `json:"kind"`
	Serving  any                   `json:"serving"` // Fingerprint.CacheKeyForm
	Messages []localmodels.Message `json:"messages"`
	Options  localmodels.Options   `json:"options"`
	Format   json.RawMessage       `json:"format,omitempty"`
	Think    *bool                 `json:"think,omitempty"`
	Sample   int                   `json:"sample"`
	// Logprobs and TopLogprobs: a reply asked with its log-probabilities
	// is another entry (left out when not asked: keys stay as they were).
	Logprobs    bool `json:"logprobs,omitempty"`
	TopLogprobs int  `json:"top_logprobs,omitempty"`
}

// Chat runs one generation for stage. sample numbers the draws of a sampled
// call (0 for a single one).
func (c *Calls) Chat(ctx context.Context, stage string, req localmodels.ChatRequest, sample int) (localmodels.ChatResponse, error) {
	return c.chat(ctx, stage, "chat", req, sample)
}

// chat is one generation of stage, as a pipeline of named steps: the
// engine's serving defaults go into the request, the model's serving
// fingerprint and the request make the cache key, the cache (or, in a
// rerun, the rule that a reused stage must come from it) answers first, a
// dry run only counts the call, anything else is asked of the server —
// once for identical requests in flight — and the call is logged with its
// transcript.
func (c *Calls) chat(ctx context.Context, stage, kind string, req localmodels.ChatRequest, sample int) (localmodels.ChatResponse, error) {
	req = c.e.serving(req)
	fp, info, err := c.e.fingerprint(ctx, req.Model, numCtxOf(req))
	if err != nil {
		return localmodels.ChatResponse{}, err
	}
	key := chatCacheKey(fp, req, sample)
	resp, hit, err := c.cached(stage, req.Model, key, &localmodels.ChatResponse{})
	if err != nil {
		return localmodels.ChatResponse{}, err
	}
	again := hit && c.e.Reask.Draws(key)
	if c.plan != nil {
		c.planChat(stage, kind, req, hit && !again)
		return resp, nil // a cached reply, so that the calls built on it are planned as they will be made
	}
	var reasked *rundir.Reasked
	if again {
		if resp, reasked, err = c.reaskChat(ctx, stage, kind, req, resp); err != nil {
			return resp, err
		}
		hit = c.e.Reask.Keep // the recorded reply goes on
		if reasked.Identical == 0 && !hit {
			c.diverge()
		}
	}
	uncached := !hit && reasked == nil && c.uncached()
	shared := false
	if !hit && reasked == nil && c.e.Offline() {
		return resp, fmt.Errorf("%s: %s %s: %w", stage, kind, req.Model, ErrOffline)
	}
	if !hit && reasked == nil {
		if resp, shared, err = c.e.ask(ctx, stage, kind, req, key); err != nil {
			return resp, err
		}
	}
	if hit || shared {
		c.e.stats.hits.Add(1)
	}
	c.logChat(stage, kind, req, info, fp, key, resp, hit, reasked, uncached)
	c.mu.Lock()
	if c.last == nil {
		c.last = map[[2]string]localmodels.ChatResponse{}
	}
	c.last[[2]string{stage, req.Model}] = resp
	c.mu.Unlock()
	return resp, nil
}

// numCtxOf is the context window req asks for (0: none).
func numCtxOf(req localmodels.ChatRequest) int {
	if req.Options.NumCtx != nil {
		return *req.Options.NumCtx
	}
	return 0
}

// chatCacheKey is the cache key of a generation: everything that
// determines its reply. It leaves out keep_alive and num_thread, which do
// not change the reply.
func chatCacheKey(fp rundir.Fingerprint, req localmodels.ChatRequest, sample int) string {
	keyOpts := req.Options
	keyOpts.NumThread = nil
	return Key(chatKey{
		Kind: "chat", Serving: fp.CacheKeyForm(),
		Messages: req.Messages, Options: keyOpts, Format: req.Format, Think: req.Think, Sample: sample,
		Logprobs: req.Logprobs, TopLogprobs: req.TopLogprobs,
	})
}

// cached looks key up for a call of stage to model: the cache answers
// unless the call is to be made afresh (rerun --errors); a miss on a stage
// a rerun reuses is ErrNotCached, never a silent new call.
func (c *Calls) cached(stage, model, key string, into *localmodels.ChatResponse) (localmodels.ChatResponse, bool, error) {
	hit := false
	if c.e.Cache != nil && !c.rerun.fresh(c.item, stage, model) {
		var err error
		if hit, err = c.e.Cache.Get(key, into); err != nil {
			return *into, false, err
		}
	}
	if !hit && c.rerun.cacheOnly(c.item, stage) {
		return *into, false, c.notCached(stage, model)
	}
	return *into, hit, nil
}

// ask makes a generation the cache did not answer. Identical requests in
// flight at once (one query's constraint mapping asked for by every
// model's item, say) share one call: the first caller makes it, the others
// take its reply as a cache hit (shared is true for them). The reply is
// cached unless the time budget stopped it: that depends on the machine's
// speed, not on the request.
func (e *Engine) ask(ctx context.Context, stage, kind string, req localmodels.ChatRequest, key string) (resp localmodels.ChatResponse, shared bool, err error) {
	e.askMu.Lock()
	if e.asking == nil {
		e.asking = map[string]int{}
	}
	e.asking[key]++
	others := e.asking[key] > 1
	e.askMu.Unlock()
	defer func() {
		e.askMu.Lock()
		if e.asking[key]--; e.asking[key] == 0 {
			delete(e.asking, key)
		}
		e.askMu.Unlock()
	}()
	if h, _ := ctx.Value(holdKey{}).(*hold); h != nil && others {
		// Another caller is asking this very call and may be making it:
		// wait for its reply without keeping a slot it may need.
		e.sched.unhold(h)
	}
	made := false
	v, err, _ := e.flights.Do(key, func() (any, error) {
		made = true
		resp, err := e.chatOnce(ctx, stage, kind, req)
		if err != nil {
			return resp, fmt.Errorf("%s: %s %s: %w", stage, kind, req.Model, err)
		}
		if e.Cache != nil && resp.DoneReason != localmodels.DoneBudget {
			e.cachePut(key, resp) // one append: a slot kept for a next turn does not wait long
		}
		return resp, nil
	})
	return v.(localmodels.ChatResponse), !made && err == nil, err
}

// logChat records a generation in the item's log with its transcript,
// and warns of a prompt that filled 90% of the window (unless the cache
// answered it: the warning was given when it was asked): Ollama truncates
// a longer prompt without an error, so it probably lost its beginning.
func (c *Calls) logChat(stage, kind string, req localmodels.ChatRequest, info localmodels.ModelInfo, fp rundir.Fingerprint, key string, resp localmodels.ChatResponse, hit bool, reasked *rundir.Reasked, uncached bool) {
	l := rundir.CallLog{
		Stage: stage, Kind: kind, Model: req.Model, Digest: info.Digest, Key: key,
		PromptTokens: resp.PromptEvalCount, EvalTokens: resp.EvalCount, DoneReason: resp.DoneReason,
		NoThink: req.Think != nil && !*req.Think, Counted: kind == "repair", Reasked: reasked, Uncached: uncached,
	}
	sent := req.Options
	sent.NumThread = nil // the machine's, not the request's: it changes no reply
	if m := sent.Map(); len(m) > 0 {
		l.Options = m
	}
	c.transcript(&l, req.Messages, resp.Content)
	l.Confidence = ReplyConfidence(req, resp)
	if req.Logprobs {
		l.Logprobs = max(req.TopLogprobs, 1)
	}
	if fp.NumCtx > 0 && resp.PromptEvalCount*10 >= fp.NumCtx*9 {
		l.NearContext = fp.NumCtx
		if !hit {
			c.e.stats.nearContext.Add(1)
			c.e.logf("warning: %s: %s %s: prompt of %d tokens in a %d-token window (num_ctx): Ollama may have cut its beginning; raise --num-ctx\n",
				c.item, stage, req.Model, resp.PromptEvalCount, fp.NumCtx)
		}
	}
	if fp.NumCtx > 0 && resp.PromptEvalCount+resp.EvalCount > fp.NumCtx {
		l.OverContext = fp.NumCtx
		if !hit {
			c.e.logf("warning: %s: %s %s: prompt and reply of %d tokens ran past the %d-token window (num_ctx): the server dropped the prompt's beginning while generating; raise --num-ctx\n",
				c.item, stage, req.Model, resp.PromptEvalCount+resp.EvalCount, fp.NumCtx)
		}
	}
	c.record(l)
}

// cachePut stores a reply in the cache. A failed write (a full disk, say)
// loses only the caching: the reply is kept in its record, the failure is
// counted and said once, and the run goes on without the entry.
func (e *Engine) cachePut(key string, v any) { e.cacheFailed(e.Cache.Put(key, v)) }

// cacheFailed counts a failed cache write, said the first time.
func (e *Engine) cacheFailed(err error) {
	if err != nil && e.stats.cacheWriteFailures.Add(1) == 1 {
		e.logf("warning: %v: replies are kept in the run's records but not cached (a rerun will call the model again); further cache write failures are counted, not shown\n", err)
	}
}

func (c *Calls) notCached(stage, model string) error {
	return fmt.Errorf("%s: %s %s: %w: a rerun reuses the stages before the one it redoes from the cache; rerun from stage %q instead",
		c.item, stage, model, ErrNotCached, stage)
}

// call runs one model request f of stage for model under the engine's
// retry policy: each attempt waits for the scheduler to admit it (a slot,
// and the turn of load, the model's loadKey with the request's options,
// computed once by the caller; prompt, the
// request's messages as promptKey gives them, "" for none, goes back to
// back with alike prompts), is bounded by timeout when that is set, and
// is counted; the progress display shows the stage and model admitted
// last.
//
// f reports whether the server kept the call queued most of its time
// (localmodels.Timing.Queued), which lowers the calls in flight by one.
//
// A call made under a hold (withHold) takes the slot the hold keeps, if
// it keeps one of the call's load, and keeps its own for the caller's
// next call when the hold asks it to. An embedding request (gathers:
// Engine.embed) frees a slot held for it instead and waits its turn
// after the calls with prompts (scheduler.acquireGathering).
func (e *Engine) call(ctx context.Context, stage, model, load, prompt string, gathers bool, timeout time.Duration, f func(ctx context.Context) (queued bool, err error)) error {
	h, _ := ctx.Value(holdKey{}).(*hold)
	return e.withRetry(ctx, func(ctx context.Context) error {
		// The caller waits for a slot and a reply: it is not working
		// between calls (embedBatches.working) until it frees the slot.
		e.embeds.working.Add(-1)
		acquire := func() error { return e.sched.acquire(ctx, load, prompt) }
		if gathers {
			acquire = func() error { return e.sched.acquireGathering(ctx, load) }
			if h != nil {
				e.sched.unhold(h)
			}
		}
		if gathers || h == nil || !e.sched.resume(h, load, prompt) {
			if err := acquire(); err != nil {
				e.embeds.working.Add(1)
				return err
			}
		}
		e.calling(stage, model)
		if timeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, timeout)
			defer cancel()
		}
		e.stats.calls.Add(1)
		queued, err := f(ctx)
		busy := localmodels.StatusCode(err) == http.StatusServiceUnavailable
		// Working again before the slot frees: the call the freed slot
		// wakes may be an embedding request this caller is about to join.
		e.embeds.working.Add(1)
		switch {
		case h != nil && h.keep && err == nil:
			e.sched.keep(h, stage, load, busy, queued, false, e.sched.holdFor)
		case h != nil && h.item && err == nil:
			e.sched.endItemCall(h, stage, load, busy, queued)
		default:
			e.sched.release(load, busy, queued)
		}
		return err
	})
}

// holdKey is the context key of a call's hold.
type holdKey struct{}

// withHold returns ctx under which the calls made take and keep slots as
// h says (scheduler.hold), and a function that frees the slot h holds
// when the caller is done. Under an item's hold (itemHold) it is that
// hold: done, the caller's slot is kept no longer than for any call of the
// item.
func (e *Engine) withHold(ctx context.Context) (context.Context, *hold, func()) {
	if h, _ := ctx.Value(holdKey{}).(*hold); h != nil && h.item {
		return ctx, h, func() {
			h.keep = false
			e.sched.itemize(h, e.sched.itemHoldFor)
		}
	}
	h := &hold{}
	return context.WithValue(ctx, holdKey{}, h), h, func() { e.sched.unhold(h) }
}

// itemHold returns ctx for an item's calls: each keeps its slot for the
// item's next call while other calls wait (hold.item) and, on a pool, goes
// first to the server that answered the item's call before it (where the
// prompt they share is held: localmodels.WithAffinity); and the function
// that frees a slot still held when the item is done.
func (e *Engine) itemHold(ctx context.Context) (context.Context, func()) {
	h := &hold{item: true}
	return context.WithValue(localmodels.WithAffinity(ctx), holdKey{}, h), func() { e.sched.unhold(h) }
}

// promptKey is messages as one string, in order, for the scheduler to
// tell prompts that begin alike (the server renders them in this order).
func promptKey(messages []localmodels.Message) string {
	var b strings.Builder
	for _, m := range messages {
		b.WriteString(m.Role)
		b.WriteByte(0)
		b.WriteString(m.Content)
		b.WriteByte(0)
	}
	return b.String()
}

// chatOnce makes one generation call (its serving defaults already in
// req), streamed under the engine's limits (idle timeout, budget,
// repetition stop), and counts its tokens.
func (e *Engine) chatOnce(ctx context.Context, stage, kind string, req localmodels.ChatRequest) (localmodels.ChatResponse, error) {
	var resp localmodels.ChatResponse
	var took time.Duration
	load := e.loadKey(req.Model, req.Options)
	_, answered := e.answered.Load(load)
	err := e.call(ctx, stage, req.Model, load, promptKey(req.Messages), false, 0, func(ctx context.Context) (bool, error) {
		var err error
		start := time.Now()
		resp, err = e.Client.Chat(ctx, req, localmodels.StreamLimits{Idle: e.Config.Idle, Budget: e.Config.Budget, Repetition: e.repetition()})
		took = time.Since(start)
		return err == nil && resp.Timing.Queued(), err
	})
	if err == nil {
		if kind == "judge" || kind == "repair" {
			e.timeJudge(req.Model, took, resp.Timing)
		}
		if tm := resp.Timing; tm.Known {
			e.stats.timed.Add(1)
			e.stats.timedNs.Add(int64(took))
			e.stats.waitNs.Add(int64(tm.Wait()))
			e.stats.loadNs.Add(int64(tm.Load))
			if tm.Load >= reloadFloor && answered {
				e.stats.reloads.Add(1)
				e.stats.reloadNs.Add(int64(tm.Load))
			}
		}
		if !answered {
			e.answered.Store(load, true)
		}
		if ru := resp.Reuse; ru.Known {
			e.stats.reuse.Add(1)
			e.stats.reusePrompt.Add(int64(ru.Prompt))
			e.stats.reused.Add(int64(ru.Cached))
		}
		e.stats.promptTokens.Add(int64(resp.PromptEvalCount))
		e.stats.evalTokens.Add(int64(resp.EvalCount))
		switch resp.DoneReason {
		case localmodels.DoneBudget:
			e.stats.budget.Add(1)
		case localmodels.DoneRepetition:
			e.stats.repetition.Add(1)
		}
	}
	return resp, err
}

// serving fills in the engine's num_ctx, num_thread, keep_alive and the
// sampling parameters it sends where a request sets none.
func (e *Engine) serving(req localmodels.ChatRequest) localmodels.ChatRequest {
	if req.Options.TopP == nil && e.Config.TopP != nil {
		req.Options.TopP = localmodels.Float(*e.Config.TopP)
	}
	if req.Options.TopK == nil && e.Config.TopK != nil {
		req.Options.TopK = localmodels.Int(int(*e.Config.TopK))
	}
	if req.Options.RepeatPenalty == nil && e.Config.RepeatPenalty != nil {
		req.Options.RepeatPenalty = localmodels.Float(*e.Config.RepeatPenalty)
	}
	if req.Options.NumCtx == nil && e.Config.NumCtx > 0 {
		req.Options.NumCtx = localmodels.Int(e.Config.NumCtx)
	}
	if req.Options.NumThread == nil && e.Config.NumThread > 0 {
		req.Options.NumThread = localmodels.Int(e.Config.NumThread)
	}
	if req.KeepAlive == 0 {
		req.KeepAlive = e.Config.KeepAlive
	}
	if e.Config.Logprobs > 0 && !req.Logprobs {
		req.Logprobs, req.TopLogprobs = true, e.Config.Logprobs
	}
	return req
}

// ReplyConfidence is how sure the model was of the reply resp to req, from
// the token log-probabilities it came with (--logprobs); nil when it has
// none. A reply held to a schema (req.Format) is marked (Grammar): its
// token scores are the unconstrained model's and no confidence check reads
// them.
func ReplyConfidence(req localmodels.ChatRequest, resp localmodels.ChatResponse) *metrics.TokenConfidence {
	if len(resp.Logprobs) == 0 {
		return nil
	}
	lps := make([]float64, len(resp.Logprobs))
	tops := make([][]float64, len(resp.Logprobs))
	for i, t := range resp.Logprobs {
		lps[i] = t.Logprob
		for _, a := range t.Top {
			tops[i] = append(tops[i], a.Logprob)
		}
	}
	c := metrics.Confidence(lps, tops)
	c.Grammar = len(req.Format) > 0
	return &c
}

// embedRequest is an embedding call for texts with the serving settings
// a chat to model gets (see serving): the same num_ctx, num_thread and
// keep_alive, so that switching between chat and embedding calls on one
// model file does not reload its runner.
func (e *Engine) embedRequest(model string, texts []string) localmodels.EmbedRequest {
	return localmodels.EmbedRequest{Model: model, Texts: texts, Batch: 64, NumCtx: e.Config.NumCtx, NumThread: e.Config.NumThread, KeepAlive: e.Config.KeepAlive}
}

// EffectiveNumCtx is the context window a request to a model gets: its
// num_ctx (or the engine's), capped by the model's trained context, which
// Ollama does not exceed. Zero when neither is known.
func EffectiveNumCtx(asked int, info localmodels.ModelInfo) int {
	if info.FixedContext {
		return info.ContextLength // the server's, whatever was asked
	}
	if info.ContextLength > 0 && (asked == 0 || asked > info.ContextLength) {
		return info.ContextLength
	}
	return asked
}

// fingerprint returns the serving fingerprint of model for a request asking
// for numCtx.
func (e *Engine) fingerprint(ctx context.Context, model string, numCtx int) (rundir.Fingerprint, localmodels.ModelInfo, error) {
	info, err := e.ModelInfo(ctx, model)
	if err != nil {
		return rundir.Fingerprint{}, info, err
	}
	ver, err := e.ServerVersion(ctx)
	if err != nil {
		return rundir.Fingerprint{}, info, err
	}
	fp := rundir.Fingerprint{ServerVersion: ver, Model: localmodels.CanonicalName(model), Digest: info.Digest, Quantization: info.Quantization,
		Template: info.TemplateSHA256, NumCtx: EffectiveNumCtx(numCtx, info)}
	if p := e.Client.Protocol(); p != "ollama" {
		fp.API, fp.Model = p, model
		fp.Weights = info.Weights
		if info.Identity != localmodels.IdentityDigest {
			fp.Identity = info.Identity
		}
	}
	return fp, info, nil
}

// Judge asks a judge model and hands its reply to parse. An error from parse
// means the reply is unusable: the judge is asked again with a repair turn
// (its reply and what was wrong with it), up to the engine's JudgeRepairs
// times. If no reply parses, the judgement is recorded as a Failure with
// every raw reply and ok is false: the caller treats it as unscored — never
// as a zero, never as a guess. err is non-nil only when the model could not
// be called at all.
//
// cut tells parse that the reply was stopped before the judge finished (its
// length cap, time budget or a repetition loop), so its last word may be
// incomplete.
//
// A judge model that thinks by default (Ollama's "thinking" capability)
// is sent think: false unless the request says otherwise: its thinking
// would spend the reply cap meant for the verdict. The call log records it.
func (c *Calls) Judge(ctx context.Context, stage string, req localmodels.ChatRequest, parse func(raw string, cut bool) error) (ok bool, err error) {
	if req.Think == nil {
		info, err := c.e.ModelInfo(ctx, req.Model)
		if err != nil {
			return false, err
		}
		if info.Thinks() {
			req.Think = new(bool)
		}
	}
	var raws, reasons []string
	twoValues := false
	msgs := req.Messages
	format := req.Format
	// A repair turn takes its judgement's slot, where the server holds
	// the judgement's prompt and reply, which begin the repair's prompt.
	ctx, h, unhold := c.e.withHold(ctx)
	defer unhold()
	ctx = localmodels.WithAffinity(ctx)
	for attempt := 0; attempt <= c.e.Config.JudgeRepairs; attempt++ {
		r := req
		r.Messages, r.Format = msgs, format
		kind := "judge"
		if attempt > 0 {
			kind = "repair" // a repair turn, logged apart so reports can count them
		}
		h.keep = attempt < c.e.Config.JudgeRepairs
		resp, err := c.chat(ctx, stage, kind, r, 0)
		if errors.Is(err, localmodels.ErrIncomplete) {
			// The server ended the reply before its final message on every
			// retry (a runner that crashes on this request, say): the
			// fragment is no verdict, and the judgement is unscored, its
			// raw text kept, rather than the whole item lost.
			raws = append(raws, resp.Content)
			reasons = append(reasons, "the server ended the reply before its final message on every attempt: "+err.Error())
			break
		}
		if err != nil {
			return false, err
		}
		raws = append(raws, resp.Content)
		perr := parse(resp.Content, localmodels.CutShort(resp.DoneReason))
		if perr == nil {
			if attempt > 0 {
				c.e.stats.repaired.Add(1)
			}
			return true, nil
		}
		if c.plan != nil {
			return false, nil // a dry run's empty reply: no repair turn, no failure
		}
		reasons = append(reasons, perr.Error())
		twoValues = twoValues || errors.Is(perr, judging.ErrTwoValues)
		ask := fmt.Sprintf("Your reply could not be used (%s). Reply again with only the requested output, in exactly the required format.", perr)
		var held *judging.RepairError
		if errors.As(perr, &held) && held.Schema != nil {
			// Two values stated: the judge restates its final verdict
			// as JSON, held to the verdict's schema.
			format = held.Schema
			ask = fmt.Sprintf("Your reply states two different values (%s). Reply again with only your final verdict.", perr) + judging.SchemaNote(held.Schema)
		}
		msgs = append(append([]localmodels.Message(nil), req.Messages...),
			localmodels.Message{Role: "assistant", Content: resp.Content},
			localmodels.Message{Role: "user", Content: ask})
	}
	c.e.stats.judgeFailures.Add(1)
	c.mu.Lock()
	c.fail = append(c.fail, rundir.Failure{Stage: stage, Model: req.Model, Reason: strings.Join(reasons, "; "), Raw: raws, TwoValues: twoValues})
	c.mu.Unlock()
	return false, nil
}

// Readers is how the engine reads text judge replies (judging.Asker).
func (c *Calls) Readers() string { return c.e.readers() }

// Read records how a judge reply was read (judging.Asker): v as its
// reading, and r, a reading that was not the plain one.
func (c *Calls) Read(stage, model, raw string, v any, r *rundir.Reading) {
	if r != nil {
		c.mu.Lock()
		c.reads = append(c.reads, *r)
		c.mu.Unlock()
	}
	c.parsed(stage, model, raw, v)
}

// Verdict records one judge verdict for the judge card (judging.Asker).
func (c *Calls) Verdict(v rundir.Verdict) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if v.Body != "" {
		text := ClipText(v.Body, PromptKeep)
		sum := sha256.Sum256([]byte(text))
		v.Text, v.Body = hex.EncodeToString(sum[:]), ""
		if c.prompts == nil {
			c.prompts = map[string]string{}
		}
		c.prompts[v.Text] = text
	}
	c.verdict = append(c.verdict, v)
}

func (c *Calls) verdicts() []rundir.Verdict {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]rundir.Verdict(nil), c.verdict...)
}

// Checked reports whether a judge's next judgement at stage is in the
// judge card's sample (judging.Asker): a share JudgeChecks, drawn by a
// hash of the item, the stage and the judgement's place among that
// judge's judgements at that stage in the item. The k-th judgement of
// every judge is the same unit wherever a suite has each judge judge the
// same texts in turn, so every judge of a drawn unit is checked; and the
// draw does not depend on what was said, so a dry run plans exactly the
// checks the run makes, and a rerun or resumed run draws the same.
func (c *Calls) Checked(stage, judge string) bool {
	p := c.e.Config.JudgeChecks
	if p <= 0 {
		return false
	}
	c.mu.Lock()
	if c.ordinal == nil {
		c.ordinal = map[string]int{}
	}
	k := c.ordinal[stage+"\x00"+judge]
	c.ordinal[stage+"\x00"+judge]++
	c.mu.Unlock()
	// SHA-256, not FNV: FNV's high bits hardly move when only the last
	// character (the ordinal) does.
	h := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%s\x00%d", c.item, stage, k)))
	return float64(binary.BigEndian.Uint64(h[:8])>>11)/float64(1<<53) < p
}

func (c *Calls) readings() []rundir.Reading {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]rundir.Reading(nil), c.reads...)
}

// embedKey is what determines one embedding.
type embedKey struct {
	Kind    string `json:"kind"`
	Serving any    `json:"serving"` // Fingerprint.CacheKeyForm
	Text    string `json:"text"`
}

// Embed returns one embedding per text. Each text is cached on its own by
// (model digest, text); the misses go to the server in one batched call.
func (c *Calls) Embed(ctx context.Context, stage, model string, texts []string) ([][]float32, error) {
	e := c.e
	// The window sent (embedRequest) is in the key: Ollama truncates an
	// embedding's input to it.
	fp, info, err := e.fingerprint(ctx, model, e.Config.NumCtx)
	if err != nil {
		return nil, err
	}
	out := make([][]float32, len(texts))
	keys := make([]string, len(texts))
	var missIdx []int
	var missTexts []string
	recorded := map[int][]float32{} // texts asked again (Reask): the cached vector
	for i, t := range texts {
		keys[i] = Key(embedKey{Kind: "embed", Serving: fp.CacheKeyForm(), Text: t})
		hit := false
		if e.Cache != nil && !c.rerun.fresh(c.item, stage, model) {
			if hit, err = e.Cache.Get(keys[i], &out[i]); err != nil {
				return nil, err
			}
		}
		if !hit && c.rerun.cacheOnly(c.item, stage) {
			return nil, c.notCached(stage, model)
		}
		if hit && e.Reask.Draws(keys[i]) {
			recorded[i], hit = out[i], false
		}
		if hit {
			e.stats.hits.Add(1)
		} else {
			missIdx = append(missIdx, i)
			missTexts = append(missTexts, t)
		}
	}
	if c.plan != nil {
		c.plan.add(stage, "embed", model, len(missTexts) == 0, 0, 0)
		for _, i := range missIdx {
			out[i] = []float32{0} // a placeholder of the right count
		}
		return out, nil
	}
	if len(missTexts) > 0 && e.Offline() {
		return nil, fmt.Errorf("%s: embed %s: %d texts: %w", stage, model, len(missTexts), ErrOffline)
	}
	var reasked *rundir.Reasked
	if len(missTexts) > 0 {
		vecs, err := e.embed(ctx, stage, model, missTexts)
		if err != nil {
			return nil, fmt.Errorf("%s: embed %s: %w", stage, model, err)
		}
		for j, i := range missIdx {
			out[i] = vecs[j]
			if was, ok := recorded[i]; ok {
				ident, close := sameEmbedding(vecs[j], was)
				if reasked == nil {
					reasked = &rundir.Reasked{}
				}
				reasked.Texts++
				if ident {
					reasked.Identical++
				}
				if close {
					reasked.Close++
				}
				if e.Reask.Keep {
					out[i] = was // the recorded vector goes on
				} else if !ident {
					c.diverge()
				}
				continue // the cache keeps the recorded vector
			}
			if e.Cache != nil {
				e.cachePut(keys[i], vecs[j])
			}
		}
	}
	uncached := len(missTexts) > len(recorded) && c.uncached()
	c.record(rundir.CallLog{Stage: stage, Kind: "embed", Model: model, Digest: info.Digest, Key: Key(keys), Reasked: reasked, Uncached: uncached})
	return out, nil
}
