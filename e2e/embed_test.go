//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"testing"
	"time"

	"halu/embed"
	"halu/localmodels"
	"halu/runner/engine"
)

func realEngine(t testing.TB, host string) *engine.Engine {
	c, err := localmodels.New(host, 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	cache, err := engine.OpenCache(filepath.Join(t.TempDir(), "cache"))
	if err != nil {
		t.Fatal(err)
	}
	return &engine.Engine{Client: c, Cache: cache, Parallel: 1}
}

// TestEmbedSameTextSimilarityOne: the same text embedded twice through the
// real server has similarity 1, and the cache serves the second call.
func TestEmbedSameTextSimilarityOne(t *testing.T) {
	srv := server(t, t.TempDir())
	importTiny(t, srv.Host, "1", "tiny")
	e := realEngine(t, srv.Host)
	c := e.NewCalls("embed-check")
	ctx := context.Background()
	text := "Quantum levitation grids embedded in roadways."
	a, err := embed.Texts(ctx, c, "embed", "tiny", []string{text})
	if err != nil {
		t.Fatal(err)
	}
	calls := e.Stats().ModelCalls
	b, err := embed.Texts(ctx, c, "embed", "tiny", []string{text})
	if err != nil {
		t.Fatal(err)
	}
	if e.Stats().ModelCalls != calls || e.Stats().CacheHits != 1 {
		t.Fatalf("second embedding was not served from the cache: %+v", e.Stats())
	}
	sim, err := embed.Cosine(a[0], b[0])
	if err != nil || math.Abs(sim-1) > 1e-6 {
		t.Fatalf("similarity %v, %v", sim, err)
	}
	other, err := embed.Texts(ctx, c, "embed", "tiny", []string{"A completely different sentence about tides."})
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := embed.Cosine(a[0], other[0]); s >= 1-1e-6 {
		t.Fatalf("different texts have similarity %v", s)
	}
	t.Logf("embedding dimension %d", len(a[0]))
}

// TestEmbedVsPairwiseFigures embeds 1,000 distinct answers through the real
// server (uncached), then computes their 499,500 pairwise similarities, and
// logs both times: the pairwise step must stay negligible beside the calls.
func TestEmbedVsPairwiseFigures(t *testing.T) {
	srv := server(t, t.TempDir())
	importTiny(t, srv.Host, "1", "tiny")
	e := realEngine(t, srv.Host)
	texts := make([]string, 1000)
	for i := range texts {
		texts[i] = fmt.Sprintf("Answer %d: a tidal turbine array with variable-pitch blades tuned to site %d.", i, i*7)
	}
	t0 := time.Now()
	vecs, err := e.NewCalls("bench").Embed(context.Background(), "embed", "tiny", texts)
	if err != nil {
		t.Fatal(err)
	}
	embedTime := time.Since(t0)
	t0 = time.Now()
	s := embed.MeanPairwise(vecs)
	pairTime := time.Since(t0)
	t.Logf("n=1000: embedding %v (tiny model, 64 dims), pairwise %v over %d pairs; ratio pairwise/embedding %.3f",
		embedTime.Round(time.Millisecond), pairTime.Round(time.Millisecond), s.Pairs, pairTime.Seconds()/embedTime.Seconds())
}
