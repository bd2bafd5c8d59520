package engine

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"time"

	"halu/localmodels"
	"halu/runner/rundir"
)

// Rerun makes a run recompute some model calls and reuse the others. Every
// call records its stage (generate, judge, decompose, verify, embed, …), so
// a rerun can name what to redo:
//
//   - Stage: calls of that stage are made with the rerun's settings (a new
//     judge, another format), and the stages an item reached before it in
//     the earlier run must come from the cache — a miss there is an error,
//     never a silent regeneration. That stage and later ones read the cache
//     as usual, so they are recomputed exactly when their requests changed:
//     a judge kept from the earlier run answers from the cache (--no-cache
//     asks it again).
//   - Fresh: per item, the calls made again, by stage and model (halu
//     rerun --errors: the judges whose judgements could not be scored).
type Rerun struct {
	Stage    string
	Upstream map[string]map[string]bool
	Fresh    map[string]map[string]bool
}

// ErrNotCached is returned when a rerun needs a reply from an earlier
// stage that is not in the cache.
var ErrNotCached = errors.New("reply not in the cache")

func (r *Rerun) fresh(item, stage, model string) bool {
	if r == nil {
		return false
	}
	return r.Fresh[item][freshKey(stage, model)]
}

func freshKey(stage, model string) string {
	return stage + "\x00" + localmodels.CanonicalName(model)
}

func (r *Rerun) cacheOnly(item, stage string) bool {
	return r != nil && r.Upstream[item][stage]
}

// ErrSourceUnfinished is a stage rerun of a run that is not complete: its
// missing items would be generated afresh, which a stage rerun promises
// not to do, and a comparison of the two runs would pair only the items
// the source holds.
var ErrSourceUnfinished = errors.New("a stage rerun needs a complete run")

// StageRerun plans a rerun of stage from an earlier run (its manifest m
// and records): for each item, the stages its calls went through before
// its first call of stage are reused from the cache. It fails when the
// run is not complete (running, interrupted, or with failed items: nothing
// is generated again, so every item must be there) and when no record has
// a call of stage, naming the stages there are.
func StageRerun(dir string, m *rundir.Manifest, recs []rundir.Record, stage string) (*Rerun, error) {
	if m.Status != "complete" {
		how := "finish it first: halu run --resume " + dir
		if m.Status == "running" {
			how = "a process is still working on it; wait for it to end"
		} else if m.Status == "incomplete" {
			how = "redo its failed items first: halu rerun " + dir + " --errors"
		}
		return nil, fmt.Errorf("%w: %s is %s, %d of its %d items recorded; %s", ErrSourceUnfinished, dir, m.Status, len(recs), m.Counts.Items, how)
	}
	r := &Rerun{Stage: stage, Upstream: map[string]map[string]bool{}}
	all := map[string]bool{}
	found := false
	for _, rec := range recs {
		up := map[string]bool{}
		for _, c := range rec.Calls {
			all[c.Stage] = true
			if c.Stage == stage {
				found = true
				break
			}
			up[c.Stage] = true
		}
		r.Upstream[rec.Item] = up
	}
	if !found {
		var names []string
		for s := range all {
			names = append(names, s)
		}
		sort.Strings(names)
		return nil, fmt.Errorf("no call of stage %q in this run; its stages: %v", stage, names)
	}
	// A stage can recur after stage within an item (a judge, then another
	// generation): only what came before the first call is upstream, and
	// stage itself is never.
	for _, up := range r.Upstream {
		delete(up, stage)
	}
	return r, nil
}

// ErrorsRerun prepares the run in dir for redoing its failed items: records
// with unscored judgements are set aside (the file is kept beside as
// records.jsonl.before-rerun-TIME) so that resuming redoes them, asking
// their failed stages afresh; items that failed outright are redone by any
// resume. It returns the plan and how many records were set aside.
//
// The run's lock is held while the records are read and rewritten, so a
// run still going in dir is refused before anything changes (the lock is
// released before returning: the resume takes it again).
func ErrorsRerun(dir string) (*Rerun, int, error) {
	release, err := rundir.LockDir(dir)
	if err != nil {
		return nil, 0, err
	}
	defer release()
	path := filepath.Join(dir, rundir.RecordsFile)
	recs, _, err := rundir.ReadRecords(path)
	if err != nil {
		return nil, 0, err
	}
	r := &Rerun{Fresh: map[string]map[string]bool{}}
	var keep []rundir.Record
	for _, rec := range recs {
		if len(rec.Failures) == 0 {
			keep = append(keep, rec)
			continue
		}
		st := map[string]bool{}
		for _, f := range rec.Failures {
			st[freshKey(f.Stage, f.Model)] = true
		}
		r.Fresh[rec.Item] = st
	}
	if len(r.Fresh) == 0 {
		return r, 0, nil
	}
	if err := rundir.SetAside(dir, rundir.RecordsFile, "before-rerun-"+time.Now().UTC().Format("20060102-150405")); err != nil {
		return nil, 0, fmt.Errorf("run %s: %w", dir, err)
	}
	out, err := rundir.MarshalJSONL(keep)
	if err != nil {
		return nil, 0, err
	}
	if err := rundir.WriteFileAtomic(path, out); err != nil {
		return nil, 0, fmt.Errorf("run %s: %w", dir, err)
	}
	return r, len(r.Fresh), nil
}
