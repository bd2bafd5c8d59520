package engine

import (
	"context"
	"sort"
	"sync"
)

// scheduler admits model calls to the server. At most limit calls are in
// flight, and calls are served model-major: while calls for the model being
// served (current) run or wait, calls for other models wait; the next model
// is the one with the most calls waiting (ties by name), taken only once the
// current one has nothing running or waiting. With more items in progress
// than slots, all of a phase's generation for one model runs before its
// judging, so each model is loaded once per batch of items rather than once
// per item — what matters when memory holds one model at a time.
//
// limit starts at the configured slots and halves (down to one) when the
// server answers 503, its queue being full; it grows back by one after
// every recoverAfter calls that succeed.
type scheduler struct {
	mu       sync.Mutex
	max      int
	limit    int
	inflight int
	current  string
	waiting  map[string]int
	wake     chan struct{}
	ok       int
	switches int
	lowered  int
}

const recoverAfter = 8

func newScheduler(slots int) *scheduler {
	return &scheduler{max: slots, limit: slots, waiting: map[string]int{}, wake: make(chan struct{})}
}

// next is the model served after the current one: the one with the most
// calls waiting, ties by name.
func (s *scheduler) next() string {
	var names []string
	for m, n := range s.waiting {
		if n > 0 {
			names = append(names, m)
		}
	}
	sort.Slice(names, func(i, j int) bool {
		if s.waiting[names[i]] != s.waiting[names[j]] {
			return s.waiting[names[i]] > s.waiting[names[j]]
		}
		return names[i] < names[j]
	})
	if len(names) == 0 {
		return ""
	}
	return names[0]
}

func (s *scheduler) admissible(model string) bool {
	if s.inflight >= s.limit {
		return false
	}
	if model == s.current {
		return true
	}
	if s.inflight > 0 || s.waiting[s.current] > 0 {
		return false
	}
	return s.next() == model
}

func (s *scheduler) changed() {
	close(s.wake)
	s.wake = make(chan struct{})
}

// acquire waits for a slot to call model.
func (s *scheduler) acquire(ctx context.Context, model string) error {
	s.mu.Lock()
	s.waiting[model]++
	for !s.admissible(model) {
		wake := s.wake
		s.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			s.mu.Lock()
			s.waiting[model]--
			s.changed()
			s.mu.Unlock()
			return ctx.Err()
		}
		s.mu.Lock()
	}
	s.waiting[model]--
	if model != s.current {
		if s.current != "" {
			s.switches++
		}
		s.current = model
	}
	s.inflight++
	s.changed()
	s.mu.Unlock()
	return nil
}

// release frees a slot; busy reports the server refused the call with 503.
func (s *scheduler) release(busy bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inflight--
	switch {
	case busy:
		if s.limit > 1 {
			s.limit = max(1, s.limit/2)
			s.lowered++
		}
		s.ok = 0
	case s.limit < s.max:
		if s.ok++; s.ok >= recoverAfter {
			s.limit++
			s.ok = 0
		}
	}
	s.changed()
}

// state reports the current model and slot limit, and how often the served
// model changed and the limit was lowered.
func (s *scheduler) state() (current string, limit, switches, lowered int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.current, s.limit, s.switches, s.lowered
}
