package runner

import (
	"bytes"
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
	p := newProgress(&log, false, "hic", 3, e)
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
	for _, want := range []string{"hic 3/3 items", "judge", "qwen2.5:0.5b", "unscored 2", "failed 1", "retries 1"} {
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
