package summary

import (
	"strings"
	"testing"

	"halu/localmodels"
	"halu/runner/rundir"
)

// The schedule line gives the calls in flight and the slot use the run
// measured, overall and per server of a pool. By hand: 6 busy
// slot-seconds of 16 over 4 s is 1.50 calls in flight of 4 slots, 38%;
// each of two servers has half the slots (8 slot-seconds): 4 s busy is
// 50%, 2 s 25%.
func TestPrintSlotUse(t *testing.T) {
	var b strings.Builder
	s := &Summary{Counts: rundir.Counts{ModelCalls: 4, ModelSwitches: 2, BusySeconds: 6, SlotSeconds: 16, WorkSeconds: 4,
		Hosts: map[string]localmodels.HostCount{"a": {Calls: 3, Seconds: 4}, "b": {Calls: 1, Seconds: 2}}}}
	s.Print(&b)
	for _, want := range []string{
		"model switches: 2; calls in flight 1.50 on average of 4 slots, slot use 38% (over 4.0 s of work)",
		"calls per server: a 3 (slot use 50%), b 1 (slot use 25%)",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, b.String())
		}
	}
	// No work time, or a run answered from the cache alone: no figure.
	for _, c := range []rundir.Counts{{}, {CacheHits: 9, SlotSeconds: 16, WorkSeconds: 4}} {
		b.Reset()
		(&Summary{Counts: c}).Print(&b)
		if !strings.Contains(b.String(), "model switches: 0\n") {
			t.Errorf("counts %+v: a slot use without model calls:\n%s", c, b.String())
		}
	}
}

// TestPrintServerWait: the share of the timed generations' time spent
// queued at the server (hand-computed: 3 s of 12 s is 25%; a pool's server
// 1 s of 8 s is 12.5%), the warning from 20% and 10 ms a call on, and no
// figure when the server timed nothing (an OpenAI-compatible server).
func TestPrintServerWait(t *testing.T) {
	c := rundir.Counts{ModelCalls: 6, BusySeconds: 16, SlotSeconds: 16, WorkSeconds: 4, TimedCalls: 6, TimedSeconds: 12, WaitSeconds: 3, LoadSeconds: 1.25, QueueBackoffs: 2,
		Hosts: map[string]localmodels.HostCount{"a": {Calls: 4, Seconds: 8, Timed: 4, TimedSeconds: 8, WaitSeconds: 1}, "b": {Calls: 2, Seconds: 4}}}
	var b strings.Builder
	(&Summary{Counts: c}).Print(&b)
	for _, want := range []string{
		"server timing (6 generations the server timed): queued at the server 25% of their time, before it started on them; loading models 1.2 s; the server answered fewer calls at once than the 4 slots halu assumed (--parallel)",
		"halu doctor measures them); halu lowered its calls in flight by one 2 times for a call queued there most of its time (the server answers fewer calls at once than --parallel, or serves other clients too)\n",
		"calls per server: a 4 (slot use 100%, queued 12%), b 2 (slot use 50%)",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, b.String())
		}
	}
	c.WaitSeconds, c.QueueBackoffs = 2, 0 // 17%: no warning
	b.Reset()
	(&Summary{Counts: c}).Print(&b)
	if !strings.Contains(b.String(), "queued at the server 17% of their time, before it started on them; loading models 1.2 s\n") {
		t.Errorf("below 20%%, a warning or no figure:\n%s", b.String())
	}
	c.TimedSeconds, c.WaitSeconds = 0.012, 0.006 // 50%, but 1 ms a call: the server's own handling
	b.Reset()
	(&Summary{Counts: c}).Print(&b)
	if !strings.Contains(b.String(), "queued at the server 50% of their time, before it started on them; loading models 1.2 s\n") {
		t.Errorf("a warning from 1 ms a call, or no figure:\n%s", b.String())
	}
	c.TimedCalls, c.TimedSeconds, c.WaitSeconds = 0, 0, 0
	b.Reset()
	(&Summary{Counts: c}).Print(&b)
	if strings.Contains(b.String(), "server timing") || strings.Contains(b.String(), "prefix reuse") {
		t.Errorf("a server timing with nothing timed, or a prefix reuse nobody reported:\n%s", b.String())
	}
}

// TestPrintPrefixReuse: the share of the prompt tokens a server took from
// its prefix cache (hand-computed: 300 of 400 is 75%; a pool's servers 100
// of 200, 50%, and 200 of 200, 100%), where the server said it.
func TestPrintPrefixReuse(t *testing.T) {
	c := rundir.Counts{ModelCalls: 4, BusySeconds: 4, SlotSeconds: 8, WorkSeconds: 4, ReuseCalls: 4, ReusePromptTokens: 400, ReusedTokens: 300,
		Hosts: map[string]localmodels.HostCount{"a": {Calls: 2, Seconds: 2, ReusePrompt: 200, Reused: 100}, "b": {Calls: 2, Seconds: 2, ReusePrompt: 200, Reused: 200}}}
	var b strings.Builder
	(&Summary{Counts: c}).Print(&b)
	for _, want := range []string{
		"prefix reuse (4 generations the server said it for): 75% of their 400 prompt tokens came from its prefix cache",
		"calls per server: a 2 (slot use 50%, prefix reuse 50%), b 2 (slot use 50%, prefix reuse 100%)",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, b.String())
		}
	}
}
