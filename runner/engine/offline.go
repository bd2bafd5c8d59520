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
// version, the run goes on from the cache alone. A run being resumed
// (prior, its manifest, records every model's fingerprint) goes on with the
// fingerprints it recorded itself — never with those of whatever build
// the cache saw last, which would complete it from other weights; a call
// the cache holds only for other weights then misses and fails its item.
// It returns the server's version as recorded, when the records were
// made (the oldest), and whether the run is offline.
func (e *Engine) goOffline(models []string, prior *rundir.Manifest) (string, time.Time, bool) {
	if e.Cache == nil || len(models) == 0 {
		return "", time.Time{}, false
	}
	if ver, infos, ok := ownFingerprints(models, prior); ok {
		for m, info := range infos {
			var s served
			k := servedKey(e.Client.Protocol(), m)
			if ok, err := e.Cache.get(e.Cache.servedPath(k), k, &s); err == nil && ok && s.Info.Digest != info.Digest {
				fmt.Fprintf(e.Log, "the response cache last saw %s as digest %s; the run's own %s is used (replies of the other weights are not)\n",
					m, localmodels.ShortDigest(s.Info.Digest), localmodels.ShortDigest(info.Digest))
			}
			e.models.Store(m, info)
		}
		e.setOffline(ver, prior.Started)
		return ver, prior.Started, true
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
	e.setOffline(ver, seen)
	return ver, seen, true
}

// setOffline makes the engine work from the cache alone, with server
// version ver as recorded at seen.
func (e *Engine) setOffline(ver string, seen time.Time) {
	e.verMu.Lock()
	e.serverVers = ver
	e.verMu.Unlock()
	e.offlineSeen = &seen
	e.offline.Store(true)
}

// ownFingerprints are the models' infos and the server version a run's
// manifest recorded, when it recorded every one of models.
func ownFingerprints(models []string, man *rundir.Manifest) (string, map[string]localmodels.ModelInfo, bool) {
	if man == nil || len(man.Serving.Fingerprints) == 0 {
		return "", nil, false
	}
	ver := man.Serving.Fingerprints[0].ServerVersion
	byName := map[string]localmodels.ModelInfo{}
	for _, info := range man.Models {
		byName[localmodels.CanonicalName(info.Name)] = info
	}
	infos := map[string]localmodels.ModelInfo{}
	for _, m := range models {
		info, ok := byName[localmodels.CanonicalName(m)]
		if !ok {
			return "", nil, false
		}
		infos[m] = info
	}
	return ver, infos, true
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
		var prior *rundir.Manifest
		if len(man.Serving.Fingerprints) > 0 {
			prior = man // a run being resumed: its own fingerprints
		}
		if ver, seen, ok := e.goOffline(models, prior); ok {
			man.Server.Offline, man.Server.Seen = true, &seen
			fmt.Fprintf(e.Log, "no server at %s (%v): working from the response cache alone — model fingerprints and server version %s as the cache recorded them (%s), not checked against a server; a call the cache does not hold fails its item\n",
				e.Client.Host(), err, ver, seen.Format(time.RFC3339))
			return ver, nil
		}
		// Nothing listens there: retrying would only delay the same
		// answer (a server still starting is waited for by with-ollama,
		// and a busy one answers the probe, slowly).
		return "", fmt.Errorf("no model server answers at %s: %w", e.Client.Host(), err)
	}
	return e.ServerVersion(ctx)
}
