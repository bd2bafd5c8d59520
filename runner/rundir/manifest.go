package rundir

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"halu/localmodels"
	"halu/runner/setting"
)

// Manifest describes a run completely enough to repeat it and to regenerate
// every table from its records: what ran, with which models (by digest),
// prompts (by hash and text), data (by hash) and settings.
type Manifest struct {
	// Format is the run format's version (FormatVersion when written by
	// this halu; 0 reads as 1, the format before versions were written).
	Format      int               `json:"format"`
	HaluVersion string            `json:"halu_version"`
	Suite       string            `json:"suite"`
	Args        []string          `json:"args"`
	Flags       map[string]string `json:"flags,omitempty"`
	Config      json.RawMessage   `json:"config"`
	// Engine is the engine's settings (EngineConfig) as the run used them.
	Engine json.RawMessage `json:"engine,omitempty"`
	// Readers is how text-format judge replies were read (ReadersPaper or
	// ReadersHalu; see Engine.Readers). It is not a claim that the run
	// followed the paper's protocol in its other settings.
	Readers string `json:"readers"`
	// Paper is the publication whose benchmark the suite implements, and
	// the authors' code it follows where the paper is silent
	// (engine.Suite.Paper); empty for halu's own suites.
	Paper string `json:"paper,omitempty"`
	// Protocol is the suite's protocol (ProtocolPaper or ProtocolHalu)
	// and Departures the run's settings that differ from the paper's;
	// published numbers are comparable only when there are none.
	Protocol   string              `json:"protocol,omitempty"`
	Departures []setting.Departure `json:"departures,omitempty"`
	// Methods are the ways the suite's method departs from the paper's
	// whatever its settings: halu's own design where the paper gives none,
	// and what the offline setting makes impossible (engine.Suite.Departures).
	Methods []string `json:"method_departures,omitempty"`
	// Assumptions are the values halu chose where the paper and the
	// authors' code are silent (see Assumption).
	Assumptions []setting.Assumption `json:"assumptions,omitempty"`
	// Sample lists the data items drawn when the suite ran on a sample
	// (--limit).
	Sample []string `json:"sample,omitempty"`
	// Shard is the slice of the items this run holds (halu run --shard);
	// MergedFrom lists the shard runs a merged run was joined from.
	Shard      *Shard                  `json:"shard,omitempty"`
	MergedFrom []string                `json:"merged_from,omitempty"`
	Server     ServerInfo              `json:"server"`
	Models     []localmodels.ModelInfo `json:"models"`
	Serving    Serving                 `json:"serving"`
	Prompts    map[string]PromptInfo   `json:"prompts,omitempty"`
	Datasets   map[string]DatasetInfo  `json:"datasets,omitempty"`
	Started    time.Time               `json:"started"`
	Resumed    []time.Time             `json:"resumed,omitempty"`
	Ended      *time.Time              `json:"ended,omitempty"`
	// Checked is when a resume last found nothing left to do; such a
	// resume changes nothing else.
	Checked *time.Time `json:"checked,omitempty"`
	// Sessions are the invocations that worked on the run (a run, each
	// resume or rerun that had something to do), with what each cost;
	// Counts are their totals.
	Sessions []Session `json:"sessions,omitempty"`
	// Status is running, complete, incomplete or interrupted; a manifest
	// that says running while no process holds the run directory reads
	// as interrupted.
	Status string `json:"status"`
	// Measured is what the run's headline figures rest on, as of its last
	// session's end (nil before a session ended, and for runs made before
	// it was booked): StatusText reads it.
	Measured *Measured `json:"measured,omitempty"`
	Counts   Counts    `json:"counts"`
	// TinyModel is set when any model in the run is the random-weight test
	// model: every number the run produced is meaningless.
	TinyModel bool `json:"tiny_model,omitempty"`
}

// Session is one invocation that worked on a run.
type Session struct {
	Started time.Time `json:"started"`
	Ended   time.Time `json:"ended"`
	Args    []string  `json:"args,omitempty"`
	// Items is how many items it set out to do.
	Items int `json:"items"`
	// Counts are its own model calls, cache hits, retries and tokens.
	Counts Counts `json:"counts"`
	// Halu is the build that ran the session (see Build).
	Halu string `json:"halu,omitempty"`
	// Offline is set when the session had no server: its calls came from
	// the response cache alone (see ServerInfo.Offline).
	Offline bool `json:"offline,omitempty"`
}

// ServerInfo identifies the model server a run talked to (Ollama, vLLM,
// llama-server, … or a pool of them).
type ServerInfo struct {
	Host    string `json:"host"`
	Version string `json:"version"`
	// API is "openai" for a server reached through an OpenAI-compatible
	// API (empty: Ollama's native API).
	API string `json:"api,omitempty"`
	// Offline is set on a run made with no server reachable: every call
	// came from the response cache, and each model's fingerprint (and the
	// server's version) is the one the cache recorded when a server last
	// served it, at Seen, not checked against a server.
	Offline bool       `json:"offline,omitempty"`
	Seen    *time.Time `json:"fingerprints_seen,omitempty"`
}

// UnmarshalJSON reads a manifest, its server under "server" or under
// "ollama" (run format 1).
func (m *Manifest) UnmarshalJSON(b []byte) error {
	type plain Manifest
	var v struct {
		plain
		Ollama *ServerInfo `json:"ollama"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*m = Manifest(v.plain)
	if m.Server == (ServerInfo{}) && v.Ollama != nil {
		m.Server = *v.Ollama
	}
	return nil
}

// Serving is how the engine talked to the server: each model's serving
// fingerprint (also in every cache key). The engine's settings — window,
// threads, limits, slots — are the manifest's Engine section, written from
// their declaration (engine.EngineConfig); the fields after Fingerprints
// are where format 1 recorded some of them by hand, read only to migrate
// such a run (engine.Recorded) and never written again.
type Serving struct {
	Fingerprints []Fingerprint `json:"fingerprints"`

	NumCtx        int                    `json:"num_ctx,omitempty"`
	NumThread     int                    `json:"num_thread,omitempty"`
	KeepAlive     string                 `json:"keep_alive,omitempty"`
	Parallel      int                    `json:"parallel,omitempty"`
	ItemsInFlight int                    `json:"items_in_flight,omitempty"`
	IdleTimeout   string                 `json:"idle_timeout,omitempty"`
	Budget        string                 `json:"budget,omitempty"`
	Repetition    localmodels.Repetition `json:"repetition,omitzero"`
	JudgeRepairs  int                    `json:"judge_repairs,omitempty"`
}

// PromptInfo is a prompt template by hash and text, with where it came from.
type PromptInfo struct {
	SHA256 string `json:"sha256"`
	Source string `json:"source,omitempty"`
	Text   string `json:"text"`
}

// DatasetInfo is an input file by path and hash.
type DatasetInfo struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
}

// Counts summarise a run's progress and its failures.
type Counts struct {
	Items          int `json:"items"`
	Completed      int `json:"completed"`
	Failed         int `json:"failed"`
	JudgeFailures  int `json:"judge_failures"`
	ModelCalls     int `json:"model_calls"`
	CacheHits      int `json:"cache_hits"`
	Retries        int `json:"retries"`
	PromptTokens   int `json:"prompt_tokens"`
	GeneratedToken int `json:"generated_tokens"`
	// StoppedBudget and StoppedRepetition count generations the engine
	// stopped (time budget, repetition loop); NearContext counts prompts
	// that filled 90% of the context window.
	StoppedBudget     int `json:"stopped_budget,omitempty"`
	StoppedRepetition int `json:"stopped_repetition,omitempty"`
	NearContext       int `json:"near_context,omitempty"`
	// OverContext counts the calls in the records whose prompt and reply
	// together ran past the context window (CallLog.OverContext).
	OverContext int `json:"over_context,omitempty"`
	// JudgeRepaired counts the judge verdicts read from a repair turn:
	// the judge asked again after a reply that did not read
	// (--judge-repairs); asked once, each would have been unscored.
	JudgeRepaired int `json:"judge_repaired,omitempty"`
	// JudgeTwoValues counts the unscored judgements (of JudgeFailures)
	// whose reply stated two values for one field; HeldRepairs the
	// verdicts (of JudgeRepaired) read from a repair turn held to the
	// verdict's schema after such a reply.
	JudgeTwoValues int `json:"judge_two_values,omitempty"`
	HeldRepairs    int `json:"held_repairs,omitempty"`
	// ModelSwitches counts changes of the model being served (of its
	// load: aliases of one set of weights are one); Backoffs counts the
	// times a 503 lowered the calls in flight.
	ModelSwitches int `json:"model_switches,omitempty"`
	Backoffs      int `json:"backoffs,omitempty"`
	// QueueBackoffs counts the times a call queued at the server most of
	// its time lowered the calls in flight by one.
	QueueBackoffs int `json:"queue_backoffs,omitempty"`
	// HeldSlots counts the calls that took the slot of their item's call
	// before them (a judge's repair turn; with more items in flight than
	// slots, an item's next call of the same model), HoldsLapsed the slots
	// kept for such a call and given back unused after the longest hold.
	HeldSlots   int `json:"held_slots,omitempty"`
	HoldsLapsed int `json:"holds_lapsed,omitempty"`
	// BusySeconds is the integral of the calls in flight over the time
	// the run worked (WorkSeconds), SlotSeconds that of the slots it had
	// (--parallel, times the servers of a pool): BusySeconds ÷ WorkSeconds
	// is the mean number of calls in flight, BusySeconds ÷ SlotSeconds the
	// share of the slots kept busy (SlotUse).
	BusySeconds float64 `json:"busy_seconds,omitempty"`
	SlotSeconds float64 `json:"slot_seconds,omitempty"`
	WorkSeconds float64 `json:"work_seconds,omitempty"`
	// TimedCalls are the generations whose server said how it spent them
	// (Ollama's durations; localmodels.Timing), TimedSeconds their time as
	// halu measured it, WaitSeconds the part of it they waited for one of
	// the server's slots before it started on them (Timing.Wait) and
	// LoadSeconds the part the server spent loading a model for them.
	// WaitSeconds ÷ TimedSeconds is the share of the calls' time spent
	// queued at the server (ServerWait): more calls in flight than the
	// server answers at once.
	TimedCalls   int     `json:"timed_calls,omitempty"`
	TimedSeconds float64 `json:"timed_seconds,omitempty"`
	WaitSeconds  float64 `json:"wait_seconds,omitempty"`
	LoadSeconds  float64 `json:"load_seconds,omitempty"`
	// Reloads counts the loads (of 50 ms or more) of a model whose weights
	// (with the same runner settings, under any of their names) had
	// answered a call of the run before — the server had let it go for
	// another — and ReloadSeconds sums them: what serving fewer models at
	// once than the run calls cost (--items-in-flight 0 raises the items in
	// flight against it).
	Reloads       int     `json:"reloads,omitempty"`
	ReloadSeconds float64 `json:"reload_seconds,omitempty"`
	// ReuseCalls are the generations whose server said how much of their
	// prompt it took from its prefix cache (localmodels.Reuse):
	// ReusedTokens of their ReusePromptTokens.
	ReuseCalls        int `json:"reuse_calls,omitempty"`
	ReusePromptTokens int `json:"reuse_prompt_tokens,omitempty"`
	ReusedTokens      int `json:"reused_tokens,omitempty"`
	// TextFallbacks counts JSON-mode judge replies without a JSON verdict
	// that the suite's text reader read; ReaderDisagreements counts text
	// replies that the paper's rule and halu's reader read differently.
	TextFallbacks       int `json:"text_fallbacks,omitempty"`
	ReaderDisagreements int `json:"reader_disagreements,omitempty"`
	// CacheDamaged counts cache entries that failed their check on read
	// (dropped and fetched again); CacheWriteFailures counts replies that
	// could not be cached (kept in the records all the same).
	CacheDamaged       int `json:"cache_damaged,omitempty"`
	CacheWriteFailures int `json:"cache_write_failures,omitempty"`
	// CacheUnchecked counts entries an older halu wrote before entries
	// carried a checksum: not damaged, but not provably the reply written,
	// so dropped and fetched again, counted apart.
	CacheUnchecked int `json:"cache_unchecked,omitempty"`
	// Hosts are the calls each server of a pool answered and the calls
	// that failed on it (and went to another or were retried).
	Hosts map[string]localmodels.HostCount `json:"hosts,omitempty"`
	// JudgeTime is, per judge model, the time its judge and repair calls
	// took (the judge card's cost table shows it): kept here, not in the
	// records, which are the same bytes whatever the schedule.
	JudgeTime map[string]JudgeTime `json:"judge_time,omitempty"`
}

// FormatVersion is the version of the run format this halu writes:
// manifest.json and every record carry it. Format 1 (no version written)
// named some settings otherwise and kept the engine's settings only as
// command-line text (Manifest.Flags); a run of format 1 is read through
// migrations (engine.Declaration.Decode for its config, engine.Recorded
// for its engine settings) and written in the current format when
// resumed. Format 3 added settings whose absence in a format-2 config means
// what format 2 did (hypo's unreadable hypotheses left out, ideas' 20-token
// fluency cap); the suites' migrations fill them in. Format 4 added hypo's
// claim fallback (absent: sentences, as format 3 did). Format 5 added hypo's
// KG context and claim-node search (absent: edges and exact, as format 4).
const FormatVersion = 5

// Exists reports whether dir holds a run (its manifest).
func Exists(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, ManifestFile))
	return err == nil
}

// ReadManifest reads dir/manifest.json (a manifest of format 1 keeps it:
// migrations read the parts that changed, engine.Recorded its engine
// settings and engine.Declaration.Decode its config).
func ReadManifest(dir string) (*Manifest, error) {
	b, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", dir, err)
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("run %s: %s: %w", dir, ManifestFile, err)
	}
	if m.Format == 0 {
		m.Format = 1
	}
	if m.Format > FormatVersion {
		return nil, fmt.Errorf("%w: run %s: run format %d is newer than this halu's (%d): use a newer halu", ErrNewerFormat, dir, m.Format, FormatVersion)
	}
	if m.Status == "running" && !Live(dir) {
		// Its process died (kill -9, power cut) before it could say so.
		m.Status = "interrupted"
	}
	return &m, nil
}

func WriteManifest(dir string, m *Manifest) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return WriteFileAtomic(filepath.Join(dir, ManifestFile), append(b, '\n'))
}

// UsesCache reports whether the run's engine settings (as its last
// session used them) read and write the response cache: not --no-cache.
// A manifest without engine settings (written by a library caller) is
// taken to use none.
func (m *Manifest) UsesCache() bool {
	var eng map[string]json.RawMessage
	if len(m.Engine) == 0 || json.Unmarshal(m.Engine, &eng) != nil {
		return false
	}
	var off bool
	if b, ok := eng["no_cache"]; ok && json.Unmarshal(b, &off) != nil {
		return false
	}
	return !off
}

// HashText returns the hex SHA-256 of s.
func HashText(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// HashFile returns the hex SHA-256 of a file's bytes; of a directory (a
// dataset given as one, as cfaith's --docs DIR), the SHA-256 of its
// files' relative paths and hashes, one "path\tsha256" line each in path
// order, so that any change to any file changes it.
func HashFile(path string) (string, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		var lines []string
		err := filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return err
			}
			h, err := HashFile(p)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(path, p)
			lines = append(lines, filepath.ToSlash(rel)+"\t"+h)
			return nil
		})
		if err != nil {
			return "", fmt.Errorf("%s: %w", path, err)
		}
		sort.Strings(lines)
		return HashText(strings.Join(lines, "\n")), nil
	}
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// SlotUse is the share of the slots kept busy while the run worked, and
// whether it was measured.
func (c Counts) SlotUse() (float64, bool) {
	if c.SlotSeconds <= 0 {
		return 0, false
	}
	return c.BusySeconds / c.SlotSeconds, true
}

// InFlight is the mean number of calls in flight while the run worked,
// and whether it was measured.
func (c Counts) InFlight() (float64, bool) {
	if c.WorkSeconds <= 0 {
		return 0, false
	}
	return c.BusySeconds / c.WorkSeconds, true
}

// ServerWait is the share of the timed generations' time they spent
// waiting for a slot at the server, and whether any was timed.
func (c Counts) ServerWait() (float64, bool) {
	if c.TimedCalls == 0 || c.TimedSeconds <= 0 {
		return 0, false
	}
	return c.WaitSeconds / c.TimedSeconds, true
}

// PrefixReuse is the share of the prompt tokens the server took from its
// prefix cache, over the generations it said it for, and whether any did.
func (c Counts) PrefixReuse() (float64, bool) {
	if c.ReuseCalls == 0 || c.ReusePromptTokens <= 0 {
		return 0, false
	}
	return float64(c.ReusedTokens) / float64(c.ReusePromptTokens), true
}

// JudgeTime is what one judge model's calls cost in time (its judge and
// repair calls made in a session; cache hits take none): Calls timed,
// Seconds as halu measured them (with any wait at the server) and
// ServerSeconds the server's reading of the prompt and generating.
type JudgeTime struct {
	Calls         int     `json:"calls"`
	Seconds       float64 `json:"seconds"`
	ServerSeconds float64 `json:"server_seconds"`
}

// AddJudgeTimes is a plus b, judge by judge (nil when both are); SubJudgeTimes
// is a minus b.
func AddJudgeTimes(a, b map[string]JudgeTime) map[string]JudgeTime {
	return combineJudgeTimes(a, b, 1)
}

// SubJudgeTimes is a minus b, judge by judge.
func SubJudgeTimes(a, b map[string]JudgeTime) map[string]JudgeTime {
	return combineJudgeTimes(a, b, -1)
}

func combineJudgeTimes(a, b map[string]JudgeTime, sign int) map[string]JudgeTime {
	if len(a) == 0 && len(b) == 0 {
		return nil
	}
	out := map[string]JudgeTime{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		o := out[k]
		o.Calls += sign * v.Calls
		o.Seconds += float64(sign) * v.Seconds
		o.ServerSeconds += float64(sign) * v.ServerSeconds
		if o == (JudgeTime{}) {
			delete(out, k)
			continue
		}
		out[k] = o
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// Add is c plus b, for the engine-wide counters.
func (c Counts) Add(b Counts) Counts {
	n := Counts{}
	return c.Sub(n.Sub(b))
}

// Sub is c minus b, for the engine-wide counters.
func (c Counts) Sub(b Counts) Counts {
	return Counts{
		ModelCalls:         c.ModelCalls - b.ModelCalls,
		CacheHits:          c.CacheHits - b.CacheHits,
		Retries:            c.Retries - b.Retries,
		JudgeFailures:      c.JudgeFailures - b.JudgeFailures,
		PromptTokens:       c.PromptTokens - b.PromptTokens,
		GeneratedToken:     c.GeneratedToken - b.GeneratedToken,
		StoppedBudget:      c.StoppedBudget - b.StoppedBudget,
		StoppedRepetition:  c.StoppedRepetition - b.StoppedRepetition,
		NearContext:        c.NearContext - b.NearContext,
		JudgeRepaired:      c.JudgeRepaired - b.JudgeRepaired,
		ModelSwitches:      c.ModelSwitches - b.ModelSwitches,
		Backoffs:           c.Backoffs - b.Backoffs,
		QueueBackoffs:      c.QueueBackoffs - b.QueueBackoffs,
		HeldSlots:          c.HeldSlots - b.HeldSlots,
		HoldsLapsed:        c.HoldsLapsed - b.HoldsLapsed,
		BusySeconds:        c.BusySeconds - b.BusySeconds,
		SlotSeconds:        c.SlotSeconds - b.SlotSeconds,
		WorkSeconds:        c.WorkSeconds - b.WorkSeconds,
		TimedCalls:         c.TimedCalls - b.TimedCalls,
		TimedSeconds:       c.TimedSeconds - b.TimedSeconds,
		WaitSeconds:        c.WaitSeconds - b.WaitSeconds,
		LoadSeconds:        c.LoadSeconds - b.LoadSeconds,
		Reloads:            c.Reloads - b.Reloads,
		ReloadSeconds:      c.ReloadSeconds - b.ReloadSeconds,
		ReuseCalls:         c.ReuseCalls - b.ReuseCalls,
		ReusePromptTokens:  c.ReusePromptTokens - b.ReusePromptTokens,
		ReusedTokens:       c.ReusedTokens - b.ReusedTokens,
		CacheDamaged:       c.CacheDamaged - b.CacheDamaged,
		CacheWriteFailures: c.CacheWriteFailures - b.CacheWriteFailures,
		CacheUnchecked:     c.CacheUnchecked - b.CacheUnchecked,
	}
}

// SubHosts is a minus b, server by server (nil when a is).
func SubHosts(a, b map[string]localmodels.HostCount) map[string]localmodels.HostCount {
	if a == nil {
		return nil
	}
	out := map[string]localmodels.HostCount{}
	for h, c := range a {
		out[h] = c.Sub(b[h])
	}
	return out
}

// AddHosts is a plus b, server by server (nil when both are).
func AddHosts(a, b map[string]localmodels.HostCount) map[string]localmodels.HostCount {
	if a == nil && b == nil {
		return nil
	}
	out := map[string]localmodels.HostCount{}
	for _, m := range []map[string]localmodels.HostCount{a, b} {
		for h, c := range m {
			out[h] = out[h].Add(c)
		}
	}
	return out
}
