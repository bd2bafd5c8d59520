package index

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"
	bindex "github.com/blevesearch/bleve_index_api"
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
	// BM25 are the scoring parameters (zero: TextbookBM25). Candidates
	// are drawn by bleve's BM25 (textbook parameters) and re-scored with
	// these; with others the pool is widened (see Search).
	BM25 BM25Params
}

// Searcher is literature retrieval as the suites use it. The bleve index is
// one implementation; a distributed engine speaking BM25 (OpenSearch,
// Elasticsearch) can be another.
type Searcher interface {
	Search(ctx context.Context, text string, opt SearchOptions) ([]Hit, error)
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

// Literature is the on-disk PubMed index: bleve (scorch) with the BM25
// scoring model, English analysis of title + abstract in one field, and the
// PMID as a numeric field for the cutoff.
//
// bleve's own "bm25" takes the square root of term frequencies and averages
// lengths per segment, so its scores move when segments merge. halu uses
// bleve to find candidates (with global statistics passed in, so the
// candidate ranking does not depend on merges either) and re-scores them with
// textbook BM25 (k1 1.2, b 0.75) from exact term counts and corpus
// statistics kept beside the index: scores, and so the threshold τ, are the
// same however the index is laid out.
type Literature struct {
	dir      string
	idx      bleve.Index
	analyzer analysis.Analyzer

	mu      sync.RWMutex
	meta    meta
	journal journal

	closeOnce sync.Once
	closeErr  error
}

func newMapping() *mapping.IndexMappingImpl {
	im := bleve.NewIndexMapping()
	im.ScoringModel = bindex.BM25Scoring
	im.DefaultAnalyzer = en.AnalyzerName
	doc := bleve.NewDocumentMapping()
	text := bleve.NewTextFieldMapping()
	text.Analyzer = en.AnalyzerName
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

// OpenLiterature opens the index in dir, creating it when create is set and
// there is none.
func OpenLiterature(dir string, create bool) (*Literature, error) {
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
		idx, err = bleve.New(bd, newMapping())
	} else {
		idx, err = bleve.Open(bd)
	}
	if err != nil {
		return nil, fmt.Errorf("index %s: %w", dir, err)
	}
	l := &Literature{dir: dir, idx: idx}
	l.analyzer = idx.Mapping().AnalyzerNamed(en.AnalyzerName)
	if l.analyzer == nil {
		idx.Close()
		return nil, fmt.Errorf("index %s: English analyzer missing", dir)
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

// Search returns the top K articles by exact BM25 among bleve's candidates:
// max(100, 10·K) documents matching any query term, cutoff applied in the
// index, re-scored here; then MinScore is applied.
func (l *Literature) Search(ctx context.Context, text string, opt SearchOptions) ([]Hit, error) {
	if opt.K <= 0 {
		opt.K = 10
	}
	candidates := max(100, 10*opt.K)
	if opt.BM25 != (BM25Params{}) && opt.BM25 != TextbookBM25 {
		// Other parameters reorder documents; a wider pool of textbook
		// candidates holds their top k (TestOtherBM25ParamsTopK).
		candidates = max(1000, 30*opt.K)
	}
	return l.search(ctx, text, opt, candidates)
}

// search takes the best candidates documents by bleve's BM25 and returns
// the top opt.K of them re-scored by opt.BM25.
func (l *Literature) search(ctx context.Context, text string, opt SearchOptions, candidates int) ([]Hit, error) {
	if why := l.Unfinished(); why != "" {
		return nil, fmt.Errorf("%w: %s", ErrUnfinished, why)
	}
	qterms := unique(l.terms(text))
	if len(qterms) == 0 {
		return nil, nil
	}
	st := l.corpus()
	if st.Docs == 0 {
		return nil, nil
	}
	mq := bleve.NewMatchQuery(text)
	mq.SetField(fieldText)
	mq.Analyzer = en.AnalyzerName
	mq.SetOperator(query.MatchQueryOperatorOr)
	var q query.Query = mq
	if opt.BelowPMID > 0 {
		lo, hi := float64(0), float64(opt.BelowPMID)
		incl, excl := true, false
		rq := bleve.NewNumericRangeInclusiveQuery(&lo, &hi, &incl, &excl)
		rq.SetField(fieldPMID)
		rq.SetBoost(0) // a filter: it must not move the candidates' ranking
		q = bleve.NewConjunctionQuery(mq, rq)
	}
	req := bleve.NewSearchRequestOptions(q, candidates, 0, false)
	req.Fields = []string{fieldTitle, fieldAbstract, fieldPMID, fieldYear, fieldLen}
	req.PreSearchData = map[string]interface{}{
		search.BM25PreSearchDataKey: &search.BM25Stats{
			DocCount:         float64(st.Docs),
			FieldCardinality: map[string]int{fieldText: int(st.TotalLen), fieldPMID: int(st.Docs)},
		},
	}
	res, err := l.idx.SearchInContext(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("index %s: search: %w", l.dir, err)
	}
	ids := make([]string, len(res.Hits))
	for i, h := range res.Hits {
		ids[i] = h.ID
	}
	df, tfs, err := l.termCounts(ctx, qterms, ids)
	if err != nil {
		return nil, err
	}
	hits := make([]Hit, 0, len(res.Hits))
	for i, h := range res.Hits {
		pmid, _ := strconv.ParseUint(h.ID, 10, 64)
		hits = append(hits, Hit{PMID: pmid, Title: str(h.Fields[fieldTitle]), Abstract: str(h.Fields[fieldAbstract]),
			Year: int(num(h.Fields[fieldYear])), Score: opt.BM25.Score(qterms, tfs[i], df, int(num(h.Fields[fieldLen])), st)})
	}
	sort.SliceStable(hits, func(i, j int) bool {
		if hits[i].Score != hits[j].Score {
			return hits[i].Score > hits[j].Score
		}
		return hits[i].PMID < hits[j].PMID
	})
	out := hits[:0]
	for _, h := range hits {
		if len(out) == opt.K {
			break
		}
		if opt.MinScore > 0 && h.Score < opt.MinScore {
			break
		}
		out = append(out, h)
	}
	return out, nil
}

// termCounts returns each query term's document frequency among live
// documents and, for each of the documents ids, each term's exact count in
// it — read from the postings, on one reader snapshot.
func (l *Literature) termCounts(ctx context.Context, terms, ids []string) (map[string]uint64, []map[string]int, error) {
	adv, err := l.idx.Advanced()
	if err != nil {
		return nil, nil, err
	}
	r, err := adv.Reader()
	if err != nil {
		return nil, nil, err
	}
	defer r.Close()
	type cand struct {
		pos int
		id  bindex.IndexInternalID
	}
	cands := make([]cand, 0, len(ids))
	for i, id := range ids {
		iid, err := r.InternalID(id)
		if err != nil {
			return nil, nil, err
		}
		if iid != nil {
			cands = append(cands, cand{i, iid})
		}
	}
	sort.Slice(cands, func(a, b int) bool { return cands[a].id.Compare(cands[b].id) < 0 })
	df := make(map[string]uint64, len(terms))
	tfs := make([]map[string]int, len(ids))
	for i := range tfs {
		tfs[i] = make(map[string]int, len(terms))
	}
	for _, t := range terms {
		tfr, err := r.TermFieldReader(ctx, []byte(t), fieldText, true, false, false)
		if err != nil {
			return nil, nil, err
		}
		df[t] = tfr.Count()
		for _, c := range cands {
			m, err := tfr.Advance(c.id, nil)
			if err != nil {
				tfr.Close()
				return nil, nil, err
			}
			if m == nil {
				break
			}
			if m.ID.Equals(c.id) {
				tfs[c.pos][t] = int(m.Freq)
			}
		}
		tfr.Close()
	}
	return df, tfs, nil
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

func str(v any) string {
	s, _ := v.(string)
	return s
}

func num(v any) float64 {
	f, _ := v.(float64)
	return f
}

// Stats reports the index's size, documents, PMID range and builds.
func (l *Literature) Stats(ctx context.Context) (Stats, error) {
	st := l.corpus()
	s := Stats{Dir: l.dir, Docs: st.Docs, AvgLen: st.AvgLen(), Unfinished: l.Unfinished()}
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
