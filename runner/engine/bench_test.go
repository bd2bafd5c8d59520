package engine_test

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"halu/localmodels"
	"halu/localmodels/fakeollama"
	"halu/runner/engine"
	"halu/runner/rundir"
	"halu/runner/summary"
)

// BenchmarkCachedRerunNoServer times a fully cached run of 10,000 items
// (a generation and a judgement each) with no server running: the
// fingerprints come from the cache's served records, every reply from the
// cache. One op is one whole run into a new directory, summary included.
func BenchmarkCachedRerunNoServer(b *testing.B) {
	const items = 10000
	srv := server(b, goodJudge)
	host, cache := srv.Host(), b.TempDir()
	e := newEngine(b, host, cache)
	e.Log = io.Discard
	if _, err := e.Run(context.Background(), (&testSuite{n: items}).Task(), engine.RunSpec{Dir: filepath.Join(b.TempDir(), "first")}); err != nil {
		b.Fatal(err)
	}
	srv.Close()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e := newEngine(b, host, cache)
		e.Log = io.Discard
		res, err := e.Run(context.Background(), (&testSuite{n: items}).Task(), engine.RunSpec{Dir: filepath.Join(b.TempDir(), "rerun")})
		if err != nil || res.Counts.ModelCalls != 0 || res.Counts.Completed != items {
			b.Fatalf("offline rerun: %v, %+v", err, res)
		}
	}
}

// modelsSuite is a simulated run of n questions asked of four models of
// different speeds, listed question by question (q0001/m1, q0001/m2, …),
// as suites that ask every model one question in turn do: one chat call
// an item.
type modelsSuite struct{ n int }

func (s *modelsSuite) Task() engine.Suite {
	return engine.Suite{Name: "models", Models: s.Models, Items: s.Items, Process: s.Process, Summarize: s.Summarize}
}
func (s *modelsSuite) Models() []string { return []string{"m1", "m2", "m3", "m4"} }
func (s *modelsSuite) Items(context.Context) ([]engine.Item, error) {
	var items []engine.Item
	for q := range s.n / 4 {
		for _, m := range s.Models() {
			items = append(items, engine.Item{ID: fmt.Sprintf("q%04d/%s", q, m), Payload: m, Group: m})
		}
	}
	return items, nil
}
func (s *modelsSuite) Process(ctx context.Context, c *engine.Calls, it engine.Item) (any, error) {
	r, err := c.Chat(ctx, "generate", localmodels.ChatRequest{Model: it.Payload.(string), Messages: []localmodels.Message{{Role: "user", Content: it.ID}}}, 0)
	return r.Content, err
}
func (s *modelsSuite) Summarize(*rundir.Records) (*summary.Summary, error) {
	return &summary.Summary{Suite: "models"}, nil
}

// BenchmarkShardBalance runs the four shards of a simulated 2,000-item run
// one after another — models m1…m4 answer in 1, 2, 3 and 4 ms, four calls
// at once — and reports the slowest shard's wall time over the fastest's:
// shards of the seeded order (what --shard I/N makes) beside shards of the
// list's own order (seed 0, as before), which hand each shard one model.
func BenchmarkShardBalance(b *testing.B) {
	const items, shards = 2000, 4
	srv := fakeollama.New(func(r fakeollama.ChatRequest) fakeollama.Reply {
		ms := time.Duration(r.Model[1]-'0') * time.Millisecond
		return fakeollama.Reply{Content: "a", Delay: ms}
	}, fakeollama.Model{Name: "m1:latest", Digest: "d1"}, fakeollama.Model{Name: "m2:latest", Digest: "d2"},
		fakeollama.Model{Name: "m3:latest", Digest: "d3"}, fakeollama.Model{Name: "m4:latest", Digest: "d4"})
	defer srv.Close()
	srv.SetSlots(4)
	ratio := func(seed uint64) float64 {
		var walls []time.Duration
		for i := 1; i <= shards; i++ {
			e := newEngine(b, srv.Host(), b.TempDir())
			e.Cache = nil // every call made: wall time is the shard's work
			e.Config.Parallel, e.Config.ItemsInFlight, e.Log = 4, 4, io.Discard
			start := time.Now()
			res, err := e.Run(context.Background(), (&modelsSuite{n: items}).Task(), engine.RunSpec{Dir: filepath.Join(b.TempDir(), "s"), Shard: &rundir.Shard{I: i, N: shards, Seed: seed}})
			if err != nil || res.Counts.Completed != items/shards {
				b.Fatalf("shard %d: %v, %+v", i, err, res)
			}
			walls = append(walls, time.Since(start))
		}
		return float64(slices.Max(walls)) / float64(slices.Min(walls))
	}
	// The median of b.N runs of each (make bench-shards: 3).
	var seeded, listed []float64
	for range b.N {
		seeded, listed = append(seeded, ratio(rundir.ShardSeed)), append(listed, ratio(0))
	}
	slices.Sort(seeded)
	slices.Sort(listed)
	b.ReportMetric(seeded[len(seeded)/2], "max/min-seeded")
	b.ReportMetric(listed[len(listed)/2], "max/min-list-order")
}
