package engine

import (
	"time"

	"halu/localmodels"
	"halu/runner/rundir"
)

// The run's books: what each session adds to the manifest's counts, the
// engine's counters, the judges' times and the hosts' calls.

// book adds the session to the manifest: its own counts under sessions
// (a resume that had nothing to do changes only the checked time), the
// run's totals over every session, and the number of records (what they
// count besides is added as their summary reads them: tallyRecords).
func (e *Engine) book(r *run, spec RunSpec, records int, failed int) {
	man := r.man
	now := time.Now().UTC()
	man.Ended = &now
	session := e.snapshot().Sub(r.base)
	session.Hosts = rundir.SubHosts(e.hostCounts(), r.hostBase)
	session.JudgeTime = rundir.SubJudgeTimes(e.judgeTimes(), r.judgeBase)
	if len(r.todo) == 0 && spec.Resume && r.prevEnded != nil {
		man.Ended, man.Checked = r.prevEnded, &now
	} else {
		if spec.Resume {
			man.Resumed = append(man.Resumed, r.sessionStart)
		}
		man.Sessions = append(man.Sessions, rundir.Session{Started: r.sessionStart, Ended: now, Args: spec.Invocation, Items: len(r.todo), Counts: session,
			Halu: e.Version, Offline: e.Offline()})
	}
	delta := session.Add(r.prev)
	man.Counts = rundir.Counts{
		Items:          r.items,
		Completed:      records,
		Failed:         failed,
		ModelCalls:     delta.ModelCalls,
		CacheHits:      delta.CacheHits,
		Retries:        delta.Retries,
		PromptTokens:   delta.PromptTokens,
		GeneratedToken: delta.GeneratedToken,

		StoppedBudget:     delta.StoppedBudget,
		StoppedRepetition: delta.StoppedRepetition,
		NearContext:       delta.NearContext,
		JudgeRepaired:     delta.JudgeRepaired,
		ModelSwitches:     delta.ModelSwitches,
		Backoffs:          delta.Backoffs,
		QueueBackoffs:     delta.QueueBackoffs,
		HeldSlots:         delta.HeldSlots,
		HoldsLapsed:       delta.HoldsLapsed,
		BusySeconds:       delta.BusySeconds,
		SlotSeconds:       delta.SlotSeconds,
		WorkSeconds:       delta.WorkSeconds,
		TimedCalls:        delta.TimedCalls,
		TimedSeconds:      delta.TimedSeconds,
		WaitSeconds:       delta.WaitSeconds,
		LoadSeconds:       delta.LoadSeconds,
		Reloads:           delta.Reloads,
		ReloadSeconds:     delta.ReloadSeconds,
		ReuseCalls:        delta.ReuseCalls,
		ReusePromptTokens: delta.ReusePromptTokens,
		ReusedTokens:      delta.ReusedTokens,

		CacheDamaged:       delta.CacheDamaged,
		CacheWriteFailures: delta.CacheWriteFailures,
		CacheUnchecked:     delta.CacheUnchecked,
		Hosts:              rundir.AddHosts(r.prev.Hosts, session.Hosts),
		JudgeTime:          rundir.AddJudgeTimes(r.prev.JudgeTime, session.JudgeTime),
	}
}

// tallyRecords adds to c what the records count: judgements unscored (and
// of those, replies that stated two values), calls whose prompt and reply
// ran past the window, and replies read other than the plain way. view is
// the records as the engine's part of their summary keeps them
// (engineView), which keeps all of that.
func tallyRecords(c *rundir.Counts, view []rundir.Record) {
	for _, rec := range view {
		c.JudgeFailures += len(rec.Failures)
		for _, f := range rec.Failures {
			if f.TwoValues {
				c.JudgeTwoValues++
			}
		}
		for _, cl := range rec.Calls {
			if cl.OverContext > 0 {
				c.OverContext++
			}
		}
		for _, rd := range rec.Readings {
			switch rd.How {
			case "fallback":
				c.TextFallbacks++
			case "disagree":
				c.ReaderDisagreements++
			case "held":
				c.HeldRepairs++
			}
		}
	}
}

func (e *Engine) snapshot() rundir.Counts {
	st := e.sched.state()
	use := st.use
	return rundir.Counts{
		ModelCalls:         int(e.stats.calls.Load()),
		CacheHits:          int(e.stats.hits.Load()),
		Retries:            int(e.stats.retries.Load()),
		JudgeFailures:      int(e.stats.judgeFailures.Load()),
		PromptTokens:       int(e.stats.promptTokens.Load()),
		GeneratedToken:     int(e.stats.evalTokens.Load()),
		StoppedBudget:      int(e.stats.budget.Load()),
		StoppedRepetition:  int(e.stats.repetition.Load()),
		NearContext:        int(e.stats.nearContext.Load()),
		JudgeRepaired:      int(e.stats.repaired.Load()),
		ModelSwitches:      st.switches,
		Backoffs:           st.lowered,
		QueueBackoffs:      st.eased,
		HeldSlots:          st.resumed,
		HoldsLapsed:        st.lapsed,
		BusySeconds:        use.busy,
		SlotSeconds:        use.slots,
		WorkSeconds:        use.span,
		TimedCalls:         int(e.stats.timed.Load()),
		TimedSeconds:       time.Duration(e.stats.timedNs.Load()).Seconds(),
		WaitSeconds:        time.Duration(e.stats.waitNs.Load()).Seconds(),
		LoadSeconds:        time.Duration(e.stats.loadNs.Load()).Seconds(),
		Reloads:            int(e.stats.reloads.Load()),
		ReloadSeconds:      time.Duration(e.stats.reloadNs.Load()).Seconds(),
		ReuseCalls:         int(e.stats.reuse.Load()),
		ReusePromptTokens:  int(e.stats.reusePrompt.Load()),
		ReusedTokens:       int(e.stats.reused.Load()),
		CacheDamaged:       e.cacheDamaged(),
		CacheWriteFailures: int(e.stats.cacheWriteFailures.Load()),
		CacheUnchecked:     e.cacheUnchecked(),
	}
}

// cacheDamaged is how many damaged cache entries the engine's cache has
// dropped and refetched.
func (e *Engine) cacheDamaged() int {
	if e.Cache == nil {
		return 0
	}
	return e.Cache.Damaged()
}

// cacheUnchecked is how many entries of an older halu, without a checksum,
// the engine's cache has dropped and refetched.
func (e *Engine) cacheUnchecked() int {
	if e.Cache == nil {
		return 0
	}
	return e.Cache.Unchecked()
}

// judgeTimes are the engine's judge times so far (a copy), by judge model.
func (e *Engine) judgeTimes() map[string]rundir.JudgeTime {
	e.judgeMu.Lock()
	defer e.judgeMu.Unlock()
	return rundir.AddJudgeTimes(e.judgeTime, nil)
}

// timeJudge adds one judge call's time (Counts.JudgeTime).
func (e *Engine) timeJudge(model string, took time.Duration, tm localmodels.Timing) {
	e.judgeMu.Lock()
	defer e.judgeMu.Unlock()
	if e.judgeTime == nil {
		e.judgeTime = map[string]rundir.JudgeTime{}
	}
	k := e.judgeTime[model]
	k.Calls++
	k.Seconds += took.Seconds()
	if tm.Known {
		k.ServerSeconds += (tm.Prompt + tm.Eval).Seconds()
	}
	e.judgeTime[model] = k
}

// hostCounts are the per-server counts of a pool (nil for one server).
func (e *Engine) hostCounts() map[string]localmodels.HostCount {
	if hc, ok := e.Client.(localmodels.HostCounter); ok {
		return hc.HostCounts()
	}
	return nil
}
