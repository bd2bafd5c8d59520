package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"halu/localmodels"
	"halu/runner/rundir"
)

// A run whose every call is in the response cache needs no server: when
// none answers, the fingerprints its cache keys need are the ones the
// cache recorded when a server last served each model (served), and a
// call the cache does not hold fails at once (ErrOffline) instead of
// waiting on retries. A reachable server is always asked: the cache's
// record is only the fallback, and the run says when it used it.

// ErrOffline is a call the cache does not hold in a run with no server.
var ErrOffline = errors.New("no server is reachable and the response cache does not hold this call")

// served is what the cache keeps of a model as a server last served it.
type served struct {
	Info          localmodels.ModelInfo `json:"info"`
	ServerVersion string                `json:"server_version"`
	Host          string                `json:"host"`
	Seen          time.Time             `json:"seen"`
}

// servedKey is the cache key of a model's served record by a server of
// API protocol: a name means other weights on another kind of server.
// Ollama's key has no protocol (it was the only one first).
func servedKey(protocol, model string) string {
	if protocol == "ollama" {
		return Key(struct{ Kind, Model string }{"served", localmodels.CanonicalName(model)})
	}
	return Key(struct{ Kind, API, Model string }{"served", protocol, model})
}

// remember keeps what the server said of model in the cache, for a later
// run that finds no server.
func (e *Engine) remember(model string, info localmodels.ModelInfo, ver string) {
	if e.Cache == nil {
		return
	}
	k := servedKey(e.Client.Protocol(), model)
	_ = e.Cache.put(e.Cache.servedPath(k), k, served{Info: info, ServerVersion: ver, Host: e.Client.Host(), Seen: time.Now().UTC()})
}

// goOffline is tried when the server does not answer: with a served
// record in the cache for every model of the run, all of one server
// version, the run goes on from the cache alone. It returns the server's
// version as recorded, when the records were made (the oldest), and
// whether the run is offline.
func (e *Engine) goOffline(models []string) (string, time.Time, bool) {
	if e.Cache == nil || len(models) == 0 {
		return "", time.Time{}, false
	}
	ver := ""
	var seen time.Time
	infos := map[string]localmodels.ModelInfo{}
	for _, m := range models {
		var s served
		k := servedKey(e.Client.Protocol(), m)
		ok, err := e.Cache.get(e.Cache.servedPath(k), k, &s)
		if err != nil || !ok || (ver != "" && s.ServerVersion != ver) {
			return "", time.Time{}, false
		}
		ver = s.ServerVersion
		if seen.IsZero() || s.Seen.Before(seen) {
			seen = s.Seen
		}
		infos[m] = s.Info
	}
	for m, info := range infos {
		e.models.Store(m, info)
	}
	e.verMu.Lock()
	e.serverVers = ver
	e.verMu.Unlock()
	e.offline.Store(true)
	return ver, seen, true
}

// Offline reports whether the engine works from the cache alone.
func (e *Engine) Offline() bool { return e.offline.Load() }

// reach asks the server for its version once, with no retry, and on a
// server that cannot be reached goes offline when the cache allows;
// otherwise it asks as every call does (with retries) and returns that
// answer.
func (e *Engine) reach(ctx context.Context, man *rundir.Manifest, models []string) (string, error) {
	e.verMu.Lock()
	known := e.serverVers
	e.verMu.Unlock()
	if known != "" || e.Offline() {
		return known, nil
	}
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	ver, err := e.Client.Version(pctx)
	cancel()
	if err == nil {
		e.verMu.Lock()
		e.serverVers = ver
		e.verMu.Unlock()
		return ver, nil
	}
	if localmodels.IsUnreachable(err) {
		if ver, seen, ok := e.goOffline(models); ok {
			man.Server.Offline, man.Server.Seen = true, &seen
			fmt.Fprintf(e.Log, "no server at %s (%v): working from the response cache alone — model fingerprints and server version %s as the cache recorded them (%s), not checked against a server; a call the cache does not hold fails its item\n",
				e.Client.Host(), err, ver, seen.Format(time.RFC3339))
			return ver, nil
		}
	}
	return e.ServerVersion(ctx)
}
