package index

import "testing"

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
