package engine

import (
	"math"
	"sync"
	"time"
)

// Items in flight when --items-in-flight is 0 (auto). With more items in
// progress than slots, the scheduler serves a batch's calls model by model
// (scheduler): each model of a phase is loaded once per batch of items. On
// a server that holds every model the run calls, that costs nothing and
// defaultItemsInFlight items are plenty; on one that holds fewer (a GPU
// with room for the generator or the judge, not both), every batch reloads
// them, and a larger batch spreads a reload over more calls. So the engine
// measures what reloading costs — the load time the server reports for
// calls to weights it had answered before in this run (under any of their
// names: Engine.answered), over the calls' time — and raises the items in flight until that share would be
// reloadShare (raiseItems): halu finds the setting that a user would
// otherwise have to find by trying.
const (
	// defaultItemsInFlight is where auto starts.
	defaultItemsInFlight = 32
	// maxRaise bounds auto's items in flight: defaultItemsInFlight times
	// it (and the run's items).
	maxRaise = 16
	// reloadShare is the share of the calls' time that reloading models
	// may take before auto raises the items in flight.
	reloadShare = 0.05
	// reloadFloor is the least load time a reply reports that counts as
	// a load: a model already loaded reports a few milliseconds.
	reloadFloor = 50 * time.Millisecond
)

// raiseItems is the items in flight that would bring the share of the
// calls' time spent reloading models from share (measured with n items in
// flight) to reloadShare: a batch's reloads cost the same whatever its
// size, so their share r falls as the batch grows, and n·(r/(1−r))·
// ((1−reloadShare)/reloadShare) items take it to reloadShare. The result is
// at least n, at most 8n in one step (the measure is rough) and at most
// limit.
func raiseItems(n, limit int, share float64) int {
	if share <= reloadShare || n >= limit {
		return n
	}
	want := 8 * n
	if share < 1 {
		want = int(math.Ceil(float64(n) * share / (1 - share) * (1 - reloadShare) / reloadShare))
	}
	return max(n, min(want, 8*n, limit))
}

// itemsAuto tracks auto's items in flight during one work call: n now,
// limit at most, and what the engine's counters held at the last raise.
type itemsAuto struct {
	mu           sync.Mutex
	n, limit     int
	done         int // items completed since the last raise
	reloads      int64
	reloadNs, ns int64
}

// completed counts an item done and returns how many items to add to
// those in progress, and the items in flight then: none until, since the
// last raise, half the items in flight completed and the server reloaded
// models twice (a batch's generation and its judging), then what
// raiseItems says.
func (a *itemsAuto) completed(st *stats) (add, n int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.done++
	reloads, reloadNs, ns := st.reloads.Load(), st.reloadNs.Load(), st.timedNs.Load()
	if a.n >= a.limit || 2*a.done < a.n || reloads-a.reloads < 2 || ns <= a.ns {
		return 0, a.n
	}
	share := float64(reloadNs-a.reloadNs) / float64(ns-a.ns)
	want := raiseItems(a.n, a.limit, share)
	if want <= a.n {
		return 0, a.n
	}
	add = want - a.n
	a.n, a.done, a.reloads, a.reloadNs, a.ns = want, 0, reloads, reloadNs, ns
	return add, a.n
}
