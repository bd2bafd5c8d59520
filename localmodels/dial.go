package localmodels

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
)

// DialOptions are what every kind of backend is opened with.
type DialOptions struct {
	// Timeout bounds one HTTP call: a safety net behind the engine's own
	// limits on a stream.
	Timeout time.Duration
	// APIKey is the bearer token an OpenAI-compatible server is sent (read
	// from the environment by the caller, never from a setting).
	APIKey string
	// Logf receives the few lines a backend says once (a server that
	// refuses a schema, a pool member left out). Nil discards them.
	Logf func(format string, args ...any)
	// Slots is how many calls the run keeps in flight on one server
	// (--parallel): as many idle connections to it are kept (at least
	// 16), so that a burst of calls does not dial again.
	Slots int
}

// minIdle is the fewest idle connections kept to one server.
const minIdle = 16

// keepIdle keeps slots idle connections to the server hc speaks to (at
// least minIdle): with fewer than its calls in flight, each burst of
// --parallel calls re-dials the rest.
func keepIdle(hc *http.Client, slots int) {
	if t, ok := hc.Transport.(*http.Transport); ok {
		t.MaxIdleConnsPerHost = max(minIdle, slots)
	}
}

// A dialer opens one server of a kind at addr.
type dialer func(addr string, o DialOptions) (Backend, error)

// kinds are the servers halu speaks to, by the name --backend gives them
// (kind=ADDRESS). Adding a server is implementing Backend and naming it
// here.
var kinds = map[string]dialer{
	"ollama": func(addr string, o DialOptions) (Backend, error) {
		c, err := New(addr, o.Timeout)
		if err != nil {
			return nil, err
		}
		keepIdle(c.http, o.Slots)
		return c, nil
	},
	"openai": func(addr string, o DialOptions) (Backend, error) {
		c, err := NewOpenAI(addr, o.Timeout, o.APIKey)
		if err != nil {
			return nil, err
		}
		c.Logf = o.Logf
		keepIdle(c.http, o.Slots)
		return c, nil
	},
}

// Kinds lists the backend kinds Dial knows, sorted.
func Kinds() []string {
	var ks []string
	for k := range kinds {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// Dial opens the server a spec names: "kind=ADDRESS" (openai=URL,
// ollama=HOST).
func Dial(spec string, o DialOptions) (Backend, error) {
	kind, addr, ok := strings.Cut(spec, "=")
	if !ok || strings.TrimSpace(addr) == "" {
		return nil, fmt.Errorf("backend %q: want KIND=ADDRESS, KIND one of %s", spec, strings.Join(Kinds(), ", "))
	}
	d, ok := kinds[kind]
	if !ok {
		return nil, fmt.Errorf("backend %q: unknown kind %q (want one of %s)", spec, kind, strings.Join(Kinds(), ", "))
	}
	return d(strings.TrimSpace(addr), o)
}

// DialAll opens every server specs name — one, or several as a pool with
// slots calls in flight on each.
func DialAll(specs []string, slots int, o DialOptions) (Backend, error) {
	if len(specs) == 0 {
		return nil, fmt.Errorf("no server named")
	}
	o.Slots = slots
	var members []Backend
	for _, s := range specs {
		b, err := Dial(s, o)
		if err != nil {
			return nil, err
		}
		members = append(members, b)
	}
	if len(members) == 1 {
		return members[0], nil
	}
	p, err := NewPool(members, slots)
	if err != nil {
		return nil, err
	}
	p.Logf = o.Logf
	return p, nil
}
