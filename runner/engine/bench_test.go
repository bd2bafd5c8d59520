package engine_test

import (
	"context"
	"io"
	"path/filepath"
	"testing"

	"halu/runner/engine"
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
	if _, err := e.Run(context.Background(), &testSuite{n: items}, engine.RunSpec{Dir: filepath.Join(b.TempDir(), "first")}); err != nil {
		b.Fatal(err)
	}
	srv.Close()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e := newEngine(b, host, cache)
		e.Log = io.Discard
		res, err := e.Run(context.Background(), &testSuite{n: items}, engine.RunSpec{Dir: filepath.Join(b.TempDir(), "rerun")})
		if err != nil || res.Counts.ModelCalls != 0 || res.Counts.Completed != items {
			b.Fatalf("offline rerun: %v, %+v", err, res)
		}
	}
}
