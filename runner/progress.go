package runner

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
)

// progress shows how far a run is: items done of total, the stage and model
// being called, generated tokens per second, and the counts a user watches
// for (unscored judge replies, failed items, retries). On a terminal it is a
// bar (progressbar/v3, written to the log writer, never stdout) whose
// description is refreshed every second; elsewhere (CI logs, files) it is a
// plain line every lineEvery, and when the last item completes.
type progress struct {
	mu      sync.Mutex
	bar     *progressbar.ProgressBar
	log     io.Writer
	name    string
	total   int
	done    int
	failed  int
	last    time.Time // last plain line written
	started time.Time
	tokens0 int64 // generated tokens counted before this run began
	e       *Engine
	stop    chan struct{}
	stopped sync.WaitGroup
}

const lineEvery = 10 * time.Second

func newProgress(w io.Writer, interactive bool, name string, total int, e *Engine) *progress {
	p := &progress{log: w, name: name, total: total, started: time.Now(), last: time.Now(), e: e,
		tokens0: e.stats.evalTokens.Load(), stop: make(chan struct{})}
	if total <= 0 {
		return p
	}
	tick := lineEvery
	if interactive {
		tick = time.Second
		p.bar = progressbar.NewOptions(total,
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetVisibility(true),
			progressbar.OptionSetDescription(name),
			progressbar.OptionShowCount(),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionThrottle(200*time.Millisecond),
			progressbar.OptionOnCompletion(func() { fmt.Fprintln(w) }),
		)
	} else {
		fmt.Fprintf(w, "%s: %d items to do\n", name, total)
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

// status is the line shown: items, stage, model, tokens/s and counts.
func (p *progress) status(now time.Time) string {
	parts := []string{fmt.Sprintf("%s %d/%d items", p.name, p.done, p.total)}
	if a := p.e.now.Load(); a != nil {
		parts = append(parts, a.stage, a.model)
	}
	if el := now.Sub(p.started).Seconds(); el > 0 {
		parts = append(parts, fmt.Sprintf("%.1f tok/s", float64(p.e.stats.evalTokens.Load()-p.tokens0)/el))
	}
	parts = append(parts, fmt.Sprintf("unscored %d", p.e.stats.judgeFailures.Load()),
		fmt.Sprintf("failed %d", p.failed))
	if r := p.e.stats.retries.Load(); r > 0 {
		parts = append(parts, fmt.Sprintf("retries %d", r))
	}
	if p.bar == nil && p.done > 0 && p.done < p.total {
		rate := float64(p.done) / now.Sub(p.started).Seconds()
		parts = append(parts, "ETA "+time.Duration(float64(p.total-p.done)/rate*float64(time.Second)).Round(time.Second).String())
	}
	return strings.Join(parts, " · ")
}

// refresh redraws the bar's description, or writes a plain line when one
// is due (or forced).
func (p *progress) refresh(force bool) {
	now := time.Now()
	if p.bar != nil {
		p.bar.Describe(p.status(now))
		return
	}
	if force || now.Sub(p.last) >= lineEvery {
		p.last = now
		fmt.Fprintln(p.log, p.status(now))
	}
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
		p.bar.Describe(p.status(time.Now()))
		_ = p.bar.Add(n)
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
	if p.bar != nil && p.done < p.total {
		fmt.Fprintln(p.log)
	}
}
