package engine

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"time"

	"halu/localmodels"
)

// scheduler admits model calls to the server, load by load. A load is
// what the server loads to answer a call (loadKey: the model's weights
// with the runner settings that make the server load them again), so calls
// to aliases of one set of weights are one load and fill the slots
// together.
//
// At most limit calls are in flight. Calls of the load being served
// (current) go first: while any of them waits, no other load is admitted.
// When the current load has nothing waiting and a slot is free, the next
// load — the one with the most calls waiting, ties by key — may start
// beside it, at most loadsAtOnce loads in flight at once: the next model
// loads while the current one's last calls finish, instead of the slots
// standing idle through the tail and the load. The next load becomes the
// current once the current has nothing running or waiting. With more items
// in progress than slots, all of a phase's generation for one model runs
// before its judging, so each model is loaded once per batch of items
// rather than once per item — what matters when memory holds few models
// at a time (a server that cannot hold the second load beside the first
// keeps it waiting until the first is idle: no load more than serving them
// one after the other).
//
// Within a load, calls whose prompts begin alike go back to back: the
// next call admitted is the waiting one whose prompt shares the longest
// beginning with a prompt the load was sent lately (pick) — the same
// question asked at another temperature, say — since the server keeps the state of a prompt it read and
// reads again only what differs (Ollama's runner and vLLM reuse a cached
// prefix; on a small machine reading the prompt is most of a short
// call). Ties, and calls with nothing in common, go in arrival order, and
// a call passed over maxPassed times, or as many times as calls wait with
// it when more do, goes next. A call that follows its
// caller's last one and extends its prompt — a judge's repair turn — gets
// that call's slot before any waiting call (hold); so does an item's next
// call while other calls wait (hold.item), which most often begins as the
// last one did (a second judge of the same answer): with more items in
// flight than slots, a freed slot went at once to another item's call, and
// the server dropped the prompt the item's next call would have reused.
//
// limit starts at the configured slots and halves (down to one) when the
// server answers 503, its queue being full, and drops by one when a call
// was queued at the server most of its time (localmodels.Timing.Queued:
// the server has fewer slots than limit, and calls beyond them are better
// held here, where pick orders them, than in its queue); it grows back by
// one after every recoverAfter calls that succeed unqueued.
type scheduler struct {
	mu       sync.Mutex
	max      int
	limit    int
	inflight int
	current  string
	// running counts the calls in flight per load.
	running map[string]int
	// queue holds each load's waiting calls in arrival order, recent the
	// prompts of its calls admitted last (at most recentPrompts, newest
	// last), and picked the waiting call pick chose (nil: choose again).
	queue    map[string][]*waiter
	recent   map[string][]string
	picked   map[string]*waiter
	ok       int
	switches int
	lowered  int
	eased    int
	use      slotUse
	clock    func() time.Time
	// holdFor bounds a hold (holdFor; tests shorten it) and itemHoldFor
	// an item's (itemHoldFor), resumed counts the follow-ups that took a
	// held slot, lapsed the holds given back after their bound;
	// itemHolds are, by the stage of the call that kept the slot, how the
	// holds for an item's next call ended (worth).
	holdFor, itemHoldFor time.Duration
	resumed, lapsed      int
	itemHolds            map[string]*holdOutcomes
}

// waiter is a call waiting for a slot: its prompt, how many calls of its
// load were admitted before it while it waited, and ready, signalled when
// it may be the call to go (dispatch). shared is the longest beginning its
// prompt shares with one of the load's recent prompts, as pick last
// measured it (valid while the recent prompts stay as they were: until a
// call of the load is admitted).
type waiter struct {
	prompt string
	passed int
	shared int
	ready  chan struct{}
	// gathers marks an embedding request (acquireGathering): it goes
	// after the calls with prompts waiting for its load.
	gathers bool
}

const (
	// recentPrompts is how many of a load's last prompts a waiting call's
	// prompt is compared with: the server keeps one per slot.
	recentPrompts = 8
	// pickAmong is how many of a load's waiting calls (the oldest) pick
	// compares, to bound its work when many wait.
	pickAmong = 64
	// maxPassed is how often a waiting call may be passed over for one
	// whose prompt the server has more of — or as often as calls wait
	// with it, when more do — before it goes next. Bounded by the calls
	// waiting, the rule keeps a batch of hundreds in prompt order: with a
	// fixed bound, every call of such a batch has been passed over that
	// often after its first admissions, and the batch would go in arrival
	// order (items start in a race), the prompts the server holds
	// unused.
	maxPassed = 32
)

// loadsAtOnce is how many loads may have calls in flight at once: the one
// being served and the next.
const loadsAtOnce = 2

// slotUse is how busy the scheduler kept the slots while a run worked:
// busy is the integral of the calls in flight over time, slots that of the
// slots there were (max), in slot-seconds, and span the seconds it worked.
// busy ÷ span is the mean number of calls in flight, busy ÷ slots the
// share of the slots in use.
type slotUse struct {
	working           bool
	last              time.Time
	busy, slots, span float64
}

const recoverAfter = 8

// tick adds the time since the last change to the slot use; s.mu is held.
func (s *scheduler) tick(now time.Time) {
	if s.use.working {
		dt := now.Sub(s.use.last).Seconds()
		s.use.busy += float64(s.inflight) * dt
		s.use.slots += float64(s.max) * dt
		s.use.span += dt
	}
	s.use.last = now
}

// working marks the start (true) and end of a run's work: slot use is
// measured between them.
func (s *scheduler) working(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tick(s.clock())
	s.use.working = on
}

func newScheduler(slots int) *scheduler {
	return &scheduler{max: slots, limit: slots, running: map[string]int{},
		queue: map[string][]*waiter{}, recent: map[string][]string{}, picked: map[string]*waiter{}, clock: time.Now, holdFor: holdFor, itemHoldFor: itemHoldFor}
}

// next is the load served after the current one: the one with the most
// calls waiting, ties by key.
func (s *scheduler) next() string {
	best := ""
	for m, q := range s.queue {
		if n := len(q); n > 0 && (best == "" || n > len(s.queue[best]) || n == len(s.queue[best]) && m < best) {
			best = m
		}
	}
	return best
}

// idle reports whether load has nothing running or waiting.
func (s *scheduler) idle(load string) bool { return s.running[load] == 0 && len(s.queue[load]) == 0 }

func (s *scheduler) admissible(load string) bool { return s.admits(load, s.next) }

// admits is admissible with next giving the load to serve after the
// current one (dispatch computes it once for every load it asks about).
func (s *scheduler) admits(load string, next func() string) bool {
	switch {
	case s.inflight >= s.limit:
		return false
	case load == s.current || s.idle(s.current) && next() == load:
		return true
	case len(s.queue[s.current]) > 0:
		return false // the current load's calls first
	case s.running[load] > 0:
		return true // already started beside the current one
	}
	loads := 0
	for _, n := range s.running {
		if n > 0 {
			loads++
		}
	}
	return loads < loadsAtOnce && next() == load
}

// dispatch wakes the waiting calls that may go now, and no other: the
// pick of each load admissible. Only a load being served, the next load
// or one already running can be admissible. Every change of the
// scheduler's state ends with it (s.mu held), so a call that can go has
// been woken, and a call that cannot sleeps through the changes (waking
// every waiting call on every change cost half of halu's CPU time in a
// run of 100 judgements on a pool of two servers).
func (s *scheduler) dispatch() (woke bool) {
	if s.inflight >= s.limit {
		return false
	}
	nx := s.next() // the state does not change while dispatch wakes
	next := func() string { return nx }
	wake := func(load string) {
		if load != "" && len(s.queue[load]) > 0 && s.admits(load, next) {
			select {
			case s.pick(load).ready <- struct{}{}:
				woke = true
			default: // woken already
			}
		}
	}
	wake(s.current)
	if nx != s.current {
		wake(nx)
	}
	for load := range s.running {
		if load != s.current {
			wake(load)
		}
	}
	return woke
}

// pick is the waiting call of load to admit next: the oldest if it was
// passed over maxPassed times (or, when more calls wait, as many times as
// calls wait), else the one whose prompt shares the
// longest beginning with one of the load's recent prompts, the oldest of
// those that share as much. s.mu is held.
func (s *scheduler) pick(load string) *waiter {
	q := s.queue[load]
	switch {
	case len(q) == 0:
		return nil
	case len(q) == 1 || q[0].passed >= max(maxPassed, len(q)):
		return q[0]
	}
	if w := s.picked[load]; w != nil {
		return w
	}
	var best *waiter
	for _, w := range q[:min(len(q), pickAmong)] {
		if w.gathers {
			continue
		}
		w.shared = s.shares(load, w.prompt)
		if best == nil || w.shared > best.shared {
			best = w
		}
	}
	if best == nil {
		best = q[0] // only embedding requests among those compared
	}
	s.picked[load] = best
	return best
}

// shares is the longest beginning prompt shares with one of load's recent
// prompts; s.mu is held.
func (s *scheduler) shares(load, prompt string) int {
	n := 0
	for _, r := range s.recent[load] {
		n = max(n, commonPrefix(prompt, r))
	}
	return n
}

// commonPrefix is the length of the longest beginning a and b share. It
// compares 32 bytes at a time (one string comparison, which the runtime
// does in vector instructions) before the bytes of the block that
// differs: pick compares every waiting prompt of hundreds of bytes with
// each recent one whenever a call is admitted.
func commonPrefix(a, b string) int {
	const block = 32
	n := min(len(a), len(b))
	i := 0
	for i+block <= n && a[i:i+block] == b[i:i+block] {
		i += block
	}
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

// arrive queues w for load. The new call may share more with the recent
// prompts than the pick: it alone is measured, the others' measures
// holding until a call is admitted. s.mu is held.
func (s *scheduler) arrive(load string, w *waiter) {
	s.queue[load] = append(s.queue[load], w)
	if p := s.picked[load]; p != nil && p.gathers && !w.gathers {
		delete(s.picked, load) // a call with a prompt goes before an embedding request
	} else if p != nil && !w.gathers && len(s.queue[load]) <= pickAmong {
		if w.shared = s.shares(load, w.prompt); w.shared > p.shared {
			s.picked[load] = w
		}
	}
}

// leave takes w out of load's queue; admitted says it got a slot (the
// others waiting are passed over once, and its prompt is recent).
func (s *scheduler) leave(load string, w *waiter, admitted bool) {
	q := s.queue[load]
	for i, x := range q {
		if x == w {
			q = append(q[:i], q[i+1:]...)
			break
		}
	}
	if len(q) == 0 {
		delete(s.queue, load)
	} else {
		s.queue[load] = q
	}
	delete(s.picked, load)
	if !admitted {
		return
	}
	for _, x := range q {
		x.passed++
	}
	s.remember(load, w.prompt)
}

// remember adds prompt ("" for none) to load's recent prompts; s.mu is
// held.
func (s *scheduler) remember(load, prompt string) {
	if prompt != "" {
		r := append(s.recent[load], prompt)
		s.recent[load] = r[max(0, len(r)-recentPrompts):]
	}
}

// acquire waits for a slot to call load with prompt (the call's messages;
// "" for a call without one).
func (s *scheduler) acquire(ctx context.Context, load, prompt string) error {
	return s.wait(ctx, load, &waiter{prompt: prompt, ready: make(chan struct{}, 1)})
}

// acquireGathering waits for a slot to send an embedding request to load.
// Such a request gathers the texts other items ask the same model to embed
// until it is admitted (Engine.embed), and nothing waits on its reply but
// its items' end: it goes after the calls with prompts waiting for its load
// (pick), so that it carries more texts. Sent in turn, an item's embedding
// came between two judge calls of one load (an embedding model that is
// also the judge) and took the slot whose state held the judges' common
// prompt, which the next judge call then read whole: 256 requests of one
// or two texts where 16 did, and the server read prompts 40% longer than
// for promptfoo's same calls (make bench-engine). A request passed over
// as often as pick's rule allows goes next all the same.
func (s *scheduler) acquireGathering(ctx context.Context, load string) error {
	return s.wait(ctx, load, &waiter{ready: make(chan struct{}, 1), gathers: true})
}

// wait queues w for load and returns once it is admitted.
func (s *scheduler) wait(ctx context.Context, load string, w *waiter) error {
	s.mu.Lock()
	s.arrive(load, w)
	// Its arrival may make another waiting call the one to go — the next
	// load (more calls waiting) or the load's pick.
	s.dispatch()
	for !s.admissible(load) || s.pick(load) != w {
		s.mu.Unlock()
		select {
		case <-w.ready:
		case <-ctx.Done():
			s.mu.Lock()
			s.leave(load, w, false)
			s.dispatch()
			s.mu.Unlock()
			return ctx.Err()
		}
		s.mu.Lock()
	}
	s.leave(load, w, true)
	s.tick(s.clock())
	if load != s.current && s.running[load] == 0 {
		// A load starts: the served model changes (counted), and the
		// new load is the current one unless the current still runs.
		if s.current != "" {
			s.switches++
		}
		if s.idle(s.current) {
			s.current = load
		}
	}
	s.running[load]++
	s.inflight++
	s.dispatch()
	s.mu.Unlock()
	return nil
}

// release frees a slot of load; busy reports the server refused the call
// with 503, queued that the call was queued at the server most of its
// time. A current load left with nothing running or waiting hands on to
// the load started beside it.
func (s *scheduler) release(load string, busy, queued bool) {
	s.mu.Lock()
	woke := s.releaseLocked(load, busy, queued)
	s.mu.Unlock()
	handoff(woke)
}

// releaseLocked is release with s.mu held, up to the handoff: it reports
// whether a waiting call was woken.
func (s *scheduler) releaseLocked(load string, busy, queued bool) bool {
	s.free(load)
	s.adapt(busy, queued)
	return s.dispatch()
}

// handoff yields the processor to the call a freed slot woke (woke), once
// s.mu is unlocked: the woken call is runnable at once, but would wait
// until the caller stops — and a caller that frees a slot goes on reading
// the reply it got (BenchmarkSlotHandoff: 95 µs to 10 µs with 200 µs of
// the caller's work; 155 µs to 45 µs median in a run keeping one call in
// flight, time the server sat idle).
func handoff(woke bool) {
	if woke {
		runtime.Gosched()
	}
}

// free gives back a slot of load; s.mu is held.
func (s *scheduler) free(load string) {
	s.tick(s.clock())
	s.inflight--
	if s.running[load]--; s.running[load] == 0 {
		delete(s.running, load)
	}
	if s.idle(s.current) {
		for l := range s.running {
			s.current = l // at most one other load runs
		}
	}
}

// adapt moves the limit after a call: halved for a 503 (busy), lowered by
// one for a call queued at the server, grown back after recoverAfter
// calls that were neither; s.mu is held.
func (s *scheduler) adapt(busy, queued bool) {
	switch {
	case busy:
		if s.limit > 1 {
			s.limit = max(1, s.limit/2)
			s.lowered++
		}
		s.ok = 0
	case queued:
		if s.limit > 1 {
			s.limit--
			s.eased++
		}
		s.ok = 0
	case s.limit < s.max:
		if s.ok++; s.ok >= recoverAfter {
			s.limit++
			s.ok = 0
		}
	}
}

// hold keeps a call's slot for the call its caller makes next — a judge's
// repair turn after a reply that did not read, whose prompt is the first
// call's prompt and reply and a line more. The server keeps the state of
// the prompt it read last in that slot until another prompt takes it: were
// the slot freed, a waiting call would take it (it is admitted the moment
// the slot frees, before the caller has read the reply) and the follow-up
// would be read whole. A hold lasts until the follow-up resumes it or the
// caller releases it, and at most holdFor, so that no wait of the caller's
// (an identical call made by another item, say) can keep it from others.
type hold struct {
	// keep asks for the next call's slot to be held once it has answered.
	keep bool
	// item marks an item's hold (Engine.itemHold): every call of the item
	// keeps its slot for the item's next call, for itemHoldFor, when other
	// calls wait for a slot of its load — were it freed, one of them would
	// take it at once and the server would drop the prompt the item's next
	// call most likely begins with (a second judge asked about the same
	// answer, a sample of the same question).
	item bool
	// load is the load of the slot held, "" when none is; timer frees it
	// after holdFor; from is the stage of the call that kept it, and
	// forItem says it is kept for the item's next call (counted in the
	// scheduler's itemHolds when it ends). All under the scheduler's mu.
	load    string
	timer   *time.Timer
	from    string
	forItem bool
}

// holdOutcomes counts, for the calls of one stage, the slots kept for the
// item's next call and those that call took.
type holdOutcomes struct{ kept, taken int }

const (
	// holdTrial is how many of a stage's item holds are kept whatever
	// their outcome, before the outcomes decide (worth).
	holdTrial = 8
)

// worth reports whether a slot freed by a call of stage is worth keeping
// for the item's next call: always for the first holdTrial, then while the
// next call took at least half of them. Where it does not — the stage ends
// its items (a judge's last turn in judges validate), or the next call is
// of another load (a second judge of other weights) — a slot kept idle
// would only delay the call waiting for it. s.mu is held.
func (s *scheduler) worth(stage string) bool {
	o := s.itemHolds[stage]
	return o == nil || o.kept < holdTrial || 2*o.taken >= o.kept
}

// ended counts how an item hold ended (taken: by the item's next call).
// s.mu is held.
func (s *scheduler) ended(h *hold, taken bool) {
	if !h.forItem {
		return
	}
	h.forItem = false
	if s.itemHolds == nil {
		s.itemHolds = map[string]*holdOutcomes{}
	}
	o := s.itemHolds[h.from]
	if o == nil {
		o = &holdOutcomes{}
		s.itemHolds[h.from] = o
	}
	o.kept++
	if taken {
		o.taken++
	}
}

// holdFor is the longest a slot is held for a follow-up: reading a reply
// takes a few milliseconds; a caller held up longer gives it back.
const holdFor = 250 * time.Millisecond

// itemHoldFor is the longest a slot is held for an item's next call
// (hold.item): an item reads a reply and asks its next call within a
// millisecond or two; one that does not (its work is done, or its next
// call is answered by the cache) gives the slot back soon.
const itemHoldFor = 20 * time.Millisecond

// keep ends a call of load as release does but holds its slot for h's
// next call, for at most d.
func (s *scheduler) keep(h *hold, stage, load string, busy, queued, forItem bool, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keepLocked(h, stage, load, busy, queued, forItem, d)
}

// keepLocked is keep with s.mu held.
func (s *scheduler) keepLocked(h *hold, stage, load string, busy, queued, forItem bool, d time.Duration) {
	s.adapt(busy, queued)
	s.drop(h) // a slot held already: its caller did not resume it
	h.load, h.from, h.forItem = load, stage, forItem
	h.timer = time.AfterFunc(d, func() { s.lapse(h) })
	s.dispatch()
}

// endItemCall ends a successful call of stage made under an item's hold
// h: its slot is kept for the item's next call, for at most itemHoldFor,
// when holdForItem says so, and freed as release frees it otherwise — one
// decision under one lock, so no call can come or go between the two.
func (s *scheduler) endItemCall(h *hold, stage, load string, busy, queued bool) {
	s.mu.Lock()
	if s.holdForItem(stage, load) {
		s.keepLocked(h, stage, load, busy, queued, true, s.itemHoldFor)
		s.mu.Unlock()
		return
	}
	woke := s.releaseLocked(load, busy, queued)
	s.mu.Unlock()
	handoff(woke)
}

// holdForItem reports whether the slot a call of stage frees is to be
// kept for its item's next call: a call waits that the slot would admit
// (only then would the server's copy of the prompt be lost: an idle slot
// keeps it), and such holds after stage have been worth it. s.mu is held.
func (s *scheduler) holdForItem(stage, load string) bool {
	if !s.worth(stage) {
		return false
	}
	for l, q := range s.queue {
		if len(q) > 0 && (l == load || l == s.current || s.running[l] > 0) {
			return true
		}
	}
	return false
}

// itemize turns the slot h holds, if any (for a repair that did not come),
// into one held for the item's next call, ending within d — or frees it
// when such holds after its stage have not been worth it.
func (s *scheduler) itemize(h *hold, d time.Duration) {
	s.mu.Lock()
	if h.load == "" || h.forItem {
		s.mu.Unlock()
		return
	}
	if !s.worth(h.from) {
		_, woke := s.drop(h)
		s.mu.Unlock()
		handoff(woke)
		return
	}
	defer s.mu.Unlock()
	h.forItem = true
	h.timer.Stop()
	h.timer = time.AfterFunc(d, func() { s.lapse(h) })
}

// resume hands a call of load with prompt the slot h holds, if it holds
// one of load, and reports whether it did; a slot of another load is
// freed.
func (s *scheduler) resume(h *hold, load, prompt string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch h.load {
	case "":
		return false
	case load:
		h.load = ""
		h.timer.Stop()
		s.ended(h, true)
		s.remember(load, prompt)
		s.resumed++
		return true
	}
	s.drop(h)
	return false
}

// lapse frees the slot h holds, if it still holds one after holdFor.
func (s *scheduler) lapse(h *hold) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if held, _ := s.drop(h); held {
		s.lapsed++
	}
}

// unhold frees the slot h holds, if any.
func (s *scheduler) unhold(h *hold) {
	s.mu.Lock()
	_, woke := s.drop(h)
	s.mu.Unlock()
	handoff(woke)
}

// drop frees the slot h holds and reports whether it held one and whether
// freeing it woke a waiting call; s.mu is held.
func (s *scheduler) drop(h *hold) (held, woke bool) {
	if h.load == "" {
		return false, false
	}
	s.free(h.load)
	h.load = ""
	h.timer.Stop()
	s.ended(h, false)
	return true, s.dispatch()
}

// schedState is what the scheduler reports: the current load and slot
// limit, how often the served load changed, the limit was halved for a
// 503 (lowered) and lowered by one for a call queued at the server
// (eased), and the slot use so far.
type schedState struct {
	current                         string
	limit, switches, lowered, eased int
	resumed, lapsed                 int
	use                             slotUse
}

func (s *scheduler) state() schedState {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tick(s.clock())
	return schedState{s.current, s.limit, s.switches, s.lowered, s.eased, s.resumed, s.lapsed, s.use}
}

// runnerOptions are the options that make Ollama load a model again when
// they change (its api.Runner settings): calls that differ in one of them
// cannot share a loaded model.
var runnerOptions = []string{"num_ctx", "num_batch", "num_gpu", "main_gpu", "use_mmap", "num_thread"}

// loadKey is what the server loads to answer a call of model with opts:
// Ollama keeps one runner per weights file and loads it again when the
// adapters, projectors or runner options differ (server/sched.go,
// needsReload), so the key is the model's files (Blobs: weights, adapters,
// projectors) with the runner options the call sets or its Modelfile
// defaults. Two names of one set of weights share a key; a model whose
// files are not known is its own load.
func (e *Engine) loadKey(model string, opts localmodels.Options) string {
	v, ok := e.models.Load(model)
	if !ok {
		return "name:" + localmodels.CanonicalName(model)
	}
	info := v.(localmodels.ModelInfo)
	var b strings.Builder
	switch {
	case info.Blobs != "":
		b.WriteString("blobs:" + info.Blobs)
	case info.Weights != "":
		b.WriteString("weights:" + info.Weights)
	default:
		b.WriteString("name:" + localmodels.CanonicalName(model))
	}
	sent := opts.Map()
	for _, k := range runnerOptions {
		if v, ok := sent[k]; ok {
			fmt.Fprintf(&b, " %s=%v", k, v)
		} else if v, ok := info.Defaults[k]; ok {
			fmt.Fprintf(&b, " %s=%s", k, v)
		}
	}
	return b.String()
}
