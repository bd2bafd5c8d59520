// Package engine is halu's one evaluation engine: how a run happens. A
// suite (Suite, declared once by a Declaration) says what its items are,
// which model calls each item makes and how records become a summary; the
// engine owns everything else: the worker pool and the scheduler that
// keeps the server's slots busy model by model, every model call (Calls:
// serving defaults, fingerprint, cache, shared identical requests, retries
// with back-off, transcripts), the judge contract (repair turns, then an
// unscored judgement with its raw replies), fitting prompts to the context
// window, progress, the dry run's plan, shards and merges, reruns, and
// writing the run directory (package rundir) as it goes, so that a run
// resumes where it stopped.
package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"

	"halu/localmodels"
	"halu/runner/judging"
	"halu/runner/rundir"
	"halu/runner/setting"
	"halu/runner/summary"
)

// Item is one unit of work of a suite, identified by a stable ID: the ID is
// what resume uses to know the item is done.
type Item struct {
	ID      string
	Payload any
	// Group, when set, names the model the item's calls are mostly for
	// (the model under test): the engine starts items group by group, so
	// that one model's calls reach the server back to back rather than
	// one call per model in turn (see feedOrder).
	Group string
	// Share, when set, names what the item's prompts have in common with
	// other items' (one question asked at several temperatures, say):
	// within its group, the items of one Share start together, so that
	// their calls wait at once and the scheduler sends them back to back,
	// the server reading their common prompt once (see scheduler).
	Share string
}

// feedOrder is the order the engine starts items in: group by group, the
// groups in the order of their first item; within a group, the items of
// one Share together, in the order of each Share's first item; otherwise
// items keep their own order. A suite lists items as its tables read
// (question by question, say); a server that holds few models at once
// answers them fastest model by model, each model loaded once, and reads
// a prompt once when the calls that share it come together. group names
// the group an item's Group stands for: the models' load (loadKey), so that
// aliases of one set of weights — one load — are one group, and their
// items that share a prompt (one question for each alias) start together.
// Only the start order changes: shards and records do not depend on it.
// It returns todo's positions in that order (todo is left as it is).
func feedOrder(todo []Item, group func(string) string) []int32 {
	// Each item's place: its group's first item, and its Share's first
	// item within the group (its own when it has no Share).
	type place struct{ group, share int32 }
	first, firstShare := map[string]int32{}, map[[2]string]int32{}
	at := make([]place, len(todo))
	for i, it := range todo {
		g := group(it.Group)
		p := place{int32(i), int32(i)}
		if f, ok := first[g]; ok {
			p.group = f
		} else {
			first[g] = p.group
		}
		if it.Share != "" {
			k := [2]string{g, it.Share}
			if f, ok := firstShare[k]; ok {
				p.share = f
			} else {
				firstShare[k] = p.share
			}
		}
		at[i] = p
	}
	order := make([]int32, len(todo))
	for i := range order {
		order[i] = int32(i)
	}
	sort.SliceStable(order, func(i, j int) bool {
		a, b := at[order[i]], at[order[j]]
		if a.group != b.group {
			return a.group < b.group
		}
		return a.share < b.share
	})
	return order
}

// Suite is one benchmark as the engine runs it — the suite's contract as
// data, in the manner of Inspect's Task(dataset, solver, scorer): each
// suite package builds one in a single place (its Task method), so what
// a suite has is read where it is declared. A field left nil is a part
// the suite does not have; a new optional part is one field here and one
// line in the suites that have it. runner/smoke is the template: its
// Task fills the parts smoke needs, and its TestEveryPartOfATask runs a
// smoke Task with every other part added, showing what the engine makes
// of each (it fails on a field it does not show).
type Suite struct {
	// Name is the suite's declared name (Declaration.Name): the manifest's
	// suite, checked on resume and merge.
	Name string

	// Required.

	// Models lists every model the suite will call, so the engine can
	// check they exist and record their digests before any work starts.
	Models func() []string
	// Items are the suite's items, each with an ID unique in the run.
	Items func(ctx context.Context) ([]Item, error)
	// Process runs every model call an item needs through c and returns
	// the item's data (any JSON-encodable value).
	Process func(ctx context.Context, c *Calls, it Item) (any, error)
	// Summarize turns records into metrics and tables.
	// The records are read one at a time (rundir.Records): a summary
	// keeps what it makes of them (rundir.DecodeSorted), in item order.
	Summarize func(recs *rundir.Records) (*summary.Summary, error)

	// Optional: each part a suite's paper needs.

	// Paper names the publication whose benchmark the suite implements
	// (authors, title) and the authors' code it follows where the paper is
	// silent; the manifest records it and the report shows it beside the
	// run's provenance, so a reader knows which tables "the paper's
	// protocol" means. Empty for halu's own suites (smoke, judge
	// validation).
	Paper string

	// Prompts and Datasets are its prompt templates and data files, which
	// the manifest records by hash (the engine computes the hashes: a
	// suite gives the text and its source) and a resume checks.
	Prompts  func() map[string]rundir.PromptInfo
	Datasets func() []string
	// Departures are where its method departs from the paper's in ways
	// no setting turns off: halu's design where the paper gives none, and
	// what the offline setting makes impossible. Every run records them
	// (Manifest.Methods) and its summary and report name them.
	Departures func() []string
	// DepartureScopes gives, by departure (its text), the scope — a key of
	// the summary's Scopes, which Summarize counts from the records —
	// whose items it touches. A departure whose scope holds no item of the
	// run cannot apply: the summary sets it aside with the reason.
	DepartureScopes func() map[string]string
	// Sample lists the items a --limit sample drew (Manifest.Sample).
	Sample func() []string
	// Window is the context window its prompts need, asked before the
	// first item (see sizeWindow).
	Window func(ctx context.Context, c *Calls) (int, error)
	// MetricNames are the last parts of its summary's keys, so that a gate
	// naming none of them is refused before the run (summary.CheckGateNames).
	MetricNames func() []string
	// OtherReading returns its records with the reading of judge replies
	// that did not decide them in place of the deciding one, for the
	// figures shown beside the headline (summary.AddBeside).
	OtherReading func(recs *rundir.Records) *rundir.Records
	// Flag flags its records for the report's sample browser
	// (summary.RecordFlags).
	Flag func(rec rundir.Record) (summary.Flags, error)
	// Outcomes are its records' outcomes unit by unit, for halu compare.
	Outcomes func(recs *rundir.Records) ([]summary.Outcome, error)
	// Close closes the stores it opened (an index, a graph), on every way
	// out of a run.
	Close func() error
}

// close closes what s opened, when it opened anything.
func (s Suite) close() {
	if s.Close != nil {
		s.Close()
	}
}

// CheckGates refuses a gate whose metric can be no metric of the suite's
// summary (summary.CheckGateNames), before the first model call: its
// metric names and the confidence figures' (summary.ConfidenceMetrics),
// which any suite makes where its answers carry a score.
func (s Suite) CheckGates(gates []summary.Gate) error {
	var known []string
	if s.MetricNames != nil {
		known = slices.Concat(s.MetricNames(), summary.ConfidenceMetrics)
	}
	return summary.CheckGateNames(s.Name, known, gates)
}

// check refuses a suite missing a required part: a programming error,
// found before any work.
func (s Suite) check() error {
	switch {
	case s.Name == "":
		return fmt.Errorf("suite without a name")
	case s.Models == nil || s.Items == nil || s.Process == nil || s.Summarize == nil:
		return fmt.Errorf("suite %s: Models, Items, Process and Summarize are required", s.Name)
	}
	return nil
}

// Retry is the backoff between attempts at a call that failed with a
// transient error (unreachable server, timeouts, 5xx); how many attempts
// is the --retries setting (EngineConfig.Retries).
type Retry struct {
	Base time.Duration // first wait
	Max  time.Duration // longest wait
}

// Engine runs suites. Make one with New; a test may fill one in directly
// (Client, Config, and Cache unless caching is unwanted).
type Engine struct {
	// Client is the model server: Ollama's native API (*localmodels.Client),
	// an OpenAI-compatible one (*localmodels.OpenAI) or a pool of either.
	Client localmodels.Backend
	Cache  *Cache
	// Config is the engine's settings, declared once (EngineConfig.Settings):
	// the engine reads them from here, and the manifest records them as they
	// are (Manifest.Engine). A suite's Window raises Config.NumCtx
	// before the run is described.
	Config EngineConfig
	// Retry is the backoff between attempts (default 1 s doubling to 20 s).
	Retry Retry
	// SyncEvery bounds how much of records.jsonl a power cut may lose.
	SyncEvery time.Duration
	// Log receives progress and warnings (stderr); Interactive draws bars.
	Log         io.Writer
	Interactive bool
	// ServerLog is the log file of a server halu started itself
	// (ServerLogEnv): a crash's lines are quoted from it.
	ServerLog string
	// Columns is the terminal's width, which the progress line keeps
	// within (0: unknown).
	Columns int
	Version string
	// Reask, when set, asks a share of the calls the cache answers again,
	// live (halu verify).
	Reask *Reask

	models sync.Map // name -> localmodels.ModelInfo
	// answered holds the loads (loadKey) that answered a generation of
	// the run: a load reported for a later call of one is a reload — of
	// any name of its weights (an alias's first call, its weights having
	// answered under another name, reloads them).
	answered sync.Map
	ratios   sync.Map // name -> the model's tokens per cl100k token (Fit)
	calibMu  sync.Map // name -> *sync.Mutex: one calibration call per model
	flights  singleflight.Group
	// asking counts the callers in ask per key (flights).
	askMu  sync.Mutex
	asking map[string]int
	// embeds gathers embedding requests (embed).
	embeds embedBatches
	sched  *scheduler
	now    atomic.Pointer[activity] // the latest call admitted: shown by progress
	prog   atomic.Pointer[progress] // the running display, which log lines go through
	once   sync.Once
	tok    Tokenizer
	stats  stats
	// judgeTime is the time of the judges' calls, by model (judgeMu).
	judgeMu   sync.Mutex
	judgeTime map[string]rundir.JudgeTime

	verMu      sync.Mutex
	serverVers string
	// offline is set when no server answered and the cache holds every
	// model's served record: the run works from the cache alone.
	offline atomic.Bool
	// offlineSeen is when the fingerprints an offline engine uses were
	// recorded.
	offlineSeen *time.Time
	// slots is how many calls may be in flight on the server: --parallel
	// for each of its servers (init).
	slots int
}

// New returns an engine built from its settings and the server it calls
// (localmodels.DialAll), with the response cache the settings name
// opened unless they turn it off.
func New(cfg EngineConfig, client localmodels.Backend) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	e := &Engine{Client: client, Config: cfg}
	if cfg.Verify > 0 {
		e.Reask = &Reask{Share: cfg.Verify, Seed: 1, Keep: true}
	}
	if !cfg.NoCache {
		c, err := OpenCache(cfg.Cache)
		if err != nil {
			return nil, err
		}
		e.Cache = c
	}
	return e, nil
}

// repetition is the loop check asked of every generation: --repetition-stop
// spans over 200 bytes (none when 0).
func (e *Engine) repetition() localmodels.Repetition {
	if e.Config.Repeats <= 0 {
		return localmodels.Repetition{}
	}
	return localmodels.Repetition{MinRepeats: e.Config.Repeats, MinChars: localmodels.DefaultRepetition.MinChars, MaxSpan: localmodels.DefaultRepetition.MaxSpan}
}

// logf writes a log line; while a run's progress is shown, above it.
func (e *Engine) logf(format string, a ...any) {
	line := fmt.Sprintf(format, a...)
	if p := e.prog.Load(); p != nil {
		p.print(line)
		return
	}
	fmt.Fprint(e.Log, line)
}

// called counts a finished call (made or from the cache) in the progress.
func (e *Engine) called(stage, model string) {
	if p := e.prog.Load(); p != nil {
		p.call(stage, localmodels.CanonicalName(model))
	}
}

// activity is the stage and model of the call the scheduler admitted last.
type activity struct{ stage, model string }

// calling notes that a model call for stage has been admitted.
func (e *Engine) calling(stage, model string) {
	e.now.Store(&activity{stage: stage, model: localmodels.CanonicalName(model)})
}

type stats struct {
	calls, hits, retries, judgeFailures, promptTokens, evalTokens atomic.Int64
	budget, repetition, nearContext, repaired                     atomic.Int64
	cacheWriteFailures                                            atomic.Int64
	// timed counts the generations the server timed; timedNs, waitNs and
	// loadNs sum their time at halu, their wait for a server slot and
	// their model loads (rundir.Counts.TimedCalls and what follows);
	// reloads and reloadNs count and sum the model loads the server
	// reported for calls whose weights and runner settings (loadKey) had
	// answered a call of the run before (Engine.answered).
	timed, timedNs, waitNs, loadNs atomic.Int64
	reloads, reloadNs              atomic.Int64
	// reuse counts the generations whose server said how much of their
	// prompt came from its prefix cache: reused of reusePrompt tokens.
	reuse, reusePrompt, reused atomic.Int64
}

// readers is the engine's choice of readers, ReadersHalu (the careful
// readers) when unset.
func (e *Engine) readers() string {
	if e.Config.Readers == "" {
		return judging.ReadersHalu
	}
	return e.Config.Readers
}

func (e *Engine) init() {
	e.once.Do(func() {
		// Each server of a pool has --parallel slots.
		e.slots = max(e.Config.Parallel, 1)
		if p, ok := e.Client.(interface{ Size() int }); ok {
			e.slots *= p.Size()
		}
		if e.Retry.Base <= 0 {
			e.Retry = Retry{Base: time.Second, Max: 20 * time.Second}
		}
		if e.SyncEvery <= 0 {
			e.SyncEvery = time.Second
		}
		if e.Log == nil {
			e.Log = io.Discard
		}
		// Workers, retries and the progress display all write here.
		e.Log = &lockedWriter{w: e.Log}
		e.sched = newScheduler(e.slots)
		e.tok.store = e.Cache // token counts kept beside the replies
	})
}

// RunSpec says where a run goes and how it was asked for.
type RunSpec struct {
	Dir    string
	Resume bool
	Args   []string
	Config any
	// Rerun, when set, says which calls to make again (see Rerun).
	Rerun *Rerun
	// DryRun works out the plan (Result.Plan) and writes nothing.
	DryRun bool
	// Flags are the effective values of every command-line setting (from
	// flags, HALU_ environment variables or a run file), for the manifest.
	Flags map[string]string
	// Invocation is this invocation's command line (a resume's own, where
	// Args stays the run's), for the manifest's sessions.
	Invocation []string
	// Shard, when set, runs only that slice of the items (a resume keeps
	// the run's own).
	Shard *rundir.Shard
	// Verifies, when set, is the run this one verifies (halu verify, with
	// the engine's Reask): the models and files must be, by content, the
	// ones it was made with, checked before the first call as a resume's.
	Verifies *Verified
	// RunFile, when set, is written to the new run's directory as
	// run.yaml: a run file (halu run -f) that repeats what the run
	// measures.
	RunFile []byte
}

// Verified is a run being verified: its directory and manifest.
type Verified struct {
	Dir      string
	Manifest *rundir.Manifest
}

// Result is what a run did.
type Result struct {
	Plan     *Plan // a dry run's
	Dir      string
	Counts   rundir.Counts
	Summary  *summary.Summary
	Manifest *rundir.Manifest
}

// ErrInterrupted is returned when the context was cancelled mid-run; what
// completed is on disk and the run can be resumed.
var ErrInterrupted = errors.New("run interrupted")

// protocol is the run's protocol, its departures from the paper's and the
// values halu chose where the paper is silent, from the settings of cfg (a
// suite's config, when it declares settings). How judge replies are read is
// not among them: the protocol is what the judge is asked, and both
// readings are shown.
func (e *Engine) protocol(cfg any) (string, []setting.Departure, []setting.Assumption) {
	c, ok := cfg.(setting.Config)
	if !ok {
		return "", nil, nil
	}
	list := c.Settings()
	p := list.ProtocolOf()
	if p == "" {
		return "", nil, list.Assumptions()
	}
	return p, list.Departures(), list.Assumptions()
}

// ErrIncomplete is returned when some items failed; resume redoes them.
var ErrIncomplete = errors.New("run incomplete")

// Run runs suite s into spec.Dir, or resumes the run there: the run
// directory is opened (and locked) and its manifest described before any
// work — the server and every model checked, their fingerprints, prompts,
// data and settings recorded —, the items not yet done are worked
// through, records appended as they complete, and the session is booked
// into the manifest and the summary written.
func (e *Engine) Run(ctx context.Context, s Suite, spec RunSpec) (*Result, error) {
	e.init()
	// Stores a suite opened (index, knowledge graph) close on every way
	// out, a refusal before the first item and a dry run included: a
	// library caller's next run on the same files would otherwise wait on
	// their locks.
	defer s.close()
	if err := s.check(); err != nil {
		return nil, err
	}
	if spec.DryRun {
		p, err := e.dryRun(ctx, s, spec.Shard, spec.Config)
		return &Result{Plan: p, Dir: spec.Dir}, err
	}
	r, release, err := e.open(s, spec)
	if err != nil {
		return nil, err
	}
	started := false
	defer func() {
		release()
		if r.fresh && !started {
			// Refused before its first item (no server, a model
			// missing, a bad input): the directory this run made holds
			// only its lock, and goes.
			rundir.Discard(spec.Dir)
		}
	}()
	if err := e.describe(ctx, r.man, s, spec); err != nil {
		return nil, err
	}
	if err := r.plan(ctx, s); err != nil {
		return nil, err
	}
	if err := e.start(r, spec); err != nil {
		return nil, err
	}
	started = true
	failed, runErr := e.workInto(ctx, r, s, spec.Rerun)
	return e.finish(r, s, spec, failed, runErr)
}

// plan lists the run's items (its shard's; an ID twice is an error) and
// those left to do.
func (r *run) plan(ctx context.Context, s Suite) error {
	items, err := s.Items(ctx)
	if err != nil {
		return fmt.Errorf("%s: items: %w", s.Name, err)
	}
	items = shardOf(r.man.Shard, items)
	r.items = len(items)
	// The items not done are kept in the list's own room (each is moved to
	// a place at or before its own, already read): a run holds its items
	// once.
	seen := make(map[string]bool, len(items))
	todo := items[:0]
	for _, it := range items {
		if seen[it.ID] {
			return fmt.Errorf("%s: item ID %q appears twice", s.Name, it.ID)
		}
		seen[it.ID] = true
		if !r.done[it.ID] {
			todo = append(todo, it)
		}
	}
	clear(items[len(todo):]) // the done items' payloads go
	r.todo = todo
	return nil
}

// start opens the session: the manifest says running (with the run file
// beside a new run), and the books before it are kept, so that a resume
// adds its calls to those recorded and one that has nothing to do keeps
// the run's end.
func (e *Engine) start(r *run, spec RunSpec) error {
	man := r.man
	r.sessionStart = time.Now().UTC()
	r.prevEnded = man.Ended
	if spec.Resume {
		r.prev = man.Counts
	}
	man.Status = "running"
	man.Counts.Items = r.items
	man.Ended = nil
	if err := rundir.WriteManifest(r.dir, man); err != nil {
		return fmt.Errorf("run %s: %w", r.dir, err)
	}
	if !spec.Resume && spec.RunFile != nil {
		if err := rundir.WriteFileAtomic(filepath.Join(r.dir, rundir.RunFileName), spec.RunFile); err != nil {
			return fmt.Errorf("run %s: %w", r.dir, err)
		}
	}
	if spec.Resume {
		fmt.Fprintf(e.Log, "resuming %s: %d of %d items already done\n", r.dir, r.items-len(r.todo), r.items)
	}
	return nil
}

// workInto works through the items left to do, appending their records
// and errors, and closes the suite's stores.
func (e *Engine) workInto(ctx context.Context, r *run, s Suite, rerun *Rerun) (int, error) {
	w, err := rundir.OpenRecordWriter(r.recPath, r.goodSize, e.SyncEvery)
	if err != nil {
		return 0, fmt.Errorf("run %s: %w", r.dir, err)
	}
	ew, err := rundir.OpenAppend(r.dir, rundir.ErrorsFile)
	if err != nil {
		w.Close()
		return 0, fmt.Errorf("run %s: %w", r.dir, err)
	}
	r.base = e.snapshot()
	r.hostBase = e.hostCounts()
	r.judgeBase = e.judgeTimes()
	failed, runErr := e.work(ctx, s, r.todo, w, ew, rerun)
	s.close() // stores a suite opened (index, knowledge graph)
	r.records += w.Appended()
	cerr := w.Close()
	ew.Close()
	if runErr == nil && cerr != nil {
		runErr = fmt.Errorf("run %s: records: %w", r.dir, cerr)
	}
	return failed, runErr
}

// finish books the session into the manifest — its counts, the run's
// totals, its status — and writes the summary of every record.
func (e *Engine) finish(r *run, s Suite, spec RunSpec, failed int, runErr error) (*Result, error) {
	man := r.man
	n := r.records
	e.book(r, spec, n, failed)
	// The items are booked and not read again: their memory (payloads,
	// prompts' parts) goes to the summary.
	items := r.items
	r.todo, r.done = nil, nil
	switch {
	case errors.Is(runErr, ErrInterrupted):
		man.Status = "interrupted"
	case runErr != nil || n < items:
		man.Status = "incomplete"
	default:
		man.Status = "complete"
	}
	var sum *summary.Summary
	man.Measured = nil
	if n > 0 {
		recs := rundir.RecordsIn(r.recPath)
		var ms rundir.Measured
		var view []rundir.Record
		var err error
		sum, ms, view, err = summarize(s, man, recs)
		if err != nil {
			if view, verr := viewOf(recs); verr == nil {
				tallyRecords(&man.Counts, view)
			}
			rundir.WriteManifest(r.dir, man)
			return &Result{Dir: r.dir, Counts: man.Counts, Manifest: man}, err
		}
		tallyRecords(&man.Counts, view)
		sum.Counts = man.Counts
		man.Measured = &ms
	}
	res := &Result{Dir: r.dir, Counts: man.Counts, Manifest: man, Summary: sum}
	if err := rundir.WriteManifest(r.dir, man); err != nil && runErr == nil {
		runErr = err
	}
	if sum != nil {
		if err := summary.WriteSummary(r.dir, sum); err != nil && runErr == nil {
			runErr = err
		}
	}
	switch {
	case runErr == nil && man.Status == "incomplete":
		runErr = fmt.Errorf("%w: %d of %d items failed (see %s); resume with: halu run --resume %s",
			ErrIncomplete, items-n, items, filepath.Join(r.dir, rundir.ErrorsFile), r.dir)
	case runErr != nil:
		runErr = fmt.Errorf("%w\n%d of %d items are saved in %s; resume with: halu run --resume %s",
			runErr, n, items, r.dir, r.dir)
	}
	return res, runErr
}

// work runs todo on the worker pool. An item whose model call fails after
// its retries is logged to errors.jsonl and counted; a server that cannot be
// reached at all stops the run, since every further item would fail too.
func (e *Engine) work(ctx context.Context, s Suite, todo []Item, w *rundir.RecordWriter, ew *rundir.RecordWriter, rerun *Rerun) (int, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	estimate, cached := e.estimateCalls(ctx, s, todo)
	prog := newProgress(e.Log, e.Interactive, e.Columns, s.Name, len(todo), estimate, cached, e)
	e.prog.Store(prog)
	defer func() {
		e.prog.Store(nil)
		prog.Finish()
	}()

	if len(todo) > 0 {
		e.sched.working(true)
		defer e.sched.working(false)
	}
	jobs := make(chan Item)
	var failed atomic.Int64
	var wg sync.WaitGroup
	// auto raises the items in flight when --items-in-flight is 0.
	var auto *itemsAuto
	workers := e.Config.ItemsInFlight
	if workers > 0 {
		workers = max(workers, e.slots)
	} else {
		workers = max(defaultItemsInFlight, e.slots)
		auto = &itemsAuto{n: workers, limit: max(workers, min(maxRaise*workers, len(todo)))}
		auto.reloads, auto.reloadNs, auto.ns = e.stats.reloads.Load(), e.stats.reloadNs.Load(), e.stats.timedNs.Load()
	}
	var spawn func(n int)
	worker := func() {
		defer wg.Done()
		for it := range jobs {
			calls := &Calls{e: e, item: it.ID, rerun: rerun}
			e.embeds.working.Add(1)
			ictx, unhold := e.itemHold(ctx)
			data, err := s.Process(ictx, calls, it)
			unhold()
			e.embeds.working.Add(-1)
			if ctx.Err() != nil {
				continue // interrupted: the item is redone on resume
			}
			if err != nil {
				failed.Add(1)
				msg := fmt.Sprintf("item %s: %v", it.ID, err)
				e.logf("%s\n", msg)
				_ = ew.Append(rundir.ItemError{Item: it.ID, Error: err.Error(), Time: time.Now().UTC()})
				var input interface{ InputError() bool }
				switch {
				case errors.Is(err, ErrServerDied):
					cancel(fmt.Errorf("item %s: %w; the run stopped (its records are kept: start the server again, without this model if it crashes it, and resume)", it.ID, err))
				case localmodels.IsUnreachable(err):
					cancel(fmt.Errorf("%s: %w", msg, errUnreachable))
				case errors.As(err, &input) && input.InputError():
					// A damaged input (a kg.db) fails every item
					// after this one too: stop, and say what to fix.
					cancel(fmt.Errorf("%s: the run stopped: %w", msg, err))
				}
				prog.Fail()
				continue
			}
			raw, err := json.Marshal(data)
			if err != nil {
				cancel(fmt.Errorf("item %s: encode record: %w", it.ID, err))
				continue
			}
			rec := rundir.Record{Format: rundir.FormatVersion, Suite: s.Name, Item: it.ID, Data: raw, Calls: calls.logs(), Failures: calls.failures(), Readings: calls.readings(), Verdicts: calls.verdicts(), Prompts: calls.promptTexts()}
			if err := w.Append(rec); err != nil {
				cancel(fmt.Errorf("write record: %w", err))
				continue
			}
			prog.Add(1)
			if auto != nil {
				if add, n := auto.completed(&e.stats); add > 0 {
					e.logf("items in flight raised by %d to %d: reloading models took more than %.0f%% of the calls' time (the server holds fewer models than the run calls)\n",
						add, n, 100*reloadShare)
					spawn(add)
				}
			}
		}
	}
	spawn = func(n int) {
		for range n {
			wg.Add(1)
			go worker()
		}
	}
	spawn(workers)
feed:
	for _, i := range feedOrder(todo, e.groupOf) {
		select {
		case jobs <- todo[i]:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		return int(failed.Load()), cause
	}
	if ctx.Err() != nil {
		return int(failed.Load()), ErrInterrupted
	}
	return int(failed.Load()), nil
}

// groupOf is the group of items whose Group is g: the load of the model
// g names (loadKey: aliases of one set of weights are one), or g itself
// when it names no model the engine has met.
func (e *Engine) groupOf(g string) string {
	if _, ok := e.models.Load(g); ok {
		return e.loadKey(g, localmodels.Options{})
	}
	return g
}

func uniqueSorted(xs []string) []string {
	m := map[string]bool{}
	var out []string
	for _, x := range xs {
		if x != "" && !m[x] {
			m[x] = true
			out = append(out, x)
		}
	}
	sort.Strings(out)
	return out
}

func sortRecords(recs []rundir.Record) []rundir.Record {
	sort.SliceStable(recs, func(i, j int) bool { return recs[i].Item < recs[j].Item })
	return recs
}

// ReadRun reads a run directory's manifest and records, sorted by item.
func ReadRun(dir string) (*rundir.Manifest, []rundir.Record, error) {
	m, err := rundir.ReadManifest(dir)
	if err != nil {
		return nil, nil, err
	}
	recs, _, err := rundir.ReadRecords(filepath.Join(dir, rundir.RecordsFile))
	if err != nil {
		return nil, nil, err
	}
	return m, sortRecords(recs), nil
}

// Stats returns the engine's running totals: model calls, cache hits,
// retries, unscored judgements and tokens, over its whole life.
func (e *Engine) Stats() rundir.Counts { e.init(); return e.snapshot() }

// lockedWriter serialises writes to a log shared by the engine's workers.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// applicableMethods splits a run's method departures into those that
// apply and those whose scope (DepartureScopes) holds no item of the run's
// records (scopes: Summary.Scopes), the latter with the reason. A scope the
// summary did not count is not known to be empty: its departures apply.
func applicableMethods(s Suite, methods []string, scopes map[string]int) (apply, not []string) {
	if s.DepartureScopes == nil {
		return methods, nil
	}
	by := s.DepartureScopes()
	for _, m := range methods {
		scope := by[m]
		if n, counted := scopes[scope]; scope != "" && counted && n == 0 {
			not = append(not, fmt.Sprintf("%s (the run's records hold no %s item)", m, scope))
			continue
		}
		apply = append(apply, m)
	}
	return apply, not
}

// Summarize is the run's summary: the suite's tables and metrics over recs,
// with the engine's counts and notes (readings, thinking, model identity,
// protocol, assumptions), and what its headline figures rest on
// (summary.Measure). The suite reads the records once (ranging over them
// as it likes, keeping what it makes of them); the engine's own part is
// made from what it keeps of each record as the suite's reading passes by
// (engineView), so the records are read once, and never all held.
func Summarize(s Suite, man *rundir.Manifest, recs *rundir.Records) (*summary.Summary, rundir.Measured, error) {
	sum, ms, _, err := summarize(s, man, recs)
	return sum, ms, err
}

// summarize is Summarize, with the records as the engine's part kept them
// (engineView), sorted by item.
func summarize(s Suite, man *rundir.Manifest, recs *rundir.Records) (*summary.Summary, rundir.Measured, []rundir.Record, error) {
	var view []rundir.Record
	viewed := false
	tee := rundir.RecordsFunc(func(yield func(rundir.Record) bool) error {
		var v []rundir.Record
		whole := true
		for r := range recs.All() {
			if !viewed {
				if k, ok := engineView(r); ok {
					v = append(v, k)
				}
			}
			if !yield(r) {
				whole = false
				break
			}
		}
		if err := recs.Err(); err != nil {
			return err
		}
		if whole && !viewed {
			view, viewed = v, true
		}
		return nil
	})
	sum, err := s.Summarize(tee)
	if err != nil {
		return nil, rundir.Measured{}, nil, fmt.Errorf("%s: summary: %w", s.Name, err)
	}
	if !viewed { // the suite did not read every record
		if view, err = viewOf(recs); err != nil {
			return nil, rundir.Measured{}, nil, fmt.Errorf("%s: summary: %w", s.Name, err)
		}
	}
	view = sortRecords(view)
	sum.Counts = man.Counts
	sum.TinyModel = man.TinyModel
	sum.Readers = man.Readers
	if sum.Readers == "" {
		sum.Readers = judging.ReadersPaper // runs before the choice was recorded
	}
	if err := summary.AddBeside(sum, s.Summarize, s.OtherReading, recs, view, sum.Readers); err != nil {
		return nil, rundir.Measured{}, nil, fmt.Errorf("%s: summary: %w", s.Name, err)
	}
	for _, r := range view {
		for _, c := range r.Calls {
			if c.Kind == "judge" || c.Kind == "repair" {
				sum.JudgeReplies++
			}
		}
	}
	families := map[string]string{}
	for _, m := range man.Models {
		if m.Family != "" {
			families[localmodels.CanonicalName(m.Name)] = m.Family
		}
	}
	card, notes := summary.JudgeCard(view, families, man.Counts.JudgeTime)
	sum.Tables = append(sum.Tables, card...)
	if lt, ok := summary.LogprobTable(view); ok {
		sum.Tables = append(sum.Tables, lt)
	}
	sum.Notes = append(sum.Notes, notes...)
	sum.Notes = append(sum.Notes, summary.ReadingNotes(view, man.Readers)...)
	sum.Notes = append(sum.Notes, summary.ThinkingNotes(view)...)
	if n := summary.ReaskedNote(view); n != "" {
		sum.Notes = append(sum.Notes, n)
	}
	sum.Notes = append(sum.Notes, identityNotes(man)...)
	if man.Server.Offline {
		seen := "when a server last served them"
		if man.Server.Seen != nil {
			seen = "as of " + man.Server.Seen.Format(time.RFC3339)
		}
		sum.Notes = append(sum.Notes, fmt.Sprintf("offline: no server was reachable; every call of the session came from the response cache, with the models' fingerprints and the server's version (%s) as the cache recorded them %s, not checked against a server", man.Server.Version, seen))
	}
	sum.Notes = append(sum.Notes, sessionNotes(man)...)
	if man.Protocol != "" {
		sum.Protocol, sum.Departures = man.Protocol, man.Departures
		sum.Notes = append(sum.Notes, summary.DepartureNote(man.Protocol, man.Departures))
	}
	sum.Methods, sum.MethodsInapplicable = applicableMethods(s, man.Methods, sum.Scopes)
	if len(sum.Methods) > 0 {
		sum.Notes = append(sum.Notes, summary.MethodNote(sum.Methods))
	}
	for _, m := range sum.MethodsInapplicable {
		sum.Notes = append(sum.Notes, "method departure that cannot apply: "+m)
	}
	if len(man.Assumptions) > 0 {
		sum.Assumptions = man.Assumptions
		sum.Notes = append(sum.Notes, summary.AssumptionNote(man.Assumptions))
	}
	return sum, summary.Measure(sum, view), view, nil
}

// viewOf is every record of recs as engineView keeps it, in their order.
func viewOf(recs *rundir.Records) ([]rundir.Record, error) {
	var view []rundir.Record
	for r := range recs.All() {
		if k, ok := engineView(r); ok {
			view = append(view, k)
		}
	}
	return view, recs.Err()
}

// engineView is what of a record the engine's part of a summary reads
// (AddBeside's count, JudgeCard, LogprobTable, ReadingNotes, ThinkingNotes,
// ReaskedNote, Measure) and the run's books (tallyRecords): its judge and
// repair calls and the calls that asked for log-probabilities, asked a
// model not to think, ran past the window or were asked again; its
// failures, readings and verdicts; not its data. ok is false
// when nothing is left (a record of generations alone).
// TestEngineViewSummarisesAlike makes each of those parts from whole
// records and from their views.
func engineView(r rundir.Record) (v rundir.Record, ok bool) {
	v = rundir.Record{Format: r.Format, Suite: r.Suite, Item: r.Item, Failures: r.Failures, Readings: r.Readings, Verdicts: r.Verdicts}
	for _, c := range r.Calls {
		if c.Kind == "judge" || c.Kind == "repair" || c.Logprobs != 0 || c.NoThink || c.OverContext > 0 || c.Reasked != nil {
			v.Calls = append(v.Calls, c)
		}
	}
	return v, len(v.Calls)+len(v.Failures)+len(v.Readings)+len(v.Verdicts) > 0
}
