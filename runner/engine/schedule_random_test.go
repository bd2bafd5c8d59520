package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

// Calls of several loads with prompts alike and not, arriving and leaving
// at random with one or two slots, some holding their slot for a
// follow-up: every call is admitted (no call waits for a wake-up that
// never comes), and at the end no slot is taken.
func TestSchedulerAdmitsEveryCall(t *testing.T) {
	for _, slots := range []int{1, 2} {
		s := newScheduler(slots)
		s.holdFor = time.Millisecond
		done := make(chan struct{})
		var wg sync.WaitGroup
		for g := 0; g < 8; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx := context.Background()
				for i := 0; i < 150; i++ {
					load := fmt.Sprint("load-", rand.IntN(3))
					prompt := fmt.Sprint("question ", rand.IntN(4), " temperature ", rand.IntN(3))
					if err := s.acquire(ctx, load, prompt); err != nil {
						t.Error(err)
						return
					}
					time.Sleep(time.Duration(rand.IntN(300)) * time.Microsecond)
					if rand.IntN(2) == 0 {
						s.release(load, false, false)
						continue
					}
					h := &hold{keep: true}
					s.keep(h, "judge", load, false, false, false, s.holdFor)
					time.Sleep(time.Duration(rand.IntN(1500)) * time.Microsecond)
					if !s.resume(h, load, prompt+" repair") {
						if err := s.acquire(ctx, load, prompt+" repair"); err != nil {
							t.Error(err)
							return
						}
					}
					s.release(load, false, false)
				}
			}()
		}
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			s.mu.Lock()
			t.Fatalf("%d slots: calls still waiting after 60 s: in flight %d, current %q, running %v, waiting %d loads", slots, s.inflight, s.current, s.running, len(s.queue))
		}
		s.mu.Lock()
		if s.inflight != 0 || len(s.running) != 0 {
			t.Errorf("%d slots: in flight %d, running %v at the end", slots, s.inflight, s.running)
		}
		s.mu.Unlock()
	}
}
