package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"halu/localmodels"
	"halu/runner/judging"
	"halu/runner/rundir"
	"halu/runner/setting"
)

// Opening a run directory: a new run's manifest, or a resumed run's, checked against what ran before (models, inputs, settings), and the notes a run's sessions leave.

// ErrSettingsDiffer is returned by a resume whose settings are not the
// run's own.
var ErrSettingsDiffer = errors.New("settings differ from the run's")

// configDiff lists the top-level settings in which config want (any value
// that encodes to a JSON object) differs from a run's recorded config, as
// "name: run's → given".
func configDiff(recorded json.RawMessage, want any) ([]string, error) {
	b, err := json.Marshal(want)
	if err != nil {
		return nil, err
	}
	var a, w map[string]any
	if err := json.Unmarshal(recorded, &a); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return nil, err
	}
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range w {
		keys[k] = true
	}
	var out []string
	for _, k := range uniqueSorted(mapKeys(keys)) {
		x, _ := json.Marshal(a[k])
		y, _ := json.Marshal(w[k])
		if string(x) != string(y) {
			out = append(out, fmt.Sprintf("%s: %s → %s", k, x, y))
		}
	}
	return out, nil
}

func mapKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// run is a run directory as Run works on it.
type run struct {
	dir, recPath string
	// fresh: this run made its directory (it goes again when the run is
	// refused before its first item).
	fresh bool
	man   *rundir.Manifest
	// done are the items already recorded; goodSize is the length of
	// records.jsonl up to its last whole line; records is how many whole
	// records it holds (those read on opening, then those appended).
	done     map[string]bool
	goodSize int64
	records  int
	// items is how many items the run has (its shard's), todo those not
	// done.
	items int
	todo  []Item
	// The session's start, the books before it (a resume adds to them),
	// the engine's counters when it started.
	sessionStart time.Time
	prev         rundir.Counts
	prevEnded    *time.Time
	base         rundir.Counts
	hostBase     map[string]localmodels.HostCount
	judgeBase    map[string]rundir.JudgeTime
}

// open makes or locks the run directory and reads the run there (a
// resume: its manifest, checked against spec, and the items done) or
// starts a manifest (a new run: refused where a run is already).
func (e *Engine) open(s Suite, spec RunSpec) (*run, func(), error) {
	r := &run{dir: spec.Dir, recPath: filepath.Join(spec.Dir, rundir.RecordsFile), done: map[string]bool{}}
	if !spec.Resume {
		fresh, err := rundir.Make(r.dir)
		if err != nil {
			return nil, nil, err
		}
		r.fresh = fresh
	} else if _, err := rundir.ReadManifest(r.dir); err != nil {
		return nil, nil, err // no run there: say so before locking
	}
	release, err := rundir.LockDir(r.dir)
	if err != nil {
		return nil, nil, err
	}
	rundir.SweepRunTemps(r.dir) // a killed session's unrenamed writes
	if spec.Resume {
		err = e.reopen(r, s, spec)
	} else {
		err = e.create(r, s, spec)
	}
	if err != nil {
		release()
		return nil, nil, err
	}
	return r, release, nil
}

// reopen reads the run to resume: its manifest (of suite s, made with
// spec's config) and the items its records hold.
func (e *Engine) reopen(r *run, s Suite, spec RunSpec) error {
	m, err := rundir.ReadManifest(r.dir)
	if err != nil {
		return err
	}
	if m.Suite != s.Name {
		return fmt.Errorf("run %s is of suite %q, not %q", r.dir, m.Suite, s.Name)
	}
	// A run of an older format was migrated by whoever decoded its
	// config (Declaration.Decode): only a config in the current format
	// can be compared key by key.
	if spec.Config != nil && m.Format == rundir.FormatVersion {
		if diff, err := configDiff(m.Config, spec.Config); err != nil {
			return fmt.Errorf("run %s: config: %w", r.dir, err)
		} else if len(diff) > 0 {
			return fmt.Errorf("%w: %s was made with other settings than these (%s); resuming would mix two runs in one: choose another directory, or repeat the run's own settings",
				ErrSettingsDiffer, r.dir, strings.Join(diff, "; "))
		}
	}
	r.man = m
	good, err := rundir.EachRecord(r.recPath, func(rec rundir.Record) error {
		r.done[rec.Item] = true
		r.records++
		return nil
	})
	if err != nil {
		return err
	}
	r.goodSize = good
	if r.man.Readers == "" {
		r.man.Readers = judging.ReadersPaper
	}
	e.Config.Readers = r.man.Readers // a resumed run keeps its own readers
	return nil
}

// create starts the manifest of a new run.
func (e *Engine) create(r *run, s Suite, spec RunSpec) error {
	if rundir.HoldsRun(r.dir) {
		return fmt.Errorf("run directory %s already holds a run: resume it with --resume %s, or choose another --out", r.dir, r.dir)
	}
	cfg, err := json.Marshal(spec.Config)
	if err != nil {
		return fmt.Errorf("run config: %w", err)
	}
	r.man = &rundir.Manifest{
		Format:      rundir.FormatVersion,
		HaluVersion: e.Version,
		Suite:       s.Name,
		Args:        spec.Args,
		Flags:       spec.Flags,
		Config:      cfg,
		Readers:     e.readers(),
		Started:     time.Now().UTC(),
		Shard:       spec.Shard,
	}
	return nil
}

// describe checks the server and every model before any work and records
// in man what the run is made with: the server, the serving settings and
// each model's fingerprint, the prompt templates and data files by hash,
// the config (a resumed run of an older format in this one), the engine's
// settings, the protocol with its departures and assumptions, the sample.
func (e *Engine) describe(ctx context.Context, man *rundir.Manifest, s Suite, spec RunSpec) error {
	ver, err := e.reach(ctx, man, uniqueSorted(s.Models()))
	if err != nil {
		return err
	}
	if !e.Client.IsLoopback() && !e.Offline() {
		fmt.Fprintf(e.Log, "warning: Ollama host %s is not on this machine: prompts and answers cross the network\n", e.Client.Host())
	}
	// The server as this session finds it: a resume with a server up is
	// not offline because the run's first session was (each session
	// records its own, Session.Offline).
	man.Server = rundir.ServerInfo{Host: e.Client.Host(), Version: ver}
	if e.Offline() {
		man.Server.Offline, man.Server.Seen = true, e.offlineSeen
	}
	if p := e.Client.Protocol(); p != "ollama" {
		man.Server.API = p
	}
	if err := e.sizeWindow(ctx, s); err != nil {
		return err
	}
	priorFPs, priorData := man.Serving.Fingerprints, man.Datasets
	if err := e.describeModels(ctx, man, s, spec.Config); err != nil {
		return err
	}
	if err := describeInputs(man, s); err != nil {
		return err
	}
	if spec.Resume {
		if err := sameAsBefore(spec.Dir, false, priorFPs, man.Serving.Fingerprints, priorData, man.Datasets); err != nil {
			return err
		}
	}
	if v := spec.Verifies; v != nil {
		if err := sameAsBefore(v.Dir, true, v.Manifest.Serving.Fingerprints, man.Serving.Fingerprints, v.Manifest.Datasets, man.Datasets); err != nil {
			return err
		}
	}
	if spec.Resume && spec.Config != nil && man.Format < rundir.FormatVersion {
		// A resumed run of an older format is written in this one.
		cfg, err := json.Marshal(spec.Config)
		if err != nil {
			return fmt.Errorf("run config: %w", err)
		}
		man.Config, man.Format = cfg, rundir.FormatVersion
	}
	if e.Config.Ollama != "" || len(e.Config.Backends) > 0 || man.Engine == nil {
		ec := e.Config
		ec.Readers = e.readers()
		if man.Engine, err = json.Marshal(&ec); err != nil {
			return fmt.Errorf("engine settings: %w", err)
		}
	}
	man.Protocol, man.Departures, man.Assumptions = e.protocol(spec.Config)
	man.Paper = s.Paper
	man.Methods = nil
	if s.Departures != nil {
		man.Methods = s.Departures()
	}
	man.Sample = nil
	if s.Sample != nil {
		man.Sample = s.Sample()
	}
	return nil
}

// sessionNotes say what differed between the sessions that made a run:
// which were offline (their calls from the cache alone), and which halu
// builds ran them when more than one did.
func sessionNotes(man *rundir.Manifest) []string {
	var notes []string
	var offline []string
	builds := map[string][]string{}
	var order []string
	for i, s := range man.Sessions {
		n := strconv.Itoa(i + 1)
		if s.Offline {
			offline = append(offline, n)
		}
		if s.Halu != "" {
			if _, ok := builds[s.Halu]; !ok {
				order = append(order, s.Halu)
			}
			builds[s.Halu] = append(builds[s.Halu], n)
		}
	}
	if len(offline) > 0 && len(offline) < len(man.Sessions) {
		notes = append(notes, fmt.Sprintf("sessions: %d of %d offline (session %s: every call from the response cache); the others called a server",
			len(offline), len(man.Sessions), strings.Join(offline, ", ")))
	}
	if len(order) > 1 {
		var parts []string
		for _, b := range order {
			parts = append(parts, fmt.Sprintf("%s (session %s)", b, strings.Join(builds[b], ", ")))
		}
		notes = append(notes, fmt.Sprintf("sessions ran on %d builds of halu: %s", len(order), strings.Join(parts, "; ")))
	}
	return notes
}

// ErrNotADirectory is a run directory (--out) that names a file.
var ErrNotADirectory = rundir.ErrNotADirectory

// ErrNotTheSameRun is a resume whose models or inputs are not, by content,
// those the run was made with: completing it would join two runs in one.
// It is a usage error (exit 2): fixed by serving the run's own models and
// files, or by a new run, never by resuming again.
var ErrNotTheSameRun error = rundir.UsageError("not the run's own models or inputs")

// sameAsBefore refuses a resume (or a verify) of the run in dir whose models are served
// from other weights (or template, quantization, server version, context
// window) than the run recorded, or whose data files' contents changed:
// the items done and those left would be measured on two different things
// under one name. Before the first model call, naming each model with
// both digests and each file with both hashes.
func sameAsBefore(dir string, verify bool, priorFPs, fps []rundir.Fingerprint, priorData, data map[string]rundir.DatasetInfo) error {
	var why []string
	if len(priorFPs) > 0 {
		for _, d := range rundir.FingerprintDiff(priorFPs, fps) {
			why = append(why, "model "+d)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(priorData)) {
		was := priorData[name]
		now, ok := data[name]
		switch {
		case !ok:
			why = append(why, fmt.Sprintf("data file %s: not read now", name))
		case was.SHA256 != "" && now.SHA256 != was.SHA256:
			why = append(why, fmt.Sprintf("data file %s (%s): sha256 %s when the run was made, %s now", name, now.Path, localmodels.ShortDigest(was.SHA256), localmodels.ShortDigest(now.SHA256)))
		}
	}
	if len(why) == 0 {
		return nil
	}
	if verify {
		return fmt.Errorf("%w: %s cannot be verified: asking its calls again would measure something else:\n  %s\nserve the run's own models and files again (verify asked nothing)",
			ErrNotTheSameRun, dir, strings.Join(why, "\n  "))
	}
	return fmt.Errorf("%w: %s cannot be resumed:\n  %s\nthe items done were measured on what the run recorded: serve the run's own models and files again, or make a new run into another directory (--out NEW)",
		ErrNotTheSameRun, dir, strings.Join(why, "\n  "))
}

// describeModels records the engine's serving settings and each model the
// suite calls, with its fingerprint.
func (e *Engine) describeModels(ctx context.Context, man *rundir.Manifest, s Suite, cfg any) error {
	man.Models = nil
	man.TinyModel = false
	man.Serving = rundir.Serving{}
	var missing []string
	var said error // what the server said of the first
	for _, name := range uniqueSorted(s.Models()) {
		fp, info, err := e.fingerprint(ctx, name, e.Config.NumCtx)
		if errors.Is(err, localmodels.ErrModelNotFound) {
			missing = append(missing, name)
			if said == nil {
				said = err
			}
			continue
		}
		if err != nil {
			return err
		}
		man.Serving.Fingerprints = append(man.Serving.Fingerprints, fp)
		man.Models = append(man.Models, info)
		if !e.Offline() {
			e.remember(name, info, fp.ServerVersion)
		}
		if info.Tiny {
			man.TinyModel = true
		}
	}
	if len(missing) > 0 {
		return missingModels(e.Client.Host(), missing, cfg, said)
	}
	return nil
}

// missingModels is one error naming every model the server does not have,
// each with the flags that named it (or the suite's default that did), so
// that a user fixes them all at once.
func missingModels(host string, names []string, cfg any, said error) error {
	from := map[string][]string{}
	if c, ok := cfg.(setting.Config); ok {
		for _, st := range c.Settings() {
			if !st.IsModels() || !st.Applies() {
				continue
			}
			for _, m := range st.Value.Items() {
				k := localmodels.CanonicalName(m)
				from[k] = append(from[k], "--"+st.Name)
			}
		}
	}
	var parts, pulls []string
	for _, n := range names {
		pulls = append(pulls, "`halu models pull "+n+"`")
		flags := from[localmodels.CanonicalName(n)]
		if len(flags) == 0 {
			parts = append(parts, fmt.Sprintf("%q (a default of the suite)", n))
			continue
		}
		parts = append(parts, fmt.Sprintf("%q (%s)", n, strings.Join(flags, ", ")))
	}
	return fmt.Errorf("%w: the server at %s does not have %d of the run's models: %s — pull them (%s), or import a GGUF file (`halu models import FILE.gguf --name NAME`); the server said of the first: %v",
		localmodels.ErrModelNotFound, host, len(names), strings.Join(parts, "; "), strings.Join(pulls, ", "), said)
}

// describeInputs records a suite's prompt templates and data files, each
// by hash. The engine hashes each template itself, so a manifest's hash
// always matches its text.
func describeInputs(man *rundir.Manifest, s Suite) error {
	if s.Prompts == nil && s.Datasets == nil {
		return nil
	}
	man.Prompts = map[string]rundir.PromptInfo{}
	var prompts map[string]rundir.PromptInfo
	if s.Prompts != nil {
		prompts = s.Prompts()
	}
	for name, p := range prompts {
		p.SHA256 = rundir.HashText(p.Text)
		man.Prompts[name] = p
	}
	man.Datasets = map[string]rundir.DatasetInfo{}
	var datasets []string
	if s.Datasets != nil {
		datasets = s.Datasets()
	}
	for _, p := range datasets {
		h, err := rundir.HashFile(p)
		if err != nil {
			return fmt.Errorf("dataset: %w", err)
		}
		man.Datasets[filepath.Base(p)] = rundir.DatasetInfo{Path: p, SHA256: h}
	}
	return nil
}

// identityNotes say, for each model a server names by less than a digest,
// what a cached or compared result rests on: a path or a name that other
// weights could take.
func identityNotes(man *rundir.Manifest) []string {
	var out []string
	for _, m := range man.Models {
		switch m.Identity {
		case localmodels.IdentityPath:
			out = append(out, fmt.Sprintf("%s is known by the path its server loaded (%s), not by a digest of its weights: other weights at that path would not be told apart (cache, compare).", m.Name, m.Weights))
		case localmodels.IdentityName:
			out = append(out, fmt.Sprintf("%s is known by its name only (its server reports neither a digest nor a path): other weights served under that name would not be told apart (cache, compare).", m.Name))
		}
		if m.FixedContext && m.ContextLength == 0 {
			out = append(out, fmt.Sprintf("%s: its server fixes the context window and does not report it: prompts were not fitted to it, and a server may cut a long prompt.", m.Name))
		}
	}
	return append(out, defaultsNotes(man)...)
}

// defaultsNotes say, per model, which of its Modelfile's parameters the
// server applied because the run's calls left them unset: the papers'
// code sends only what it names (a temperature, a reply cap), so the rest
// is whatever the serving side defaults to — here the Modelfile's.
func defaultsNotes(man *rundir.Manifest) []string {
	ec, err := Recorded(man)
	if err != nil {
		return nil
	}
	always := map[string]bool{"num_ctx": ec.NumCtx > 0, "num_thread": ec.NumThread > 0,
		"top_p": ec.TopP != nil, "top_k": ec.TopK != nil, "repeat_penalty": ec.RepeatPenalty != nil}
	perCall := map[string]bool{"temperature": true, "seed": true, "num_predict": true}
	var out []string
	for _, m := range man.Models {
		var applied, unless []string
		for k, v := range m.Defaults {
			switch {
			case always[k]:
			case perCall[k]:
				unless = append(unless, k+" "+v)
			default:
				applied = append(applied, k+" "+v)
			}
		}
		if len(applied)+len(unless) == 0 {
			continue
		}
		sort.Strings(applied)
		sort.Strings(unless)
		note := fmt.Sprintf("%s: its Modelfile's parameters applied by the server to every call:", m.Name)
		if len(applied) == 0 {
			note = fmt.Sprintf("%s: its Modelfile's parameters applied by the server", m.Name)
		} else {
			note += " " + strings.Join(applied, ", ")
		}
		if len(unless) > 0 {
			note += "; and where a call sets none: " + strings.Join(unless, ", ")
		}
		out = append(out, note+" (halu sends what the suite's protocol names, and --default-top-p/--default-top-k/--default-repeat-penalty when given).")
	}
	return out
}
