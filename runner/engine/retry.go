package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

	"halu/localmodels"
)

// Calls that fail for a while: retries with their causes, and what the
// server says of a model and of itself.

var errUnreachable = errors.New("the model server is unreachable: the run stopped; start the server and resume")

// ModelInfo returns (and remembers) a model's metadata.
func (e *Engine) ModelInfo(ctx context.Context, name string) (localmodels.ModelInfo, error) {
	if v, ok := e.models.Load(name); ok {
		return v.(localmodels.ModelInfo), nil
	}
	var info localmodels.ModelInfo
	err := e.withRetry(ctx, func(ctx context.Context) error {
		var err error
		info, err = e.Client.Info(ctx, name)
		return err
	})
	if err != nil {
		return info, err
	}
	e.models.Store(name, info)
	return info, nil
}

// ServerVersion returns (and remembers) the Ollama server's version, part
// of every cache key.
func (e *Engine) ServerVersion(ctx context.Context) (string, error) {
	e.verMu.Lock()
	defer e.verMu.Unlock()
	if e.serverVers != "" {
		return e.serverVers, nil
	}
	err := e.withRetry(ctx, func(ctx context.Context) error {
		var err error
		e.serverVers, err = e.Client.Version(ctx)
		return err
	})
	return e.serverVers, err
}

// withRetry runs fn, repeating it with jittered exponential backoff while it
// fails with a transient error. A 503 (the server's queue is full) waits at
// least twice the base wait: the scheduler has lowered the calls in flight,
// and an immediate retry would meet the same full queue.
func (e *Engine) withRetry(ctx context.Context, fn func(context.Context) error) error {
	e.init()
	var err error
	wait := e.Retry.Base
	for attempt := 1; ; attempt++ {
		err = fn(ctx)
		if err == nil || !localmodels.IsTransient(err) || ctx.Err() != nil {
			return err
		}
		if crash := e.died(ctx, err); crash != nil {
			return crash
		}
		if attempt >= e.attempts() {
			return fmt.Errorf("gave up after %d attempts: %w", attempt, err)
		}
		e.stats.retries.Add(1)
		if localmodels.StatusCode(err) == http.StatusServiceUnavailable {
			wait = max(wait, 2*e.Retry.Base)
		}
		d := wait/2 + time.Duration(rand.Int64N(int64(wait/2)+1))
		line := fmt.Sprintf("retrying in %s (attempt %d of %d): %v\n", d.Round(time.Millisecond), attempt+1, e.attempts(), err)
		if p := e.prog.Load(); p != nil {
			p.retrying(retryCause(err), line)
		} else {
			fmt.Fprint(e.Log, line)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(d):
		}
		wait = min(wait*2, e.Retry.Max)
	}
}

// attempts is how many times a call is made before its transient error
// stands: --retries, at least once.
func (e *Engine) attempts() int { return max(e.Config.Retries, 1) }

// retryCause is what retries of err have in common with others of the same
// cause, whatever the model or request: its innermost part ("connection
// refused", "503 Service Unavailable: server busy").
func retryCause(err error) string {
	s := err.Error()
	s, hint, _ := strings.Cut(s, " (")
	if i := strings.LastIndex(s, ": "); i >= 0 && i+2 < len(s) {
		s = s[i+2:]
	}
	if hint != "" && strings.HasPrefix(s, "connection refused") {
		return s + " (is the server running?)"
	}
	return s
}
