package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"halu/localmodels"
	"halu/localmodels/fakeollama"
	"halu/runner/engine"
	"halu/runner/rundir"
	"halu/runner/summary"
)

// embedSuite's items each embed one text, "text N".
type embedSuite struct{ n int }

func (s *embedSuite) Task() engine.Suite {
	return engine.Suite{Name: "embedtest", Models: s.Models, Items: s.Items, Process: s.Process, Summarize: s.Summarize}
}
func (s *embedSuite) Models() []string                             { return []string{"emb"} }
func (s *embedSuite) Items(context.Context) ([]engine.Item, error) { return numberedItems(s.n), nil }
func (s *embedSuite) Process(ctx context.Context, c *engine.Calls, it engine.Item) (any, error) {
	v, err := c.Embed(ctx, "embed", "emb", []string{fmt.Sprint("text ", it.Payload)})
	if err != nil {
		return nil, err
	}
	return v[0], nil
}
func (s *embedSuite) Summarize(*rundir.Records) (*summary.Summary, error) {
	return &summary.Summary{Suite: "embedtest"}, nil
}

// gatedEmbed holds each embedding request until every item's text is in
// it, in an earlier request or in the request being gathered behind it (or
// ten seconds have passed), so the texts gather behind the first request
// whatever the goroutines' timing; the server refuses a request with
// refuse in it.
type gatedEmbed struct {
	localmodels.Backend
	e      *engine.Engine
	sent   *atomic.Int32
	n      int
	refuse string
}

func (g gatedEmbed) Embed(ctx context.Context, req localmodels.EmbedRequest) ([][]float32, error) {
	for end := time.Now().Add(10 * time.Second); int(g.sent.Load())+len(req.Texts)+engine.GatheringEmbeds(g.e, "emb") < g.n && time.Now().Before(end); {
		time.Sleep(time.Millisecond)
	}
	g.sent.Add(int32(len(req.Texts)))
	if slices.Contains(req.Texts, g.refuse) {
		return nil, errors.New("the server refuses this input")
	}
	return g.Backend.Embed(ctx, req)
}

// Items that embed while an embedding request waits for its slot join it:
// 16 items of one text each take at most two requests (the first, sent
// when the slot is free, and the one the rest join while it runs), and
// each item gets its own text's vector; a request that fails is asked
// again caller by caller, so only the item whose text the server refuses
// fails.
func TestEmbedsGathered(t *testing.T) {
	for _, refuse := range []string{"", "text 5"} {
		srv := fakeollama.New(nil, fakeollama.Model{Name: "emb:latest", Digest: "de"})
		t.Cleanup(srv.Close)
		c, err := localmodels.New(srv.Host(), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var sent atomic.Int32
		e := &engine.Engine{Retry: engine.Retry{Base: time.Millisecond, Max: time.Millisecond}, Config: engine.EngineConfig{Parallel: 1, ItemsInFlight: 16, Retries: 1}}
		e.Client = gatedEmbed{Backend: c, e: e, sent: &sent, n: 16, refuse: refuse}
		dir := filepath.Join(t.TempDir(), "run")
		_, err = e.Run(context.Background(), (&embedSuite{n: 16}).Task(), engine.RunSpec{Dir: dir})
		calls, inputs := srv.EmbedCalls()
		if refuse == "" && (err != nil || calls > 2 || inputs != 16) {
			t.Errorf("%d embedding requests with %d texts (%v); want at most 2 requests with 16 texts", calls, inputs, err)
		}
		if refuse != "" && (err == nil || !strings.Contains(err.Error(), "1 of 16 items failed")) {
			t.Errorf("refusing %q: %v, want 1 of 16 items failed", refuse, err)
		}
		_, recs, err := engine.ReadRun(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != 16 && refuse == "" || len(recs) != 15 && refuse != "" {
			t.Errorf("refusing %q: %d items recorded", refuse, len(recs))
		}
		for _, r := range recs {
			var got []float32
			json.Unmarshal(r.Data, &got)
			var i int
			fmt.Sscanf(r.Item, "item-%d", &i)
			if want := fakeollama.Vector(fmt.Sprint("text ", i), 8); !reflect.DeepEqual(got, want) {
				t.Errorf("%s: vector %v, want its text's %v", r.Item, got, want)
			}
		}
	}
}

// chatEmbedSuite's items each ask gen, work for work (reading the reply),
// then embed the reply.
type chatEmbedSuite struct {
	n    int
	work time.Duration
}

func (s *chatEmbedSuite) Task() engine.Suite {
	return engine.Suite{Name: "chatembed", Models: s.Models, Items: s.Items, Process: s.Process, Summarize: s.Summarize}
}
func (s *chatEmbedSuite) Models() []string { return []string{"gen", "emb"} }
func (s *chatEmbedSuite) Items(context.Context) ([]engine.Item, error) {
	return numberedItems(s.n), nil
}
func (s *chatEmbedSuite) Process(ctx context.Context, c *engine.Calls, it engine.Item) (any, error) {
	gen, err := c.Chat(ctx, "generate", localmodels.ChatRequest{Model: "gen",
		Messages: []localmodels.Message{{Role: "user", Content: fmt.Sprint("question ", it.Payload)}}}, 0)
	if err != nil {
		return nil, err
	}
	time.Sleep(s.work)
	v, err := c.Embed(ctx, "embed", "emb", []string{gen.Content + fmt.Sprint(" ", it.Payload)})
	if err != nil {
		return nil, err
	}
	return v[0], nil
}
func (s *chatEmbedSuite) Summarize(*rundir.Records) (*summary.Summary, error) {
	return &summary.Summary{Suite: "chatembed"}, nil
}

// An admitted embedding request waits for the items still working between
// calls, who are about to join it: 8 items with one slot each generate,
// work 20 ms on the reply and embed it. The first to embed gets the idle
// slot at once while the other seven still work; it waits for them and
// carries all eight texts, where sealing on admission sent 1 then 7. The
// wait ends when the last item joins — long before its bound (here 2 s),
// which it would reach were an item counted as working while it waits.
func TestEmbedWaitsForWorkingItems(t *testing.T) {
	answer := func(fakeollama.ChatRequest) fakeollama.Reply { return fakeollama.Reply{Content: "an answer"} }
	srv := fakeollama.New(answer, fakeollama.Model{Name: "gen:latest", Digest: "d1"}, fakeollama.Model{Name: "emb:latest", Digest: "d2"})
	t.Cleanup(srv.Close)
	c, err := localmodels.New(srv.Host(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	const bound = 2 * time.Second
	e := &engine.Engine{Client: c, Retry: engine.Retry{Base: time.Millisecond, Max: time.Millisecond}, Config: engine.EngineConfig{Parallel: 1, ItemsInFlight: 8, Retries: 1}}
	engine.GatherEmbedsFor(e, bound)
	start := time.Now()
	if _, err := e.Run(context.Background(), (&chatEmbedSuite{n: 8, work: 20 * time.Millisecond}).Task(), engine.RunSpec{Dir: filepath.Join(t.TempDir(), "run")}); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if calls, inputs := srv.EmbedCalls(); calls != 1 || inputs != 8 {
		t.Errorf("%d embedding requests with %d texts; want 1 with all 8", calls, inputs)
	}
	if took >= bound/2 {
		t.Errorf("the run took %s: the request waited out its bound (%s)", took, bound)
	}
}
