package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"halu/runner/rundir"
	"halu/runner/setting"
	"halu/runner/summary"
)

// shardOf returns the items of the shard, in the suite's order (all of
// them for a nil shard): see rundir.Shard.
func shardOf(sh *rundir.Shard, items []Item) []Item {
	if sh == nil || sh.N <= 1 {
		return items
	}
	var out []Item
	for k, in := range sh.Holds(len(items)) {
		if in {
			out = append(out, items[k])
		}
	}
	return out
}

// ErrShards marks shard runs that cannot be merged.
var ErrShards = errors.New("these runs cannot be merged")

// Merge joins the N shard runs in dirs (one run of one command line split
// with --shard I/N, every shard complete) into the run directory out, which
// report, compare and resume then read as any run: its records, errors,
// manifest (counts and sessions of all shards, the shards listed under
// merged_from) and summary, computed by s over every record. It refuses
// runs of other suites, configurations, protocols, readers or serving
// fingerprints, a missing or repeated shard, an unfinished one, and an item
// in two shards.
//
// Memory holds where each record is (its item, shard, offset and length),
// not the records: they are copied as written, in item order, and the
// summary is made from the merged file read without transcripts, as a
// run's end makes it.
func Merge(s Suite, dirs []string, out string) (*Result, error) {
	sh, err := readShards(s, dirs)
	if err != nil {
		return nil, err
	}
	mans := sh.mans
	// The merged run is made in a directory beside out and renamed to it
	// whole: a merge that is killed leaves no half-merged run (and the
	// next merge into out removes what it left).
	stage, err := rundir.NewStage(out)
	if err != nil {
		return nil, err
	}
	defer stage.Close()
	tmp := stage.Dir()

	man := *mans[0]
	man.Shard, man.MergedFrom, man.Sessions, man.Resumed = nil, nil, nil, nil
	man.Counts = rundir.Counts{}
	for i, m := range mans {
		abs, err := filepath.Abs(dirs[i])
		if err != nil {
			return nil, err
		}
		man.MergedFrom = append(man.MergedFrom, abs)
		man.Counts = sumCounts(man.Counts, m.Counts)
		man.Sessions = append(man.Sessions, m.Sessions...)
		man.Resumed = append(man.Resumed, m.Resumed...)
		man.Sample = append(man.Sample, m.Sample...)
		if m.Started.Before(man.Started) {
			man.Started = m.Started
		}
		if m.Ended != nil && (man.Ended == nil || m.Ended.After(*man.Ended)) {
			end := *m.Ended
			man.Ended = &end
		}
	}
	sort.Slice(man.Sessions, func(i, j int) bool { return man.Sessions[i].Started.Before(man.Sessions[j].Started) })
	sort.Strings(man.Sample)
	man.Checked = nil

	merged := filepath.Join(tmp, rundir.RecordsFile)
	if err := sh.copyRecords(merged); err != nil {
		return nil, err
	}
	var eb bytes.Buffer
	for _, d := range dirs {
		b, err := rundir.ReadFile(d, rundir.ErrorsFile)
		if err == nil {
			eb.Write(b)
		}
	}
	if err := rundir.WriteFileAtomic(filepath.Join(tmp, rundir.ErrorsFile), eb.Bytes()); err != nil {
		return nil, err
	}
	res := &Result{Dir: out, Counts: man.Counts, Manifest: &man}
	// A summary that cannot be made does not lose the merged records.
	sum, ms, serr := Summarize(s, &man, rundir.RecordsIn(merged))
	man.Measured = nil
	if serr == nil {
		man.Measured = &ms
	}
	if err := rundir.WriteManifest(tmp, &man); err != nil {
		return nil, err
	}
	if serr == nil {
		if err := summary.WriteSummary(tmp, sum); err != nil {
			return nil, err
		}
		res.Summary = sum
	}
	if err := stage.Place(); err != nil {
		return nil, err
	}
	return res, serr
}

// shards are the shard runs a merge reads: their directories and
// manifests, where each record is, and each records file as it was when
// read (its size and time).
type shards struct {
	dirs   []string
	mans   []*rundir.Manifest
	places []rundir.RecordPlace
	states []rundir.RecordsState
}

// readShards reads the shard runs in dirs and checks they are the N
// shards of one run of s (see Merge): their manifests, and where each
// record is, by item (each shard's records read one at a time).
func readShards(s Suite, dirs []string) (*shards, error) {
	if len(dirs) == 0 {
		return nil, fmt.Errorf("%w: no run given", ErrShards)
	}
	sh := &shards{dirs: dirs}
	seenShard := map[int]string{}
	for i, d := range dirs {
		m, err := rundir.ReadManifest(d)
		if err != nil {
			return nil, err
		}
		if m.Shard == nil {
			return nil, fmt.Errorf("%w: %s is not a shard (run with --shard I/N)", ErrShards, d)
		}
		if len(sh.mans) > 0 {
			if why := unlike(sh.mans[0], m); why != "" {
				return nil, fmt.Errorf("%w: %s and %s differ: %s", ErrShards, dirs[0], d, why)
			}
		}
		if m.Suite != s.Name {
			return nil, fmt.Errorf("%w: %s is a %s run, not %s", ErrShards, d, m.Suite, s.Name)
		}
		if prev, ok := seenShard[m.Shard.I]; ok {
			return nil, fmt.Errorf("%w: shard %s is both %s and %s", ErrShards, m.Shard, prev, d)
		}
		seenShard[m.Shard.I] = d
		if m.Status != "complete" {
			return nil, fmt.Errorf("%w: shard %s (%s) is %s: finish it first (halu run --resume %s)", ErrShards, m.Shard, d, m.Status, d)
		}
		var st rundir.RecordsState
		sh.places, st, err = rundir.PlaceRecords(d, i, sh.places)
		if err != nil {
			return nil, err
		}
		sh.mans, sh.states = append(sh.mans, m), append(sh.states, st)
	}
	n := sh.mans[0].Shard.N
	var missing []string
	for i := 1; i <= n; i++ {
		if _, ok := seenShard[i]; !ok {
			missing = append(missing, fmt.Sprintf("%d/%d", i, n))
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%w: shard %s missing", ErrShards, strings.Join(missing, ", "))
	}
	// An item recorded twice (in two shards, or twice in one): in item
	// order (stable: shards in the order given), its places are side by
	// side.
	sh.sort()
	for k := 1; k < len(sh.places); k++ {
		if a, b := sh.places[k-1], sh.places[k]; a.Item == b.Item {
			return nil, fmt.Errorf("%w: item %s is in %s and in %s", ErrShards, a.Item, dirs[a.Run], dirs[b.Run])
		}
	}
	return sh, nil
}

// sort puts the shards' places in item order (stable: one item's in the
// order read).
func (sh *shards) sort() {
	sort.SliceStable(sh.places, func(i, j int) bool { return sh.places[i].Item < sh.places[j].Item })
}

// copyRecords writes the shards' records, in item order, into the records
// file path, each line copied as written (rundir.CopyRecords); a shard
// changed since it was read is refused.
func (sh *shards) copyRecords(path string) error {
	sh.sort()
	err := rundir.CopyRecords(path, sh.dirs, sh.states, sh.places)
	if errors.Is(err, rundir.ErrRecordsChanged) {
		return fmt.Errorf("%w: a shard changed while it was merged (%w): merge again", ErrShards, err)
	}
	return err
}

// unlike says how two shard runs differ in what they measure ("" when
// they can be merged): suite, configuration, shard count, protocol,
// readers, serving fingerprints.
func unlike(a, b *rundir.Manifest) string {
	switch {
	case a.Suite != b.Suite:
		return fmt.Sprintf("suite %s vs %s", a.Suite, b.Suite)
	case a.Shard.N != b.Shard.N:
		return fmt.Sprintf("split into %d vs %d shards", a.Shard.N, b.Shard.N)
	case a.Shard.Seed != b.Shard.Seed:
		return fmt.Sprintf("items ordered by shard seed %d vs %d (each shard holds other items)", a.Shard.Seed, b.Shard.Seed)
	case a.Readers != b.Readers:
		return fmt.Sprintf("readers %s vs %s", a.Readers, b.Readers)
	case a.Protocol != b.Protocol:
		return fmt.Sprintf("protocol %s vs %s", a.Protocol, b.Protocol)
	}
	if diff, err := configDiff(a.Config, b.Config); err != nil || len(diff) > 0 {
		return fmt.Sprintf("configuration: %s", strings.Join(diff, "; "))
	}
	if diff := engineDiff(a, b); len(diff) > 0 {
		return fmt.Sprintf("engine settings: %s", strings.Join(diff, "; "))
	}
	fa, _ := json.Marshal(a.Serving.Fingerprints)
	fb, _ := json.Marshal(b.Serving.Fingerprints)
	if !bytes.Equal(fa, fb) {
		return fmt.Sprintf("serving fingerprints (server version, model digests, templates, context): %s vs %s", fa, fb)
	}
	return ""
}

// engineDiff names the engine settings that change what a run measures
// (--logprobs, --readers, --judge-repairs, the default sampling …) on which
// two runs differ. Which server each used is not among them: shards run on
// other machines, and their serving fingerprints are compared instead.
func engineDiff(a, b *rundir.Manifest) []string {
	ea, errA := Recorded(a)
	eb, errB := Recorded(b)
	if errA != nil || errB != nil {
		return []string{fmt.Sprintf("unreadable (%v, %v)", errA, errB)}
	}
	server := map[string]bool{}
	for _, s := range ea.ServerSettings() {
		server[s.Name] = true
	}
	vb := eb.Settings().Values()
	var out []string
	for _, s := range ea.Settings() {
		if s.Effect != setting.Measures || server[s.Name] {
			continue
		}
		if v := s.Value.String(); v != vb[s.Name] {
			out = append(out, fmt.Sprintf("--%s %s vs %s", s.Name, v, vb[s.Name]))
		}
	}
	return out
}

// sumCounts adds two runs' books.
func sumCounts(a, b rundir.Counts) rundir.Counts {
	c := a.Add(b)
	c.Items, c.Completed, c.Failed = a.Items+b.Items, a.Completed+b.Completed, a.Failed+b.Failed
	c.JudgeFailures = a.JudgeFailures + b.JudgeFailures
	c.TextFallbacks, c.ReaderDisagreements = a.TextFallbacks+b.TextFallbacks, a.ReaderDisagreements+b.ReaderDisagreements
	c.JudgeTwoValues, c.HeldRepairs = a.JudgeTwoValues+b.JudgeTwoValues, a.HeldRepairs+b.HeldRepairs
	c.Hosts = rundir.AddHosts(a.Hosts, b.Hosts)
	c.JudgeTime = rundir.AddJudgeTimes(a.JudgeTime, b.JudgeTime)
	return c
}
