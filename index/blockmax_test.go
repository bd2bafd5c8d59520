package index

import (
	"fmt"
	"testing"
)

// TestBlockBoundIsAboveEveryShare: a block's bound, its postings merged
// in any order, is at least the share of each of them — past the 8 bits
// of a frequency and the 24 of a length too — and no block is 0.
func TestBlockBoundIsAboveEveryShare(t *testing.T) {
	type posting struct{ freq, dl uint32 }
	const ub = 2.2 * 3.1 // idf·(k1+1)
	for _, p := range []BM25Params{TextbookBM25, PyseriniBM25} {
		sh := shares{c0: p.K1 * (1 - p.B), c1: p.K1 * p.B / 180}
		for _, tc := range [][]posting{
			{{1, 200}},
			{{1, 40}, {3, 400}, {2, 90}},
			{{254, 1000}, {1, 3}},
			{{255, 5000}},         // 255 or more: the whole-list bound
			{{1, 20}, {9000, 20}}, // likewise
			{{2, 1 << 25}},        // a length past 24 bits bounds as 2^24−1
			{{1, 1<<24 - 1}, {1, 1 << 30}},
		} {
			var m blockMax
			for _, x := range tc {
				m = m.merge(packBlock(x.freq, x.dl))
			}
			// The other order, and merged from halves, bound alike.
			var back blockMax
			for i := len(tc) - 1; i >= 0; i-- {
				back = back.merge(packBlock(tc[i].freq, tc[i].dl))
			}
			if back != m || blockMax(0).merge(m) != m || m.merge(0) != m {
				t.Errorf("%v: merged %08x, the other way %08x", tc, m, back)
			}
			b := m.bound(&sh, ub)
			if b <= 0 || b > ub {
				t.Errorf("%v: bound %v, want in (0, %v]", tc, b, ub)
			}
			for _, x := range tc {
				if s := sh.of(ub, int(x.freq), int(x.dl)); s > b {
					t.Errorf("%+v (K1 %v): posting %+v's share %v above the block's bound %v", p, p.K1, x, s, b)
				}
			}
		}
		if b := blockMax(0).bound(&sh, ub); b != 0 {
			t.Errorf("an empty block bounds at %v, want 0", b)
		}
	}
}

// TestDenseListsGetBlockBounds: on an index whose segment is large enough
// (9,000 documents, deletions in it) the walk's default choice gives the
// dense lists block bounds, read with the query's setting and so used as
// exact maxima, and the pruned top 10 is the exhaustive one for each of
// 100 PubMedQA conclusions with both BM25 settings.
func TestDenseListsGetBlockBounds(t *testing.T) {
	if testing.Short() {
		t.Skip("slow under -race (a minute): make test-slow runs it, and CI")
	}
	l := persistedIndex(t, 9000)
	defer l.Close()
	r := snapshot(t, l)
	defer r.Close()
	st := l.corpus()
	qs := pubmedQAConclusions(t)[:100]
	for _, p := range []BM25Params{TextbookBM25, PyseriniBM25} {
		l.bounds = blockCache{}
		opt := SearchOptions{K: 10, BM25: p}
		for n, q := range qs {
			prunedIsExhaustive(t, l, r, unique(l.terms(q.LongAnswer)), opt, st, fmt.Sprintf("%v query %d", p, n+1))
		}
		w := &walk{p: p, avg: st.AvgLen()}
		var lists, exact int
		for _, e := range l.bounds.m {
			lists++
			if e.bounds.exactFor(w.shares()) != nil {
				exact++
			}
		}
		if lists == 0 || exact != lists {
			t.Fatalf("%v: %d lists with block bounds, %d with exact maxima for the setting", p, lists, exact)
		}
		t.Logf("%v: %d lists with block bounds", p, lists)
	}
}
