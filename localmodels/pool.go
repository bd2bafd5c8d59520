package localmodels

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"
)

// Pool spreads calls over several servers of one API — several machines
// each running Ollama, say — as one Backend. Each server has its own
// parallel slots, halved when it answers 503 (its queue is full) and grown
// back as its calls succeed; the 503 itself goes to the engine, which
// backs off and retries. A call goes to a server that serves its model (each is
// asked once per model), preferring the one that served the model last
// (it has it loaded) while that one has a free slot, else the least busy.
// A server that cannot be reached, or whose stream breaks off, is drained
// for DownFor and the call goes to another at once; with none left the
// call fails as the last server did, and the engine's retry takes over.
//
// A pool's results must not depend on which server answered: the servers
// must report one version, and a model must be the same on every server
// that has it (sameWeights; Info refuses otherwise). Its fingerprint is the
// first such server's.
type Pool struct {
	members []*poolMember
	slots   int
	// DownFor is how long a failed server is left out (default 30s).
	DownFor time.Duration
	// Logf receives a line when a server is drained. Nil discards it.
	Logf func(format string, args ...any)

	mu     sync.Mutex
	wake   chan struct{}
	serves map[string][]int // model → members that serve it
	last   map[string]int   // model → member that served it last
}

type poolMember struct {
	b         Backend
	inflight  int
	downUntil time.Time
	counts    HostCount
	// limit is the server's slots now: halved when it answers 503 (its
	// queue is full), grown back by one after recoverAfter calls succeed.
	limit, ok int
}

// recoverAfter is how many calls must succeed on a server before its
// lowered slots grow by one.
const recoverAfter = 8

// HostCount is what one server of a pool did: calls answered and calls that
// failed on it (and went elsewhere or were retried).
type HostCount struct {
	Calls    int `json:"calls"`
	Failures int `json:"failures,omitempty"`
}

// HostCounter is a backend that counts calls per server.
type HostCounter interface {
	HostCounts() map[string]HostCount
}

// NewPool returns a pool over backends, each with slots calls in flight at
// most. The backends must speak one API.
func NewPool(backends []Backend, slots int) (*Pool, error) {
	if len(backends) == 0 {
		return nil, errors.New("a pool needs at least one server")
	}
	p := &Pool{slots: max(1, slots), DownFor: 30 * time.Second, wake: make(chan struct{}),
		serves: map[string][]int{}, last: map[string]int{}}
	seen := map[string]bool{}
	for _, b := range backends {
		if b.Protocol() != backends[0].Protocol() {
			return nil, fmt.Errorf("a pool holds servers of one API: %s speaks %s, %s %s", backends[0].Host(), backends[0].Protocol(), b.Host(), b.Protocol())
		}
		if seen[b.Host()] {
			return nil, fmt.Errorf("server %s is named twice", b.Host())
		}
		seen[b.Host()] = true
		p.members = append(p.members, &poolMember{b: b, limit: max(1, slots)})
	}
	return p, nil
}

// Size is the number of servers.
func (p *Pool) Size() int { return len(p.members) }

// Host lists the servers, comma-separated.
func (p *Pool) Host() string {
	var hs []string
	for _, m := range p.members {
		hs = append(hs, m.b.Host())
	}
	return strings.Join(hs, ",")
}

// IsLoopback reports whether every server is on this machine.
func (p *Pool) IsLoopback() bool {
	for _, m := range p.members {
		if !m.b.IsLoopback() {
			return false
		}
	}
	return true
}

// Protocol is the servers' API.
func (p *Pool) Protocol() string { return p.members[0].b.Protocol() }

// HostCounts returns each server's calls and failures so far.
func (p *Pool) HostCounts() map[string]HostCount {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]HostCount{}
	for _, m := range p.members {
		out[m.b.Host()] = m.counts
	}
	return out
}

// hostFailure reports an error that says the server, not the request, is
// at fault: unreachable, or a reply cut off before its end.
func hostFailure(err error) bool {
	return err != nil && (IsUnreachable(err) || errors.Is(err, ErrIncomplete) || strings.Contains(err.Error(), "connection reset"))
}

// down drains member i after err.
func (p *Pool) down(i int, err error) {
	p.mu.Lock()
	m := p.members[i]
	m.counts.Failures++
	was := time.Now().Before(m.downUntil)
	m.downUntil = time.Now().Add(p.DownFor)
	p.changed()
	p.mu.Unlock()
	if !was && p.Logf != nil {
		p.Logf("server %s failed (%v): left out for %s, its calls go to the other servers\n", m.b.Host(), err, p.DownFor)
	}
}

func (p *Pool) changed() {
	close(p.wake)
	p.wake = make(chan struct{})
}

// Version asks every server; they must agree. Servers that do not answer
// are drained; with none answering, the last error is returned.
func (p *Pool) Version(ctx context.Context) (string, error) {
	var version, from string
	var lastErr error
	for i, m := range p.members {
		v, err := m.b.Version(ctx)
		if err != nil {
			if !hostFailure(err) {
				return "", err
			}
			p.down(i, err)
			lastErr = err
			continue
		}
		if version != "" && v != version {
			return "", fmt.Errorf("the pool's servers differ: %s runs %s, %s runs %s (one version everywhere, or the results depend on the server that answered)", from, version, m.b.Host(), v)
		}
		version, from = v, m.b.Host()
	}
	if version == "" {
		return "", lastErr
	}
	return version, nil
}

// List returns every model some server has, once each, sorted by name.
func (p *Pool) List(ctx context.Context) ([]ModelInfo, error) {
	seen := map[string]bool{}
	var out []ModelInfo
	var lastErr error
	answered := false
	for i, m := range p.members {
		l, err := m.b.List(ctx)
		if err != nil {
			if hostFailure(err) {
				p.down(i, err)
			}
			lastErr = err
			continue
		}
		answered = true
		for _, info := range l {
			if !seen[info.Name] {
				seen[info.Name] = true
				out = append(out, info)
			}
		}
	}
	if !answered {
		return nil, lastErr
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Info asks every server about a model and remembers which serve it. The
// servers that have it must have the same weights and template.
func (p *Pool) Info(ctx context.Context, name string) (ModelInfo, error) {
	var info ModelInfo
	var from string
	var serving []int
	var lastErr error
	for i, m := range p.members {
		in, err := m.b.Info(ctx, name)
		switch {
		case errors.Is(err, ErrModelNotFound):
			lastErr = err
			continue
		case hostFailure(err):
			p.down(i, err)
			lastErr = err
			continue
		case err != nil:
			return ModelInfo{}, err
		}
		if len(serving) > 0 && !sameWeights(info, in) {
			return ModelInfo{}, fmt.Errorf("model %s differs between the pool's servers: %s has %s; %s has %s (the same weights, template and defaults everywhere, or the results depend on the server that answered)",
				name, from, describeWeights(info), m.b.Host(), describeWeights(in))
		}
		if len(serving) == 0 {
			info, from = in, m.b.Host()
		}
		serving = append(serving, i)
	}
	if len(serving) == 0 {
		if lastErr == nil {
			lastErr = fmt.Errorf("%q: %w", name, ErrModelNotFound)
		}
		return ModelInfo{}, lastErr
	}
	p.mu.Lock()
	p.serves[name] = serving
	p.mu.Unlock()
	return info, nil
}

// sameWeights reports whether two servers' infos describe the same model
// under the same template and defaults. Ollama's digest of a model imported
// from a local file covers the path its blobs lie at, which differs between
// machines, so when digests differ the weights are compared by the content
// digests of their files (Blobs), which two fine-tunes of one base never
// share. A server that names no blobs is not taken on trust: other digests
// then mean other models. An OpenAI-compatible server's weights path must
// match too.
func sameWeights(a, b ModelInfo) bool {
	if a.TemplateSHA256 != b.TemplateSHA256 || a.Weights != b.Weights || a.DefaultsSHA256 != b.DefaultsSHA256 {
		return false
	}
	if a.Digest == b.Digest {
		return true
	}
	return a.Blobs != "" && a.Blobs == b.Blobs
}

// describeWeights names what sameWeights compares, for its error.
func describeWeights(m ModelInfo) string {
	blobs := []string{}
	for _, b := range strings.Split(m.Blobs, ",") {
		if b != "" {
			blobs = append(blobs, ShortDigest(b))
		}
	}
	s := fmt.Sprintf("digest %s, weights files [%s], template %s, defaults %s", ShortDigest(m.Digest), strings.Join(blobs, " "), ShortDigest(m.TemplateSHA256), ShortDigest(m.DefaultsSHA256))
	if m.Weights != "" {
		s += ", weights path " + m.Weights
	}
	return s
}

// ErrNoServer is returned when no server of a pool that serves a model is
// up. It is transient: a drained server is tried again after DownFor.
var ErrNoServer = errors.New("no server of the pool that serves the model is up")

// acquire takes a slot on a server serving model that is up and not in
// tried, waiting while all such servers are busy.
func (p *Pool) acquire(ctx context.Context, model string, tried map[int]bool) (int, error) {
	p.mu.Lock()
	_, known := p.serves[model]
	p.mu.Unlock()
	if !known {
		if _, err := p.Info(ctx, model); err != nil {
			return -1, err
		}
	}
	p.mu.Lock()
	for {
		now := time.Now()
		best, candidates := -1, 0
		last, hasLast := p.last[model]
		for _, i := range p.serves[model] {
			m := p.members[i]
			if tried[i] || now.Before(m.downUntil) {
				continue
			}
			candidates++
			if m.inflight >= m.limit {
				continue
			}
			if hasLast && i == last {
				best = i // it has the model loaded
				break
			}
			if best < 0 || m.inflight < p.members[best].inflight {
				best = i
			}
		}
		if best >= 0 {
			p.members[best].inflight++
			p.last[model] = best
			p.mu.Unlock()
			return best, nil
		}
		if candidates == 0 {
			p.mu.Unlock()
			return -1, ErrNoServer
		}
		wake := p.wake
		p.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return -1, ctx.Err()
		case <-time.After(time.Second): // a drained server may be back
		}
		p.mu.Lock()
	}
}

func (p *Pool) release(i int, err error) {
	p.mu.Lock()
	m := p.members[i]
	m.inflight--
	switch {
	case err == nil:
		m.counts.Calls++
		if m.limit < p.slots {
			if m.ok++; m.ok >= recoverAfter {
				m.limit, m.ok = m.limit+1, 0
			}
		}
	case StatusCode(err) == http.StatusServiceUnavailable:
		m.limit, m.ok = max(1, m.limit/2), 0
	}
	p.changed()
	p.mu.Unlock()
}

// Slots returns each server's slots now (lowered after a 503).
func (p *Pool) Slots() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]int{}
	for _, m := range p.members {
		out[m.b.Host()] = m.limit
	}
	return out
}

// each runs call on a server serving model, moving to another when the
// server fails.
func (p *Pool) each(ctx context.Context, model string, call func(b Backend) error) error {
	tried := map[int]bool{}
	var lastErr error
	for {
		i, err := p.acquire(ctx, model, tried)
		if err != nil {
			if errors.Is(err, ErrNoServer) && lastErr != nil {
				return fmt.Errorf("%w (last: %w)", err, lastErr)
			}
			return err
		}
		err = call(p.members[i].b)
		p.release(i, err)
		if !hostFailure(err) || ctx.Err() != nil {
			return err
		}
		p.down(i, err)
		tried[i], lastErr = true, err
	}
}

// Chat runs one generation on a server that serves req.Model.
func (p *Pool) Chat(ctx context.Context, req ChatRequest, lim StreamLimits) (ChatResponse, error) {
	var resp ChatResponse
	err := p.each(ctx, req.Model, func(b Backend) error {
		var err error
		resp, err = b.Chat(ctx, req, lim)
		return err
	})
	return resp, err
}

// Embed embeds texts on a server that serves model.
func (p *Pool) Embed(ctx context.Context, model string, texts []string, batch int) ([][]float32, error) {
	var out [][]float32
	err := p.each(ctx, model, func(b Backend) error {
		var err error
		out, err = b.Embed(ctx, model, texts, batch)
		return err
	})
	return out, err
}
