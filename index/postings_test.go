package index

import (
	"context"
	"math/rand"
	"strings"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
	segment "github.com/blevesearch/scorch_segment_api/v2"

	"halu/index/internal/zapv17"
)

// persistedIndex builds an index of n documents (the real PubMedQA
// abstracts, then documents remixed from them, as the benchmark makes
// them) in one batch, so that common terms hold more than one frequency
// chunk, then replaces some documents in an update build, and reopens it:
// every segment is then a zap file, the older ones with deletions.
func persistedIndex(t *testing.T, n int) *Literature {
	t.Helper()
	base, sentences := pubmedQABase(t)
	var docs, again []Article
	for i := 0; i < n; i++ {
		a := benchDoc(base, sentences, i)
		docs = append(docs, a)
		if i%7 == 3 {
			a.Abstract = sentences[(i*13)%len(base)][0] + " " + a.Abstract
			again = append(again, a)
		}
	}
	dir := t.TempDir()
	l, err := OpenLiterature(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range [][]Article{docs, again} {
		p := writeJSONL(t, in...)
		if _, err := l.Build(context.Background(), []string{p}, BuildOptions{BatchSize: n}); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l, err = OpenLiterature(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// pubmedQABase reads the real PubMedQA abstracts and each one's
// sentences: what benchDoc remixes into more documents.
func pubmedQABase(t *testing.T) ([]Article, [][]string) {
	t.Helper()
	var base []Article
	if err := ReadInput("../testdata/pubmed/pubmedqa_contexts.jsonl", func(o Op) error {
		base = append(base, o.Article)
		return nil
	}, func(Problem) {}); err != nil {
		t.Fatal(err)
	}
	sentences := make([][]string, len(base))
	for j, a := range base {
		sentences[j] = strings.SplitAfter(a.Abstract, ". ")
	}
	return base, sentences
}

type posting struct {
	doc      uint64
	freq, dl int
}

func readPostings(t *testing.T, s source, advances []uint64) []posting {
	t.Helper()
	var out []posting
	d, f, dl, err := s.Next()
	for i := 0; ; i++ {
		if err != nil {
			t.Fatal(err)
		}
		if d == done {
			return out
		}
		out = append(out, posting{d, f, dl})
		if i < len(advances) && advances[i] > d {
			d, f, dl, err = s.Advance(advances[i])
		} else {
			d, f, dl, err = s.Next()
		}
	}
}

// fillPostings reads s as the pruned walk reads an essential term's list
// (cursor.fill), windows of random sizes at a time, with random jumps
// between some; skipped collects the ranges jumped over.
func fillPostings(t *testing.T, s source, rng *rand.Rand, jumps bool) (out []posting, skipped [][2]uint64) {
	t.Helper()
	c := &cursor{src: s}
	if err := c.next(); err != nil {
		t.Fatal(err)
	}
	var ps []zapv17.Posting
	for c.doc != done {
		if jumps && rng.Intn(4) == 0 {
			to := c.doc + 1 + uint64(rng.Intn(3000))
			skipped = append(skipped, [2]uint64{c.doc, to})
			if err := c.advance(to); err != nil {
				t.Fatal(err)
			}
			continue
		}
		end := c.doc + 1 + uint64(rng.Intn(700))
		var err error
		if ps, err = c.fill(end, ps[:0]); err != nil {
			t.Fatal(err)
		}
		for _, p := range ps {
			out = append(out, posting{uint64(p.Doc), int(p.Freq), int(p.Len)})
		}
		if c.doc < end {
			t.Fatalf("a fill to %d left the cursor at %d", end, c.doc)
		}
	}
	return out, skipped
}

// TestZapPostingsAsZapReadsThem holds the direct reader of zap postings to
// zap's own iterator: every term of every segment, with the segment's
// deletions, with random ones and with none, read one by one and with random jumps,
// and a window at a time as the pruned walk reads them (with and without
// jumps). 5,000 documents: the commonest terms' lists hold bitmap
// containers (more than 4,096 documents of 65,536) as well as arrays.
func TestZapPostingsAsZapReadsThem(t *testing.T) {
	l := persistedIndex(t, 5000)
	defer l.Close()
	snap := snapshot(t, l)
	defer snap.Close()
	rng := rand.New(rand.NewSource(1))
	var lists, chunked, withDeleted, bitmaps int
	for _, ss := range snap.Segments() {
		seg := ss.Segment()
		zd, err := zapv17.OpenDict(seg, fieldText)
		if err != nil {
			t.Fatalf("a persisted segment is not read directly: %v", err)
		}
		dict, err := seg.Dictionary(fieldText)
		if err != nil {
			t.Fatal(err)
		}
		random := roaring.New()
		for i := uint64(0); i < seg.Count(); i++ {
			if rng.Intn(10) == 0 {
				random.Add(uint32(i))
			}
		}
		it := dict.AutomatonIterator(nil, nil, nil)
		for e, err := it.Next(); e != nil || err != nil; e, err = it.Next() {
			if err != nil {
				t.Fatal(err)
			}
			for _, del := range []*roaring.Bitmap{ss.Deleted(), random, nil} {
				pl, err := dict.PostingsList([]byte(e.Term), del, nil)
				if err != nil {
					t.Fatal(err)
				}
				zp, live, err := zd.Postings([]byte(e.Term), del)
				if err != nil {
					t.Fatal(err)
				}
				if live != pl.Count() {
					t.Fatalf("term %q: %d live documents, zap counts %d", e.Term, live, pl.Count())
				}
				if zp == nil {
					if pl.Count() > 0 {
						t.Fatalf("term %q: no postings read, zap has %d", e.Term, pl.Count())
					}
					continue
				}
				lists++
				if zp.Chunks() > 1 {
					chunked++
				}
				if del != nil && del.AndCardinality(zp.Documents()) > 0 {
					withDeleted++
				}
				if del == nil && zp.Documents().Stats().BitmapContainers > 0 {
					bitmaps++
				}
				// Jumps: to random documents ahead, short and long.
				advances := make([]uint64, 64)
				for i := range advances {
					advances[i] = uint64(rng.Intn(int(seg.Count()) + 1))
				}
				for _, jumps := range [][]uint64{nil, advances} {
					want := readPostings(t, segmentSource{it: pl.Iterator(true, true, false, nil)}, jumps)
					got := readPostings(t, zp.Source(), jumps)
					if len(got) != len(want) {
						t.Fatalf("term %q: %d postings read, zap reads %d", e.Term, len(got), len(want))
					}
					for i := range got {
						if got[i] != want[i] {
							t.Fatalf("term %q posting %d: %+v, zap reads %+v", e.Term, i, got[i], want[i])
						}
					}
				}
				all := readPostings(t, segmentSource{it: pl.Iterator(true, true, false, nil)}, nil)
				for _, jumps := range []bool{false, true} {
					got, skipped := fillPostings(t, zp.Source(), rng, jumps)
					var want []posting
					for _, p := range all {
						in := false
						for _, r := range skipped {
							in = in || r[0] <= p.doc && p.doc < r[1]
						}
						if !in {
							want = append(want, p)
						}
					}
					if len(got) != len(want) {
						t.Fatalf("term %q, filled (jumps %v): %d postings read, zap reads %d", e.Term, jumps, len(got), len(want))
					}
					for i := range got {
						if got[i] != want[i] {
							t.Fatalf("term %q, filled (jumps %v), posting %d: %+v, zap reads %+v", e.Term, jumps, i, got[i], want[i])
						}
					}
				}
			}
		}
	}
	// The test is worth as much as what it reached.
	if lists < 1000 || chunked == 0 || withDeleted == 0 || bitmaps == 0 {
		t.Fatalf("lists %d, with several chunks %d, with deletions %d, with bitmap containers %d", lists, chunked, withDeleted, bitmaps)
	}
	t.Logf("%d lists, %d with several frequency chunks, %d with deletions, %d with bitmap containers", lists, chunked, withDeleted, bitmaps)
}

// TestZapPostingsRefusesOthers: anything but a persisted zap v17 segment is
// read through zap's iterator.
func TestZapPostingsRefusesOthers(t *testing.T) {
	var s segment.Segment
	if _, err := zapv17.OpenDict(s, fieldText); err != zapv17.ErrLayout {
		t.Fatalf("nil segment: %v", err)
	}
}
