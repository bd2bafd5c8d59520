package index

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/blevesearch/bleve/v2/document"
	bindex "github.com/blevesearch/bleve_index_api"
	zap "github.com/blevesearch/zapx/v17"

	"halu/index/internal/zapv17"
)

// segmentDocs makes n documents as a build makes them (the real PubMedQA
// abstracts, then documents remixed from them), with the _id field and
// the analysis scorch adds before a segment is built.
func segmentDocs(t *testing.T, l *Literature, n int) []bindex.Document {
	t.Helper()
	base, sentences := pubmedQABase(t)
	docs := make([]bindex.Document, n)
	for i := range docs {
		d, _ := l.document(benchDoc(base, sentences, i), &termScratch{})
		d.AddIDField()
		d.VisitFields(func(f bindex.Field) {
			if f.Options().IsIndexed() {
				f.Analyze()
			}
		})
		docs[i] = d
	}
	return docs
}

// segmentFile persists a segment and returns the file's bytes.
func segmentFile(t *testing.T, seg interface{}, path string) []byte {
	t.Helper()
	sb, ok := seg.(*zap.SegmentBase)
	if !ok {
		t.Fatalf("segment is a %T, not a zap SegmentBase", seg)
	}
	if err := zap.PersistSegmentBase(sb, path); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

type zapFieldEntry struct {
	name     string
	opts     uint64
	sections map[uint16]uint64 // section type → address, zero ones left out
}

// zapFields reads a zap v17 file's fields section: where it starts, and
// each field's name, options and section addresses.
func zapFields(t *testing.T, b []byte) (int, []zapFieldEntry) {
	t.Helper()
	// Footer, from the end: CRC, version, chunk mode (4 bytes each), then
	// the sections index, stored index and document count (8 each).
	sectionsIndex := binary.BigEndian.Uint64(b[len(b)-12-8:])
	n, k := binary.Uvarint(b[sectionsIndex:])
	pos := int(sectionsIndex) + k
	first := len(b)
	var out []zapFieldEntry
	for i := 0; i < int(n); i++ {
		at := int(binary.BigEndian.Uint64(b[pos:]))
		pos += 8
		first = min(first, at)
		l, k := binary.Uvarint(b[at:])
		at += k
		e := zapFieldEntry{name: string(b[at : at+int(l)]), sections: map[uint16]uint64{}}
		at += int(l)
		e.opts, k = binary.Uvarint(b[at:])
		at += k
		ns, k := binary.Uvarint(b[at:])
		at += k
		for range ns {
			typ := binary.BigEndian.Uint16(b[at:])
			addr := binary.BigEndian.Uint64(b[at+2:])
			at += 10
			if addr != 0 {
				e.sections[typ] = addr
			}
		}
		out = append(out, e)
	}
	return first, out
}

// TestSegmentBuilderWritesZapsBytes holds halu's segment builder to zap's:
// for the same documents, both files are the same bytes up to the fields
// section, whose per-field table of section addresses zap writes in
// random order and which must say the same; the footers then differ only
// in the checksum over that table.
func TestSegmentBuilderWritesZapsBytes(t *testing.T) {
	l, err := OpenLiterature(t.TempDir(), true)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	all := segmentDocs(t, l, 5000)
	dir := t.TempDir()
	// Common terms of 5,000 documents need roaring's bitmap containers.
	for _, n := range []int{1, 7, 1025, 3000, 5000} {
		docs := all[:n]
		if n == 7 {
			// A document with no abstract, one whose text field is empty
			// and one with a repeated stored field.
			docs = append([]bindex.Document(nil), all[:7]...)
			empty, _ := l.document(Article{PMID: 9, Title: "T"}, &termScratch{})
			empty.AddIDField()
			empty.VisitFields(func(f bindex.Field) {
				if f.Options().IsIndexed() {
					f.Analyze()
				}
			})
			docs[3] = empty
			extra := document.NewDocument("77")
			extra.AddField(document.NewTextFieldWithIndexingOptions(fieldTitle, nil, []byte("a"), bindex.StoreField))
			extra.AddField(document.NewTextFieldWithIndexingOptions(fieldTitle, []uint64{1}, []byte("b"), bindex.StoreField))
			extra.AddField(document.NewNumericFieldWithIndexingOptions(fieldYear, nil, 2001, bindex.StoreField|bindex.IndexField|bindex.DocValues))
			extra.AddIDField()
			extra.VisitFields(func(f bindex.Field) {
				if f.Options().IsIndexed() {
					f.Analyze()
				}
			})
			docs[5] = extra
		}
		want, _, err := (&zap.ZapPlugin{}).New(docs)
		if err != nil {
			t.Fatal(err)
		}
		if !zapv17.Writes(docs) {
			t.Fatalf("%d documents: the builder declined them", n)
		}
		got, _, err := zapv17.NewPlugin().NewUsing(docs, nil)
		if err != nil {
			t.Fatal(err)
		}
		wb := segmentFile(t, want, filepath.Join(dir, "want.zap"))
		gb := segmentFile(t, got, filepath.Join(dir, "got.zap"))
		wAt, wFields := zapFields(t, wb)
		gAt, gFields := zapFields(t, gb)
		if wAt != gAt || !bytes.Equal(wb[:wAt], gb[:gAt]) {
			i := 0
			for i < min(wAt, gAt) && wb[i] == gb[i] {
				i++
			}
			t.Fatalf("%d documents: bytes differ from offset %d (fields at %d in zap's, %d in halu's)", n, i, wAt, gAt)
		}
		if len(wFields) != len(gFields) {
			t.Fatalf("%d documents: %d fields, zap %d", n, len(gFields), len(wFields))
		}
		for i := range wFields {
			w, g := wFields[i], gFields[i]
			if w.name != g.name || w.opts != g.opts || len(w.sections) != len(g.sections) {
				t.Fatalf("%d documents: field %d is %+v, zap's %+v", n, i, g, w)
			}
			for typ, addr := range w.sections {
				if g.sections[typ] != addr {
					t.Fatalf("%d documents: field %s section %d at %d, zap's at %d", n, w.name, typ, g.sections[typ], addr)
				}
			}
		}
		if len(wb) != len(gb) {
			t.Fatalf("%d documents: file of %d bytes, zap's %d", n, len(gb), len(wb))
		}
	}
}

// TestSegmentBuilderDeclines checks that what the builder does not write
// goes to zap: composite fields and two indexed instances of a field.
func TestSegmentBuilderDeclines(t *testing.T) {
	two := document.NewDocument("1")
	two.AddField(document.NewTextField("t", nil, []byte("a b")))
	two.AddField(document.NewTextField("t", []uint64{1}, []byte("c")))
	two.AddIDField()
	two.VisitFields(func(f bindex.Field) { f.Analyze() })
	comp := document.NewDocument("2")
	comp.AddField(document.NewTextFieldWithIndexingOptions("t", nil, []byte("a"), bindex.IndexField))
	comp.AddField(document.NewCompositeField("_all", true, nil, nil))
	for _, d := range []*document.Document{two, comp} {
		if zapv17.Writes([]bindex.Document{d}) {
			t.Errorf("document %s: the builder took it", d.ID())
		}
	}
	seg, _, err := zapv17.NewPlugin().New([]bindex.Document{two})
	if err != nil {
		t.Fatal(err)
	}
	if n := seg.Count(); n != 1 {
		t.Errorf("zap's segment holds %d documents, want 1", n)
	}
}

// An index whose segments bleve's own zap wrote (StockSegments) serves
// the same top documents with the same scores as one halu's builder
// wrote, and each open installs the writer it asks for.
func TestStockSegmentsServeTheSame(t *testing.T) {
	in := "../testdata/pubmed/pubmedqa_contexts.jsonl"
	search := func(opts ...Option) ([]Hit, string) {
		l, err := OpenLiterature(t.TempDir(), true, opts...)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		writer := zapv17.Installed()
		if _, err := l.Build(context.Background(), []string{in}, BuildOptions{BatchSize: 300}); err != nil {
			t.Fatal(err)
		}
		hits, err := l.Search(context.Background(), "statin therapy and cardiovascular outcomes in older patients", SearchOptions{K: 10})
		if err != nil {
			t.Fatal(err)
		}
		return hits, writer
	}
	stock, w1 := search(StockSegments())
	halu, w2 := search()
	if w1 != "zap" || w2 != "halu" {
		t.Fatalf("installed %q then %q, want zap then halu", w1, w2)
	}
	if len(halu) == 0 || len(stock) != len(halu) {
		t.Fatalf("%d hits from zap's segments, %d from halu's", len(stock), len(halu))
	}
	for i := range halu {
		if stock[i].PMID != halu[i].PMID || stock[i].Score != halu[i].Score {
			t.Fatalf("hit %d: %+v from zap's segments, %+v from halu's", i, stock[i], halu[i])
		}
	}
}
