package index

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/mapping"
	bindex "github.com/blevesearch/bleve_index_api"

	"halu/index/internal/zapv17"
)

// Hit is one retrieved article with its BM25 score.
type Hit struct {
	PMID     uint64  `json:"pmid"`
	Score    float64 `json:"score"`
	Title    string  `json:"title"`
	Abstract string  `json:"abstract"`
	Year     int     `json:"year,omitempty"`
}

// SearchOptions shape a literature search.
type SearchOptions struct {
	// K is how many articles to return at most.
	K int
	// MinScore keeps only articles scoring at least this (KnowHD's τ,
	// TruthHypo eq. 1); 0 keeps all.
	MinScore float64
	// BelowPMID keeps only articles with PMID < BelowPMID (the knowledge
	// cutoff, strictly below as the TruthHypo authors' code); 0 keeps all.
	BelowPMID uint64
	// BM25 are the scoring parameters (zero: TextbookBM25); the top K is
	// exact for any of them (see Search).
	BM25 BM25Params
}

// Searcher is literature retrieval as the suites use it. The bleve index is
// one implementation; a distributed engine speaking BM25 (OpenSearch,
// Elasticsearch) can be another.
type Searcher interface {
	Search(ctx context.Context, text string, opt SearchOptions) ([]Hit, error)
	// SearchBatch is Search of every text, in order (one KnowHD
	// statement's claims).
	SearchBatch(ctx context.Context, texts []string, opt SearchOptions) ([][]Hit, error)
	Stats(ctx context.Context) (Stats, error)
	Close() error
}

// Stats describe an index.
type Stats struct {
	Dir       string      `json:"dir"`
	Docs      uint64      `json:"docs"`
	AvgLen    float64     `json:"avg_len"`
	SizeBytes int64       `json:"size_bytes"`
	MinPMID   uint64      `json:"min_pmid"`
	MaxPMID   uint64      `json:"max_pmid"`
	Builds    []BuildInfo `json:"builds"`
	// Indexed is bleve's own count of documents; it equals Docs, the
	// count BM25 uses, in an index whose builds kept their journal.
	Indexed uint64 `json:"indexed"`
	// Unfinished is set when a build did not finish: what it says.
	Unfinished string `json:"unfinished,omitempty"`
	// Digest is the index's identity, its seal's digest (seal.go): what a
	// run records of it ("" for an index opened to build).
	Digest string `json:"digest,omitempty"`
}

// BuildInfo records one `halu index build` into the index.
type BuildInfo struct {
	Time    time.Time   `json:"time"`
	Inputs  []InputInfo `json:"inputs"`
	Added   int         `json:"added"`
	Updated int         `json:"updated"`
	Deleted int         `json:"deleted"`
}

// InputInfo is one input file of a build.
type InputInfo struct {
	Path     string         `json:"path"`
	SHA256   string         `json:"sha256"`
	Records  int            `json:"records"`
	Deletes  int            `json:"deletes"`
	Skipped  map[string]int `json:"skipped,omitempty"`
	Problems []Problem      `json:"problems,omitempty"`
	Error    string         `json:"error,omitempty"`
	// AlreadyIn marks a file an earlier, interrupted run of the same build
	// had fully applied: this run resumed after it.
	AlreadyIn bool `json:"already_in,omitempty"`
}

const (
	fieldText     = "text"
	fieldTitle    = "title"
	fieldAbstract = "abstract"
	fieldPMID     = "pmid"
	fieldYear     = "year"
	fieldLen      = "len"
	bleveDir      = "bleve"
	metaFile      = "halu-index.json"
)

// meta is the index's own bookkeeping beside bleve: corpus statistics for
// exact BM25 and the build history.
type meta struct {
	Stats  CorpusStats `json:"stats"`
	Builds []BuildInfo `json:"builds"`
}

// Literature is the on-disk PubMed index: bleve (scorch) storing title +
// abstract in one text field analysed by halu_en (bleve's English analysis,
// the same terms), the PMID as a numeric field for the cutoff, and corpus
// statistics (documents, total length) kept beside the index in the
// build's journal.
//
// bleve's own "bm25" takes the square root of term frequencies and
// averages lengths per segment, so its scores move when segments merge.
// halu scores BM25 itself (any k1 and b) from exact term counts and those
// corpus statistics, walking the query terms' postings with MaxScore
// pruning (topk.go) — a window of documents at a time, on all cores, each
// segment's postings read straight from its zap file where the layout is
// understood (index/internal/zapv17) — and returns the exact top k:
// scores, and so the threshold τ, are the same however the index is laid
// out.
type Literature struct {
	dir      string
	idx      bleve.Index
	analyzer analysis.Analyzer
	words    *termMemory // the analyzer's, nil for bleve's en

	mu      sync.RWMutex
	meta    meta
	journal journal

	// walkParts and walkSplit, when set, replace the pruned walk's
	// ranges per large segment (one per core) and the size from which a
	// segment is cut (splitMin): tests cut small indexes as large ones.
	walkParts int
	walkSplit uint64
	// walkWindow, when set, replaces the documents the pruned walk of a
	// segment scores at once (windowSize): tests cross many windows.
	walkWindow int
	// zapIterator, when set, has the pruned walk read every postings
	// list through zap's iterator, not directly (tests compare the two).
	zapIterator bool
	// blockAll, when set, gives every list read directly block bounds,
	// dense or not (tests walk small indexes with them).
	blockAll bool
	// bounds are the block bounds of dense lists read so far (blockmax.go).
	bounds blockCache
	// lists are the postings lists looked up so far (listcache.go).
	lists listCache
	// windows are the pruned walk's scratch, kept between queries.
	windows windows

	// verified holds the segment files whose data matched their CRC in
	// this process (verifySegment); seal is the index's seal, checked
	// when it was opened to search (zero when opened to build).
	verified sync.Map
	seal     Seal
	// readOnly is an index opened to search (OpenLiterature's create
	// false): Build refuses it.
	readOnly bool

	closeOnce sync.Once
	closeErr  error
}

func newMapping() *mapping.IndexMappingImpl {
	im := bleve.NewIndexMapping()
	im.ScoringModel = bindex.BM25Scoring
	im.DefaultAnalyzer = analyzerName
	doc := bleve.NewDocumentMapping()
	text := bleve.NewTextFieldMapping()
	text.Analyzer = analyzerName
	text.Store = false
	text.IncludeInAll = false
	text.IncludeTermVectors = false
	doc.AddFieldMappingsAt(fieldText, text)
	stored := bleve.NewTextFieldMapping()
	stored.Index = false
	stored.Store = true
	stored.IncludeInAll = false
	doc.AddFieldMappingsAt(fieldTitle, stored)
	doc.AddFieldMappingsAt(fieldAbstract, stored)
	num := bleve.NewNumericFieldMapping()
	num.Store = true
	num.IncludeInAll = false
	doc.AddFieldMappingsAt(fieldPMID, num)
	plain := bleve.NewNumericFieldMapping()
	plain.Index = false
	plain.Store = true
	plain.IncludeInAll = false
	doc.AddFieldMappingsAt(fieldYear, plain)
	doc.AddFieldMappingsAt(fieldLen, plain)
	im.DefaultMapping = doc
	im.StoreDynamic = false
	im.IndexDynamic = false
	return im
}

// Option changes how OpenLiterature opens an index.
type Option func(*options)

type options struct{ stockSegments bool }

// StockSegments has bleve's own zap builder write the index's new
// segments instead of halu's builder of the same format (zapv17.Plugin):
// the same bytes, written more slowly — a way back should a zapx release
// change what halu's builder assumes.
func StockSegments() Option { return func(o *options) { o.stockSegments = true } }

// OpenLiterature opens the index in dir: to build (create: made when there
// is none), or to search (read-only, checked against its seal).
func OpenLiterature(dir string, create bool, opts ...Option) (*Literature, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	// The writer of the index's new segments is chosen when the index is
	// opened (scorch keeps the one its registry holds then).
	zapv17.Install(!o.stockSegments)
	bd := filepath.Join(dir, bleveDir)
	var idx bleve.Index
	var err error
	if _, serr := os.Stat(bd); errors.Is(serr, fs.ErrNotExist) {
		if !create {
			return nil, fmt.Errorf("index %s: no index here (build one with `halu index build --out %s FILE...`)", dir, dir)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("index %s: %w", dir, err)
		}
		idx, err = createBleve(bd)
	} else {
		// Opened to search, the index is read-only: bleve merges nothing
		// and rewrites nothing, so the segments stay the ones sealed.
		idx, err = openBleve(bd, !create)
	}
	if err != nil {
		if why := damage(bd); why != nil {
			// bleve says what failed after the damage ("error parsing
			// mapping JSON" for a segment cut short): say the damage.
			return nil, fmt.Errorf("%w: index %s: %v (rebuild it: halu index build --out NEWDIR FILE...)", ErrDamaged, dir, why)
		}
		return nil, fmt.Errorf("index %s: %w", dir, err)
	}
	l := &Literature{dir: dir, idx: idx, readOnly: !create}
	// The text field's analyzer: halu_en, or bleve's en in an index built
	// before it (the same terms).
	name := idx.Mapping().AnalyzerNameForPath(fieldText)
	l.analyzer = idx.Mapping().AnalyzerNamed(name)
	l.words = newTermMemory(l.analyzer)
	if l.analyzer == nil {
		idx.Close()
		return nil, fmt.Errorf("index %s: analyzer %q missing", dir, name)
	}
	b, err := os.ReadFile(filepath.Join(dir, metaFile))
	if err == nil {
		if err := json.Unmarshal(b, &l.meta); err != nil {
			idx.Close()
			return nil, fmt.Errorf("index %s: %s: %w", dir, metaFile, err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		idx.Close()
		return nil, fmt.Errorf("index %s: %w", dir, err)
	}
	// The journal, committed with the documents, is what the index holds;
	// the meta file is written after a build and may lag behind it.
	j, err := idx.GetInternal([]byte(journalKey))
	if err != nil {
		idx.Close()
		return nil, fmt.Errorf("index %s: %w", dir, err)
	}
	if j != nil {
		if err := json.Unmarshal(j, &l.journal); err != nil {
			idx.Close()
			return nil, fmt.Errorf("index %s: build journal: %w", dir, err)
		}
		l.meta.Stats = l.journal.Stats
	}
	if !create && l.journal.State != journalBuilding {
		// An unfinished build is said by Unfinished; a finished one must
		// be the index its build sealed.
		if l.seal, err = l.checkSeal(); err != nil {
			idx.Close()
			return nil, err
		}
	}
	return l, nil
}

// Close closes the index; closing twice is harmless.
func (l *Literature) Close() error {
	l.closeOnce.Do(func() { l.closeErr = l.idx.Close() })
	return l.closeErr
}

// terms analyses text as the index does: English tokenisation, lower case,
// stop words removed, Porter stemming.
func (l *Literature) terms(text string) []string {
	ts := l.analyzer.Analyze([]byte(text))
	out := make([]string, 0, len(ts))
	for _, t := range ts {
		out = append(out, string(t.Term))
	}
	return out
}

func docText(a Article) string {
	if a.Title == "" {
		return a.Abstract
	}
	return a.Title + " " + a.Abstract
}

func (l *Literature) writeMeta() error {
	l.mu.RLock()
	b, err := json.MarshalIndent(l.meta, "", "  ")
	l.mu.RUnlock()
	if err != nil {
		return err
	}
	tmp := filepath.Join(l.dir, metaFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(l.dir, metaFile))
}

// createBleve makes a new, empty bleve index in bd and opens it. It is made
// under another name and renamed into place: a build killed while bleve
// wrote its first files left an index_meta.json cut short, an index no
// command could open or build on; now it leaves only the temporary, which
// the next build removes.
func createBleve(bd string) (bleve.Index, error) {
	tmp := bd + ".creating"
	if err := os.RemoveAll(tmp); err != nil {
		return nil, err
	}
	idx, err := bleve.New(tmp, newMapping())
	if err != nil {
		return nil, err
	}
	if err := idx.Close(); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, bd); err != nil {
		return nil, err
	}
	return openBleve(bd, false)
}

// openBleve opens the bleve index in bd. zap panics on some damaged
// segments as it opens them (a bad offset in the footer): that is an error
// here, explained by damage. (What bleve had opened before the panic stays
// open until the process ends.)
func openBleve(bd string, readOnly bool) (idx bleve.Index, err error) {
	defer func() {
		if r := recover(); r != nil {
			idx, err = nil, fmt.Errorf("bleve: %v", r)
		}
	}()
	if readOnly {
		return bleve.OpenUsing(bd, map[string]interface{}{"read_only": true})
	}
	return bleve.Open(bd)
}

// ErrDamaged marks an index whose files are not whole (a segment cut
// short or overwritten): an error in an input, as a command reports it
// (exit 2), and one only a rebuild mends.
var ErrDamaged error = damagedError{}

type damagedError struct{}

func (damagedError) Error() string    { return "the index is damaged" }
func (damagedError) InputError() bool { return true }

// damage names the first segment file under bd (bleve's directory) that
// zap cannot open, or its store's root that bbolt cannot: what made bleve
// fail to open the index, which bleve's own error does not say.
func damage(bd string) error {
	var meta map[string]any // bleve reads the first object (zeros may follow)
	if b, err := os.ReadFile(filepath.Join(bd, "index_meta.json")); err == nil && json.NewDecoder(bytes.NewReader(b)).Decode(&meta) != nil {
		return fmt.Errorf("%s is not whole", filepath.Join(bd, "index_meta.json"))
	}
	store := filepath.Join(bd, "store")
	root := filepath.Join(store, "root.bolt")
	if st, err := os.Stat(root); err == nil && st.Size() < 4096 {
		return fmt.Errorf("%s is cut short (%d bytes)", root, st.Size())
	}
	segs, _ := filepath.Glob(filepath.Join(store, "*.zap"))
	sort.Strings(segs)
	for _, p := range segs {
		if err := zapv17.Check(p); err != nil {
			return fmt.Errorf("segment %s: %v", filepath.Base(p), err)
		}
	}
	return nil
}

// ErrUnfinished is returned by a search of an index whose last build did
// not finish: its documents are a part of what the build was given.
var ErrUnfinished = errors.New("the index's last build did not finish")

// Unfinished says what an unfinished build left ("" when the last build
// finished).
func (l *Literature) Unfinished() string {
	l.mu.RLock()
	defer l.mu.RUnlock()
	j := l.journal
	if j.State != journalBuilding {
		return ""
	}
	return fmt.Sprintf("index %s: %d of %d input files are in (%d documents); run the same `halu index build` again to finish it",
		l.dir, j.Done, len(j.Inputs), j.Stats.Docs)
}

func (l *Literature) corpus() CorpusStats {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.meta.Stats
}

// Search returns the top K articles by exact BM25 (opt.BM25, over the
// corpus statistics of every live document), walked over the postings with
// MaxScore pruning (topk.go); then MinScore is applied. Ties go to the
// lower PMID.
func (l *Literature) Search(ctx context.Context, text string, opt SearchOptions) ([]Hit, error) {
	out, err := l.SearchBatch(ctx, []string{text}, opt)
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

// SearchBatch runs Search for every text on one snapshot of the index (a
// KnowHD item's claims at once): the results are those of one Search each,
// in order, without opening a reader per query.
func (l *Literature) SearchBatch(ctx context.Context, texts []string, opt SearchOptions) (hits [][]Hit, err error) {
	// zap reads a damaged segment by offsets it believes: a panic or a
	// fault, which is an error here (and in each walker, segmentTopK).
	err = guard(l.dir, func() error {
		hits, err = l.searchBatch(ctx, texts, opt)
		return err
	})
	return hits, err
}

// guard runs fn, turning a panic or a memory fault in it — zap reading a
// segment whose bytes are damaged — into ErrDamaged.
func guard(dir string, fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: index %s: %v (rebuild it: halu index build --out NEWDIR FILE...)", ErrDamaged, dir, r)
		}
	}()
	old := debug.SetPanicOnFault(true)
	defer debug.SetPanicOnFault(old)
	return fn()
}

func (l *Literature) searchBatch(ctx context.Context, texts []string, opt SearchOptions) ([][]Hit, error) {
	if why := l.Unfinished(); why != "" {
		return nil, fmt.Errorf("%w: %s", ErrUnfinished, why)
	}
	if opt.K <= 0 {
		opt.K = 10
	}
	out := make([][]Hit, len(texts))
	st := l.corpus()
	if st.Docs == 0 {
		return out, nil
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
	for i, text := range texts {
		qterms := unique(l.terms(text))
		if len(qterms) == 0 {
			continue
		}
		docs, _, err := l.topK(ctx, r, qterms, opt.K, opt, st, true)
		if err != nil {
			return nil, fmt.Errorf("index %s: search: %w", l.dir, err)
		}
		if out[i], err = l.hits(r, docs, opt.MinScore); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// hits reads the stored fields of docs (best first), stopping at the first
// below minScore.
func (l *Literature) hits(r bindex.IndexReader, docs []*scoredDoc, minScore float64) ([]Hit, error) {
	out := make([]Hit, 0, len(docs))
	for _, d := range docs {
		if minScore > 0 && d.score < minScore {
			break
		}
		h := Hit{PMID: d.pmid, Score: d.score}
		doc, err := r.Document(strconv.FormatUint(d.pmid, 10))
		if err != nil {
			return nil, fmt.Errorf("index %s: document %d: %w", l.dir, d.pmid, err)
		}
		if doc != nil {
			doc.VisitFields(func(f bindex.Field) {
				switch f.Name() {
				case fieldTitle:
					h.Title = string(f.Value())
				case fieldAbstract:
					h.Abstract = string(f.Value())
				case fieldYear:
					h.Year = int(storedNumber(f))
				}
			})
		}
		out = append(out, h)
	}
	return out, nil
}

// storedNumber is the value of a stored numeric field (0 for any other).
func storedNumber(f bindex.Field) float64 {
	if nf, ok := f.(interface{ Number() (float64, error) }); ok {
		v, _ := nf.Number()
		return v
	}
	return 0
}

func unique(xs []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range xs {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

func num(v any) float64 {
	f, _ := v.(float64)
	return f
}

// Stats reports the index's size, documents, PMID range and builds.
func (l *Literature) Stats(ctx context.Context) (st Stats, err error) {
	err = guard(l.dir, func() error {
		st, err = l.stats(ctx)
		return err
	})
	return st, err
}

func (l *Literature) stats(ctx context.Context) (Stats, error) {
	st := l.corpus()
	s := Stats{Dir: l.dir, Docs: st.Docs, AvgLen: st.AvgLen(), Unfinished: l.Unfinished(), Digest: l.seal.Digest}
	n, err := l.idx.DocCount()
	if err != nil {
		return s, fmt.Errorf("index %s: %w", l.dir, err)
	}
	s.Indexed = n
	l.mu.RLock()
	s.Builds = append(s.Builds, l.meta.Builds...)
	l.mu.RUnlock()
	_ = filepath.WalkDir(l.dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				s.SizeBytes += info.Size()
			}
		}
		return nil
	})
	for _, desc := range []bool{false, true} {
		req := bleve.NewSearchRequestOptions(bleve.NewMatchAllQuery(), 1, 0, false)
		field := fieldPMID
		if desc {
			field = "-" + fieldPMID
		}
		req.SortBy([]string{field})
		req.Fields = []string{fieldPMID}
		res, err := l.idx.SearchInContext(ctx, req)
		if err != nil {
			return s, fmt.Errorf("index %s: %w", l.dir, err)
		}
		if len(res.Hits) == 1 {
			v := uint64(math.Round(num(res.Hits[0].Fields[fieldPMID])))
			if desc {
				s.MaxPMID = v
			} else {
				s.MinPMID = v
			}
		}
	}
	return s, nil
}
