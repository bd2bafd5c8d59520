package localmodels

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestDial(t *testing.T) {
	o := DialOptions{Timeout: time.Second}
	for _, tc := range []struct {
		specs    []string
		protocol string // "" when refused
		size     int    // pool members; 0 for one server
		err      string
	}{
		{specs: []string{"ollama=127.0.0.1:11434"}, protocol: "ollama"},
		{specs: []string{"openai=http://127.0.0.1:8000/v1"}, protocol: "openai"},
		{specs: []string{"ollama=127.0.0.1:1", "ollama=127.0.0.1:2"}, protocol: "ollama", size: 2},
		{specs: []string{"vllm=http://127.0.0.1:8000"}, err: `unknown kind "vllm" (want one of ollama, openai)`},
		{specs: []string{"openai"}, err: "want KIND=ADDRESS"},
		{specs: []string{"openai= "}, err: "want KIND=ADDRESS"},
		{specs: []string{"ollama=127.0.0.1:1", "openai=http://127.0.0.1:2/v1"}, err: "one API"},
		{err: "no server named"},
	} {
		b, err := DialAll(tc.specs, 2, o)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%v: err %v, want %q", tc.specs, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%v: %v", tc.specs, err)
			continue
		}
		if b.Protocol() != tc.protocol {
			t.Errorf("%v: protocol %s, want %s", tc.specs, b.Protocol(), tc.protocol)
		}
		p, isPool := b.(*Pool)
		if isPool != (tc.size > 0) || isPool && p.Size() != tc.size {
			t.Errorf("%v: %T, want a pool of %d", tc.specs, b, tc.size)
		}
	}
}

// Each server keeps as many idle connections as the run keeps calls in
// flight on it (at least 16), of either kind and in a pool: a burst of
// --parallel 64 calls reuses its connections instead of dialling 48 anew.
func TestIdleConnectionsFollowSlots(t *testing.T) {
	var idle func(b Backend) []int
	idle = func(b Backend) []int {
		var out []int
		switch c := b.(type) {
		case *Client:
			out = append(out, c.http.Transport.(*http.Transport).MaxIdleConnsPerHost)
		case *OpenAI:
			out = append(out, c.http.Transport.(*http.Transport).MaxIdleConnsPerHost)
		case *Pool:
			for _, m := range c.members {
				out = append(out, idle(m.b)...)
			}
		}
		return out
	}
	for _, tc := range []struct {
		specs []string
		slots int
		want  []int
	}{
		{[]string{"ollama=127.0.0.1:1"}, 64, []int{64}},
		{[]string{"openai=http://127.0.0.1:2"}, 64, []int{64}},
		{[]string{"ollama=127.0.0.1:1"}, 4, []int{16}},
		{[]string{"ollama=127.0.0.1:1", "ollama=127.0.0.1:2"}, 32, []int{32, 32}},
	} {
		b, err := DialAll(tc.specs, tc.slots, DialOptions{Timeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if got := idle(b); !slices.Equal(got, tc.want) {
			t.Errorf("%v at %d slots: idle connections kept %v, want %v", tc.specs, tc.slots, got, tc.want)
		}
	}
}
