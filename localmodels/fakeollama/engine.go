package fakeollama

import (
	"testing"
	"time"

	"halu/localmodels"
	"halu/runner/engine"
)

// Engine returns an engine talking to the fake: a fresh cache in a test
// directory, parallel calls in flight, one repair turn for unparseable judge
// replies and quick retries, so suite tests need no setup of their own.
func (s *Server) Engine(t testing.TB, parallel int) *engine.Engine {
	t.Helper()
	c, err := localmodels.New(s.Host(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	cache, err := engine.OpenCache(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// As many items in flight as calls: a test's items go to the server
	// one batch of parallel at a time, in their order (auto would start
	// 32 at once, in a race).
	return &engine.Engine{Client: c, Cache: cache, Parallel: parallel, ItemsInFlight: parallel, JudgeRepairs: 1,
		Retry: engine.Retry{Attempts: 3, Base: 10 * time.Millisecond, Max: 20 * time.Millisecond}}
}
