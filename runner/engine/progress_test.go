package engine

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestProgressLine: the plain progress line names the items done, the stage
// and model being called, tokens per second, and the unscored, failed and
// retry counts; the last item forces a line.
func TestProgressLine(t *testing.T) {
	e := &Engine{}
	e.init()
	e.stats.evalTokens.Store(500) // tokens of an earlier run: not this one's
	var log bytes.Buffer
	p := newProgress(&log, false, 0, "hic", 3, nil, 0, e)
	p.started = time.Now().Add(-10 * time.Second)
	e.calling("judge", "qwen2.5:0.5b")
	e.stats.evalTokens.Add(200)
	e.stats.judgeFailures.Store(2)
	e.stats.retries.Store(1)
	p.Add(1)
	p.Fail()
	p.Add(1)
	p.Finish()
	lines := strings.Split(strings.TrimSpace(log.String()), "\n")
	last := lines[len(lines)-1]
	for _, want := range []string{"3/3 items", "judge", "qwen2.5:0.5b", "unscored 2", "failed 1", "retries 1"} {
		if !strings.Contains(last, want) {
			t.Errorf("progress line %q lacks %q", last, want)
		}
	}
	// 200 tokens in about 10 s: about 20 tok/s, not (500+200)/10.
	var rate float64
	for _, f := range strings.Split(last, " · ") {
		if strings.HasSuffix(f, " tok/s") {
			var err error
			if rate, err = strconv.ParseFloat(strings.TrimSuffix(f, " tok/s"), 64); err != nil {
				t.Fatal(err)
			}
		}
	}
	if rate < 15 || rate > 20.5 {
		t.Errorf("tokens/s %v, want about 20 (line %q)", rate, last)
	}
	if lines[0] != "hic: 3 items to do" {
		t.Errorf("first line %q", lines[0])
	}
}

// With an estimate, progress moves with the calls, per stage and model,
// long before an item completes; retries of one cause are one line and a
// count; an estimate that was short grows.
func TestProgressByCalls(t *testing.T) {
	e := &Engine{}
	e.init()
	var log bytes.Buffer
	est := map[[2]string]int{{"generate", "gen:latest"}: 4, {"judge", "j1:latest"}: 8}
	p := newProgress(&log, false, 0, "hic", 4, est, 0, e)
	p.started = time.Now().Add(-10 * time.Second)
	e.prog.Store(p)
	e.calling("judge", "j1")
	for i := 0; i < 4; i++ {
		e.called("generate", "gen")
	}
	e.called("judge", "j1:latest")
	e.called("judge", "j1")
	line := p.status(time.Now())
	for _, want := range []string{"calls 6/~12", "0/4 items", "judge j1:latest 2/~8", "ETA 10s"} {
		if !strings.Contains(line, want) {
			t.Errorf("status %q lacks %q", line, want)
		}
	}
	for i := 0; i < 5; i++ {
		p.retrying("dial tcp: connection refused", "retrying in 1s (attempt 2 of 5): dial tcp: connection refused\n")
	}
	p.retrying("HTTP 503", "retrying in 2s (attempt 2 of 5): HTTP 503\n")
	for i := 0; i < 10; i++ {
		e.called("judge", "j1") // more than estimated
	}
	e.prog.Store(nil)
	p.Finish()
	out := log.String()
	if strings.Count(out, "connection refused") != 2 || !strings.Contains(out, "… the same cause 4 more times: dial tcp: connection refused") ||
		strings.Count(out, "HTTP 503") != 1 || !strings.HasPrefix(out, "hic: 4 items to do, about 12 model calls\n") {
		t.Errorf("log:\n%s", out)
	}
	if got := p.status(time.Now()); !strings.Contains(got, "calls 16/~16") {
		t.Errorf("after the estimate: %q", got)
	}
}

// On a terminal, a log line is printed above the bar, never on it, and
// the bar's line is cut to the terminal's width.
func TestProgressBarKeepsLogLinesApart(t *testing.T) {
	e := &Engine{}
	e.init()
	var log bytes.Buffer
	p := newProgress(&log, true, 80, "hic", 2, map[[2]string]int{{"judge", "a-model-with-a-rather-long-name:latest"}: 40}, 0, e)
	e.prog.Store(p)
	e.calling("judge", "a-model-with-a-rather-long-name:latest")
	e.called("judge", "a-model-with-a-rather-long-name:latest")
	e.logf("warning: something to say\n")
	e.prog.Store(nil)
	p.Finish()
	out := log.String()
	i := strings.Index(out, "warning: something to say")
	if i < 0 || !strings.HasPrefix(out[i-1:], "\rwarning: something to say\n") {
		t.Fatalf("the log line is not on a line of its own:\n%q", out)
	}
	for _, frame := range strings.Split(out, "\r") {
		if n := len([]rune(strings.TrimRight(frame, "\n "))); n > 80 && !strings.Contains(frame, "\n") {
			t.Errorf("a frame of %d columns in an 80-column terminal: %q", n, frame)
		}
	}
}

// Retries of one outage share a cause whatever model or request they were
// for, so they collapse into one line.
func TestRetryCause(t *testing.T) {
	a := errors.New(`ollama 127.0.0.1:11555: chat tiny-a: Post "http://127.0.0.1:11555/api/chat": dial tcp 127.0.0.1:11555: connect: connection refused (is the server running? try ` + "`halu doctor`)")
	b := errors.New(`ollama 127.0.0.1:11555: chat tiny-b: Post "http://127.0.0.1:11555/api/chat": dial tcp 127.0.0.1:11555: connect: connection refused (is the server running? try ` + "`halu doctor`)")
	if ca, cb := retryCause(a), retryCause(b); ca != cb || ca != "connection refused (is the server running?)" {
		t.Errorf("causes %q and %q", ca, cb)
	}
	if c := retryCause(errors.New("ollama h: chat m: 503 Service Unavailable: server busy")); c != "server busy" {
		t.Errorf("503: %q", c)
	}
}

// A session whose calls are all in the cache says so, rather than
// promising model calls it will not make.
func TestProgressLineSaysCached(t *testing.T) {
	e := &Engine{}
	e.init()
	var log bytes.Buffer
	p := newProgress(&log, false, 0, "smoke", 10, map[[2]string]int{{"judge", "j:latest"}: 20}, 20, e)
	p.Finish()
	if !strings.HasPrefix(log.String(), "smoke: 10 items to do, about 20 calls, every one in the cache\n") {
		t.Errorf("line %q", log.String())
	}
	log.Reset()
	p = newProgress(&log, false, 0, "smoke", 10, map[[2]string]int{{"judge", "j:latest"}: 20}, 5, e)
	p.Finish()
	if !strings.HasPrefix(log.String(), "smoke: 10 items to do, about 20 calls (about 5 of them in the cache)\n") {
		t.Errorf("line %q", log.String())
	}
}
