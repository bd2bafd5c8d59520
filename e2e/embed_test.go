//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"halu/embed"
	"halu/localmodels"
	"halu/metrics"
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
	return &engine.Engine{Client: c, Cache: cache, Config: engine.EngineConfig{Parallel: 1, ItemsInFlight: 1}}
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
	sim, err := metrics.Cosine(a[0], b[0])
	if err != nil || math.Abs(sim-1) > 1e-6 {
		t.Fatalf("similarity %v, %v", sim, err)
	}
	other, err := embed.Texts(ctx, c, "embed", "tiny", []string{"A completely different sentence about tides."})
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := metrics.Cosine(a[0], other[0]); s >= 1-1e-6 {
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

// TestEmbedBetweenChatsNoReload: chat, embed, chat, embed on one model
// file through the real server load its runner once — the embedding calls
// carry the chats' num_ctx, num_thread and keep_alive (a call with other
// options makes Ollama reload the model).
func TestEmbedBetweenChatsNoReload(t *testing.T) {
	srv, logPath := serverWithLog(t, t.TempDir())
	importTiny(t, srv.Host, "1", "tiny")
	e := realEngine(t, srv.Host)
	e.Config.NumCtx, e.Config.NumThread, e.Config.KeepAlive = 2048, 1, 5*time.Minute
	c := e.NewCalls("reload-check")
	ctx := context.Background()
	for i := range 2 {
		if _, err := c.Chat(ctx, "generate", localmodels.ChatRequest{Model: "tiny", Messages: []localmodels.Message{{Role: "user", Content: fmt.Sprint("hello ", i)}},
			Options: localmodels.Options{Temperature: localmodels.Float(0), NumPredict: localmodels.Int(4)}}, 0); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Embed(ctx, "embed", "tiny", []string{fmt.Sprint("text ", i)}); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if starts := runnerStarts(string(b)); starts != 1 {
		t.Errorf("the model's runner started %d times over 2 chats and 2 embeddings, want 1; log:\n%s", starts, grepLines(string(b), "start"))
	}
}

// runnerStarts counts the model runners a server's log says it started
// ("starting runner … --model …"; the first one, without --model,
// discovers devices): one per model load.
func runnerStarts(log string) int {
	n := 0
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, `msg="starting runner"`) && strings.Contains(l, "--model") {
			n++
		}
	}
	return n
}

// grepLines are the lines of s holding sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
