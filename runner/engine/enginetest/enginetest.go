// Package enginetest builds engines for tests: an engine talking to a
// model server (in tests, the in-process fake of localmodels/fakeollama)
// with a fresh cache, so that suite tests need no setup of their own. It
// lives above the engine so that nothing under localmodels imports the
// runner.
package enginetest

import (
	"testing"
	"time"

	"halu/localmodels"
	"halu/runner/engine"
)

// New returns an engine talking to the server at host: a fresh cache in a
// test directory, parallel calls in flight, one repair turn for
// unparseable judge replies and quick retries.
func New(t testing.TB, host string, parallel int) *engine.Engine {
	t.Helper()
	c, err := localmodels.New(host, 5*time.Second)
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
	return &engine.Engine{Client: c, Cache: cache, Retry: engine.Retry{Base: 10 * time.Millisecond, Max: 20 * time.Millisecond}, Config: engine.EngineConfig{Parallel: parallel, ItemsInFlight: parallel, JudgeRepairs: 1, Retries: 3}}
}
