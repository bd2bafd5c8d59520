package index

import (
	"fmt"
	"math"
	"runtime"
	"sync"

	"golang.org/x/sync/errgroup"

	"halu/index/internal/zapv17"
)

// Block bounds for the pruned walk (block-max MaxScore, as Lucene's
// MaxScoreBulkScorer takes its bounds from impacts a block at a time). A
// term's bound idf·(k1+1) holds for a frequency without limit; a dense
// term's postings in any 128 documents seldom come near it, and the walk
// completes a candidate from the non-essential lists while their bounds
// can still lift it over the k-th score — with the whole-list bounds,
// two thirds of the candidates of the index bench's 1M-document corpus
// (232k of 351k a query, over 1,000 PubMedQA conclusions) and 300k
// Advance calls a query, for the 170 that came within reach. A block's
// bound is the term's share at the block's highest frequency and least
// length (blockMax): above every posting's share in it, whatever the
// corpus's average length or the term's idf, so it is kept from one query
// to the next. With them (counted on the same queries and partition),
// 15k candidates pass and 25k calls are made; and the partition made per
// window by the terms' bounds there leaves fewer terms essential. Beside
// them each block keeps its exact highest share for the BM25 setting the
// bounds were read with (blockBounds), which a query of that setting — a
// run asks every query with one — takes instead: 7.2k candidates pass,
// 14k calls.
//
// They are read from the postings themselves, once per dense list per
// segment, the first time a query needs them, on all cores, and kept in
// memory while the segment is open (blockCache): a segment never changes,
// so its bounds stand until it is merged away. Sparse lists are essential
// in nearly every query, walked in full, and get none. On the bench's 1M
// documents (two runs each way): the first 10 queries, whose lists'
// bounds are read, take about as long as without them (p50 29 ms against
// 25–28), the first 1,000 in all 12.4–12.5 s against 15.1–15.4, leaving
// 3.4M blocks (13 MiB) held; after them a query's p50 is 8.8–9.6 ms
// against 11.3–11.7. With the exact maxima beside the pairs (8 bytes a
// block, 26 MiB after the 1,000 queries; the walk reading a window's
// postings in bulk in both builds): a query's p50 7.0–7.4 ms against
// 7.9–8.2 (three runs each way, alternating), the first 1,000 queries
// 11.0–11.6 s against 11.9–12.3.

// blockShift is log2 of the documents a bound covers.
const blockShift = 7

// blockMax is one block's highest frequency and least field length over
// a term's postings in it, in 32 bits: the frequency in the low 8
// (0: no posting there; blockFreqMax: that many or more, bounded by the
// term's whole-list bound), the length in the high 24 (a longer one
// stored as blockLenMax, which only raises the bound).
type blockMax uint32

const (
	blockFreqMax = 1<<8 - 1
	blockLenMax  = 1<<24 - 1
)

func packBlock(freq, minLen uint32) blockMax {
	return blockMax(min(freq, blockFreqMax) | min(minLen, blockLenMax)<<8)
}

func (m blockMax) freq() uint32   { return uint32(m) & blockFreqMax }
func (m blockMax) minLen() uint32 { return uint32(m) >> 8 }

// merge is the bound of m's postings and o's together.
func (m blockMax) merge(o blockMax) blockMax {
	switch {
	case m.freq() == 0:
		return o
	case o.freq() == 0:
		return m
	}
	return packBlock(max(m.freq(), o.freq()), min(m.minLen(), o.minLen()))
}

// bound is the share of a term of weight ub (its whole-list bound) that
// no posting in m's blocks exceeds.
func (m blockMax) bound(sh *shares, ub float64) float64 {
	switch m.freq() {
	case 0:
		return 0
	case blockFreqMax:
		return ub
	}
	return sh.of(ub, int(m.freq()), int(m.minLen()))
}

// blockBounds are a list's bounds in a segment, a block at a time: the
// (frequency, length) pairs, which hold for any BM25 setting, and for the
// setting they were read with (sh: its k1, b and the average length),
// each block's highest share per unit weight, f/(f + k1·(1−b+b·dl/avgdl))
// over its postings, rounded up to a float32 — the exact block maximum, a
// tighter bound than the pair's share wherever the block's highest
// frequency and least length are not the same posting's.
type blockBounds struct {
	pairs []blockMax
	exact []float32
	sh    shares
}

// exactFor is b's exact maxima when sh is the setting they were read
// with, else nil.
func (b *blockBounds) exactFor(sh shares) []float32 {
	if b == nil || b.sh != sh {
		return nil
	}
	return b.exact
}

// blockDense says whether a list of live postings in a segment of n
// document numbers gets block bounds: a posting in every 16 documents on
// average (8 a block), in a segment of at least 64 blocks.
func blockDense(live, n uint64) bool {
	return n >= 64<<blockShift && live*16 >= n
}

// blockKey is one term's list in one open segment.
type blockKey struct {
	seg  any // the open segment (*zap.Segment): never changed, never reused while open
	term string
}

// blockCache holds the block bounds read so far, up to blockCacheMax
// blocks in all; past it, they are dropped and read again as needed (a
// query's own are held by its walks).
type blockCache struct {
	mu     sync.Mutex
	m      map[blockKey]*blockEntry
	blocks int
}

// blockCacheMax bounds the blocks kept: 8 bytes each (a pair and an
// exact maximum), 256 MiB (the index bench's 1M documents hold 3.4M
// blocks after its 1,000 queries).
const blockCacheMax = 32 << 20

type blockEntry struct {
	once   sync.Once
	bounds *blockBounds
	err    error
}

// get returns the bounds of term's list p in segment seg of n document
// numbers, reading them the first time (a damaged segment file gives
// ErrDamaged, as a walk of it does; dir names the index).
func (c *blockCache) get(dir string, seg any, term string, p *zapv17.Postings, n uint64, sh shares) (*blockBounds, error) {
	k := blockKey{seg: seg, term: term}
	c.mu.Lock()
	if c.m == nil || c.blocks > blockCacheMax {
		c.m, c.blocks = map[blockKey]*blockEntry{}, 0
	}
	e, ok := c.m[k]
	if !ok {
		e = &blockEntry{}
		c.m[k] = e
		c.blocks += int(n>>blockShift) + 1
	}
	c.mu.Unlock()
	e.once.Do(func() {
		e.err = guard(dir, func() (err error) {
			if e.bounds, err = readBlockBounds(p, n, sh); err != nil {
				return fmt.Errorf("index %s: block bounds of %q: %w", dir, term, err)
			}
			return nil
		})
	})
	return e.bounds, e.err
}

// readBlockBounds reads every posting of p, in a segment of n document
// numbers, into its block's bounds, the exact ones for sh — deleted
// documents' too: the bounds are the segment's, whose deletions grow from
// one snapshot to the next, and a search on an older snapshot may still
// see a document a newer one deleted.
func readBlockBounds(p *zapv17.Postings, n uint64, sh shares) (*blockBounds, error) {
	out := &blockBounds{pairs: make([]blockMax, n>>blockShift+1), exact: make([]float32, n>>blockShift+1), sh: sh}
	src := p.WithDeleted().Source()
	for {
		doc, freq, dl, err := src.Next()
		if err != nil {
			return nil, err
		}
		if doc == done {
			return out, nil
		}
		if doc >= n {
			return nil, fmt.Errorf("%w: document %d of a segment of %d", zapv17.ErrLayout, doc, n)
		}
		blk := doc >> blockShift
		out.pairs[blk] = out.pairs[blk].merge(packBlock(uint32(freq), uint32(dl)))
		g := sh.of(1, freq, dl)
		up := float32(g)
		if float64(up) <= g {
			up = math.Nextafter32(up, float32(math.Inf(1)))
		}
		out.exact[blk] = max(out.exact[blk], up)
	}
}

// blockList is a list whose bounds a query needs, and where they go.
type blockList struct {
	seg  any
	term string
	p    *zapv17.Postings
	n    uint64
	into **blockBounds
}

// load gets the bounds of every list in ls, those not yet read on all
// cores at once.
func (c *blockCache) load(dir string, ls []blockList, sh shares) error {
	var g errgroup.Group
	g.SetLimit(runtime.GOMAXPROCS(0))
	for _, b := range ls {
		g.Go(func() error {
			bounds, err := c.get(dir, b.seg, b.term, b.p, b.n, sh)
			*b.into = bounds
			return err
		})
	}
	return g.Wait()
}
