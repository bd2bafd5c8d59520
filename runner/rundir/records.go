package rundir

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime"
	"sync"
	"time"

	"halu/metrics"
)

// Record is one completed item of a run, one line of records.jsonl. It holds
// only what the models returned and what the suite computed from it — no
// timings, no cache flags — so a rerun served from the cache writes the same
// records.
type Record struct {
	// Format is the run format's version (FormatVersion; 0 reads as 1).
	Format   int             `json:"format"`
	Suite    string          `json:"suite"`
	Item     string          `json:"item"`
	Data     json.RawMessage `json:"data"`
	Calls    []CallLog       `json:"calls,omitempty"`
	Failures []Failure       `json:"failures,omitempty"`
	// Readings are the judge replies that were not read the plain way
	// (a text fallback in JSON mode, or readers that disagree).
	Readings []Reading `json:"readings,omitempty"`
	// Verdicts are the item's judge verdicts as measured quantities, for
	// the judge card (how far the run's judges can be trusted).
	Verdicts []Verdict `json:"verdicts,omitempty"`
	// Prompts are the generation prompts of the item's calls as sent,
	// by SHA-256 (CallLog.Prompt): one copy however many samples used it.
	Prompts map[string]string `json:"prompts,omitempty"`
}

// CallLog is one model call an item made, with Ollama's token counts.
type CallLog struct {
	Stage        string `json:"stage"`
	Kind         string `json:"kind"` // chat, judge, repair (a judge's repair turn), embed
	Model        string `json:"model"`
	Digest       string `json:"digest"`
	Key          string `json:"key"`
	PromptTokens int    `json:"prompt_eval_count,omitempty"`
	EvalTokens   int    `json:"eval_count,omitempty"`
	// DoneReason is Ollama's ("stop", "length") or halu's ("budget",
	// "repetition": the engine stopped the generation).
	DoneReason string `json:"done_reason,omitempty"`
	// NearContext is the context window when the prompt filled 90% of it
	// or more (Ollama may have truncated it).
	NearContext int `json:"near_context,omitempty"`
	// OverContext is the context window when the prompt and the reply
	// together ran past it: the server dropped the prompt's beginning
	// while it generated (Ollama's context shift), so the reply was made
	// from less than the prompt.
	OverContext int `json:"over_context,omitempty"`
	// Options are the sampling and window options the request sent
	// (temperature, top_p, top_k, repeat_penalty, seed, num_predict,
	// num_ctx, stop; num_thread left out: it changes no reply). An option
	// not here was left to the server: its value is the model's
	// Modelfile's (the manifest's models list them) or the server's own.
	Options map[string]any `json:"options,omitempty"`
	// Counted is set on a repair turn's log (kind "repair") by a halu that
	// counts the verdicts read from repair turns (Counts.JudgeRepaired). A
	// repair turn logged without it was recorded before: a verdict it gave
	// is counted nowhere. Kept per call, it stays true of the turns of an
	// old run that a newer halu resumes.
	Counted bool `json:"counted,omitempty"`
	// NoThink is set when the call asked a thinking model not to think
	// (think: false): judges are, so their reply caps go to the verdict.
	NoThink bool `json:"no_think,omitempty"`
	// Prompt is the SHA-256 of a generation's messages, kept in the
	// record's Prompts; Reply is the reply as the model wrote it (clipped
	// at ReplyKeep bytes, reasoning fields left out); Parsed is a judge
	// reply's verdict as read, in JSON. They make the report's sample
	// browser: question, answer, each judge's raw reply and verdict.
	Prompt string `json:"prompt,omitempty"`
	Reply  string `json:"reply,omitempty"`
	// Confidence summarises the reply's token log-probabilities, when the
	// run asked for them (--logprobs).
	Confidence *metrics.TokenConfidence `json:"confidence,omitempty"`
	Parsed     string                   `json:"parsed,omitempty"`
	// Logprobs is the alternatives per token the call asked for with its
	// log-probabilities (--logprobs; 0: not asked): a reply asked and
	// returned without them (Confidence nil), or with fewer tokens than it
	// generated, is counted (summary.LogprobCounts).
	Logprobs int `json:"logprobs,omitempty"`
	// Reasked is set on a call the cache answered that halu verify asked
	// the server again: the reply above is the one given now.
	Reasked *Reasked `json:"reasked,omitempty"`
	// Uncached marks a call of halu verify's run again that the cache did
	// not answer and that no reply given otherwise led to (its entry gone,
	// or never kept: a reply the time budget stopped): asked live, not
	// compared with anything.
	Uncached bool `json:"uncached,omitempty"`
}

// Reasked is what asking a cached call again found (halu verify, a run's
// --verify). For a generation or judge call: one reply, Identical when
// byte for byte the recorded one; when not, Recorded holds the recorded
// reply (halu verify: the log's reply is the one given again) or Again the
// one given again (--verify: the log's reply is the recorded one), clipped
// as Reply. For an embedding request: Texts of its texts were asked again,
// Identical of them came back bit for bit, Close within
// engine.EmbedTolerance (the same reading of an embedding).
type Reasked struct {
	Texts     int    `json:"texts,omitempty"`
	Identical int    `json:"identical"`
	Close     int    `json:"close,omitempty"`
	Recorded  string `json:"recorded,omitempty"`
	Again     string `json:"again,omitempty"`
}

// Failure is a judgement that could not be scored: every attempt's raw reply
// and why it was rejected. It is kept in the record and counted in the
// summary; the judgement is never replaced by a guess.
type Failure struct {
	Stage  string   `json:"stage"`
	Model  string   `json:"model"`
	Reason string   `json:"reason"`
	Raw    []string `json:"raw"`
	// TwoValues: a reply stated two values for one field and no revision
	// settled which (judging.ErrTwoValues) — counted apart.
	TwoValues bool `json:"two_values,omitempty"`
}

// ItemError is an item that failed outright (the model errored after all
// retries); it goes to errors.jsonl and the item is redone on resume.
type ItemError struct {
	Item  string    `json:"item"`
	Error string    `json:"error"`
	Time  time.Time `json:"time"`
}

// The files of a run directory.
const (
	RecordsFile  = "records.jsonl"
	ErrorsFile   = "errors.jsonl"
	ManifestFile = "manifest.json"
	SummaryFile  = "summary.json"
	RunFileName  = "run.yaml"
	// LockFile holds the PID of the process working on the run.
	LockFile = ".lock"
)

// ReadRecords reads a records file. A last line cut short by a crash is left
// out and its start returned as good, so the writer can cut it off before
// appending; damage anywhere else is an error naming the line.
func ReadRecords(path string) (recs []Record, good int64, err error) {
	good, err = EachRecord(path, func(r Record) error {
		recs = append(recs, r)
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	return recs, good, nil
}

// decodeWhole decodes a record's line whole.
func decodeWhole(line []byte, r *Record) error { return json.Unmarshal(line, r) }

// decodeSlim decodes a record's line without its transcripts — the
// prompts' text, each call's reply as written, its prompt's hash and the
// options it sent, which only a report's sample browser and exports show
// — or, with keepHash, with each call's prompt hash (CallLog.Prompt),
// never building them: the line is decoded into
// slimRecord, whose calls have no field for a reply or the options sent
// and which has none for the prompts, so the decoder passes over their
// bytes. The transcripts are most of a record's bytes, and building them
// was most of a run's end (each record was read whole, then slimmed).
func decodeSlim(keepHash bool) func([]byte, *Record) error {
	return func(line []byte, r *Record) error {
		var s slimRecord
		if err := json.Unmarshal(line, &s); err != nil {
			return err
		}
		*r = Record{Format: s.Format, Suite: s.Suite, Item: s.Item, Data: s.Data, Failures: s.Failures, Readings: s.Readings, Verdicts: s.Verdicts}
		if s.Calls != nil {
			r.Calls = make([]CallLog, len(s.Calls))
		}
		for i, c := range s.Calls {
			r.Calls[i] = CallLog{Stage: c.Stage, Kind: c.Kind, Model: c.Model, Digest: c.Digest, Key: c.Key,
				PromptTokens: c.PromptTokens, EvalTokens: c.EvalTokens, DoneReason: c.DoneReason,
				NearContext: c.NearContext, OverContext: c.OverContext, Counted: c.Counted, NoThink: c.NoThink,
				Confidence: c.Confidence, Parsed: c.Parsed, Logprobs: c.Logprobs, Reasked: c.Reasked, Uncached: c.Uncached}
			if keepHash {
				r.Calls[i].Prompt = c.Prompt
			}
		}
		return nil
	}
}

// slimRecord is Record without Prompts, its calls without Reply and
// Options (decodeSlim). TestSlimDecodingKeepsEveryOtherField fails when
// Record or CallLog gains a field these do not carry.
type slimRecord struct {
	Format   int             `json:"format"`
	Suite    string          `json:"suite"`
	Item     string          `json:"item"`
	Data     json.RawMessage `json:"data"`
	Calls    []slimCall      `json:"calls,omitempty"`
	Failures []Failure       `json:"failures,omitempty"`
	Readings []Reading       `json:"readings,omitempty"`
	Verdicts []Verdict       `json:"verdicts,omitempty"`
}

// slimCall is CallLog without Reply and Options (slimRecord).
type slimCall struct {
	Stage        string                   `json:"stage"`
	Kind         string                   `json:"kind"`
	Model        string                   `json:"model"`
	Digest       string                   `json:"digest"`
	Key          string                   `json:"key"`
	PromptTokens int                      `json:"prompt_eval_count,omitempty"`
	EvalTokens   int                      `json:"eval_count,omitempty"`
	DoneReason   string                   `json:"done_reason,omitempty"`
	NearContext  int                      `json:"near_context,omitempty"`
	OverContext  int                      `json:"over_context,omitempty"`
	Counted      bool                     `json:"counted,omitempty"`
	NoThink      bool                     `json:"no_think,omitempty"`
	Prompt       string                   `json:"prompt,omitempty"`
	Confidence   *metrics.TokenConfidence `json:"confidence,omitempty"`
	Parsed       string                   `json:"parsed,omitempty"`
	Logprobs     int                      `json:"logprobs,omitempty"`
	Reasked      *Reasked                 `json:"reasked,omitempty"`
	Uncached     bool                     `json:"uncached,omitempty"`
}

// CountRecords counts the whole records of a records file: its lines that
// are JSON, a last one cut short by a crash left out as ReadRecords leaves
// it. It decodes none (a count of a million records is read at the end of
// every run): a reading of the records says what else is wrong with a line.
func CountRecords(path string) (int, error) {
	n := 0
	_, err := eachRecordLine(path, decodeValid, func(Record, int64, []byte) error { n++; return nil })
	return n, err
}

// decodeValid checks that a line is JSON, decoding nothing (CountRecords).
func decodeValid(line []byte, _ *Record) error {
	if !json.Valid(line) {
		return errNotJSON
	}
	return nil
}

// errNotJSON is a records file's line that is not JSON.
var errNotJSON = errors.New("not JSON")

// EachRecord hands each record of a records file to fn in the file's
// order, reading a batch of lines at a time: memory holds the batches in
// flight, not the file (a run of a million items has a records file of
// gigabytes). Lines are decoded on every core (decoding is most of a
// run's end), fn called on one goroutine, in order. A last line cut short
// by a crash is left out and its start returned as good; damage anywhere
// else is an error naming the line, as is an error fn returns (which stops
// the reading).
func EachRecord(path string, fn func(Record) error) (good int64, err error) {
	return EachRecordAt(path, func(r Record, _ int64, _ int) error { return fn(r) })
}

// EachRecordAt is EachRecord handing fn each record's place in the file
// too: the offset its line starts at and the line's length, newline
// included (so that the line can be copied as written).
func EachRecordAt(path string, fn func(r Record, off int64, n int) error) (good int64, err error) {
	return eachRecordLine(path, decodeWhole, func(r Record, off int64, line []byte) error { return fn(r, off, len(line)) })
}

// eachRecordLine is EachRecordAt handing fn each record's line as read
// (valid during the call), each decoded by decode (decodeWhole or
// decodeSlim).
func eachRecordLine(path string, decode func([]byte, *Record) error, fn func(r Record, off int64, line []byte) error) (good int64, err error) {
	return eachRecordLineUpTo(path, -1, decode, fn)
}

// eachRecordLineUpTo is eachRecordLine reading the file's first size
// bytes (the whole file when size < 0).
func eachRecordLineUpTo(path string, size int64, decode func([]byte, *Record) error, fn func(r Record, off int64, line []byte) error) (good int64, err error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	done := make(chan struct{})
	defer close(done)
	var in io.Reader = f
	if size >= 0 {
		in = io.LimitReader(f, size)
	}
	batches := readBatches(done, bufio.NewReaderSize(in, 1<<20), decode)
	var off int64
	for b := range batches {
		<-b.decoded
		if b.err != nil {
			return 0, b.err
		}
		for i, raw := range b.lines {
			line := b.first + i
			if err := b.errs[i]; err != nil {
				if b.final && !b.tail && i == len(b.lines)-1 {
					return off, nil // the last line, cut short
				}
				return 0, fmt.Errorf("%s:%d: damaged record: %w", path, line, err)
			}
			r := b.recs[i]
			if r.Format > FormatVersion {
				return 0, fmt.Errorf("%w: %s:%d: record of run format %d, newer than this halu's (%d): use a newer halu", ErrNewerFormat, path, line, r.Format, FormatVersion)
			}
			if err := fn(r, off, raw); err != nil {
				return 0, fmt.Errorf("%s:%d: %w", path, line, err)
			}
			off += int64(len(raw))
		}
	}
	return off, nil // nothing more, or an unterminated tail: a write a crash interrupted
}

// recordBatch is a run of whole lines of a records file (first is the
// first one's number; final: the file's last whole line is its last, tail:
// an unterminated tail follows it),
// decoded by a worker into recs and errs (one per line) before decoded is
// closed; err is an error reading the file.
type recordBatch struct {
	first       int
	final, tail bool
	lines       [][]byte
	recs        []Record
	errs        []error
	err         error
	decoded     chan struct{}
}

// batchLines is the number of lines a worker decodes at a time.
const batchLines = 64

// readBatches reads br's whole lines in batches, in order, each decoded by
// one of a worker per core; the batches come out in the file's order, at
// most a few per worker ahead of the reader of the channel, until done is
// closed. An unterminated tail is not a line.
func readBatches(done <-chan struct{}, br *bufio.Reader, decode func([]byte, *Record) error) <-chan *recordBatch {
	workers := runtime.GOMAXPROCS(0)
	out := make(chan *recordBatch, 2*workers)
	jobs := make(chan *recordBatch, 2*workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range jobs {
				b.recs, b.errs = make([]Record, len(b.lines)), make([]error, len(b.lines))
				for i, raw := range b.lines {
					b.errs[i] = decode(raw[:len(raw)-1], &b.recs[i])
				}
				close(b.decoded)
			}
		}()
	}
	go func() {
		defer close(out)
		defer func() { close(jobs); wg.Wait() }()
		line := 1
		for {
			b := &recordBatch{first: line, decoded: make(chan struct{})}
			for len(b.lines) < batchLines {
				raw, err := br.ReadBytes('\n')
				if err == io.EOF {
					b.final, b.tail = true, len(raw) > 0
					break
				}
				if err != nil {
					b.err = err
					b.final = true
					break
				}
				b.lines = append(b.lines, raw)
			}
			if !b.final {
				_, err := br.Peek(1)
				b.final = err == io.EOF
			}
			line += len(b.lines)
			if b.err != nil {
				close(b.decoded)
			} else {
				select {
				case jobs <- b:
				case <-done:
					return
				}
			}
			select {
			case out <- b:
			case <-done:
				return
			}
			if b.final {
				return
			}
		}
	}()
	return out
}

// RecordWriter appends records, one line per write, and fsyncs at most every
// syncEvery so a crash loses at most that much.
type RecordWriter struct {
	mu        sync.Mutex
	f         *os.File
	w         *bufio.Writer
	lastSync  time.Time
	syncEvery time.Duration
	appended  int
}

func OpenRecordWriter(path string, truncateAt int64, syncEvery time.Duration) (*RecordWriter, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	if err := f.Truncate(truncateAt); err != nil {
		f.Close()
		return nil, err
	}
	if _, err := f.Seek(truncateAt, io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	return &RecordWriter{f: f, w: bufio.NewWriter(f), lastSync: time.Now(), syncEvery: syncEvery}, nil
}

func (w *RecordWriter) Append(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, err := w.w.Write(b); err != nil {
		return err
	}
	// Flush every line so a kill -9 loses nothing the OS has; fsync on an
	// interval so a power cut loses at most syncEvery.
	if err := w.w.Flush(); err != nil {
		return err
	}
	w.appended++
	if time.Since(w.lastSync) >= w.syncEvery {
		w.lastSync = time.Now()
		return w.f.Sync()
	}
	return nil
}

// Appended is the number of records appended whole.
func (w *RecordWriter) Appended() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.appended
}

func (w *RecordWriter) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.w.Flush(); err != nil {
		w.f.Close()
		return err
	}
	if err := w.f.Sync(); err != nil {
		w.f.Close()
		return err
	}
	return w.f.Close()
}

// DecodeRecords decodes every record's data into a T, in order; an error
// names the record that does not decode.
func DecodeRecords[T any](recs []Record) ([]T, error) {
	out := make([]T, len(recs))
	// On every core for a run's worth of records; the error is the first
	// record's that does not decode, as read in order.
	parts := min(runtime.GOMAXPROCS(0), max(1, len(recs)/256))
	bad := make([]int, parts)
	errs := make([]error, parts)
	var wg sync.WaitGroup
	for p := range parts {
		lo, hi := p*len(recs)/parts, (p+1)*len(recs)/parts
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := lo; i < hi; i++ {
				if err := json.Unmarshal(recs[i].Data, &out[i]); err != nil {
					bad[p], errs[p] = i, err
					return
				}
			}
		}()
	}
	wg.Wait()
	for p := range parts {
		if errs[p] != nil {
			return nil, fmt.Errorf("record %s: %w", recs[bad[p]].Item, errs[p])
		}
	}
	return out, nil
}

// Decode unmarshals one record's data as T.
func Decode[T any](rec Record) (T, error) {
	var v T
	if err := json.Unmarshal(rec.Data, &v); err != nil {
		return v, fmt.Errorf("record %s: %w", rec.Item, err)
	}
	return v, nil
}

// Reading notes a judge reply that was not read the plain way: "fallback",
// a JSON-mode reply with no JSON verdict that the text reader read;
// "disagree", a text reply that the paper's rule and halu's reader read
// differently (Used is the reading the engine's Readers chose); or "held",
// a verdict read from a repair turn held to the verdict's JSON schema
// after a reply that stated two values.
type Reading struct {
	Stage string `json:"stage"`
	Model string `json:"model"`
	How   string `json:"how"`
	Used  string `json:"used"`
	Other string `json:"other,omitempty"`
}

// Verdict is one judge verdict read, as the judge card uses it: the
// judge, the unit judged (Unit: a hash of what the judge was shown,
// without the judge, so that judges of one unit pair up), the check it
// belongs to ("" the judgement itself; "retest" the same request with
// another seed; "swap" a pairwise judgement with its two texts in the
// other order), the model whose text was judged and that text's length
// where the suite gives them, and the verdict's quantities: its numbers
// and yes/no fields (1/0) by name.
type Verdict struct {
	Stage   string             `json:"stage"`
	Judge   string             `json:"judge"`
	Unit    string             `json:"unit"`
	Check   string             `json:"check,omitempty"`
	Subject string             `json:"subject,omitempty"`
	Chars   int                `json:"chars,omitempty"`
	Values  map[string]float64 `json:"values"`
	// Text is the SHA-256 of the judged text, kept once per record in
	// the record's Prompts (what people label on a judges sheet); Body is
	// that text on its way there, not written.
	Text string `json:"text,omitempty"`
	Body string `json:"-"`
}

// Show is v in JSON: how a verdict as read is kept in a record
// (CallLog.Parsed, Reading.Used).
func Show(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
