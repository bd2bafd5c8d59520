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

func (s *embedSuite) Name() string                                 { return "embedtest" }
func (s *embedSuite) Models() []string                             { return []string{"emb"} }
func (s *embedSuite) Items(context.Context) ([]engine.Item, error) { return numberedItems(s.n), nil }
func (s *embedSuite) Process(ctx context.Context, c *engine.Calls, it engine.Item) (any, error) {
	v, err := c.Embed(ctx, "embed", "emb", []string{fmt.Sprint("text ", it.Payload)})
	if err != nil {
		return nil, err
	}
	return v[0], nil
}
func (s *embedSuite) Summarize(recs []rundir.Record) (*summary.Summary, error) {
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
		e := &engine.Engine{Parallel: 1, ItemsInFlight: 16,
			Retry: engine.Retry{Attempts: 1, Base: time.Millisecond, Max: time.Millisecond}}
		e.Client = gatedEmbed{Backend: c, e: e, sent: &sent, n: 16, refuse: refuse}
		dir := filepath.Join(t.TempDir(), "run")
		_, err = e.Run(context.Background(), &embedSuite{n: 16}, engine.RunSpec{Dir: dir})
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
