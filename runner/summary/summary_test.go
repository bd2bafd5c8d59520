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
