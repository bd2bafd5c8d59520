package index

import (
	"container/heap"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"sort"
	"strconv"

	bindex "github.com/blevesearch/bleve_index_api"
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
// A document's length comes from its norm: bleve stores 1/√len as a
// float32, which gives len back exactly for any abstract-sized document.

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

// cursor walks one term's postings in document order.
type cursor struct {
	term    int // index in the query's terms
	tfr     bindex.TermFieldReader
	idf, ub float64
	doc     uint64 // current document; math.MaxUint64 when done
	freq    int
	norm    float64
	buf     bindex.TermFieldDoc
	key     [8]byte
}

const done = math.MaxUint64

func (c *cursor) set(d *bindex.TermFieldDoc, err error) error {
	if err != nil {
		return err
	}
	if d == nil || len(d.ID) != 8 {
		c.doc = done
		return nil
	}
	c.doc, c.freq, c.norm = binary.BigEndian.Uint64(d.ID), int(d.Freq), d.Norm
	return nil
}

func (c *cursor) next() error { return c.set(c.tfr.Next(&c.buf)) }

// advance moves to the first document ≥ target.
func (c *cursor) advance(target uint64) error {
	if c.doc >= target {
		return nil
	}
	binary.BigEndian.PutUint64(c.key[:], target)
	return c.set(c.tfr.Advance(c.key[:], &c.buf))
}

// docLen is the length a norm stands for (bleve: float32(1/√len)).
func docLen(norm float64) int {
	if norm <= 0 {
		return 0
	}
	return int(math.Round(1 / (norm * norm)))
}

// topK returns the best k documents for the distinct analysed terms, by
// opt.BM25, best first (ties by PMID), excluding PMIDs ≥ opt.BelowPMID
// when set. With prune unset every posting of every term is scored: the
// reference the pruned walk must equal.
func (l *Literature) topK(ctx context.Context, r bindex.IndexReader, terms []string, keep int, opt SearchOptions, st CorpusStats, prune bool) ([]*scoredDoc, map[string]uint64, error) {
	k := keep
	p := opt.BM25
	if p == (BM25Params{}) {
		p = TextbookBM25
	}
	avg := st.AvgLen()
	df := make(map[string]uint64, len(terms))
	var cs []*cursor
	defer func() {
		for _, c := range cs {
			c.tfr.Close()
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
		c := &cursor{term: i, tfr: tfr, idf: IDF(st.Docs, n)}
		c.ub = c.idf * (p.K1 + 1)
		cs = append(cs, c)
		if err := c.next(); err != nil {
			return nil, nil, err
		}
	}
	if len(cs) == 0 || avg == 0 || k <= 0 {
		return nil, df, nil
	}
	// Non-essential terms first: ascending bounds; cum[i] is the sum of
	// the bounds of cs[:i].
	sort.SliceStable(cs, func(a, b int) bool { return cs[a].ub < cs[b].ub })
	cum := make([]float64, len(cs)+1)
	for i, c := range cs {
		cum[i+1] = cum[i] + c.ub
	}
	contrib := func(c *cursor, f int, dl int) float64 {
		return p.termScore(c.idf, float64(f), float64(dl), avg)
	}
	byTerm := sortedByTerm(cs)
	if !prune {
		k = math.MaxInt // the reference keeps every document, then cuts
	}
	var top topHeap
	theta := math.Inf(-1) // the k-th score once k are held
	// below is the margin under theta within which a bound still counts
	// as reaching it: sums in another order differ in the last bits.
	below := func() float64 { return theta - 1e-9*(1+math.Abs(theta)) }
	essential := 0 // cs[essential:] are walked
	tf := make([]int, len(terms))
	pmidOf := func(doc uint64) (uint64, error) {
		var key [8]byte
		binary.BigEndian.PutUint64(key[:], doc)
		ext, err := r.ExternalID(key[:])
		if err != nil {
			return 0, err
		}
		return strconv.ParseUint(ext, 10, 64)
	}
	for steps := 0; ; steps++ {
		if steps&1023 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, nil, err
			}
		}
		if prune && len(top) == k {
			for essential < len(cs) && cum[essential+1] < below() {
				essential++
			}
			if essential == len(cs) {
				break // no document can still enter
			}
		}
		d := uint64(done)
		for _, c := range cs[essential:] {
			d = min(d, c.doc)
		}
		if d == done {
			break
		}
		for i := range tf {
			tf[i] = 0
		}
		var score float64
		dl := -1
		for _, c := range cs[essential:] {
			if c.doc == d {
				if dl < 0 {
					dl = docLen(c.norm)
				}
				tf[c.term] = c.freq
				score += contrib(c, c.freq, dl)
				if err := c.next(); err != nil {
					return nil, nil, err
				}
			}
		}
		pruned := false
		for i := essential - 1; i >= 0; i-- {
			if len(top) == k && score+cum[i+1] < below() {
				pruned = true
				break
			}
			c := cs[i]
			if err := c.advance(d); err != nil {
				return nil, nil, err
			}
			if c.doc == d {
				tf[c.term] = c.freq
				score += contrib(c, c.freq, dl)
			}
		}
		if pruned || len(top) == k && score < below() {
			continue
		}
		// The exact score: the terms in query order, as Score sums them.
		var exact float64
		for _, c := range byTerm {
			if f := tf[c.term]; f > 0 {
				exact += contrib(c, f, dl)
			}
		}
		cand := &scoredDoc{doc: d, score: exact, dl: dl}
		if len(top) == k && exact < top[0].score {
			continue
		}
		pmid, err := pmidOf(d)
		if err != nil {
			return nil, nil, fmt.Errorf("index %s: document %d: %w", l.dir, d, err)
		}
		if opt.BelowPMID > 0 && pmid >= opt.BelowPMID {
			continue
		}
		cand.pmid = pmid
		if len(top) == k && !worse(top[0], cand) {
			continue
		}
		cand.tf = append([]int(nil), tf...)
		heap.Push(&top, cand)
		if len(top) > k {
			heap.Pop(&top)
		}
		if len(top) == k {
			theta = top[0].score
		}
	}
	out := make([]*scoredDoc, len(top))
	for i := len(top) - 1; i >= 0; i-- {
		out[i] = heap.Pop(&top).(*scoredDoc)
	}
	if len(out) > keep {
		out = out[:keep]
	}
	return out, df, nil
}

// sortedByTerm returns the cursors in query-term order.
func sortedByTerm(cs []*cursor) []*cursor {
	out := append([]*cursor(nil), cs...)
	sort.Slice(out, func(a, b int) bool { return out[a].term < out[b].term })
	return out
}
