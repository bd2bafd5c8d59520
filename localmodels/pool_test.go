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

// A server that answers 503 has its slots halved, down to one, while the
// other keeps its own; its slots grow back as its calls succeed.
func TestPoolHalvesABusyServersSlots(t *testing.T) {
	var busy atomic.Bool
	busy.Store(true)
	a := fakeollama.New(func(fakeollama.ChatRequest) fakeollama.Reply {
		if busy.Load() {
			return fakeollama.Reply{Status: 503, Error: "server busy"}
		}
		return fakeollama.Reply{Content: "ok"}
	}, tinyModel)
	defer a.Close()
	b, _ := slowFake(t, tinyModel)
	p := pool(t, 4, a.Host(), b.Host())
	if _, err := p.Info(context.Background(), "m"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		_, err := p.Chat(context.Background(), localmodels.ChatRequest{Model: "m", Messages: []localmodels.Message{{Role: "user", Content: "x"}}}, localmodels.StreamLimits{})
		if localmodels.StatusCode(err) != 503 || !localmodels.IsTransient(err) {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	if s := p.Slots(); s[a.Host()] != 1 || s[b.Host()] != 4 {
		t.Fatalf("slots after three 503s: %v", s)
	}
	busy.Store(false)
	for i := 0; i < 8; i++ {
		if _, err := p.Chat(context.Background(), localmodels.ChatRequest{Model: "m", Messages: []localmodels.Message{{Role: "user", Content: "x"}}}, localmodels.StreamLimits{}); err != nil {
			t.Fatal(err)
		}
	}
	if s := p.Slots(); s[a.Host()] != 2 {
		t.Fatalf("slots after 8 calls that succeeded: %v", s)
	}
}
