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

	"halu/index/internal/zapv17"
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
	b := &builder{l: l, ctx: ctx, inputs: inputs, opt: opt, info: BuildInfo{Time: time.Now().UTC(), Inputs: make([]InputInfo, len(inputs))}}
	if l.readOnly {
		return b.info, fmt.Errorf("index %s: opened to search: a build opens it to build (OpenLiterature's create)", l.dir)
	}
	// The seal goes first: a build that does not end leaves an index no
	// run trusts (seal.go).
	if err := l.unseal(); err != nil {
		return b.info, err
	}
	jr, err := l.startJournal(inputs)
	if err != nil {
		return b.info, err
	}
	b.jr = jr
	if jr.Done > 0 {
		fmt.Fprintf(opt.Log, "resuming an unfinished build: %d of %d files are in\n", jr.Done, len(inputs))
	}
	// The parsers stop with ctx, and when the writer fails.
	var cancel context.CancelFunc
	b.pctx, cancel = context.WithCancel(ctx)
	defer cancel()
	b.cancel = cancel
	b.startParsers()

	// The writer: apply each file's operations in input order. Chunks are
	// analysed (on all cores) one ahead of the writer, so analysis of the
	// next chunk overlaps the writing of this one's segment (zapv17.Plugin).
	seen, err := l.knownPMIDs(ctx)
	if err != nil {
		return b.info, err
	}
	b.w = &batchWriter{l: l, size: opt.BatchSize, stats: l.corpus(), pending: map[uint64]pendingDoc{},
		seen: seen, journal: jr}
	b.w.batch = l.idx.NewBatch()
	b.stop = make(chan struct{})
	b.ready = make(chan chunk, 1)
	go b.analyzeAhead()
	for c := range b.ready {
		if err := b.apply(c); err != nil {
			return b.fail(err)
		}
	}
	return b.finish()
}

// builder is one Build under way: the parsers (one per input file, as many
// at once as there are cores) feed the analysis, which feeds the writer.
type builder struct {
	l      *Literature
	ctx    context.Context
	inputs []string
	opt    BuildOptions
	info   BuildInfo
	jr     journal
	// pctx stops the parsers (with ctx, or when the writer fails).
	pctx    context.Context
	cancel  context.CancelFunc
	files   []parsedFile
	w       *batchWriter
	stop    chan struct{}
	ready   chan chunk
	applied int
}

// parsedFile is one input file's operations as its parser reads them;
// done closes when the parser has finished with the file.
type parsedFile struct {
	ops  chan Op
	done chan struct{}
}

// startParsers starts parsing the files not yet in. Parsers start in input
// order, as many at once as there are cores: the writer waits for the
// earliest unfinished file, which therefore always holds a slot (with one
// core, files started out of order once left the writer waiting on a file
// that could not start).
func (b *builder) startParsers() {
	b.files = make([]parsedFile, len(b.inputs))
	for i, path := range b.inputs {
		b.files[i] = parsedFile{ops: make(chan Op, 4096), done: make(chan struct{})}
		in := &b.info.Inputs[i]
		in.Path = path
		in.Skipped = map[string]int{}
		if i < b.jr.Done {
			in.AlreadyIn = true
			close(b.files[i].ops)
			close(b.files[i].done)
		}
	}
	sem := make(chan struct{}, max(1, runtime.GOMAXPROCS(0)))
	go func() {
		for i := b.jr.Done; i < len(b.inputs); i++ {
			select {
			case sem <- struct{}{}:
				go func(i int) {
					defer func() { <-sem }()
					b.parse(i)
				}(i)
			case <-b.pctx.Done():
				for ; i < len(b.inputs); i++ {
					b.info.Inputs[i].Error = b.pctx.Err().Error()
					close(b.files[i].ops)
					close(b.files[i].done)
				}
				return
			}
		}
	}()
}

// parse reads input file i into its channel, counting what it skips.
func (b *builder) parse(i int) {
	in := &b.info.Inputs[i]
	f := b.files[i]
	defer close(f.done)
	defer close(f.ops)
	if h, err := FileSHA256(b.inputs[i]); err == nil {
		in.SHA256 = h
	}
	err := ReadInput(b.inputs[i], func(op Op) error {
		select {
		case f.ops <- op:
			return nil
		case <-b.pctx.Done():
			return b.pctx.Err()
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
		fmt.Fprintf(b.opt.Log, "skipped: %s\n", p)
	})
	if err != nil {
		in.Error = err.Error()
		fmt.Fprintf(b.opt.Log, "input error (records before it were kept): %v\n", err)
	}
}

// analyzeAhead cuts the files' operations, in input order, into chunks of
// a batch, analyses each and hands it to the writer; a chunk that ends a
// file says the file is in.
func (b *builder) analyzeAhead() {
	defer close(b.ready)
	c := chunk{}
	send := func() bool {
		c.docs = b.l.analyze(c.ops)
		if b.pctx.Err() != nil && b.ctx.Err() == nil {
			return false // the writer failed
		}
		select {
		case b.ready <- c:
			c = chunk{}
			return true
		case <-b.stop:
			return false
		}
	}
	for i := b.jr.Done; i < len(b.files); i++ {
		in := &b.info.Inputs[i]
		for op := range b.files[i].ops {
			c.ops = append(c.ops, op)
			c.in = append(c.in, in)
			if len(c.ops) >= b.opt.BatchSize && !send() {
				return
			}
		}
		<-b.files[i].done
		if b.ctx.Err() != nil {
			break // this file may be cut short: it is not in
		}
		// The file is in: its last operations and the journal saying so
		// are one batch. (A damaged file counts as in: its records before
		// the damage are, and reading it again would stop there again.)
		c.filesIn = i + 1
		if !send() {
			return
		}
	}
	if len(c.ops) > 0 {
		send()
	}
}

// apply writes one chunk: its deletions and articles, then, when it ends a
// file, the journal saying the file is in, as one batch.
func (b *builder) apply(c chunk) error {
	for j, op := range c.ops {
		in := c.in[j]
		if op.Delete {
			in.Deletes++
			did, err := b.w.delete(op.Article.PMID)
			if err != nil {
				return err
			}
			if did {
				b.info.Deleted++
			}
		} else {
			in.Records++
			replaced, err := b.w.put(op.Article, c.docs[j])
			if err != nil {
				return err
			}
			if replaced {
				b.info.Updated++
			} else {
				b.info.Added++
			}
		}
		b.applied++
		if b.opt.Progress != nil && b.applied%1000 == 0 {
			b.opt.Progress(b.applied)
		}
	}
	if c.filesIn > 0 {
		if in := &b.info.Inputs[c.filesIn-1]; len(in.Skipped) == 0 {
			in.Skipped = nil
		}
		b.w.journal.Done = c.filesIn
		b.w.dirty = true
	}
	return b.w.flush()
}

// fail stops the parsers and the analysis ahead of the writer and waits
// for them, so that nothing writes to info after Build returns.
func (b *builder) fail(err error) (BuildInfo, error) {
	b.cancel()
	close(b.stop)
	for range b.ready {
	}
	for i := range b.files {
		<-b.files[i].done
	}
	return b.info, fmt.Errorf("index %s: %w", b.l.dir, err)
}

// finish records the build: its journal (complete, or the files not fully
// applied when it was interrupted), the corpus statistics and the build
// in the index's meta; then it waits for bleve to settle.
func (b *builder) finish() (BuildInfo, error) {
	l, w, ctx := b.l, b.w, b.ctx
	if ctx.Err() == nil {
		w.journal.State, w.dirty = journalComplete, true
	} else {
		// The parsers stop at the cancellation; the build record says
		// which files were not (fully) applied.
		for i := w.journal.Done; i < len(b.files); i++ {
			<-b.files[i].done
			if in := &b.info.Inputs[i]; in.Error == "" {
				in.Error = "not fully applied: the build was interrupted (" + ctx.Err().Error() + ")"
			}
		}
	}
	if err := w.flush(); err != nil {
		return b.info, fmt.Errorf("index %s: %w", l.dir, err)
	}
	if b.opt.Progress != nil {
		b.opt.Progress(b.applied)
	}
	l.mu.Lock()
	l.meta.Stats = w.stats
	l.meta.Builds = append(l.meta.Builds, b.info)
	l.journal = w.journal
	l.mu.Unlock()
	if err := l.writeMeta(); err != nil {
		return b.info, fmt.Errorf("index %s: %w", l.dir, err)
	}
	if ctx.Err() == nil {
		if err := l.settle(ctx); err != nil && ctx.Err() == nil {
			fmt.Fprintf(b.opt.Log, "the index is complete, but %v: its segments stay as they are\n", err)
		}
		if err := l.writeSeal(); err != nil {
			return b.info, fmt.Errorf("index %s: seal: %w", l.dir, err)
		}
	}
	return b.info, ctx.Err()
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
	terms  []zapv17.TermCount
	length int
}

// Terms are the field's terms with their counts (zapv17.Counted).
func (f analyzedText) Terms() []zapv17.TermCount { return f.terms }

func (analyzedText) Analyze()              {}
func (f analyzedText) AnalyzedLength() int { return f.length }

// AnalyzedTokenFrequencies is bleve's view of the terms (no term vectors:
// the field keeps none).
func (f analyzedText) AnalyzedTokenFrequencies() bindex.TokenFrequencies {
	tfs := make(bindex.TokenFrequencies, len(f.terms))
	for _, t := range f.terms {
		tf := &bindex.TokenFreq{Term: []byte(t.Term)}
		tf.SetFrequency(t.Count)
		tfs[t.Term] = tf
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

// PlainField marks the field as one the segment builder writes from its
// token frequencies (zapv17.Plain).
func (pmidField) PlainField() {}

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

// FileSHA256 is the hex sha256 of the file at path.
func FileSHA256(path string) (string, error) {
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
