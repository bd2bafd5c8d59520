package index

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/document"
	bindex "github.com/blevesearch/bleve_index_api"
)

// BuildOptions tune a build.
type BuildOptions struct {
	// BatchSize is how many operations go to bleve at once.
	BatchSize int
	// Progress, when set, is told how many records have been applied.
	Progress func(applied int)
	// Log receives problems as they are found.
	Log io.Writer
}

// Build applies inputs to the index in the order given — a yearly baseline
// then daily update files — adding, replacing (same PMID) and deleting
// articles. Files are parsed concurrently, ahead of the writer, but applied
// strictly in order. A damaged file is reported and the build goes on with
// the rest; the returned BuildInfo says what was done and skipped, per file.
func (l *Literature) Build(ctx context.Context, inputs []string, opt BuildOptions) (BuildInfo, error) {
	if opt.BatchSize <= 0 {
		opt.BatchSize = 2000
	}
	if opt.Log == nil {
		opt.Log = io.Discard
	}
	info := BuildInfo{Time: time.Now().UTC(), Inputs: make([]InputInfo, len(inputs))}
	jr, err := l.startJournal(inputs)
	if err != nil {
		return info, err
	}
	if jr.Done > 0 {
		fmt.Fprintf(opt.Log, "resuming an unfinished build: %d of %d files are in\n", jr.Done, len(inputs))
	}

	// The parsers stop with ctx, and when the writer fails.
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type parsed struct {
		ops  chan Op
		done chan struct{}
	}
	files := make([]parsed, len(inputs))
	for i, path := range inputs {
		files[i] = parsed{ops: make(chan Op, 4096), done: make(chan struct{})}
		in := &info.Inputs[i]
		in.Path = path
		in.Skipped = map[string]int{}
		if i < jr.Done {
			in.AlreadyIn = true
			close(files[i].ops)
			close(files[i].done)
		}
	}
	// Parsers start in input order, as many at once as there are cores:
	// the writer waits for the earliest unfinished file, which therefore
	// always holds a slot (with one core, files started out of order once
	// left the writer waiting on a file that could not start).
	sem := make(chan struct{}, max(1, runtime.GOMAXPROCS(0)))
	parse := func(i int, path string) {
		in := &info.Inputs[i]
		defer close(files[i].done)
		defer close(files[i].ops)
		defer func() { <-sem }()
		if h, err := hashFile(path); err == nil {
			in.SHA256 = h
		}
		err := ReadInput(path, func(op Op) error {
			select {
			case files[i].ops <- op:
				return nil
			case <-pctx.Done():
				return pctx.Err()
			}
		}, func(p Problem) {
			reason := "malformed"
			if p.Reason != "" && len(in.Problems) < 100 {
				in.Problems = append(in.Problems, p)
			}
			if containsNoContent(p.Reason) {
				reason = "no title and no abstract"
			}
			in.Skipped[reason]++
			fmt.Fprintf(opt.Log, "skipped: %s\n", p)
		})
		if err != nil {
			in.Error = err.Error()
			fmt.Fprintf(opt.Log, "input error (records before it were kept): %v\n", err)
		}
	}
	go func() {
		for i := jr.Done; i < len(inputs); i++ {
			select {
			case sem <- struct{}{}:
				go parse(i, inputs[i])
			case <-pctx.Done():
				for ; i < len(inputs); i++ {
					info.Inputs[i].Error = pctx.Err().Error()
					close(files[i].ops)
					close(files[i].done)
				}
				return
			}
		}
	}()

	// The writer: apply each file's operations in input order. Chunks are
	// analysed (on all cores) one ahead of the writer, so analysis of the
	// next chunk overlaps the writing of this one's segment (segmentPlugin).
	st := l.corpus()
	seen, err := l.knownPMIDs(ctx)
	if err != nil {
		return info, err
	}
	w := &batchWriter{l: l, size: opt.BatchSize, stats: st, pending: map[uint64]pendingDoc{},
		seen: seen, journal: jr}
	w.batch = l.idx.NewBatch()
	applied := 0
	stop := make(chan struct{})
	ready := make(chan chunk, 1)
	// fail stops the parsers and the analysis ahead of the writer and
	// waits for them, so that nothing writes to info after Build returns.
	fail := func(err error) (BuildInfo, error) {
		cancel()
		close(stop)
		for range ready {
		}
		for i := range files {
			<-files[i].done
		}
		return info, fmt.Errorf("index %s: %w", l.dir, err)
	}
	go func() {
		defer close(ready)
		c := chunk{}
		send := func() bool {
			c.docs = l.analyze(c.ops)
			if pctx.Err() != nil && ctx.Err() == nil {
				return false // the writer failed
			}
			select {
			case ready <- c:
				c = chunk{}
				return true
			case <-stop:
				return false
			}
		}
		for i := jr.Done; i < len(files); i++ {
			in := &info.Inputs[i]
			for op := range files[i].ops {
				c.ops = append(c.ops, op)
				c.in = append(c.in, in)
				if len(c.ops) >= opt.BatchSize && !send() {
					return
				}
			}
			<-files[i].done
			if ctx.Err() != nil {
				break // this file may be cut short: it is not in
			}
			// The file is in: its last operations and the journal
			// saying so are one batch. (A damaged file counts as in:
			// its records before the damage are, and reading it again
			// would stop there again.)
			c.filesIn = i + 1
			if !send() {
				return
			}
		}
		if len(c.ops) > 0 {
			send()
		}
	}()
	for c := range ready {
		for j, op := range c.ops {
			in := c.in[j]
			if op.Delete {
				in.Deletes++
				did, err := w.delete(op.Article.PMID)
				if err != nil {
					return fail(err)
				}
				if did {
					info.Deleted++
				}
			} else {
				in.Records++
				replaced, err := w.put(op.Article, c.docs[j])
				if err != nil {
					return fail(err)
				}
				if replaced {
					info.Updated++
				} else {
					info.Added++
				}
			}
			applied++
			if opt.Progress != nil && applied%1000 == 0 {
				opt.Progress(applied)
			}
		}
		if c.filesIn > 0 {
			if in := &info.Inputs[c.filesIn-1]; len(in.Skipped) == 0 {
				in.Skipped = nil
			}
			w.journal.Done = c.filesIn
			w.dirty = true
		}
		if err := w.flush(); err != nil {
			return fail(err)
		}
	}
	if ctx.Err() == nil {
		w.journal.State, w.dirty = journalComplete, true
	} else {
		// The parsers stop at the cancellation; the build record says
		// which files were not (fully) applied.
		for i := w.journal.Done; i < len(files); i++ {
			<-files[i].done
			if in := &info.Inputs[i]; in.Error == "" {
				in.Error = "not fully applied: the build was interrupted (" + ctx.Err().Error() + ")"
			}
		}
	}
	if err := w.flush(); err != nil {
		return info, fmt.Errorf("index %s: %w", l.dir, err)
	}
	if opt.Progress != nil {
		opt.Progress(applied)
	}
	l.mu.Lock()
	l.meta.Stats = w.stats
	l.meta.Builds = append(l.meta.Builds, info)
	l.journal = w.journal
	l.mu.Unlock()
	if err := l.writeMeta(); err != nil {
		return info, fmt.Errorf("index %s: %w", l.dir, err)
	}
	if ctx.Err() == nil {
		if err := l.settle(ctx); err != nil && ctx.Err() == nil {
			fmt.Fprintf(opt.Log, "the index is complete, but %v: its segments stay as they are\n", err)
		}
	}
	return info, ctx.Err()
}

// settle waits until bleve has persisted the build's last batch and
// merged its segments as its merge policy plans ("index_bgthreads_active"
// false): a finished build leaves an index in its steady state, so that
// the merges it left do not run in the next process that opens it for
// queries, competing with them, and a query meets the segments the
// policy intends, not dozens of small ones a fast build left behind.
func (l *Literature) settle(ctx context.Context) error {
	adv, err := l.idx.Advanced()
	if err != nil {
		return err
	}
	st, ok := adv.(interface{ StatsMap() map[string]interface{} })
	if !ok {
		return nil
	}
	failures := func(m map[string]interface{}) uint64 {
		a, _ := m["TotFileMergeLoopErr"].(uint64)
		b, _ := m["TotPersistLoopErr"].(uint64)
		return a + b
	}
	var before uint64
	for i := 0; ; i++ {
		m := st.StatsMap()
		if active, ok := m["index_bgthreads_active"].(bool); !ok || !active {
			return nil
		}
		// bleve retries a merge or persist that failed; settle does not
		// wait on one that keeps failing.
		if n := failures(m); i == 0 {
			before = n
		} else if n > before {
			return fmt.Errorf("bleve failed to merge or persist segments (%d errors)", n-before)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func containsNoContent(s string) bool {
	return len(s) >= len(ErrNoContent.Error()) && s[len(s)-len(ErrNoContent.Error()):] == ErrNoContent.Error()
}

// chunk is a batch of operations on its way to the writer, with the
// documents analysed for them and, when the chunk ends a file, how many
// input files are fully in once it is applied.
type chunk struct {
	ops     []Op
	in      []*InputInfo
	docs    []analyzedDoc
	filesIn int
}

type pendingDoc struct {
	length  int
	deleted bool
}

// batchWriter accumulates operations into bleve batches and keeps the corpus
// statistics exact: a replaced or deleted article's old length is looked up
// (in the pending batch, else in the index) and taken out.
type batchWriter struct {
	l       *Literature
	size    int
	batch   *bleve.Batch
	pending map[uint64]pendingDoc
	stats   CorpusStats
	// seen holds every PMID (below 2³²) the index may hold: those it held
	// when the build started and those written since. A PMID not in it is
	// new, so an update build looks up only the articles it replaces or
	// deletes (a baseline build looks up nothing).
	seen *roaring.Bitmap
	// journal goes into every batch with the statistics it leaves; dirty
	// flushes a batch that holds no document but a journal change.
	journal journal
	dirty   bool
}

// knownPMIDs reads the IDs of the index's documents (the terms of bleve's
// _id field, deleted documents' included until a merge drops them): a
// superset of the live PMIDs, for batchWriter.seen.
func (l *Literature) knownPMIDs(ctx context.Context) (*roaring.Bitmap, error) {
	seen := roaring.New()
	if l.corpus().Docs == 0 {
		return seen, nil
	}
	adv, err := l.idx.Advanced()
	if err != nil {
		return nil, err
	}
	r, err := adv.Reader()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	d, err := r.FieldDict("_id")
	if err != nil {
		return nil, fmt.Errorf("index %s: %w", l.dir, err)
	}
	defer d.Close()
	for i := 0; ; i++ {
		if i&0xffff == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		e, err := d.Next()
		if err != nil {
			return nil, fmt.Errorf("index %s: %w", l.dir, err)
		}
		if e == nil {
			return seen, nil
		}
		if p, err := strconv.ParseUint(e.Term, 10, 64); err == nil && p <= 0xffffffff {
			seen.Add(uint32(p))
		}
	}
}

// existing returns the length of the live article with this PMID, if any.
func (w *batchWriter) existing(pmid uint64) (int, bool, error) {
	if p, ok := w.pending[pmid]; ok {
		return p.length, !p.deleted, nil
	}
	if pmid <= 0xffffffff && !w.seen.Contains(uint32(pmid)) {
		return 0, false, nil
	}
	doc, err := w.l.idx.Document(strconv.FormatUint(pmid, 10))
	if err != nil || doc == nil {
		return 0, false, err
	}
	n := 0
	doc.VisitFields(func(f bindex.Field) {
		if f.Name() == fieldLen {
			n = int(storedNumber(f))
		}
	})
	return n, true, nil
}

func (w *batchWriter) put(a Article, d analyzedDoc) (bool, error) {
	old, had, err := w.existing(a.PMID)
	if err != nil {
		return false, err
	}
	doc, n := d.doc, d.length
	if had {
		w.stats.TotalLen -= uint64(old)
	} else {
		w.stats.Docs++
	}
	w.stats.TotalLen += uint64(n)
	if err := w.batch.IndexAdvanced(doc); err != nil {
		return had, err
	}
	w.pending[a.PMID] = pendingDoc{length: n}
	if a.PMID <= 0xffffffff {
		w.seen.Add(uint32(a.PMID))
	}
	return had, nil
}

func (w *batchWriter) delete(pmid uint64) (bool, error) {
	old, had, err := w.existing(pmid)
	if err != nil || !had {
		return false, err
	}
	w.stats.Docs--
	w.stats.TotalLen -= uint64(old)
	w.batch.Delete(strconv.FormatUint(pmid, 10))
	w.pending[pmid] = pendingDoc{deleted: true}
	return true, nil
}

func (w *batchWriter) flush() error {
	if w.batch.Size() == 0 && !w.dirty {
		return nil
	}
	w.journal.Stats = w.stats
	b, err := json.Marshal(w.journal)
	if err != nil {
		return err
	}
	w.batch.SetInternal([]byte(journalKey), b)
	if err := w.l.idx.Batch(w.batch); err != nil {
		return err
	}
	w.batch.Reset()
	clear(w.pending)
	w.dirty = false
	return nil
}

// analyzedText is the searchable text field, analysed once by halu — which
// needs its token count for BM25 — and not a second time by bleve. Its
// terms are kept as a list, each with its count, in order of first
// occurrence: the segment builder reads them so; bleve's map of token
// frequencies is made only if something asks for it.
type analyzedText struct {
	*document.TextField
	terms  []termCount
	length int
}

func (analyzedText) Analyze()              {}
func (f analyzedText) AnalyzedLength() int { return f.length }

// AnalyzedTokenFrequencies is bleve's view of the terms (no term vectors:
// the field keeps none).
func (f analyzedText) AnalyzedTokenFrequencies() bindex.TokenFrequencies {
	tfs := make(bindex.TokenFrequencies, len(f.terms))
	for _, t := range f.terms {
		tf := &bindex.TokenFreq{Term: []byte(t.term)}
		tf.SetFrequency(t.count)
		tfs[t.term] = tf
	}
	return tfs
}

// pmidField is the PMID as a numeric field indexed at full precision
// only: bleve's numeric fields also index 15 coarser prefixes for range
// queries, which halu does not run (the cutoff is checked on the external
// ID), and which cost a quarter of a build. The full-precision term is
// what sorting by PMID (Stats' range) reads.
type pmidField struct {
	*document.NumericField
	freq bindex.TokenFrequencies
}

func newPMIDField(pmid uint64) pmidField {
	f := document.NewNumericFieldWithIndexingOptions(fieldPMID, nil, float64(pmid), bindex.IndexField|bindex.StoreField|bindex.DocValues)
	v := f.Value() // prefix coded, shift 0
	tokens := analysis.TokenStream{{Start: 0, End: len(v), Term: v, Position: 1, Type: analysis.Numeric}}
	return pmidField{NumericField: f, freq: analysis.TokenFrequency(tokens, nil, f.Options())}
}

func (pmidField) Analyze()                                            {}
func (f pmidField) AnalyzedLength() int                               { return 1 }
func (f pmidField) AnalyzedTokenFrequencies() bindex.TokenFrequencies { return f.freq }

type analyzedDoc struct {
	doc    *document.Document
	length int
}

// analyze builds the documents of ops' articles on all cores (deletions get
// none), in ops' order.
func (l *Literature) analyze(ops []Op) []analyzedDoc {
	out := make([]analyzedDoc, len(ops))
	workers := max(1, runtime.NumCPU())
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			var s termScratch
			for i := w; i < len(ops); i += workers {
				if !ops[i].Delete {
					out[i].doc, out[i].length = l.document(ops[i].Article, &s)
				}
			}
		}(w)
	}
	wg.Wait()
	return out
}

// document builds the bleve document of an article and returns its length
// in analysed tokens. The fields match newMapping.
func (l *Literature) document(a Article, s *termScratch) (*document.Document, int) {
	doc := document.NewDocument(strconv.FormatUint(a.PMID, 10))
	value := []byte(docText(a))
	text := document.NewTextFieldCustom(fieldText, nil, value, bindex.IndexField, l.analyzer)
	terms, n := analyzeTerms(l.analyzer, l.words, value, s)
	doc.AddField(analyzedText{TextField: text, terms: terms, length: n})
	doc.AddField(document.NewTextFieldWithIndexingOptions(fieldTitle, nil, []byte(a.Title), bindex.StoreField))
	doc.AddField(document.NewTextFieldWithIndexingOptions(fieldAbstract, nil, []byte(a.Abstract), bindex.StoreField))
	doc.AddField(newPMIDField(a.PMID))
	doc.AddField(document.NewNumericFieldWithIndexingOptions(fieldYear, nil, float64(a.Year), bindex.StoreField))
	doc.AddField(document.NewNumericFieldWithIndexingOptions(fieldLen, nil, float64(n), bindex.StoreField))
	return doc, n
}

func hashFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// journalKey names the build journal among the index's internal values.
const journalKey = "halu-build-journal"

const (
	journalBuilding = "building"
	journalComplete = "complete"
)

// journal is the state of the latest build, kept inside the bleve index
// as an internal value committed with every batch: after a kill, the
// documents, the corpus statistics for BM25 and the count of input files
// fully applied still agree. A build that did not finish leaves State
// "building"; the index then refuses queries until the same build is run
// again, which resumes at the first file not fully in.
type journal struct {
	State  string         `json:"state"`
	Stats  CorpusStats    `json:"stats"`
	Inputs []journalInput `json:"inputs"`
	// Done is how many of Inputs, in order, are fully applied.
	Done int `json:"done"`
}

// journalInput identifies an input file by path, size and modification
// time (its hash, which needs a full read, goes into the build record).
type journalInput struct {
	Path    string    `json:"path"`
	Size    int64     `json:"size"`
	ModTime time.Time `json:"mod_time"`
}

func describeInputs(paths []string) ([]journalInput, error) {
	out := make([]journalInput, len(paths))
	for i, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		out[i] = journalInput{Path: p, Size: fi.Size(), ModTime: fi.ModTime().UTC()}
	}
	return out, nil
}

// startJournal begins a build of inputs: it resumes the index's unfinished
// build when that build had the same inputs (a file changed since counts
// as other inputs), refuses when it had others, and otherwise starts anew,
// writing the journal before the first document so that a build killed at
// once is known to be unfinished.
func (l *Literature) startJournal(inputs []string) (journal, error) {
	in, err := describeInputs(inputs)
	if err != nil {
		return journal{}, fmt.Errorf("index %s: %w", l.dir, err)
	}
	l.mu.RLock()
	prev := l.journal
	l.mu.RUnlock()
	if prev.State == journalBuilding {
		same := len(prev.Inputs) == len(in)
		for i := 0; same && i < len(in); i++ {
			same = prev.Inputs[i].Path == in[i].Path && prev.Inputs[i].Size == in[i].Size && prev.Inputs[i].ModTime.Equal(in[i].ModTime)
		}
		if !same {
			return journal{}, fmt.Errorf("index %s: an earlier build did not finish (%d of %d files in: %s …); run it again with the same files to finish it, or build into a new directory",
				l.dir, prev.Done, len(prev.Inputs), prev.Inputs[0].Path)
		}
		return prev, nil
	}
	j := journal{State: journalBuilding, Stats: l.corpus(), Inputs: in}
	b, err := json.Marshal(j)
	if err != nil {
		return journal{}, err
	}
	if err := l.idx.SetInternal([]byte(journalKey), b); err != nil {
		return journal{}, fmt.Errorf("index %s: %w", l.dir, err)
	}
	l.mu.Lock()
	l.journal = j
	l.mu.Unlock()
	return j, nil
}
