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
// each running Ollama, say — as one Backend. A call goes to a server that
// serves its model (each is asked once per model), preferring the one that
// served the model last (it has it loaded) while that one is healthy and
// has a free slot, else the least busy (ties: the faster so far). A call
// made under WithAffinity goes first to the server that answered the call
// before it.
//
// The pool routes around a sick server, so that a pool with one healthy
// server finishes at that server's pace. Each server's health is kept per
// model (health): a call that fails on the server's side — a 503 (its
// queue is full), another 5xx or a 429 — goes to another server at once,
// and the server is left out for that model for a back-off that doubles
// while it keeps failing (SickFor, up to DownFor); once the back-off has
// passed, one call probes it, and only a success brings it back in. A 503
// also halves the server's slots, which grow back as its calls succeed. A
// server that cannot be reached, or whose stream breaks off, is drained
// for every model for DownFor. With no server left for a model the call
// fails as the last server did, and the engine's retry takes over. Every
// server's calls, failures, 503s and time are counted (HostCounts).
//
// A pool's results must not depend on which server answered: the servers
// must report one version, and a model must be the same on every server
// that has it (sameWeights; Info refuses otherwise). Its fingerprint is the
// first such server's.
type Pool struct {
	members []*poolMember
	slots   int
	// DownFor is how long a server that cannot be reached is left out, and
	// the longest a sick one is (default 30s).
	DownFor time.Duration
	// SickFor is how long a server is first left out for a model after a
	// call of it fails on the server's side; it doubles with every failure
	// in a row (default 1s).
	SickFor time.Duration
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
	// queue is full), lowered by one when a call was queued there most of
	// its time (Timing.Queued), grown back by one after recoverAfter calls
	// succeed.
	limit, ok int
	health    map[string]*health // by model
}

// health is how a server has been doing with one model lately.
type health struct {
	// streak is the calls in a row that failed on the server's side; 0 is
	// healthy.
	streak int
	// outUntil is when the server may be tried again for the model.
	outUntil time.Time
	// probing is set while the one call that tries a sick server again is
	// in flight: the others wait for its outcome.
	probing bool
}

// usable reports whether a call may go to a server in this health now.
func (h *health) usable(now time.Time) bool {
	return h == nil || h.streak == 0 || (!now.Before(h.outUntil) && !h.probing)
}

func (m *poolMember) healthOf(model string) *health {
	h := m.health[model]
	if h == nil {
		h = &health{}
		m.health[model] = h
	}
	return h
}

// recoverAfter is how many calls must succeed on a server before its
// lowered slots grow by one.
const recoverAfter = 8

// HostCount is what one server of a pool did: calls answered, calls that
// failed on it (and went elsewhere or were retried), how many of those it
// refused with 503, and the seconds its answered calls took; of its
// generations, those it timed (Timing.Known), their seconds and the
// seconds they were queued there (Timing.Wait), and the prompt tokens
// of those that said their prefix reuse (Reuse.Known) and how many of
// them came from its prefix cache.
type HostCount struct {
	Calls        int     `json:"calls"`
	Failures     int     `json:"failures,omitempty"`
	Unavailable  int     `json:"unavailable_503,omitempty"`
	Seconds      float64 `json:"seconds,omitempty"`
	Timed        int     `json:"timed,omitempty"`
	TimedSeconds float64 `json:"timed_seconds,omitempty"`
	WaitSeconds  float64 `json:"wait_seconds,omitempty"`
	ReusePrompt  int     `json:"reuse_prompt_tokens,omitempty"`
	Reused       int     `json:"reused_tokens,omitempty"`
}

// Add is c plus d.
func (c HostCount) Add(d HostCount) HostCount {
	return HostCount{Calls: c.Calls + d.Calls, Failures: c.Failures + d.Failures,
		Unavailable: c.Unavailable + d.Unavailable, Seconds: c.Seconds + d.Seconds,
		Timed: c.Timed + d.Timed, TimedSeconds: c.TimedSeconds + d.TimedSeconds, WaitSeconds: c.WaitSeconds + d.WaitSeconds,
		ReusePrompt: c.ReusePrompt + d.ReusePrompt, Reused: c.Reused + d.Reused}
}

// Sub is c minus d.
func (c HostCount) Sub(d HostCount) HostCount {
	return c.Add(HostCount{Calls: -d.Calls, Failures: -d.Failures, Unavailable: -d.Unavailable, Seconds: -d.Seconds,
		Timed: -d.Timed, TimedSeconds: -d.TimedSeconds, WaitSeconds: -d.WaitSeconds, ReusePrompt: -d.ReusePrompt, Reused: -d.Reused})
}

// PrefixReuse is the share of the prompt tokens the server took from its
// prefix cache, of the generations that said it, and whether any did.
func (c HostCount) PrefixReuse() (float64, bool) {
	if c.ReusePrompt <= 0 {
		return 0, false
	}
	return float64(c.Reused) / float64(c.ReusePrompt), true
}

// ServerWait is the share of the server's timed generations' time they
// waited for one of its slots, and whether any was timed.
func (c HostCount) ServerWait() (float64, bool) {
	if c.Timed == 0 || c.TimedSeconds <= 0 {
		return 0, false
	}
	return c.WaitSeconds / c.TimedSeconds, true
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
	p := &Pool{slots: max(1, slots), DownFor: 30 * time.Second, SickFor: time.Second, wake: make(chan struct{}),
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
		p.members = append(p.members, &poolMember{b: b, limit: max(1, slots), health: map[string]*health{}})
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

// sickFailure reports an error that says the server cannot serve the model
// now, though it answers: a 5xx (503: its queue is full) or a 429.
func sickFailure(err error) bool {
	code := StatusCode(err)
	return code >= 500 || code == http.StatusTooManyRequests
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

// affinityKey is the context key of a call's affinity.
type affinityKey struct{}

// affinity is the server of a pool that answered the last call made
// under one context.
type affinity struct {
	mu   sync.Mutex
	host string
}

func (a *affinity) get() string {
	if a == nil {
		return ""
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.host
}

func (a *affinity) set(host string) {
	if a != nil {
		a.mu.Lock()
		a.host = host
		a.mu.Unlock()
	}
}

// WithAffinity returns ctx under which a pool sends each generation to
// the server that answered the one made before it under ctx, while that
// server serves the model, is healthy and has a free slot: a call that
// continues the one before it (a judge's repair turn, whose prompt begins
// with the judgement's prompt and reply) finds that beginning held in the
// server's cache. Under a ctx that has an affinity already (an item's,
// whose calls follow each other) it is ctx: the call keeps to the server of
// the call before it. Other backends ignore it.
func WithAffinity(ctx context.Context) context.Context {
	if a, _ := ctx.Value(affinityKey{}).(*affinity); a != nil {
		return ctx
	}
	return context.WithValue(ctx, affinityKey{}, &affinity{})
}

// acquire takes a slot on a server serving model that is up and not in
// tried, waiting while all such servers are busy; prefer is the host
// asked for first ("" none).
func (p *Pool) acquire(ctx context.Context, model, prefer string, tried map[int]bool) (int, error) {
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
		best, waitFor := p.choose(model, prefer, tried, time.Now())
		if best >= 0 {
			m := p.members[best]
			m.inflight++
			if h := m.health[model]; h != nil && h.streak > 0 {
				h.probing = true
			}
			p.last[model] = best
			p.mu.Unlock()
			return best, nil
		}
		if !waitFor {
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

// choose picks the server for a call of model, not one in tried: prefer
// (a host) when it is healthy and has a free slot, else the one that
// served the model last while it is healthy and has a free slot, else
// the least busy usable one (ties: the least time per call so far). With
// none free, waitFor says whether one may become so (a slot frees, a sick
// server's back-off ends or its probe ends) rather than none being left.
func (p *Pool) choose(model, prefer string, tried map[int]bool, now time.Time) (best int, waitFor bool) {
	best = -1
	last, hasLast := p.last[model]
	if prefer != "" {
		for _, i := range p.serves[model] {
			if m := p.members[i]; m.b.Host() == prefer {
				last, hasLast = i, true
			}
		}
	}
	for _, i := range p.serves[model] {
		m := p.members[i]
		if tried[i] || now.Before(m.downUntil) {
			continue
		}
		h := m.health[model]
		if h != nil && h.streak > 0 && p.othersUsable(model, i, tried, now) {
			// While another server can take the call, a sick one waits
			// out its back-off unprobed: no call is spent on it.
			if now.Before(h.outUntil) || h.probing {
				continue
			}
		}
		waitFor = true
		if !h.usable(now) || m.inflight >= m.limit {
			continue
		}
		if hasLast && i == last && (h == nil || h.streak == 0) {
			return i, true // it has the model loaded
		}
		if best < 0 || p.before(m, p.members[best]) {
			best = i
		}
	}
	return best, waitFor
}

// othersUsable reports whether a server other than i, not in tried, is up
// and healthy for model.
func (p *Pool) othersUsable(model string, i int, tried map[int]bool, now time.Time) bool {
	for _, j := range p.serves[model] {
		m := p.members[j]
		if j != i && !tried[j] && !now.Before(m.downUntil) {
			if h := m.health[model]; h == nil || h.streak == 0 {
				return true
			}
		}
	}
	return false
}

// before orders two servers for a call: the less busy first, then the
// faster so far.
func (p *Pool) before(a, b *poolMember) bool {
	if a.inflight != b.inflight {
		return a.inflight < b.inflight
	}
	return a.counts.Calls > 0 && b.counts.Calls > 0 &&
		a.counts.Seconds/float64(a.counts.Calls) < b.counts.Seconds/float64(b.counts.Calls)
}

// release frees member i's slot after a call of model that took took and
// ended with err, and updates the server's health and counts.
func (p *Pool) release(i int, model string, took time.Duration, err error) {
	p.mu.Lock()
	m := p.members[i]
	m.inflight--
	h := m.healthOf(model)
	h.probing = false
	switch {
	case err == nil:
		m.counts.Calls++
		m.counts.Seconds += took.Seconds()
		h.streak = 0
		if m.limit < p.slots {
			if m.ok++; m.ok >= recoverAfter {
				m.limit, m.ok = m.limit+1, 0
			}
		}
	case sickFailure(err):
		m.counts.Failures++
		if StatusCode(err) == http.StatusServiceUnavailable {
			m.counts.Unavailable++
			m.limit, m.ok = max(1, m.limit/2), 0
		}
		h.streak++
		h.outUntil = time.Now().Add(p.sickFor(h.streak))
	}
	p.changed()
	p.mu.Unlock()
}

// sickFor is the back-off after streak failures in a row: SickFor,
// doubling, at most DownFor.
func (p *Pool) sickFor(streak int) time.Duration {
	d := p.SickFor
	for k := 1; k < streak && d < p.DownFor; k++ {
		d *= 2
	}
	return min(d, p.DownFor)
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
// server fails; a is the call's affinity (nil: none).
func (p *Pool) each(ctx context.Context, model string, a *affinity, call func(b Backend) error) error {
	tried := map[int]bool{}
	var lastErr error
	for {
		i, err := p.acquire(ctx, model, a.get(), tried)
		if err != nil {
			if errors.Is(err, ErrNoServer) && lastErr != nil {
				return fmt.Errorf("%w (last: %w)", err, lastErr)
			}
			return err
		}
		start := time.Now()
		err = call(p.members[i].b)
		p.release(i, model, time.Since(start), err)
		if err == nil {
			a.set(p.members[i].b.Host())
		}
		if ctx.Err() != nil || !hostFailure(err) && !sickFailure(err) {
			return err
		}
		if hostFailure(err) {
			p.down(i, err)
		}
		tried[i], lastErr = true, err
	}
}

// Chat runs one generation on a server that serves req.Model.
func (p *Pool) Chat(ctx context.Context, req ChatRequest, lim StreamLimits) (ChatResponse, error) {
	var resp ChatResponse
	a, _ := ctx.Value(affinityKey{}).(*affinity)
	err := p.each(ctx, req.Model, a, func(b Backend) error {
		var err error
		start := time.Now()
		resp, err = b.Chat(ctx, req, lim)
		if err == nil && (resp.Timing.Known || resp.Reuse.Known) {
			p.served(b, time.Since(start), resp)
		}
		return err
	})
	return resp, err
}

// served counts what server b said of a generation it answered: its
// timing (the call's time and its wait there; a call queued there most of
// its time lowers the server's slots by one, grown back as 503's are) and
// its prefix reuse.
func (p *Pool) served(b Backend, took time.Duration, resp ChatResponse) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, m := range p.members {
		if m.b != b {
			continue
		}
		if tm := resp.Timing; tm.Known {
			m.counts.Timed++
			m.counts.TimedSeconds += took.Seconds()
			m.counts.WaitSeconds += tm.Wait().Seconds()
			if tm.Queued() {
				// Fewer slots there than its limit: one call fewer.
				m.limit, m.ok = max(1, m.limit-1), 0
			}
		}
		if ru := resp.Reuse; ru.Known {
			m.counts.ReusePrompt += ru.Prompt
			m.counts.Reused += ru.Cached
		}
	}
}

// Embed embeds texts on a server that serves model.
func (p *Pool) Embed(ctx context.Context, req EmbedRequest) ([][]float32, error) {
	var out [][]float32
	err := p.each(ctx, req.Model, nil, func(b Backend) error {
		var err error
		out, err = b.Embed(ctx, req)
		return err
	})
	return out, err
}
