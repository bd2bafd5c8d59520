package engine_test

import (
	"bytes"
	"context"
	"hash/fnv"
	"math"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"halu/localmodels"
	"halu/localmodels/fakeollama"
	"halu/localmodels/fakeopenai"
	"halu/runner/engine"
	"halu/runner/engine/enginetest"
	"halu/runner/rundir"
)

func chatReq(model, prompt string) localmodels.ChatRequest {
	return localmodels.ChatRequest{Model: model, Messages: []localmodels.Message{{Role: "user", Content: prompt}}}
}

// A generation past its budget is stopped with its text kept, recorded as
// such, and not cached (a faster machine would finish it).
func TestBudgetStopsAndKeepsText(t *testing.T) {
	srv := server(t, goodJudge)
	srv.SetChat(func(fakeollama.ChatRequest) fakeollama.Reply {
		return fakeollama.Reply{Chunks: []string{"a", " b", " c", " d", " e", " f"}, ChunkDelay: 150 * time.Millisecond}
	})
	e := newEngine(t, srv.Host(), t.TempDir())
	e.Config.Budget = 400 * time.Millisecond
	for round := 0; round < 2; round++ {
		r, err := e.NewCalls("x").Chat(context.Background(), "generate", chatReq("gen", "q"), 0)
		if err != nil {
			t.Fatal(err)
		}
		if r.DoneReason != localmodels.DoneBudget || !strings.HasPrefix(r.Content, "a b") || strings.HasSuffix(r.Content, "f") {
			t.Fatalf("round %d: reply %+v", round, r)
		}
	}
	if st := e.Stats(); st.ModelCalls != 2 || st.CacheHits != 0 || st.StoppedBudget != 2 {
		t.Errorf("stats %+v: a budget-stopped reply must not be served from the cache", st)
	}
}

// An idle server fails the call, which is retried like other transient
// errors and then given up.
func TestIdleTimeoutIsRetriedThenFails(t *testing.T) {
	var n atomic.Int32
	srv := server(t, goodJudge)
	srv.SetChat(func(fakeollama.ChatRequest) fakeollama.Reply {
		n.Add(1)
		return fakeollama.Reply{Content: "late", Delay: time.Second}
	})
	e := newEngine(t, srv.Host(), t.TempDir())
	e.Config.Idle = 50 * time.Millisecond
	_, err := e.NewCalls("x").Chat(context.Background(), "generate", chatReq("gen", "q"), 0)
	if err == nil || !strings.Contains(err.Error(), "gave up after 3 attempts") || !strings.Contains(err.Error(), "no token for 50ms") {
		t.Fatalf("err = %v", err)
	}
	if n.Load() != 3 {
		t.Errorf("%d attempts, want 3", n.Load())
	}
}

// The idle limit is on the gap between tokens, not on the reply: a
// reply whose tokens come every 40 ms runs past a 100 ms limit whole; one
// that stalls 300 ms after its first token fails.
func TestIdleIsPerToken(t *testing.T) {
	srv := server(t, goodJudge)
	srv.SetChat(func(r fakeollama.ChatRequest) fakeollama.Reply {
		if r.LastUser() == "stall" {
			return fakeollama.Reply{Chunks: []string{"a", " b"}, ChunkDelay: 300 * time.Millisecond}
		}
		return fakeollama.Reply{Chunks: []string{"a", " b", " c", " d", " e", " f", " g"}, ChunkDelay: 40 * time.Millisecond}
	})
	e := newEngine(t, srv.Host(), t.TempDir())
	e.Config.Idle = 100 * time.Millisecond
	e.Config.Retries = 1
	r, err := e.NewCalls("x").Chat(context.Background(), "generate", chatReq("gen", "steady"), 0)
	if err != nil || r.Content != "a b c d e f g" {
		t.Fatalf("steady reply: %q, %v", r.Content, err)
	}
	if _, err := e.NewCalls("y").Chat(context.Background(), "generate", chatReq("gen", "stall"), 0); err == nil || !strings.Contains(err.Error(), "no token for 100ms") {
		t.Fatalf("stalled reply: err %v", err)
	}
}

// A generation looping on one span is stopped and recorded as such.
func TestRepetitionStop(t *testing.T) {
	srv := server(t, goodJudge)
	loop := []string{"The answer is"}
	for i := 0; i < 200; i++ {
		loop = append(loop, " the same again and")
	}
	srv.SetChat(func(r fakeollama.ChatRequest) fakeollama.Reply {
		if r.Model == "judge" {
			return fakeollama.Reply{Content: `{"score": 4}`}
		}
		return fakeollama.Reply{Chunks: loop}
	})
	e := newEngine(t, srv.Host(), t.TempDir())
	e.Config.Repeats = localmodels.DefaultRepetition.MinRepeats
	dir := filepath.Join(t.TempDir(), "run")
	res, err := e.Run(context.Background(), (&testSuite{n: 1}).Task(), engine.RunSpec{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	_, recs, _ := engine.ReadRun(dir)
	gen := recs[0].Calls[0]
	if gen.DoneReason != localmodels.DoneRepetition || res.Counts.StoppedRepetition != 1 {
		t.Fatalf("call %+v counts %+v", gen, res.Counts)
	}
	// Stopped within a few checks of the loop's start, not at its end.
	if gen.EvalTokens >= len(loop) || gen.EvalTokens < 8 {
		t.Errorf("stopped after %d of %d chunks", gen.EvalTokens, len(loop))
	}
}

func TestRepetitionLoops(t *testing.T) {
	r := localmodels.Repetition{MinRepeats: 4, MinChars: 20, MaxSpan: 16}
	tests := []struct {
		text string
		want bool
		span string
	}{
		{"intro " + strings.Repeat("abc ", 5), true, "abc "},
		{strings.Repeat("abc ", 4), false, ""},                         // 16 bytes < MinChars
		{"x" + strings.Repeat("-", 19), false, ""},                     // 19 bytes < MinChars
		{strings.Repeat("-", 20), true, "-"},                           // a span of one byte
		{strings.Repeat("one two three four five six ", 3), false, ""}, // span longer than MaxSpan
		{"a b c d e f g h i j k l m n o p q r s t", false, ""},
		{strings.Repeat("ab", 12) + "a", true, "ba"}, // mid-span: the period is still found
	}
	for _, tt := range tests {
		span, ok := r.Loops(tt.text)
		if ok != tt.want || (ok && span != tt.span) {
			t.Errorf("Loops(%q) = %q, %v; want %q, %v", tt.text, span, ok, tt.span, tt.want)
		}
	}
	if _, ok := (localmodels.Repetition{}).Loops(strings.Repeat("a", 1000)); ok {
		t.Error("the zero Repetition detected a loop")
	}
}

// 503 (queue full) lowers the calls in flight and backs off; every item
// still completes.
func TestServiceUnavailableBacksOff(t *testing.T) {
	var inflight, peakAfter, busy atomic.Int32
	srv := server(t, goodJudge)
	srv.SetChat(func(r fakeollama.ChatRequest) fakeollama.Reply {
		n := inflight.Add(1)
		defer inflight.Add(-1)
		if n > 1 {
			busy.Add(1)
			return fakeollama.Reply{Status: 503, Error: "server busy, please try again.  maximum pending requests exceeded"}
		}
		if busy.Load() > 0 && n > peakAfter.Load() {
			peakAfter.Store(n)
		}
		time.Sleep(20 * time.Millisecond)
		if r.Model == "judge" {
			return fakeollama.Reply{Content: `{"score": 4}`}
		}
		return fakeollama.Reply{Content: "answer"}
	})
	e := newEngine(t, srv.Host(), t.TempDir())
	e.Config.Parallel = 4
	e.Config.Retries = 8
	e.Retry = engine.Retry{Base: 5 * time.Millisecond, Max: 40 * time.Millisecond}
	res, err := e.Run(context.Background(), (&testSuite{n: 12}).Task(), engine.RunSpec{Dir: filepath.Join(t.TempDir(), "run")})
	if err != nil {
		t.Fatal(err)
	}
	if res.Counts.Completed != 12 || res.Counts.Backoffs == 0 || busy.Load() == 0 {
		t.Fatalf("counts %+v, 503s %d", res.Counts, busy.Load())
	}
	// Without back-off, 4 slots against a 1-slot server keep being refused;
	// lowered to one slot, refusals stop growing with the item count.
	if busy.Load() > 24 {
		t.Errorf("%d refusals for 24 calls: the engine did not lower its calls in flight", busy.Load())
	}
}

// Model-major scheduling: with more items in progress than slots, each
// model's calls are served together instead of alternating per item.
func TestModelMajorScheduling(t *testing.T) {
	var mu sync.Mutex
	var order []string
	srv := server(t, goodJudge)
	srv.SetChat(func(r fakeollama.ChatRequest) fakeollama.Reply {
		mu.Lock()
		order = append(order, r.Model)
		mu.Unlock()
		time.Sleep(2 * time.Millisecond)
		if r.Model == "judge" {
			return fakeollama.Reply{Content: `{"score": 4}`}
		}
		return fakeollama.Reply{Content: "answer to " + r.LastUser()}
	})
	switches := func(inFlight int) (int, rundir.Counts) {
		mu.Lock()
		order = nil
		mu.Unlock()
		e := newEngine(t, srv.Host(), t.TempDir())
		e.Config.Parallel, e.Config.ItemsInFlight = 1, inFlight
		res, err := e.Run(context.Background(), (&testSuite{n: 10}).Task(), engine.RunSpec{Dir: filepath.Join(t.TempDir(), "run")})
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for i := 1; i < len(order); i++ {
			if order[i] != order[i-1] {
				n++
			}
		}
		return n, res.Counts
	}
	perItem, _ := switches(1)
	batched, counts := switches(10)
	if perItem != 19 {
		t.Errorf("one item at a time: %d switches, want 19 (gen, judge per item)", perItem)
	}
	if batched != 1 || counts.ModelSwitches != 1 {
		t.Errorf("ten items in flight: %d switches (counted %d), want 1: all generation, then all judging", batched, counts.ModelSwitches)
	}
}

// Two names of one weights file are one load for the server (Ollama keeps
// one runner per file): their calls fill the slots together, with no model
// switch; two files are two loads, the second started beside the first
// once the first has nothing waiting (one switch). Either way the slots
// are full, and the run's slot use is counted while it works.
func TestAliasesShareTheSlots(t *testing.T) {
	for _, c := range []struct {
		name      string
		judgeBlob string
		mixed     bool
		switches  int
	}{{"aliases", "sha256:w", true, 0}, {"two files", "sha256:j", true, 1}} {
		t.Run(c.name, func(t *testing.T) {
			var mu sync.Mutex
			inflight := map[string]int{}
			mixed, peak, gens := false, 0, 0
			judged := make(chan struct{})
			var firstJudge sync.Once
			srv := fakeollama.New(func(r fakeollama.ChatRequest) fakeollama.Reply {
				mu.Lock()
				inflight[r.Model]++
				if inflight["gen"] > 0 && inflight["judge"] > 0 {
					mixed = true
				}
				peak = max(peak, inflight["gen"]+inflight["judge"])
				if r.Model == "gen" {
					gens++
				}
				last := r.Model == "gen" && gens > 13
				mu.Unlock()
				if r.Model == "judge" {
					firstJudge.Do(func() { close(judged) })
				}
				// The last three generation calls to arrive are held
				// until a judge call has (5 s at most): with two files,
				// the judge calls are admitted once generation has
				// nothing waiting, into the slot the one other call in
				// flight frees — so they meet at the server however
				// late a request reaches it on a loaded machine. Held
				// only by timing (calls of 20–140 ms), "two files" twice
				// saw none together in make test runs.
				if last {
					select {
					case <-judged:
					case <-time.After(5 * time.Second):
					}
				}
				// Calls take 20–140 ms, as real ones differ in length.
				h := fnv.New32a()
				h.Write([]byte(r.LastUser()))
				time.Sleep(time.Duration(20+h.Sum32()%4*40) * time.Millisecond)
				mu.Lock()
				inflight[r.Model]--
				mu.Unlock()
				if r.Model == "judge" {
					return fakeollama.Reply{Content: `{"score": 4}`}
				}
				return fakeollama.Reply{Content: "answer"}
			},
				fakeollama.Model{Name: "gen:latest", Digest: "dg", Blob: "sha256:w", ParameterCount: 1e9},
				fakeollama.Model{Name: "judge:latest", Digest: "dj", Blob: c.judgeBlob, ParameterCount: 1e9})
			t.Cleanup(srv.Close)
			e := newEngine(t, srv.Host(), t.TempDir())
			e.Config.Parallel, e.Config.ItemsInFlight = 4, 16
			res, err := e.Run(context.Background(), (&testSuite{n: 16}).Task(), engine.RunSpec{Dir: filepath.Join(t.TempDir(), "run")})
			if err != nil {
				t.Fatal(err)
			}
			if mixed != c.mixed || res.Counts.ModelSwitches != c.switches || peak != 4 {
				t.Errorf("gen and judge in flight together: %v (want %v); model switches %d (want %d); peak in flight %d (want 4)",
					mixed, c.mixed, res.Counts.ModelSwitches, c.switches, peak)
			}
			use, ok := res.Counts.SlotUse()
			mean, _ := res.Counts.InFlight()
			if !ok || use <= 0 || use > 1 || math.Abs(mean-4*use) > 1e-9 {
				t.Errorf("slot use %v (measured %v), calls in flight %v of 4 slots", use, ok, mean)
			}
		})
	}
}

// TestServerWaitIsMeasured: with 4 calls in flight on a server that
// answers one at a time, the calls are queued there a large share of their
// time, the run says so, and halu lowers its calls in flight (by one per
// call queued most of its time: 4 → 1 takes three); on a server with 4
// slots nothing is queued and nothing lowered.
func TestServerWaitIsMeasured(t *testing.T) {
	for _, c := range []struct {
		slots          int
		min, max       float64
		minEased, most int
	}{{1, 0.2, 1, 3, 1 << 30}, {4, 0, 0.1, 0, 0}} {
		srv := fakeollama.New(func(r fakeollama.ChatRequest) fakeollama.Reply {
			if r.Model == "judge" {
				return fakeollama.Reply{Content: `{"score": 4}`, Delay: 40 * time.Millisecond}
			}
			return fakeollama.Reply{Content: "answer", Delay: 40 * time.Millisecond}
		}, fakeollama.Model{Name: "gen:latest", Digest: "dg", ParameterCount: 1e9}, fakeollama.Model{Name: "judge:latest", Digest: "dj", ParameterCount: 1e9})
		srv.SetSlots(c.slots)
		e := newEngine(t, srv.Host(), t.TempDir())
		e.Config.Parallel = 4
		res, err := e.Run(context.Background(), (&testSuite{n: 12}).Task(), engine.RunSpec{Dir: filepath.Join(t.TempDir(), "run")})
		srv.Close()
		if err != nil {
			t.Fatal(err)
		}
		n := res.Counts
		wait, ok := n.ServerWait()
		t.Logf("%d slots: waiting %.3f of %.2f s timed; lowered %d times", c.slots, wait, n.TimedSeconds, n.QueueBackoffs)
		if !ok || n.TimedCalls != n.ModelCalls || wait < c.min || wait > c.max || n.QueueBackoffs < c.minEased || n.QueueBackoffs > c.most {
			t.Errorf("%d slots: queued %.2f of the calls' time (measured %v; %d of %d calls timed), want %.2f–%.2f; lowered %d times, want %d–%d",
				c.slots, wait, ok, n.TimedCalls, n.ModelCalls, c.min, c.max, n.QueueBackoffs, c.minEased, c.most)
		}
	}
}

// Every request carries num_ctx and keep_alive; a prompt that filled the
// window is warned about and counted.
func TestNumCtxAndNearContextWarning(t *testing.T) {
	var got []fakeollama.ChatRequest
	var mu sync.Mutex
	srv := fakeollama.New(func(r fakeollama.ChatRequest) fakeollama.Reply {
		mu.Lock()
		got = append(got, r)
		mu.Unlock()
		return fakeollama.Reply{Content: "ok", PromptEvalCount: 1900}
	}, fakeollama.Model{Name: "gen:latest", Digest: "dg", ParameterCount: 1e9, ContextLength: 2048})
	t.Cleanup(srv.Close)
	var log bytes.Buffer
	e := newEngine(t, srv.Host(), t.TempDir())
	e.Config.NumCtx, e.Config.KeepAlive, e.Log = 4096, 7*time.Minute, &log
	c := e.NewCalls("item-1")
	if _, err := c.Chat(context.Background(), "generate", chatReq("gen", "long prompt"), 0); err != nil {
		t.Fatal(err)
	}
	if v := got[0].Options["num_ctx"]; v != float64(4096) {
		t.Errorf("num_ctx sent = %v", v)
	}
	if !strings.Contains(log.String(), "1900 tokens in a 2048-token window") || e.Stats().NearContext != 1 {
		t.Errorf("no near-context warning (window capped at the model's 2048): %q, %+v", log.String(), e.Stats())
	}
	if engine.EffectiveNumCtx(8192, localmodels.ModelInfo{ContextLength: 2048}) != 2048 || engine.EffectiveNumCtx(1024, localmodels.ModelInfo{ContextLength: 2048}) != 1024 ||
		engine.EffectiveNumCtx(0, localmodels.ModelInfo{}) != 0 {
		t.Error("EffectiveNumCtx")
	}
}

// The serving fingerprint is in the cache key: another num_ctx or another
// server version does not reuse a reply.
func TestFingerprintInCacheKey(t *testing.T) {
	srv := server(t, goodJudge)
	cache := t.TempDir()
	call := func(numCtx int) rundir.Counts {
		e := newEngine(t, srv.Host(), cache)
		e.Config.NumCtx = numCtx
		if _, err := e.NewCalls("x").Chat(context.Background(), "generate", chatReq("gen", "q"), 0); err != nil {
			t.Fatal(err)
		}
		return e.Stats()
	}
	if c := call(2048); c.ModelCalls != 1 {
		t.Fatalf("first call %+v", c)
	}
	if c := call(2048); c.CacheHits != 1 || c.ModelCalls != 0 {
		t.Fatalf("same serving: %+v, want a hit", c)
	}
	if c := call(1024); c.ModelCalls != 1 {
		t.Fatalf("another num_ctx: %+v, want a new call", c)
	}
	srv.SetVersion("0.99.0")
	if c := call(2048); c.ModelCalls != 1 {
		t.Fatalf("another Ollama version: %+v, want a new call", c)
	}
}

// Fit must hold for a byte-level tokenizer on text cl100k packs tightly
// (long common words: one cl100k token, a dozen bytes): the parts it keeps
// leave the prompt, in the model's own tokens, within the window.
func TestFitByteLevelTokenizer(t *testing.T) {
	srv := fakeollama.New(func(r fakeollama.ChatRequest) fakeollama.Reply {
		n := 0
		for _, m := range r.Messages {
			n += len(m.Content) // one token per byte
		}
		return fakeollama.Reply{Content: "x", PromptEvalCount: n}
	}, fakeollama.Model{Name: "m:latest", Digest: "d", ParameterCount: 1e9, ContextLength: 32768})
	defer srv.Close()
	e := enginetest.New(t, srv.Host(), 1)
	e.Config.NumCtx = 1000
	fixed := "Question: how are these related?"
	var parts []string
	for i := 0; i < 40; i++ {
		parts = append(parts, strings.Repeat(" international organization development", 2))
	}
	const reply = 50
	n, ok, err := e.NewCalls("t").Fit(context.Background(), "m", fixed, parts, reply)
	if err != nil || !ok || n == 0 {
		t.Fatalf("fit: %d %v %v", n, ok, err)
	}
	used := len(fixed) + reply
	for _, p := range parts[:n] {
		used += len(p) + 1
	}
	if used > 1000 {
		t.Fatalf("kept %d parts: %d tokens in a 1,000-token window", n, used)
	}
}

// TestPrefixReuseIsCounted: a server that says how many prompt tokens it
// took from its prefix cache (OpenAI's usage.prompt_tokens_details, as
// vLLM gives it) has them counted over the run; one that says nothing
// has no figure, not a zero; it times nothing either (no durations).
func TestPrefixReuseIsCounted(t *testing.T) {
	for _, cached := range []*int{localmodels.Int(12), nil} {
		f := fakeopenai.New("vllm")
		f.Models = []string{"gen", "judge"}
		f.Cached = cached
		c, err := localmodels.NewOpenAI(f.URL, 5*time.Second, "")
		if err != nil {
			t.Fatal(err)
		}
		e := &engine.Engine{Client: c, Retry: engine.Retry{Base: 10 * time.Millisecond, Max: 20 * time.Millisecond}, Config: engine.EngineConfig{Parallel: 2, ItemsInFlight: 2, JudgeRepairs: 1, Retries: 2}}
		res, err := e.Run(context.Background(), (&testSuite{n: 3}).Task(), engine.RunSpec{Dir: filepath.Join(t.TempDir(), "run")})
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		n := res.Counts
		reuse, ok := n.PrefixReuse()
		switch {
		case cached != nil && (!ok || n.ReuseCalls != n.ModelCalls || n.ReusePromptTokens != 17*n.ModelCalls || n.ReusedTokens != 12*n.ModelCalls || math.Abs(reuse-12.0/17) > 1e-9):
			t.Errorf("reported 12 of 17: reuse %v (%v), counts %+v", reuse, ok, n)
		case cached == nil && (ok || n.ReuseCalls != 0):
			t.Errorf("not reported: reuse %v (%v), counts %+v", reuse, ok, n)
		case n.TimedCalls != 0:
			t.Errorf("an OpenAI-compatible server gives no durations, yet %d calls timed", n.TimedCalls)
		}
	}
}
