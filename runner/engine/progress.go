package engine

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/schollz/progressbar/v3"

	"halu/localmodels"
)

// progress shows how far a run is. Model-major scheduling means an item
// completes only at its last stage, so items alone would sit at 0 for most
// of a run: progress counts model calls (cache hits included) against an
// estimate of the calls the run will make, per stage and model, and gives
// its ETA from their rate. It also shows items done, generated tokens per
// second and the counts a user watches for (unscored judge replies, failed
// items, retries).
//
// On a terminal it is one bar (progressbar/v3, written to the log writer,
// never stdout), cut to the terminal's width; a log line is printed above
// it (the bar is cleared, the line written, the bar drawn again), and
// retries of one cause collapse into the bar's "retrying" note with a
// count. Elsewhere (CI logs, files) it is a plain line every lineEvery and
// when the last item completes; a retry cause is written once, and its
// repeats counted in one line when the cause changes or the run ends.
type progress struct {
	mu      sync.Mutex
	bar     *progressbar.ProgressBar
	log     io.Writer
	name    string
	width   int // terminal columns; 0 when not known
	total   int
	done    int
	failed  int
	last    time.Time // last plain line written
	started time.Time
	tokens0 int64 // generated tokens counted before this run began
	e       *Engine

	// planned are the estimated calls per stage and model (stage, model
	// keys; nil without an estimate), plannedAll their sum; calls those
	// made or answered from the cache so far.
	planned    map[[2]string]int
	plannedAll int
	calls      map[[2]string]int
	callsAll   int

	// retry is the cause of the latest retries and how many times it
	// repeated since it was shown.
	retry struct {
		cause   string
		repeats int
		total   int
	}

	stop    chan struct{}
	stopped sync.WaitGroup
}

const lineEvery = 10 * time.Second

// barWidth is the bar's own width in columns; the description gets the rest.
const barWidth = 12

func newProgress(w io.Writer, interactive bool, width int, name string, total int, estimate map[[2]string]int, cached int, e *Engine) *progress {
	p := &progress{log: w, name: name, width: width, total: total, started: time.Now(), last: time.Now(), e: e,
		tokens0: e.stats.evalTokens.Load(), stop: make(chan struct{}), calls: map[[2]string]int{}}
	if len(estimate) > 0 {
		p.planned = estimate
		for _, n := range estimate {
			p.plannedAll += n
		}
	}
	if total <= 0 {
		return p
	}
	tick := lineEvery
	if interactive {
		tick = time.Second
		max := p.plannedAll
		if max == 0 {
			max = -1 // unknown: a spinner
		}
		p.bar = progressbar.NewOptions(max,
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetVisibility(true),
			progressbar.OptionSetWidth(barWidth),
			progressbar.OptionSetDescription(name),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionThrottle(200*time.Millisecond),
			progressbar.OptionOnCompletion(func() { fmt.Fprintln(w) }),
		)
		_ = p.bar.RenderBlank()
	} else {
		line := fmt.Sprintf("%s: %d items to do", name, total)
		switch {
		case p.plannedAll > 0 && cached >= p.plannedAll:
			line += fmt.Sprintf(", about %d calls, every one in the cache", p.plannedAll)
		case p.plannedAll > 0 && cached > 0:
			line += fmt.Sprintf(", about %d calls (about %d of them in the cache)", p.plannedAll, cached)
		case p.plannedAll > 0:
			line += fmt.Sprintf(", about %d model calls", p.plannedAll)
		}
		fmt.Fprintln(w, line)
	}
	// Items of slow models can take minutes: the display moves with the
	// model calls, not only when an item completes.
	p.stopped.Add(1)
	go func() {
		defer p.stopped.Done()
		t := time.NewTicker(tick)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
				p.mu.Lock()
				p.refresh(false)
				p.mu.Unlock()
			}
		}
	}()
	return p
}

// status is the line shown: calls against the estimate, items, the stage
// and model being called with their own calls, tokens/s and counts.
func (p *progress) status(now time.Time) string {
	parts := []string{p.name}
	if p.plannedAll > 0 {
		parts = append(parts, fmt.Sprintf("calls %d/~%d", p.callsAll, max(p.plannedAll, p.callsAll)))
	} else {
		parts = append(parts, fmt.Sprintf("calls %d", p.callsAll))
	}
	parts = append(parts, fmt.Sprintf("%d/%d items", p.done, p.total))
	if p.bar != nil && p.retry.cause != "" && p.retry.repeats > 0 {
		// An outage goes first: the line is cut to the terminal's width.
		parts = append(parts, fmt.Sprintf("retrying ×%d: %s", p.retry.repeats, p.retry.cause))
	}
	if a := p.e.now.Load(); a != nil {
		k := [2]string{a.stage, a.model}
		s := a.stage + " " + a.model
		if n := p.planned[k]; n > 0 {
			s += fmt.Sprintf(" %d/~%d", p.calls[k], max(n, p.calls[k]))
		}
		parts = append(parts, s)
	}
	if el := now.Sub(p.started).Seconds(); el > 0 {
		parts = append(parts, fmt.Sprintf("%.1f tok/s", float64(p.e.stats.evalTokens.Load()-p.tokens0)/el))
	}
	parts = append(parts, fmt.Sprintf("unscored %d", p.e.stats.judgeFailures.Load()),
		fmt.Sprintf("failed %d", p.failed))
	if r := p.e.stats.retries.Load(); r > 0 {
		parts = append(parts, fmt.Sprintf("retries %d", r))
	}
	if p.bar == nil {
		if eta, ok := p.eta(now); ok {
			parts = append(parts, "ETA "+eta.String())
		}
	}
	return strings.Join(parts, " · ")
}

// eta is the time left at the rate of calls so far (of items, without an
// estimate of calls); ok is false before there is a rate.
func (p *progress) eta(now time.Time) (time.Duration, bool) {
	el := now.Sub(p.started).Seconds()
	done, total := p.callsAll, p.plannedAll
	if total == 0 {
		done, total = p.done, p.total
	}
	if done == 0 || done >= total || el <= 0 {
		return 0, false
	}
	return time.Duration(float64(total-done) / (float64(done) / el) * float64(time.Second)).Round(time.Second), true
}

// describe sets the bar's description, cut to the terminal's width so that
// the line never wraps (a wrapped line leaves copies of itself).
func (p *progress) describe(now time.Time) {
	s := p.status(now)
	if p.width > 0 {
		room := p.width - barWidth - 32 // the bar, its counts, rate and ETA
		if room < 20 {
			room = 20
		}
		if utf8.RuneCountInString(s) > room {
			s = string([]rune(s)[:room-1]) + "…"
		}
	}
	p.bar.Describe(s)
}

// refresh redraws the bar's description, or writes a plain line when one
// is due (or forced).
func (p *progress) refresh(force bool) {
	now := time.Now()
	if p.bar != nil {
		p.describe(now)
		return
	}
	if force || now.Sub(p.last) >= lineEvery {
		p.last = now
		fmt.Fprintln(p.log, p.status(now))
	}
}

// call counts one model call of stage and model (made or answered from
// the cache).
func (p *progress) call(stage, model string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls[[2]string{stage, model}]++
	p.callsAll++
	if p.retry.cause != "" {
		// A call went through: the outage is over; say how long it lasted.
		p.flushRetries()
		p.retry.cause = ""
	}
	if p.bar != nil {
		if p.callsAll > p.bar.GetMax() && p.bar.GetMax() > 0 {
			p.bar.ChangeMax(p.callsAll) // the estimate was short
		}
		_ = p.bar.Add(1)
	}
}

// print writes a log line without breaking the bar: the bar is cleared,
// the line written, and the bar drawn again.
func (p *progress) print(line string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.printLocked(line)
}

func (p *progress) printLocked(line string) {
	if p.bar != nil {
		_ = p.bar.Clear()
		fmt.Fprint(p.log, "\r", line)
		if !strings.HasSuffix(line, "\n") {
			fmt.Fprintln(p.log)
		}
		_ = p.bar.RenderBlank()
		return
	}
	fmt.Fprint(p.log, line)
	if !strings.HasSuffix(line, "\n") {
		fmt.Fprintln(p.log)
	}
}

// retrying notes a retry for cause (the error, without its attempt
// number): the first of a cause is printed, its repeats counted.
func (p *progress) retrying(cause, line string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if cause == p.retry.cause {
		p.retry.repeats++
		p.retry.total++
		if p.bar != nil {
			p.describe(time.Now())
		}
		return
	}
	p.flushRetries()
	p.retry.cause, p.retry.repeats, p.retry.total = cause, 0, 1
	p.printLocked(line)
}

// flushRetries writes how many more times the last cause repeated.
func (p *progress) flushRetries() {
	if p.retry.repeats > 0 {
		p.printLocked(fmt.Sprintf("… the same cause %d more times: %s", p.retry.repeats, p.retry.cause))
	}
	p.retry.repeats = 0
}

// Add counts n completed items.
func (p *progress) Add(n int) { p.add(n, 0) }

// Fail counts an item that failed (it is done, and counted apart).
func (p *progress) Fail() { p.add(1, 1) }

func (p *progress) add(n, failed int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done += n
	p.failed += failed
	if p.bar != nil {
		p.describe(time.Now())
		return
	}
	p.refresh(p.done == p.total)
}

// Finish stops the display.
func (p *progress) Finish() {
	close(p.stop)
	p.stopped.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.flushRetries()
	if p.bar != nil {
		p.describe(time.Now())
		_ = p.bar.Clear()
		fmt.Fprintln(p.log, "\r"+p.status(time.Now()))
	}
}

// estimateSample is how many items, spread over the run, are planned to
// estimate its calls.
const estimateSample = 16

// estimateCalls estimates the calls of todo per stage and model: a dry
// run of up to estimateSample items spread over the list (items come model
// by model), scaled to all of them. Calls that depend on what a model
// says are estimated as the plan counts them.
func (e *Engine) estimateCalls(ctx context.Context, s Suite, todo []Item) (map[[2]string]int, int) {
	if len(todo) == 0 {
		return nil, 0
	}
	n := min(len(todo), estimateSample)
	p := &planner{rows: map[[3]string]*PlanRow{}, noTokens: true}
	for i := 0; i < n; i++ {
		it := todo[i*len(todo)/n]
		c := &Calls{e: e, item: it.ID, plan: p}
		if planItem(ctx, s, c, it) != nil && ctx.Err() != nil {
			return nil, 0
		}
	}
	out := map[[2]string]int{}
	cached := 0
	for _, r := range p.rows {
		out[[2]string{r.Stage, localmodels.CanonicalName(r.Model)}] += (r.Calls + r.Cached) * len(todo) / n
		cached += r.Cached * len(todo) / n
	}
	return out, cached
}
