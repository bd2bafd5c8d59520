package zapv17

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/blevesearch/bleve/v2/document"
	"github.com/blevesearch/bleve/v2/index/scorch"
	bindex "github.com/blevesearch/bleve_index_api"
	segment "github.com/blevesearch/scorch_segment_api/v2"
	"github.com/blevesearch/vellum"
	zap "github.com/blevesearch/zapx/v17"
	"github.com/golang/snappy"
)

// Plugin is zap v17, the segment format scorch writes by default, with
// new segments built by halu's segmentBuilder where it can: a build spent
// as much CPU in zap's general builder as in all the rest. The segments
// are zap v17 files, read, merged and recorded as zap's own (Type "zap",
// Version 17); a batch the builder does not handle goes to zap.
// TestSegmentBuilderWritesZapsBytes holds the two to the same bytes.
//
// Its merges are zap's, with the merged segments' mapped pages handed back
// to the kernel as the merge goes (releaseWhile): zap merges by reading
// its inputs through their memory maps, and every page a merge touched
// stayed in the process's resident memory until the inputs were closed
// after it — a merge of the 1M-document index's segments grew a build by
// the size of their files.
type Plugin struct {
	*zap.ZapPlugin
	// stock has zap's own builder write new segments (Install(false)).
	stock bool
}

// NewPlugin is halu's zap v17 segment writer.
func NewPlugin() Plugin { return Plugin{ZapPlugin: &zap.ZapPlugin{}} }

var (
	installMu sync.Mutex
	installed = "" // scorch's own zap, until Install puts halu's Plugin
)

// CheckedZapx is the zapx/v17 release whose layout this package writes
// and reads: its builder's bytes (TestSegmentBuilderWritesZapsBytes) and
// its postings (TestZapPostingsAsZapReadsThem, the pruned-equals-
// exhaustive walk) were checked against it. TestZapxIsTheOneChecked fails
// when go.mod names another release: run those tests against it, read
// zapx's changes to new.go, section_inverted_text_index.go, posting.go
// and intDecoder.go, then update this.
const CheckedZapx = "v17.2.3"

// Installed is the writer Install put in the registry: "halu" or "zap"
// ("" before the first Install).
func Installed() string {
	installMu.Lock()
	defer installMu.Unlock()
	return installed
}

// Install puts a writer of zap v17 segments in scorch's registry of
// segment formats: halu's (Plugin) when halu is set, else zap's own. The
// registry is scorch's process-wide table, which scorch reads when it
// opens an index (the index keeps the writer it found): Install before
// opening an index, never while another opens one. It changes the
// registry only when the choice changes.
func Install(halu bool) {
	installMu.Lock()
	defer installMu.Unlock()
	want := map[bool]string{true: "halu", false: "zap"}[halu]
	if installed == want {
		return
	}
	scorch.RegisterSegmentPlugin(Plugin{ZapPlugin: &zap.ZapPlugin{}, stock: !halu}, true)
	installed = want
}

// Writes reports whether halu's builder writes a segment of these
// documents; zap builds the others.
func Writes(results []bindex.Document) bool {
	var b segmentBuilder
	return b.read(results)
}

// New builds a segment from documents.
func (p Plugin) New(results []bindex.Document) (segment.Segment, uint64, error) {
	return p.NewUsing(results, nil)
}

// NewUsing builds a segment from documents with scorch's configuration.
func (p Plugin) NewUsing(results []bindex.Document, config map[string]interface{}) (segment.Segment, uint64, error) {
	var b segmentBuilder
	if p.stock || !b.read(results) {
		return p.ZapPlugin.NewUsing(results, config)
	}
	return b.build(config)
}

// Merge is zap's merge of segments into one at path, with the inputs'
// mapped pages released as it reads them.
func (p Plugin) Merge(segments []segment.Segment, drops []*roaring.Bitmap, path string,
	closeCh chan struct{}, s segment.StatsReporter) ([][]uint64, uint64, error) {
	return p.MergeUsing(segments, drops, path, closeCh, s, nil)
}

// MergeUsing is Merge with scorch's configuration.
func (p Plugin) MergeUsing(segments []segment.Segment, drops []*roaring.Bitmap, path string,
	closeCh chan struct{}, s segment.StatsReporter, config map[string]interface{}) ([][]uint64, uint64, error) {
	defer releaseWhile(segments)()
	return p.ZapPlugin.MergeUsing(segments, drops, path, closeCh, s, config)
}

// TermCount is a term of an analysed field and how often it occurs.
type TermCount struct {
	Term  string
	Count int
}

// Counted is a text field its maker analysed and counted (halu's text
// field): the builder takes its terms as they are, and bleve's map of
// token frequencies is never made.
type Counted interface {
	bindex.Field
	Terms() []TermCount
}

// Plain marks a field the builder writes from its token frequencies
// (halu's PMID field), as it writes bleve's own text and numeric fields.
type Plain interface {
	bindex.Field
	PlainField()
}

// segmentBuilder writes a zap v17 segment (zapx/v17's new.go and
// section_inverted_text_index.go, specialised) for documents whose fields
// are plain text and numbers without term vectors, no composite or
// nested documents: all halu's index holds. It writes what zap's builder
// writes, byte for byte, except the order of the per-field section table,
// which zap writes in its map's random order.
type segmentBuilder struct {
	docs     []*document.Document
	fields   []segField     // _id first, then by name, as zap
	ids      map[string]int // field name → index in fields
	terms    []string       // every distinct term of every field
	postings []segPosting   // in document order
	stored   [][]segStored
	size     int // the segment's size, about (its buffer's first size)
}

type segField struct {
	name string
	opts bindex.FieldIndexingOptions
	dv   bool             // some instance asks for doc values
	dict map[string]int32 // term → index in terms
}

// segPosting is one term in one document: its frequency and the field's
// length in the document (zap keeps the length as the "norm" bits).
type segPosting struct {
	term int32
	doc  uint32
	freq uint32
	norm uint32
}

type segStored struct {
	field uint16
	typ   byte
	val   []byte
	pos   []uint64
}

// read takes the documents in and reports whether the builder can write
// them; if not, zap builds the segment.
func (b *segmentBuilder) read(results []bindex.Document) bool {
	if len(results) == 0 {
		return false
	}
	var numStored, numTerms, storedBytes int
	b.docs = make([]*document.Document, len(results))
	b.ids = map[string]int{"_id": 0}
	b.fields = []segField{{name: "_id", opts: bindex.IndexField | bindex.StoreField}}
	for i, r := range results {
		d, ok := r.(*document.Document)
		if !ok || len(d.CompositeFields) > 0 || len(d.NestedDocuments) > 0 {
			return false
		}
		b.docs[i] = d
		for _, f := range d.Fields {
			switch f.(type) {
			case Counted, Plain, *document.TextField, *document.NumericField:
			default:
				return false
			}
			j, ok := b.ids[f.Name()]
			if !ok {
				j = len(b.fields)
				b.ids[f.Name()] = j
				b.fields = append(b.fields, segField{name: f.Name()})
			}
			b.fields[j].opts |= f.Options()
			if f.Options().IsStored() {
				numStored++
				storedBytes += len(f.Value())
			}
			if t, ok := f.(Counted); ok {
				numTerms += len(t.Terms())
			} else {
				numTerms += len(f.AnalyzedTokenFrequencies())
			}
		}
	}
	b.size = storedBytes + 16*len(results) + 4*numTerms + 4096
	if len(b.fields) > 64 {
		return false
	}
	slices.SortFunc(b.fields[1:], func(x, y segField) int { return strings.Compare(x.name, y.name) })
	for j := range b.fields {
		b.ids[b.fields[j].name] = j
		b.fields[j].dict = map[string]int32{}
	}

	b.stored = make([][]segStored, len(b.docs))
	stored := make([]segStored, 0, numStored)
	b.postings = make([]segPosting, 0, numTerms)
	var lens [64]int
	var tfs [64]bindex.TokenFrequencies
	var text [64][]TermCount
	for i, d := range b.docs {
		var seen uint64
		from := len(stored)
		for _, f := range d.Fields {
			j := b.ids[f.Name()]
			if f.Options().IsStored() {
				stored = append(stored, segStored{field: uint16(j), typ: f.EncodedFieldType(),
					val: f.Value(), pos: f.ArrayPositions()})
			}
			if f.Options().IncludeDocValues() {
				b.fields[j].dv = true
			}
			lens[j] += f.AnalyzedLength()
			if t, ok := f.(Counted); ok {
				if terms := t.Terms(); len(terms) > 0 {
					if seen&(1<<j) != 0 {
						return false
					}
					seen |= 1 << j
					text[j] = terms
				}
				continue
			}
			if t := f.AnalyzedTokenFrequencies(); len(t) > 0 {
				if seen&(1<<j) != 0 {
					return false // two indexed instances of a field: zap merges them
				}
				seen |= 1 << j
				tfs[j] = t
			}
		}
		for j := range b.fields {
			if seen&(1<<j) == 0 {
				lens[j] = 0
				continue
			}
			dict := b.fields[j].dict
			add := func(term string, freq int) {
				id, ok := dict[term]
				if !ok {
					id = int32(len(b.terms))
					dict[term] = id
					b.terms = append(b.terms, term)
				}
				b.postings = append(b.postings, segPosting{term: id, doc: uint32(i),
					freq: uint32(freq), norm: uint32(lens[j])})
			}
			for _, t := range text[j] {
				add(t.Term, t.Count)
			}
			for term, tf := range tfs[j] {
				if len(tf.Locations) > 0 {
					return false
				}
				add(term, tf.Frequency())
			}
			lens[j], tfs[j], text[j] = 0, nil, nil
		}
		// Stored values go in field order, each field's values in the
		// document's order.
		b.stored[i] = stored[from:len(stored):len(stored)]
		slices.SortStableFunc(b.stored[i], func(x, y segStored) int { return int(x.field) - int(y.field) })
	}
	return true
}

// segWriter is the segment's bytes as they are written (zap writes them
// through a CountHashWriter; build checksums them at the end).
type segWriter struct{ buf []byte }

func (w *segWriter) uvarint(vs ...uint64) {
	for _, v := range vs {
		w.buf = binary.AppendUvarint(w.buf, v)
	}
}

func (w *segWriter) u64(v uint64) { w.buf = binary.BigEndian.AppendUint64(w.buf, v) }

func (w *segWriter) count() uint64 { return uint64(len(w.buf)) }

// build writes the segment and opens it in memory, as zap's New does. It
// counts the documents in scorch's statistics as zap does; zap's count of
// bytes written at index time, a statistic zap keeps unexported, stays 0.
func (b *segmentBuilder) build(config map[string]interface{}) (segment.Segment, uint64, error) {
	stats, _ := config[segment.StatsKey].(*segment.Stats)
	if stats == nil {
		stats = new(segment.Stats)
	}
	w := &segWriter{buf: make([]byte, 0, b.size)}
	storedIndex := b.writeStored(w)
	addrs, err := b.writeDicts(w)
	if err != nil {
		return nil, 0, err
	}
	sectionsIndex := b.writeFields(w, addrs)
	n := uint64(len(b.docs))
	atomic.AddUint64(&stats.TotNewRootDocsProcessed, n)
	atomic.AddUint64(&stats.TotNewDocsProcessed, n)
	atomic.AddUint64(&stats.TotNewDocsIndexed, n)
	sb, err := zap.InitSegmentBase(w.buf, crc32.ChecksumIEEE(w.buf), zap.DefaultChunkMode, n,
		storedIndex, sectionsIndex, config, stats)
	return sb, uint64(len(w.buf)), err
}

// writeStored writes each document's stored values (zap's
// writeStoredFields) and returns where their index starts.
func (b *segmentBuilder) writeStored(w *segWriter) uint64 {
	offsets := make([]uint64, len(b.docs))
	var meta, data, compressed []byte
	for i, d := range b.docs {
		meta, data = meta[:0], data[:0]
		id := []byte(d.ID())
		if s := b.stored[i]; len(s) > 0 && s[0].field == 0 {
			id = s[0].val // zap writes the stored _id
		}
		meta = binary.AppendUvarint(meta, uint64(len(id)))
		for _, s := range b.stored[i] {
			if s.field == 0 {
				continue
			}
			meta = binary.AppendUvarint(meta, uint64(s.field))
			meta = binary.AppendUvarint(meta, uint64(s.typ))
			meta = binary.AppendUvarint(meta, uint64(len(data)))
			meta = binary.AppendUvarint(meta, uint64(len(s.val)))
			meta = binary.AppendUvarint(meta, uint64(len(s.pos)))
			for _, p := range s.pos {
				meta = binary.AppendUvarint(meta, p)
			}
			data = append(data, s.val...)
		}
		compressed = snappy.Encode(compressed[:cap(compressed)], data)
		offsets[i] = w.count()
		w.uvarint(uint64(len(meta)), uint64(len(id)+len(compressed)))
		w.buf = append(w.buf, meta...)
		w.buf = append(w.buf, id...)
		w.buf = append(w.buf, compressed...)
	}
	at := w.count()
	for _, o := range offsets {
		w.u64(o)
	}
	w.uvarint(0) // no nested documents
	return at
}

// writeDicts writes each field's postings, term dictionary and doc values
// (zap's invertedIndexOpaque.writeDicts without locations) and returns
// each field's address.
func (b *segmentBuilder) writeDicts(w *segWriter) ([]uint64, error) {
	numDocs := uint64(len(b.docs))
	// Postings grouped by term, each term's in document order.
	start := make([]int, len(b.terms)+1)
	for _, p := range b.postings {
		start[p.term+1]++
	}
	for t := 1; t <= len(b.terms); t++ {
		start[t] += start[t-1]
	}
	sorted := make([]segPosting, len(b.postings))
	next := slices.Clone(start[:len(b.terms)])
	for _, p := range b.postings {
		sorted[next[p.term]] = p
		next[p.term]++
	}

	addrs := make([]uint64, len(b.fields))
	var fst bytes.Buffer
	builder, err := vellum.New(&fst, nil)
	if err != nil {
		return nil, err
	}
	var (
		chunk   []byte
		ends    []uint64
		docs    []uint32
		rb      []byte
		dvTerms [][]byte
	)
	for j := range b.fields {
		f := &b.fields[j]
		if f.dv {
			dvTerms = make([][]byte, numDocs)
		}
		keys := make([]dictKey, 0, len(f.dict))
		for t, id := range f.dict {
			keys = append(keys, dictKey{t, id})
		}
		slices.SortFunc(keys, func(x, y dictKey) int { return strings.Compare(x.term, y.term) })
		for _, k := range keys {
			term := k.term
			ps := sorted[start[k.id]:start[k.id+1]]
			size, err := zapChunkSize(zap.DefaultChunkMode, uint64(len(ps)), numDocs)
			if err != nil {
				return nil, err
			}
			chunks := (numDocs-1)/size + 1
			ends = append(ends[:0], make([]uint64, chunks)...)
			chunk = chunk[:0]
			docs = docs[:0]
			for _, p := range ps {
				if p.freq > 0 {
					chunk = binary.AppendUvarint(chunk, uint64(p.freq)<<1)
					chunk = binary.AppendUvarint(chunk, uint64(p.norm))
				} else {
					chunk = binary.AppendUvarint(chunk, 0)
				}
				ends[uint64(p.doc)/size] = uint64(len(chunk))
				docs = append(docs, p.doc)
				if f.dv {
					dvTerms[p.doc] = append(append(dvTerms[p.doc], term...), bindex.DocValueTermSeparator)
				}
			}
			for c := 1; c < len(ends); c++ {
				ends[c] = max(ends[c], ends[c-1])
			}
			tfOffset := w.count()
			w.uvarint(uint64(len(ends)))
			w.uvarint(ends...)
			w.buf = append(w.buf, chunk...)

			if rb, err = roaringBytes(rb[:0], docs); err != nil {
				return nil, err
			}
			at := w.count()
			w.uvarint(tfOffset, 0, uint64(len(rb)))
			w.buf = append(w.buf, rb...)
			if err := builder.Insert([]byte(term), at); err != nil {
				return nil, err
			}
		}
		if err := builder.Close(); err != nil {
			return nil, err
		}
		dictAt := w.count()
		w.uvarint(uint64(fst.Len()))
		w.buf = append(w.buf, fst.Bytes()...)
		fst.Reset()
		if err := builder.Reset(&fst); err != nil {
			return nil, err
		}

		dvStart, dvEnd := uint64(math.MaxUint64), uint64(math.MaxUint64)
		if f.dv {
			dvStart = w.count()
			writeDocValues(w, dvTerms, f.opts)
			dvEnd = w.count()
			dvTerms = nil
		}
		addrs[j] = w.count()
		w.uvarint(dvStart, dvEnd, dictAt)
	}
	return addrs, nil
}

type dictKey struct {
	term string
	id   int32
}

// roaringBytes appends the portable serialization of the bitmap of docs
// (ascending) to b, as roaring's ToBytes writes it: a single array
// container directly, other bitmaps through the library.
func roaringBytes(b []byte, docs []uint32) ([]byte, error) {
	if n := len(docs); n == 0 || n > 4096 || docs[n-1] > 0xffff {
		bm := roaring.New()
		bm.AddMany(docs)
		rb, err := bm.ToBytes()
		return append(b, rb...), err
	}
	const cookieNoRuns = 12346
	b = binary.LittleEndian.AppendUint32(b, cookieNoRuns)
	b = binary.LittleEndian.AppendUint32(b, 1)                   // containers
	b = binary.LittleEndian.AppendUint16(b, 0)                   // key
	b = binary.LittleEndian.AppendUint16(b, uint16(len(docs)-1)) // cardinality - 1
	b = binary.LittleEndian.AppendUint32(b, 16)                  // the container's offset
	for _, d := range docs {
		b = binary.LittleEndian.AppendUint16(b, uint16(d))
	}
	return b, nil
}

// writeDocValues writes a field's doc values, each document's terms
// joined (zap's chunkedContentCoder, in the legacy chunks of 1,024
// documents that zap keeps for doc values).
func writeDocValues(w *segWriter, terms [][]byte, opts bindex.FieldIndexingOptions) {
	size := uint64(zap.LegacyChunkMode)
	if opts.SkipDVChunking() {
		size = 1
	}
	numDocs := uint64(len(terms))
	lens := make([]uint64, (numDocs-1)/size+1)
	var final, data, meta, compressed []byte
	type docEnd struct{ doc, end uint64 }
	var docsIn []docEnd
	cur := uint64(0)
	flush := func() {
		metaLen := 0
		if size != 1 {
			meta = binary.AppendUvarint(meta[:0], uint64(len(docsIn)))
			for _, m := range docsIn {
				meta = binary.AppendUvarint(meta, m.doc)
				meta = binary.AppendUvarint(meta, m.end)
			}
			final = append(final, meta...)
			metaLen = len(meta)
		}
		if opts.SkipDVCompression() {
			compressed = data
		} else {
			compressed = snappy.Encode(compressed[:cap(compressed)], data)
		}
		final = append(final, compressed...)
		lens[cur] = uint64(len(compressed) + metaLen)
	}
	for doc, t := range terms {
		if len(t) == 0 {
			continue
		}
		if c := uint64(doc) / size; c != cur {
			flush()
			data, docsIn, cur = data[:0], docsIn[:0], c
		}
		data = append(data, t...)
		docsIn = append(docsIn, docEnd{uint64(doc), uint64(len(data))})
	}
	flush()
	w.buf = append(w.buf, final...)
	at := len(w.buf)
	var end uint64
	for _, l := range lens {
		end += l
		w.uvarint(end)
	}
	w.u64(uint64(len(w.buf) - at))
	w.u64(uint64(len(lens)))
}

// writeFields writes the fields section (zap's persistFieldsSection) and
// returns where its index starts. Each field lists the segment sections
// zap registers without build tags — the inverted index, synonyms and
// geo shapes — with an address only for the inverted index.
func (b *segmentBuilder) writeFields(w *segWriter, addrs []uint64) uint64 {
	offsets := make([]uint64, len(b.fields))
	for j, f := range b.fields {
		offsets[j] = w.count()
		w.uvarint(uint64(len(f.name)))
		w.buf = append(w.buf, f.name...)
		w.uvarint(uint64(f.opts), 3)
		for _, s := range []struct {
			typ  uint16
			addr uint64
		}{{zap.SectionInvertedTextIndex, addrs[j]}, {zap.SectionSynonymIndex, 0}, {zap.SectionGeoShapeV2Index, 0}} {
			w.buf = binary.BigEndian.AppendUint16(w.buf, s.typ)
			w.u64(s.addr)
		}
	}
	at := w.count()
	w.uvarint(uint64(len(b.fields)))
	for _, o := range offsets {
		w.u64(o)
	}
	return at
}
