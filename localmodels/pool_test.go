package localmodels_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"halu/localmodels"
	"halu/localmodels/fakeollama"
	"halu/localmodels/fakeopenai"
)

// slowFake is an Ollama fake whose chats take a while, counting the most
// it served at once.
func slowFake(t *testing.T, models ...fakeollama.Model) (*fakeollama.Server, *atomic.Int32) {
	var now, most atomic.Int32
	f := fakeollama.New(func(fakeollama.ChatRequest) fakeollama.Reply {
		n := now.Add(1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		time.Sleep(30 * time.Millisecond)
		now.Add(-1)
		return fakeollama.Reply{Content: "ok"}
	}, models...)
	t.Cleanup(f.Close)
	return f, &most
}

func pool(t *testing.T, slots int, hosts ...string) *localmodels.Pool {
	var bs []localmodels.Backend
	for _, h := range hosts {
		c, err := localmodels.New(h, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		bs = append(bs, c)
	}
	p, err := localmodels.NewPool(bs, slots)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func chats(t *testing.T, p *localmodels.Pool, model string, n int) []error {
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			_, errs[i] = p.Chat(context.Background(), localmodels.ChatRequest{Model: model, Messages: []localmodels.Message{{Role: "user", Content: fmt.Sprint(i)}}}, localmodels.StreamLimits{})
		}(i)
	}
	wg.Wait()
	return errs
}

var tinyModel = fakeollama.Model{Name: "m:latest", Digest: "d1", ParameterCount: 1e9}

// Calls sent at once spread over the servers, never more on one than its
// slots; each server's calls are counted.
func TestPoolSpreadsCalls(t *testing.T) {
	a, mostA := slowFake(t, tinyModel)
	b, mostB := slowFake(t, tinyModel)
	p := pool(t, 2, a.Host(), b.Host())
	if _, err := p.Info(context.Background(), "m"); err != nil {
		t.Fatal(err)
	}
	for _, err := range chats(t, p, "m", 12) {
		if err != nil {
			t.Fatal(err)
		}
	}
	c := p.HostCounts()
	if c[a.Host()].Calls == 0 || c[b.Host()].Calls == 0 || c[a.Host()].Calls+c[b.Host()].Calls != 12 {
		t.Fatalf("counts %+v", c)
	}
	if mostA.Load() > 2 || mostB.Load() > 2 {
		t.Fatalf("in flight at once: %d and %d, over 2 slots", mostA.Load(), mostB.Load())
	}
}

// Each server's wait for its slots is counted apart: with 4 calls sent to
// each at a time, the server that answers one at a time keeps its calls
// queued a large share of their time, and the pool lowers its slots; the
// one with 4 slots queues nothing and keeps its 4.
func TestPoolCountsEachServersWait(t *testing.T) {
	a, _ := slowFake(t, tinyModel)
	b, _ := slowFake(t, tinyModel)
	a.SetSlots(1)
	b.SetSlots(4)
	p := pool(t, 4, a.Host(), b.Host())
	if _, err := p.Info(context.Background(), "m"); err != nil {
		t.Fatal(err)
	}
	for _, err := range chats(t, p, "m", 16) {
		if err != nil {
			t.Fatal(err)
		}
	}
	c := p.HostCounts()
	wa, oka := c[a.Host()].ServerWait()
	wb, okb := c[b.Host()].ServerWait()
	t.Logf("one slot: queued %.2f; four slots: %.2f; slots now %v", wa, wb, p.Slots())
	if !oka || !okb || c[a.Host()].Timed != c[a.Host()].Calls || wa < 0.2 || wb > 0.1 || p.Slots()[a.Host()] >= 4 || p.Slots()[b.Host()] != 4 {
		t.Fatalf("one slot: queued %.2f (%v), four slots: %.2f (%v); slots now %v; counts %+v", wa, oka, wb, okb, p.Slots(), c)
	}
}

// A server that goes away is drained, said once, and its calls go to the
// other server; a model only one server has is called there only.
func TestPoolDrainsAFailedServer(t *testing.T) {
	a, _ := slowFake(t, tinyModel, fakeollama.Model{Name: "only-a:latest", Digest: "d9", ParameterCount: 1e9})
	b, _ := slowFake(t, tinyModel)
	p := pool(t, 1, a.Host(), b.Host())
	var said []string
	var mu sync.Mutex
	p.Logf = func(format string, args ...any) {
		mu.Lock()
		said = append(said, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	for _, m := range []string{"m", "only-a"} {
		if _, err := p.Info(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
	for _, err := range chats(t, p, "only-a", 3) {
		if err != nil {
			t.Fatal(err)
		}
	}
	if c := p.HostCounts(); c[a.Host()].Calls != 3 || c[b.Host()].Calls != 0 {
		t.Fatalf("a model on one server: counts %+v", c)
	}
	a.Close()
	for _, err := range chats(t, p, "m", 6) {
		if err != nil {
			t.Fatalf("with a gone: %v", err)
		}
	}
	c := p.HostCounts()
	if c[b.Host()].Calls != 6 || c[a.Host()].Failures == 0 || len(said) != 1 || !strings.Contains(said[0], a.Host()) {
		t.Fatalf("counts %+v, said %q", c, said)
	}
	// With every server of the model gone, the call fails transiently.
	b.Close()
	_, err := p.Chat(context.Background(), localmodels.ChatRequest{Model: "m", Messages: []localmodels.Message{{Role: "user", Content: "x"}}}, localmodels.StreamLimits{})
	if err == nil || !localmodels.IsTransient(err) {
		t.Fatalf("all gone: %v (transient %v)", err, localmodels.IsTransient(err))
	}
}

// A pool refuses what would make results depend on the server that
// answered: other versions, other weights under one name, two APIs.
func TestPoolRefusesUnlikeServers(t *testing.T) {
	a, _ := slowFake(t, tinyModel)
	b, _ := slowFake(t, fakeollama.Model{Name: "m:latest", Digest: "other", ParameterCount: 2e9})
	p := pool(t, 1, a.Host(), b.Host())
	if _, err := p.Info(context.Background(), "m"); err == nil || !strings.Contains(err.Error(), "differs between the pool's servers") {
		t.Fatalf("other weights: %v", err)
	}
	// The same file imported on two machines: Ollama's digests differ (they
	// cover where the blobs lie), the weights file's content digest does not.
	same, _ := slowFake(t, fakeollama.Model{Name: "m:latest", Digest: "d1-elsewhere", Blob: "d1", ParameterCount: 1e9})
	if _, err := pool(t, 1, a.Host(), same.Host()).Info(context.Background(), "m"); err != nil {
		t.Fatalf("the same weights imported elsewhere: %v", err)
	}
	// A fine-tune of the same base: size, parameter count, quantization,
	// family and template all agree, the weights do not.
	for name, m := range map[string]fakeollama.Model{
		"a fine-tune of the same size":     {Name: "m:latest", Digest: "d2", Blob: "ft", ParameterCount: 1e9},
		"the same weights, other defaults": {Name: "m:latest", Digest: "d1-elsewhere", Blob: "d1", ParameterCount: 1e9, Parameters: "temperature 0.2"},
	} {
		other, _ := slowFake(t, m)
		_, err := pool(t, 1, a.Host(), other.Host()).Info(context.Background(), "m")
		if err == nil || !strings.Contains(err.Error(), "differs between the pool's servers") {
			t.Errorf("%s: %v", name, err)
		}
	}
	c, _ := slowFake(t, tinyModel)
	c.SetVersion("0.16.0")
	p = pool(t, 1, a.Host(), c.Host())
	if _, err := p.Version(context.Background()); err == nil || !strings.Contains(err.Error(), "the pool's servers differ") {
		t.Fatalf("other versions: %v", err)
	}
	if _, err := p.Info(context.Background(), "nope"); !errors.Is(err, localmodels.ErrModelNotFound) {
		t.Fatalf("a model no server has: %v", err)
	}
	o := fakeopenai.New("vllm")
	defer o.Close()
	oa, _ := localmodels.NewOpenAI(o.URL, time.Minute, "")
	na, _ := localmodels.New(a.Host(), time.Minute)
	if _, err := localmodels.NewPool([]localmodels.Backend{na, oa}, 1); err == nil || !strings.Contains(err.Error(), "one API") {
		t.Fatalf("two APIs: %v", err)
	}
}

// A server that answers 503 has its slots halved, down to one; its slots
// grow back as its calls succeed. (The model is on that server only, so
// its 503s reach the caller; TestPoolRoutesAroundASickServer is the pool
// with somewhere else to go.)
func TestPoolHalvesABusyServersSlots(t *testing.T) {
	var busy atomic.Bool
	busy.Store(true)
	only := fakeollama.Model{Name: "only-a:latest", Digest: "d9", ParameterCount: 1e9}
	a := fakeollama.New(func(fakeollama.ChatRequest) fakeollama.Reply {
		if busy.Load() {
			return fakeollama.Reply{Status: 503, Error: "server busy"}
		}
		return fakeollama.Reply{Content: "ok"}
	}, tinyModel, only)
	defer a.Close()
	b, _ := slowFake(t, tinyModel)
	p := pool(t, 4, a.Host(), b.Host())
	p.SickFor = time.Millisecond // back in at once: this test is about slots
	if _, err := p.Info(context.Background(), "only-a"); err != nil {
		t.Fatal(err)
	}
	ask := func() error {
		time.Sleep(3 * time.Millisecond) // past the back-off
		_, err := p.Chat(context.Background(), localmodels.ChatRequest{Model: "only-a", Messages: []localmodels.Message{{Role: "user", Content: "x"}}}, localmodels.StreamLimits{})
		return err
	}
	for i := 0; i < 3; i++ {
		if err := ask(); localmodels.StatusCode(err) != 503 || !localmodels.IsTransient(err) {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	if s := p.Slots(); s[a.Host()] != 1 || s[b.Host()] != 4 {
		t.Fatalf("slots after three 503s: %v", s)
	}
	if c := p.HostCounts()[a.Host()]; c.Unavailable != 3 || c.Failures != 3 {
		t.Fatalf("counts after three 503s: %+v", c)
	}
	busy.Store(false)
	for i := 0; i < 8; i++ {
		if err := ask(); err != nil {
			t.Fatal(err)
		}
	}
	if s := p.Slots(); s[a.Host()] != 2 {
		t.Fatalf("slots after 8 calls that succeeded: %v", s)
	}
}

// A server that answers every call with 503 does not sink a pool: its
// calls go to the healthy server at once, it is left out for a back-off
// that grows while it keeps failing (probed once per back-off, not once per
// call), its 503s are counted exactly, and once it is well a probe brings
// it back in.
func TestPoolRoutesAroundASickServer(t *testing.T) {
	var sick atomic.Bool
	var refused, answered atomic.Int32
	sick.Store(true)
	a := fakeollama.New(func(fakeollama.ChatRequest) fakeollama.Reply {
		if sick.Load() {
			refused.Add(1)
			return fakeollama.Reply{Status: 503, Error: "server busy"}
		}
		answered.Add(1)
		time.Sleep(30 * time.Millisecond)
		return fakeollama.Reply{Content: "ok"}
	}, tinyModel)
	defer a.Close()
	b, _ := slowFake(t, tinyModel)
	p := pool(t, 2, a.Host(), b.Host())
	p.SickFor, p.DownFor = 20*time.Millisecond, 400*time.Millisecond
	if _, err := p.Info(context.Background(), "m"); err != nil {
		t.Fatal(err)
	}
	// Many calls at once: every one is answered, by b.
	for i, err := range chats(t, p, "m", 20) {
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	// Bursts that fill b's slots for a second: with b the one that served
	// last, a is asked only when b is full, and then once per back-off — a
	// back-off doubling from 20 ms probes it about 6 times (20, 40, 80, 160,
	// 320 ms, then 400 ms apart); a fixed one would some 40 times.
	before := refused.Load()
	for start := time.Now(); time.Since(start) < time.Second; {
		for i, err := range chats(t, p, "m", 8) {
			if err != nil {
				t.Fatalf("call %d: %v", i, err)
			}
		}
	}
	probes := refused.Load() - before
	c := p.HostCounts()
	t.Logf("503s: %d in the burst of 20, %d probes in a second of bursts; counts %+v", before, probes, c)
	if before > 6 || probes < 2 || probes > 12 {
		t.Errorf("a sick server was asked %d times in a burst of 20 calls and %d times in a second of bursts (want ≤ 6, then 2–12 probes)", before, probes)
	}
	if c[a.Host()].Unavailable != int(refused.Load()) || c[a.Host()].Calls != 0 || c[b.Host()].Failures != 0 {
		t.Errorf("counts %+v; a answered 503 %d times", c, refused.Load())
	}
	// Well again: after its back-off a probe succeeds and a takes calls.
	sick.Store(false)
	time.Sleep(p.DownFor + 50*time.Millisecond)
	for i, err := range chats(t, p, "m", 12) {
		if err != nil {
			t.Fatalf("call %d after recovery: %v", i, err)
		}
	}
	if answered.Load() == 0 || p.HostCounts()[a.Host()].Calls != int(answered.Load()) {
		t.Errorf("a recovered but answered %d calls (counted %+v)", answered.Load(), p.HostCounts()[a.Host()])
	}
}

// A call made under WithAffinity goes to the server that answered the
// call before it under that context while that server is free, though the
// pool would send it elsewhere (the server that served the model last);
// a call without affinity goes there.
func TestPoolAffinityKeepsACallersServer(t *testing.T) {
	release := make(chan struct{})
	fake := func() *fakeollama.Server {
		f := fakeollama.New(func(r fakeollama.ChatRequest) fakeollama.Reply {
			if r.LastUser() == "block" {
				<-release
			}
			return fakeollama.Reply{Content: "ok"}
		}, tinyModel)
		t.Cleanup(f.Close)
		return f
	}
	a, b := fake(), fake()
	p := pool(t, 1, a.Host(), b.Host())
	ctx := context.Background()
	chat := func(ctx context.Context, text string) {
		t.Helper()
		if _, err := p.Chat(ctx, localmodels.ChatRequest{Model: "m", Messages: []localmodels.Message{{Role: "user", Content: text}}}, localmodels.StreamLimits{}); err != nil {
			t.Error(err)
		}
	}
	on := func(text string) string {
		for _, s := range []*fakeollama.Server{a, b} {
			for _, c := range s.Chats() {
				if c.LastUser() == text {
					return s.Host()
				}
			}
		}
		return ""
	}
	caller := localmodels.WithAffinity(ctx)
	chat(caller, "judgement")
	x := on("judgement")
	// A call that blocks on x, so that the next goes to the other
	// server, which is then the one that served the model last.
	done := make(chan struct{})
	go func() { chat(ctx, "block"); close(done) }()
	for on("block") == "" {
		time.Sleep(time.Millisecond)
	}
	chat(ctx, "other")
	close(release)
	<-done
	y := on("other")
	if x == "" || on("block") != x || y == x {
		t.Fatalf("setup: judgement on %q, block on %q, other on %q", x, on("block"), y)
	}
	chat(ctx, "plain")
	chat(caller, "repair")
	if on("plain") != y || on("repair") != x {
		t.Errorf("without affinity the call went to %s (want %s, served last); with it to %s (want %s, the caller's)", on("plain"), y, on("repair"), x)
	}
}
