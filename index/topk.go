package index

import (
	"container/heap"
	"context"
	"encoding/binary"
	"fmt"
	zap "github.com/blevesearch/zapx/v17"
	"math"
	"math/bits"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/blevesearch/bleve/v2/index/scorch"
	bindex "github.com/blevesearch/bleve_index_api"
	segment "github.com/blevesearch/scorch_segment_api/v2"
	"golang.org/x/sync/errgroup"

	"halu/index/internal/zapv17"
)

// Exact BM25 top k over the postings, with MaxScore pruning (Turtle and
// Flood, 1995). Each query term's contribution to a document's score is
// below its upper bound idf·(k1+1) (tf/(tf+K) < 1 for any K > 0). The terms
// are ordered by bound; the longest prefix of them whose bounds sum below
// the current k-th score are "non-essential": a document that holds only
// those terms cannot enter the top k, so only the essential terms' postings
// are walked, and a non-essential list is consulted (Advance) only while
// the bounds left can still lift the document over the k-th score. The
// result is the exhaustive top k — the same documents with the same scores,
// summed in query-term order as BM25Params.Score sums them — which
// TestPrunedTopKIsExhaustive checks on every PubMedQA question.
//
// The pruned walk runs over the index's segments, the larger ones cut into
// one range of documents per core, on all cores at once (Lucene's segment
// slices): the walks share the best k-th score any of them holds, which
// bounds every walk's pruning, and their top k are merged. Each walks its
// range a window of documents at a time (runWindows), and reads each zap
// file's postings directly (postings.go, roaring.go), falling back on
// zap's iterator for anything else. The reference (prune unset) scores
// every posting a document at a time (run), read through bleve's own term
// readers over the whole index: it shares with the pruned walk only the
// exact score and the keeping of the best k, not the loop, nor the reading
// of postings, segments or ranges.
//
// A document's length comes from its norm: bleve stores 1/√len as a
// float32, which gives len back exactly for any abstract-sized document
// (docLen; a zap file holds len itself, read as the norm would give it).

// scoredDoc is a candidate: its document number, PMID and exact score.
type scoredDoc struct {
	doc   uint64
	pmid  uint64
	score float64
	tf    []int // per query term (query order)
	dl    int
}

// worse orders candidates as the result does, reversed: a lower score, or
// the same score and a higher PMID, is worse.
func worse(a, b *scoredDoc) bool {
	if a.score != b.score {
		return a.score < b.score
	}
	return a.pmid > b.pmid
}

// topHeap holds the best k candidates with the worst on top.
type topHeap []*scoredDoc

func (h topHeap) Len() int           { return len(h) }
func (h topHeap) Less(i, j int) bool { return worse(h[i], h[j]) }
func (h topHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *topHeap) Push(x any)        { *h = append(*h, x.(*scoredDoc)) }
func (h *topHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// source is one term's postings in document order: a bleve term reader
// over the whole index, or one segment's postings.
type source interface {
	// Next moves to the next posting; Advance to the first at or after
	// target, which lies past the current one. Both return done as the
	// document at the end. (zapv17.Source is one.)
	Next() (doc uint64, freq int, dl int, err error)
	Advance(target uint64) (doc uint64, freq int, dl int, err error)
}

// readerSource reads a bleve TermFieldReader (documents by their 8-byte
// internal numbers).
type readerSource struct {
	tfr bindex.TermFieldReader
	buf bindex.TermFieldDoc
	key [8]byte
}

func (s *readerSource) set(d *bindex.TermFieldDoc, err error) (uint64, int, int, error) {
	if err != nil || d == nil || len(d.ID) != 8 {
		return done, 0, 0, err
	}
	return binary.BigEndian.Uint64(d.ID), int(d.Freq), zapv17.DocLen(d.Norm), nil
}

func (s *readerSource) Next() (uint64, int, int, error) { return s.set(s.tfr.Next(&s.buf)) }

func (s *readerSource) Advance(target uint64) (uint64, int, int, error) {
	binary.BigEndian.PutUint64(s.key[:], target)
	return s.set(s.tfr.Advance(s.key[:], &s.buf))
}

// segmentSource reads one segment's postings iterator (documents by their
// number in the segment).
type segmentSource struct{ it segment.PostingsIterator }

func (s segmentSource) set(p segment.Posting, err error) (uint64, int, int, error) {
	if err != nil || p == nil {
		return done, 0, 0, err
	}
	return p.Number(), int(p.Frequency()), zapv17.DocLen(p.Norm()), nil
}

func (s segmentSource) Next() (uint64, int, int, error) { return s.set(s.it.Next()) }

func (s segmentSource) Advance(target uint64) (uint64, int, int, error) {
	return s.set(s.it.Advance(target))
}

// cursor is a term's place in its postings.
type cursor struct {
	term    int // index in the query's terms
	src     source
	idf, ub float64
	doc     uint64 // current document; done at the end
	freq    int
	dl      int // the document's length
	// blocks are the term's block bounds in the segment walked (nil:
	// ub in every block), exact their exact maxima for the walk's
	// setting (nil: the pairs'); wb is its bound in the window walked.
	blocks []blockMax
	exact  []float32
	wb     float64
}

// done is the document a source gives at its end.
const done = zapv17.Done

func (c *cursor) next() (err error) {
	c.doc, c.freq, c.dl, err = c.src.Next()
	return err
}

// advance moves to the first document ≥ target.
func (c *cursor) advance(target uint64) (err error) {
	if c.doc >= target {
		return nil
	}
	c.doc, c.freq, c.dl, err = c.src.Advance(target)
	return err
}

// fill appends to ps the cursor's postings before end, its current one
// first, and moves it to the first at or after end: a zap list's in bulk
// (zapv17.Source.Fill), another's one by one.
func (c *cursor) fill(end uint64, ps []zapv17.Posting) (_ []zapv17.Posting, err error) {
	if c.doc >= end {
		return ps, nil
	}
	ps = append(ps, zapv17.Posting{Doc: uint32(c.doc), Freq: int32(c.freq), Len: int32(c.dl)})
	if z, ok := c.src.(*zapv17.Source); ok {
		ps, c.doc, c.freq, c.dl, err = z.Fill(end, ps)
		return ps, err
	}
	for {
		if err := c.next(); err != nil || c.doc >= end {
			return ps, err
		}
		ps = append(ps, zapv17.Posting{Doc: uint32(c.doc), Freq: int32(c.freq), Len: int32(c.dl)})
	}
}

// sharedTheta is the best k-th score any walk of a query holds: k
// documents score at least that much, so no document below it can enter.
type sharedTheta struct{ bits atomic.Uint64 }

func newSharedTheta() *sharedTheta {
	t := &sharedTheta{}
	t.bits.Store(math.Float64bits(math.Inf(-1)))
	return t
}

func (t *sharedTheta) raise(v float64) {
	for {
		old := t.bits.Load()
		if math.Float64frombits(old) >= v || t.bits.CompareAndSwap(old, math.Float64bits(v)) {
			return
		}
	}
}

// walk is what the walks of one query share.
type walk struct {
	p         BM25Params
	avg       float64
	k         int  // documents kept (math.MaxInt: all, for the reference)
	prune     bool // MaxScore pruning
	nterms    int
	belowPMID uint64
	theta     *sharedTheta
}

// bar is one walk's view of the k-th score: theta, the best this walk or
// another holds, and b a margin under it within which a bound still
// counts as reaching it (sums in another order differ in the last bits).
type bar struct {
	theta, b float64
	seen     uint64 // the shared bits theta was last read from
}

func newBar() bar { return bar{theta: math.Inf(-1), b: math.Inf(-1)} }

// read takes the shared k-th score when it moved.
func (r *bar) read(t *sharedTheta) {
	if bits := t.bits.Load(); bits != r.seen {
		r.seen, r.theta = bits, max(r.theta, math.Float64frombits(bits))
		r.b = r.theta - 1e-9*(1+math.Abs(r.theta))
	}
}

// byBound orders cs for MaxScore, non-essential candidates first
// (ascending bounds), and returns cum: cum[i] is the sum of the bounds of
// cs[:i].
func byBound(cs []*cursor) []float64 {
	sort.SliceStable(cs, func(a, b int) bool { return cs[a].ub < cs[b].ub })
	cum := make([]float64, len(cs)+1)
	for i, c := range cs {
		cum[i+1] = cum[i] + c.ub
	}
	return cum
}

// shares computes a term's share of a document's score for pruning, in a
// form equal to TermScore's but for the order of its operations (a few
// ulps apart, far inside the margin of bar.b); a document is kept on its
// exact score. A term's weight is its cursor's ub, idf·(k1+1).
type shares struct {
	c0, c1 float64 // k1·(1−b) and k1·b/avgdl
}

func (w *walk) shares() shares {
	return shares{c0: w.p.K1 * (1 - w.p.B), c1: w.p.K1 * w.p.B / w.avg}
}

// of is the share of a term of weight wt at frequency freq in a document
// of length dl.
func (sh *shares) of(wt float64, freq, dl int) float64 {
	f := float64(freq)
	return wt * f / (f + sh.c0 + sh.c1*float64(dl))
}

// complete adds to score, document d's sum over the essential terms
// cs[essential:], the shares of the non-essential ones, highest bound
// first, while the bounds left can still lift it to b; false when they
// cannot. It leaves each non-essential cursor it reads at or past d.
func (sh *shares) complete(cs []*cursor, cum []float64, essential int, b float64, d uint64, dl int, score float64) (float64, bool, error) {
	for i := essential - 1; i >= 0; i-- {
		if score+cum[i+1] < b {
			return score, false, nil
		}
		c := cs[i]
		if err := c.advance(d); err != nil {
			return score, false, err
		}
		if c.doc == d {
			score += sh.of(c.ub, c.freq, dl)
		}
	}
	return score, score >= b, nil
}

// blockCum sets cum[i+1] to the sum of the bounds of cs[:i+1] in block
// blk: a term's share at the block's highest frequency and least length
// where it has block bounds (none there: 0), else its whole-list bound.
// Each is at least the share of any of the term's postings in the block
// (TermScore rises with the frequency and falls with the length).
func (sh *shares) blockCum(cs []*cursor, blk uint64, cum []float64) {
	for i, c := range cs {
		b := c.ub
		switch {
		case c.exact != nil:
			b = c.ub * float64(c.exact[blk])
		case c.blocks != nil:
			b = c.blocks[blk].bound(sh, c.ub)
		}
		cum[i+1] = cum[i] + b
	}
}

// windowBound is c's bound over documents lo to end (not included): its
// share at the highest frequency and least length of the blocks they
// span, or its whole-list bound.
func (sh *shares) windowBound(c *cursor, lo, end uint64) float64 {
	if c.exact != nil {
		var m float32
		for _, e := range c.exact[lo>>blockShift : (end-1)>>blockShift+1] {
			m = max(m, e)
		}
		return c.ub * float64(m)
	}
	if c.blocks == nil {
		return c.ub
	}
	var all blockMax
	for _, m := range c.blocks[lo>>blockShift : (end-1)>>blockShift+1] {
		all = all.merge(m)
	}
	return all.bound(sh, c.ub)
}

// exact is a document's score, the terms in query order as Score sums
// them, from its term frequencies (tf, by query term) and length.
func (w *walk) exact(byTerm []*cursor, tf []int, dl int) float64 {
	var s float64
	for _, c := range byTerm {
		if f := tf[c.term]; f > 0 {
			s += w.p.TermScore(c.idf, float64(f), float64(dl), w.avg)
		}
	}
	return s
}

// offer puts document d, of exact score and length dl with term
// frequencies tf (copied), into top when it belongs among the best k, and
// raises the shared k-th score when top is full.
func (w *walk) offer(top *topHeap, theta float64, d uint64, exact float64, dl int, tf []int, pmidOf func(uint64) (uint64, error)) error {
	if exact < theta || len(*top) == w.k && exact < (*top)[0].score {
		return nil
	}
	pmid, err := pmidOf(d)
	if err != nil {
		return fmt.Errorf("document %d: %w", d, err)
	}
	if w.belowPMID > 0 && pmid >= w.belowPMID {
		return nil
	}
	cand := &scoredDoc{doc: d, pmid: pmid, score: exact, dl: dl}
	if len(*top) == w.k && !worse((*top)[0], cand) {
		return nil
	}
	cand.tf = append([]int(nil), tf...)
	heap.Push(top, cand)
	if len(*top) > w.k {
		heap.Pop(top)
	}
	if len(*top) == w.k && w.prune {
		w.theta.raise((*top)[0].score)
	}
	return nil
}

// run walks the cursors (each at its first document) up to, not
// including, document hi, a document at a time, and returns the best k.
// pmidOf reads a document's PMID. It serves the reference (prune unset)
// and readers that are not segments; segment ranges take runWindows.
func (w *walk) run(ctx context.Context, cs []*cursor, hi uint64, pmidOf func(uint64) (uint64, error)) (topHeap, error) {
	cum := byBound(cs)
	sh := w.shares()
	byTerm := sortedByTerm(cs)
	var top topHeap
	th := newBar()
	essential := 0 // cs[essential:] are walked
	// least is the least document of cs[essential:] when known (after a
	// step, while essential stays).
	least, known := uint64(done), false
	tf := make([]int, w.nterms)
	for steps := 0; ; steps++ {
		if steps&1023 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		if w.prune {
			th.read(w.theta)
		}
		for essential < len(cs) && cum[essential+1] < th.b {
			essential, known = essential+1, false
		}
		if essential == len(cs) {
			break // no document can still enter
		}
		d := least
		if !known {
			d = done
			for _, c := range cs[essential:] {
				d = min(d, c.doc)
			}
		}
		if d >= hi {
			break
		}
		for i := range tf {
			tf[i] = 0
		}
		var score float64
		dl := -1
		least, known = done, true
		for e := essential; e < len(cs); e++ {
			c := cs[e]
			if c.doc == d {
				if dl < 0 {
					dl = c.dl
				}
				tf[c.term] = c.freq
				score += sh.of(c.ub, c.freq, dl)
				if err := c.next(); err != nil {
					return nil, err
				}
			}
			least = min(least, c.doc)
		}
		_, ok, err := sh.complete(cs, cum, essential, th.b, d, dl, score) // the exact score is w.exact's
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		for _, c := range cs[:essential] {
			if c.doc == d {
				tf[c.term] = c.freq
			}
		}
		if err := w.offer(&top, th.theta, d, w.exact(byTerm, tf, dl), dl, tf, pmidOf); err != nil {
			return nil, err
		}
	}
	return top, nil
}

// windowSize is how many document numbers the pruned walk of a segment
// scores at once (Literature.walkWindow in tests).
const windowSize = 4096

// window is runWindows' scratch, one per worker: a window's partial
// scores, lengths and which of its documents hold an essential term.
type window struct {
	acc  []float64
	dl   []int
	seen []uint64           // bit i: document lo+i holds an essential term
	hits [][]zapv17.Posting // per cursor: its postings in the window
}

func newWindow(size int) *window {
	return &window{acc: make([]float64, size), dl: make([]int, size), seen: make([]uint64, (size+63)/64)}
}

// windows keeps the windows of walks that ended, with the room their
// hits grew to, for the walks of later queries: a query's windows and
// hits made afresh were two thirds of the bytes it allocated (the index
// bench's queries at 1M: 3,870 MiB and 73–75 collections, against 1,253
// MiB and 28 kept). A window is put back only by a walk that ended
// without error, so its seen bits are all clear (runWindows clears each
// word it reads).
type windows struct{ pool sync.Pool }

// get returns a window of size documents.
func (p *windows) get(size int) *window {
	if w, ok := p.pool.Get().(*window); ok && len(w.acc) == size {
		return w
	}
	return newWindow(size)
}

func (p *windows) put(w *window) { p.pool.Put(w) }

// runWindows is run's pruned walk over one segment range, a window of
// documents at a time, as Lucene's MaxScoreBulkScorer walks: the essential
// terms' postings in the window are summed term by term into the window's
// partial scores, and then each document that holds one, in order, is
// completed from the non-essential lists while their bounds can still lift
// it over the k-th score. A query of 20–40 terms makes about a third of
// all documents candidates (35% of the benchmark's 1M documents over the
// 1,000 PubMedQA queries), so the cost is per candidate: summing a term's
// postings into an array saves finding, for each candidate, the least
// document among 15–20 essential cursors and which of them stand on it.
// The partition into essential and non-essential terms is made again at
// each window, by the terms' bounds in that window where their lists have
// block bounds (blockmax.go), and each candidate is completed against its
// own block's bounds: the whole-list bounds let two thirds of the
// candidates through to be completed, for 170 that came near the top k.
func (w *walk) runWindows(ctx context.Context, cs []*cursor, hi uint64, win *window, pmidOf func(uint64) (uint64, error)) (topHeap, error) {
	cum := byBound(cs) // cs, by whole-list bounds
	sh := w.shares()
	byTerm := sortedByTerm(cs)
	for len(win.hits) < len(cs) {
		win.hits = append(win.hits, nil)
	}
	var top topHeap
	th := newBar()
	global := 0 // cs[global:] are essential by whole-list bounds
	tf := make([]int, w.nterms)
	ptrs := make([]int, len(cs)) // per cursor: its next hit to read
	cumB := make([]float64, len(cs)+1)
	order := make([]*cursor, len(cs)) // the window's, by its bounds
	size := uint64(len(win.acc))
	var from uint64 // the windows walked end before it
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		th.read(w.theta)
		for global < len(cs) && cum[global+1] < th.b {
			global++
		}
		if global == len(cs) {
			break // no document can still enter
		}
		// A document that holds none of the terms essential by their
		// whole-list bounds cannot enter: the window starts at the least
		// of theirs past the windows walked.
		lo := uint64(done)
		for _, c := range cs[global:] {
			if err := c.advance(from); err != nil {
				return nil, err
			}
			lo = min(lo, c.doc)
		}
		if lo >= hi {
			break
		}
		end := min(hi, lo+size)
		from = end
		// The partition again in this window, by each term's bound over
		// the window's blocks (windowBound).
		for _, c := range cs {
			c.wb = sh.windowBound(c, lo, end)
		}
		copy(order, cs)
		for i := 1; i < len(order); i++ { // stable: insertion
			for j := i; j > 0 && order[j].wb < order[j-1].wb; j-- {
				order[j], order[j-1] = order[j-1], order[j]
			}
		}
		essential, below := 0, 0.0
		for essential < len(order) && below+order[essential].wb < th.b {
			below += order[essential].wb
			essential++
		}
		if essential == len(order) {
			continue // nothing in this window can enter
		}
		cs := order
		for e := essential; e < len(cs); e++ {
			c := cs[e]
			if err := c.advance(lo); err != nil {
				return nil, err
			}
			h, err := c.fill(end, win.hits[e][:0])
			if err != nil {
				return nil, err
			}
			for _, p := range h {
				at := uint64(p.Doc) - lo
				if win.seen[at>>6]&(1<<(at&63)) == 0 {
					win.seen[at>>6] |= 1 << (at & 63)
					win.acc[at], win.dl[at] = 0, int(p.Len)
				}
				win.acc[at] += sh.of(c.ub, int(p.Freq), int(p.Len))
			}
			win.hits[e] = h
		}
		// The candidates in document order; each essential term's hits
		// are read in step for the few that are scored exactly. A
		// candidate is completed against its block's bounds (blockCum).
		clear(ptrs)
		blk := uint64(done)
		for wi := range int((end - lo + 63) / 64) {
			word := win.seen[wi]
			win.seen[wi] = 0
			for word != 0 {
				at := wi*64 + bits.TrailingZeros64(word)
				word &= word - 1
				d, score, dl := lo+uint64(at), win.acc[at], win.dl[at]
				if d>>blockShift != blk {
					blk = d >> blockShift
					sh.blockCum(cs[:essential], blk, cumB)
				}
				th.read(w.theta)
				if score+cumB[essential] < th.b {
					continue // complete's first test, without the call
				}
				if _, ok, err := sh.complete(cs, cumB, essential, th.b, d, dl, score); err != nil {
					return nil, err
				} else if !ok {
					continue
				}
				for i := range tf {
					tf[i] = 0
				}
				for _, c := range cs[:essential] {
					if c.doc == d {
						tf[c.term] = c.freq
					}
				}
				for e := essential; e < len(cs); e++ {
					h, j := win.hits[e], ptrs[e]
					for j < len(h) && uint64(h[j].Doc) < d {
						j++
					}
					ptrs[e] = j
					if j < len(h) && uint64(h[j].Doc) == d {
						tf[cs[e].term] = int(h[j].Freq)
					}
				}
				if err := w.offer(&top, th.theta, d, w.exact(byTerm, tf, dl), dl, tf, pmidOf); err != nil {
					return nil, err
				}
			}
		}
	}
	return top, nil
}

// topK returns the best k documents for the distinct analysed terms, by
// opt.BM25, best first (ties by PMID), excluding PMIDs ≥ opt.BelowPMID
// when set, and each term's document frequency. With prune unset every
// posting of every term is scored through r's term readers: the reference
// the pruned walk must equal.
func (l *Literature) topK(ctx context.Context, r bindex.IndexReader, terms []string, keep int, opt SearchOptions, st CorpusStats, prune bool) ([]*scoredDoc, map[string]uint64, error) {
	w := &walk{p: opt.BM25, avg: st.AvgLen(), k: keep, prune: prune, nterms: len(terms), belowPMID: opt.BelowPMID, theta: newSharedTheta()}
	if w.p == (BM25Params{}) {
		w.p = TextbookBM25
	}
	if snap, ok := r.(*scorch.IndexSnapshot); ok && prune {
		return l.segmentTopK(ctx, snap, terms, w, st)
	}
	if !prune {
		w.k = math.MaxInt // the reference keeps every document, then cuts
	}
	df := make(map[string]uint64, len(terms))
	var cs []*cursor
	defer func() {
		for _, c := range cs {
			c.src.(*readerSource).tfr.Close()
		}
	}()
	for i, t := range terms {
		tfr, err := r.TermFieldReader(ctx, []byte(t), fieldText, true, true, false)
		if err != nil {
			return nil, nil, err
		}
		n := tfr.Count()
		df[t] = n
		if n == 0 {
			tfr.Close()
			continue
		}
		c := &cursor{term: i, src: &readerSource{tfr: tfr}, idf: IDF(st.Docs, n)}
		c.ub = c.idf * (w.p.K1 + 1)
		cs = append(cs, c)
		if err := c.next(); err != nil {
			return nil, nil, err
		}
	}
	if len(cs) == 0 || w.avg == 0 || keep <= 0 {
		return nil, df, nil
	}
	top, err := w.run(ctx, append([]*cursor(nil), cs...), done, func(doc uint64) (uint64, error) {
		var key [8]byte
		binary.BigEndian.PutUint64(key[:], doc)
		ext, err := r.ExternalID(key[:])
		if err != nil {
			return 0, err
		}
		return strconv.ParseUint(ext, 10, 64)
	})
	if err != nil {
		return nil, nil, fmt.Errorf("index %s: %w", l.dir, err)
	}
	return best([]topHeap{top}, keep), df, nil
}

// splitMin is the segment size (documents) from which a segment's walk is
// cut into one range per core (Literature.walkSplit in tests).
const splitMin = 1 << 16

// segmentTopK is topK's pruned walk: one walk per segment, the large ones
// cut into one range of documents per core, run on all cores.
func (l *Literature) segmentTopK(ctx context.Context, snap *scorch.IndexSnapshot, terms []string, w *walk, st CorpusStats) ([]*scoredDoc, map[string]uint64, error) {
	segs := snap.Segments()
	lists, dfs, err := l.segmentLists(segs, terms, w.shares())
	if err != nil {
		return nil, nil, err
	}
	df := make(map[string]uint64, len(terms))
	idf := make([]float64, len(terms))
	found := false
	for i, t := range terms {
		df[t] = dfs[i]
		idf[i] = IDF(st.Docs, dfs[i])
		found = found || dfs[i] > 0
	}
	if !found || w.avg == 0 || w.k <= 0 {
		return nil, df, nil
	}
	tasks, parts := l.walkRanges(segs)
	tops := make([]topHeap, len(tasks))
	var nextTask atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	size := windowSize
	if l.walkWindow > 0 {
		size = l.walkWindow
	}
	for range min(parts, len(tasks)) {
		g.Go(func() error {
			return guard(l.dir, func() error {
				win := l.windows.get(size)
				for {
					ti := int(nextTask.Add(1) - 1)
					if ti >= len(tasks) {
						l.windows.put(win)
						return nil
					}
					t := tasks[ti]
					top, err := w.walkRange(gctx, t, segs[t.s].Segment(), lists[t.s], idf, win)
					if err != nil {
						return err
					}
					tops[ti] = top
				}
			})
		})
	}
	if err := g.Wait(); err != nil {
		return nil, nil, fmt.Errorf("index %s: search: %w", l.dir, err)
	}
	return best(tops, w.k), df, nil
}

// termList is one term's postings list in one segment: the direct reader
// of it, or (zp nil) zap's list, read through zap's iterator.
type termList struct {
	pl segment.PostingsList
	zp *zapv17.Postings
	// bounds are zp's block bounds (blockmax.go); nil: its whole-list
	// bound only.
	bounds *blockBounds
}

// segmentLists reads every segment's postings lists of terms first: the
// document frequencies (live documents of all segments) fix each term's
// idf. Each list is read directly from the segment file where its layout
// is understood and its count agrees with zap's (postings.go), else
// through zap's iterator.
func (l *Literature) segmentLists(segs []*scorch.SegmentSnapshot, terms []string, sh shares) ([][]termList, []uint64, error) {
	lists := make([][]termList, len(segs))
	dfs := make([]uint64, len(terms))
	var bounded []blockList
	for s, ss := range segs {
		if zs, ok := ss.Segment().(*zap.Segment); ok {
			// Its data against its checksum, before anything is read
			// from it (seal.go).
			if err := l.verifySegment(zs); err != nil {
				return nil, nil, err
			}
		}
		// Each opened when first needed: zap's dictionary and the same
		// read directly (nil: through zap's iterator).
		var dict segment.TermDictionary
		var zd *zapv17.Dict
		lists[s] = make([]termList, len(terms))
		for i, t := range terms {
			k := listKey{seg: ss.Segment(), deleted: ss.Deleted(), term: t}
			e, known := l.lists.get(k)
			if known && e.live == 0 {
				continue
			}
			tl := &lists[s][i]
			if !l.zapIterator {
				tl.zp = e.zp
			}
			if tl.zp == nil {
				if dict == nil {
					var err error
					if dict, err = ss.Segment().Dictionary(fieldText); err != nil {
						return nil, nil, fmt.Errorf("index %s: %w", l.dir, err)
					}
					zd, _ = zapv17.OpenDict(ss.Segment(), fieldText)
				}
				// A list known not to be read directly (or under the
				// zap-iterator cut) needs zap's alone: its count and
				// the direct reader's check are kept.
				dz := zd
				if known {
					dz = nil
				}
				pl, zp, live, err := lookUpList(dict, dz, k)
				if err != nil {
					return nil, nil, fmt.Errorf("index %s: %w", l.dir, err)
				}
				if !known {
					e = listEntry{live: live, zp: zp}
					l.lists.put(k, e)
				}
				if live == 0 {
					continue
				}
				tl.pl = pl
				if !l.zapIterator {
					tl.zp = zp
				}
			}
			dfs[i] += e.live
			if tl.zp != nil {
				if n := ss.Segment().Count(); l.blockAll || blockDense(e.live, n) {
					bounded = append(bounded, blockList{seg: ss.Segment(), term: t, p: tl.zp, n: n, into: &tl.bounds})
				}
			}
		}
	}
	if err := l.bounds.load(l.dir, bounded, sh); err != nil {
		return nil, nil, err // guard names the index
	}
	return lists, dfs, nil
}

// lookUpList finds k's list in dict, zap's dictionary of k's segment, with
// its live count, and in zd, the same read directly (nil: not understood),
// returned only where the two count the same live postings.
func lookUpList(dict segment.TermDictionary, zd *zapv17.Dict, k listKey) (segment.PostingsList, *zapv17.Postings, uint64, error) {
	pl, err := dict.PostingsList([]byte(k.term), k.deleted, nil)
	if err != nil || pl == nil {
		return nil, nil, 0, err
	}
	n := pl.Count()
	if n == 0 || zd == nil {
		return pl, nil, n, nil
	}
	zp, live, err := zd.Postings([]byte(k.term), k.deleted)
	if err != nil || zp == nil || live != n {
		return pl, nil, n, nil
	}
	return pl, zp, n, nil
}

// walkTask is one range of a segment's documents to walk; base is the
// segment's first internal number.
type walkTask struct {
	s            int
	base, lo, hi uint64
}

// walkRanges cuts the segments into the ranges the walks take, largest
// first, so that the last to run are short; parts is how many walks run
// at once.
func (l *Literature) walkRanges(segs []*scorch.SegmentSnapshot) ([]walkTask, int) {
	var tasks []walkTask
	parts := uint64(max(1, runtime.GOMAXPROCS(0)))
	if l.walkParts > 0 {
		parts = uint64(l.walkParts)
	}
	split := uint64(splitMin)
	if l.walkSplit > 0 {
		split = l.walkSplit
	}
	var base uint64
	for s, ss := range segs {
		n := ss.Segment().Count() // document numbers, deleted ones too
		cut := uint64(1)
		if n >= split {
			cut = parts
		}
		for j := uint64(0); j < cut; j++ {
			tasks = append(tasks, walkTask{s: s, base: base, lo: n * j / cut, hi: n * (j + 1) / cut})
		}
		base += n
	}
	sort.SliceStable(tasks, func(a, b int) bool { return tasks[a].hi-tasks[a].lo > tasks[b].hi-tasks[b].lo })
	return tasks, int(parts)
}

// walkRange walks one range of one segment: a cursor per term with
// postings there, started at the range's first document.
func (w *walk) walkRange(ctx context.Context, t walkTask, seg segment.Segment, lists []termList, idf []float64, win *window) (topHeap, error) {
	var cs []*cursor
	for i, tl := range lists {
		if tl.pl == nil && tl.zp == nil {
			continue
		}
		c := &cursor{term: i, idf: idf[i]}
		if tl.bounds != nil {
			c.blocks, c.exact = tl.bounds.pairs, tl.bounds.exactFor(w.shares())
		}
		if tl.zp != nil {
			c.src = tl.zp.Source()
		} else {
			c.src = segmentSource{it: tl.pl.Iterator(true, true, false, nil)}
		}
		c.ub = c.idf * (w.p.K1 + 1)
		var err error
		if t.lo == 0 {
			err = c.next()
		} else {
			c.doc, c.freq, c.dl, err = c.src.Advance(t.lo)
		}
		if err != nil {
			return nil, err
		}
		cs = append(cs, c)
	}
	top, err := w.runWindows(ctx, cs, t.hi, win, func(doc uint64) (uint64, error) {
		ext, err := seg.DocID(doc)
		if err != nil {
			return 0, err
		}
		return strconv.ParseUint(string(ext), 10, 64)
	})
	if err != nil {
		return nil, err
	}
	for _, d := range top {
		d.doc += t.base
	}
	return top, nil
}

// best merges walks' candidates into the best k, best first.
func best(tops []topHeap, k int) []*scoredDoc {
	var out []*scoredDoc
	for _, t := range tops {
		out = append(out, t...)
	}
	sort.Slice(out, func(a, b int) bool { return worse(out[b], out[a]) })
	if len(out) > k {
		out = out[:k]
	}
	return out
}

// sortedByTerm returns the cursors in query-term order.
func sortedByTerm(cs []*cursor) []*cursor {
	out := append([]*cursor(nil), cs...)
	sort.Slice(out, func(a, b int) bool { return out[a].term < out[b].term })
	return out
}
