package index

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/blevesearch/vellum"
	zap "github.com/blevesearch/zapx/v17"
)

// A term's postings read straight from a zap (v17) segment file, for the
// pruned walk. zap's own iterator finds the document at or after a target
// by stepping its roaring iterator one document at a time and skipping each
// passed posting's frequency and norm, on every call; the walk asks that of
// every non-essential list for every candidate, which was most of a query's
// time. This reader keeps one position in the frequency chunk, jumps whole
// chunks with the bitmap's own seek, and decodes a posting's frequency and
// norm only when it stops on it.
//
// The layout read here is zap v17's, as its PostingsList.read,
// chunkedIntDecoder and PostingsIterator.readFreqNormHasLocs read it:
//
//   - the field's term dictionary is a vellum FST at Segment.DictAddr,
//     behind its length (uvarint); a term's value is either a 1-hit
//     posting (document and length packed in the value) or the offset of
//     its postings list;
//   - a postings list: the frequency-chunks offset, the locations offset
//     and the bitmap's length (uvarints), then the roaring bitmap of its
//     documents, deleted ones too;
//   - the frequency chunks: their count, each chunk's end offset, then the
//     chunks; document d's entry is in chunk d / chunkSize, after those of
//     the chunk's earlier documents: freq<<1|hasLocs and, when freq > 0,
//     the field length (uvarints; zap's norm is 1/√length as a float32).
//
// openZapPostings refuses a segment of any other version or chunk mode, and
// the walk checks each list's document count against zap's own before using
// it; on either it reads through zap's iterator instead. The pruned-equals-
// exhaustive test holds the two readers to the same documents and scores.

// zapDict is a segment's text-field term dictionary, read directly.
type zapDict struct {
	seg       *zap.Segment
	fst       *vellum.FST
	chunkMode uint32
}

var errZapLayout = errors.New("zap segment layout not understood")

// openZapPostings opens the term dictionary of field in a persisted zap v17
// segment; errZapLayout when seg is anything else.
func openZapPostings(s any, field string) (*zapDict, error) {
	seg, ok := s.(*zap.Segment)
	if !ok || seg.Version() != 17 {
		return nil, errZapLayout
	}
	if m := seg.ChunkMode(); m == 0 || m > 1026 {
		return nil, errZapLayout
	}
	addr, err := seg.DictAddr(field)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errZapLayout, err)
	}
	mem := seg.Data()
	n, w := uvarintAt(mem, addr)
	if w <= 0 || n == 0 || addr+uint64(w)+n > uint64(len(mem)) {
		return nil, errZapLayout
	}
	start := addr + uint64(w)
	fst, err := vellum.Load(mem[start : start+n])
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errZapLayout, err)
	}
	return &zapDict{seg: seg, fst: fst, chunkMode: seg.ChunkMode()}, nil
}

// postings returns term's postings with the documents in deleted left out
// (nil when the term is not in the segment) and how many live documents
// they hold.
func (d *zapDict) postings(term []byte, deleted *roaring.Bitmap) (*zapPostings, uint64, error) {
	v, ok, err := d.fst.Get(term)
	if err != nil || !ok {
		return nil, 0, err
	}
	p := &zapPostings{deleted: deleted}
	if deleted != nil && deleted.IsEmpty() {
		p.deleted = nil
	}
	if v&zap.FSTValEncodingMask == zap.FSTValEncoding1Hit {
		doc, length := v&mask31, (v>>31)&mask31
		if p.deleted != nil && p.deleted.Contains(uint32(doc)) {
			return nil, 0, nil
		}
		p.oneLen = length
		p.all = roaring.BitmapOf(uint32(doc))
		return p, 1, nil
	}
	mem := d.seg.Data()
	var off [3]uint64 // frequency chunks, locations, bitmap length
	at := v
	for i := range off {
		x, w := uvarintAt(mem, at)
		if w <= 0 {
			return nil, 0, errZapLayout
		}
		off[i], at = x, at+uint64(w)
	}
	if at+off[2] > uint64(len(mem)) {
		return nil, 0, errZapLayout
	}
	p.all = roaring.New()
	if _, err := p.all.FromBuffer(mem[at : at+off[2]]); err != nil {
		return nil, 0, fmt.Errorf("%w: %v", errZapLayout, err)
	}
	card := p.all.GetCardinality()
	p.chunkSize, err = zapChunkSize(d.chunkMode, card, d.seg.NumDocs())
	if err != nil {
		return nil, 0, err
	}
	at = off[0]
	nc, w := uvarintAt(mem, at)
	if w <= 0 || nc > uint64(len(mem)) {
		return nil, 0, errZapLayout
	}
	at += uint64(w)
	p.ends = make([]uint64, nc)
	for i := range p.ends {
		p.ends[i], w = uvarintAt(mem, at)
		if w <= 0 {
			return nil, 0, errZapLayout
		}
		at += uint64(w)
	}
	if nc > 0 && at+p.ends[nc-1] > uint64(len(mem)) {
		return nil, 0, errZapLayout
	}
	p.data = mem[at:]
	live := card
	if p.deleted != nil {
		live -= p.all.AndCardinality(p.deleted)
	}
	return p, live, nil
}

const mask31 = 1<<31 - 1

// zapChunkSize is zap's getChunkSize: how many document numbers one
// frequency chunk covers.
func zapChunkSize(mode uint32, card, numDocs uint64) (uint64, error) {
	var size uint64
	switch {
	case mode <= 1024:
		size = uint64(mode)
	case mode == 1025:
		size = 1024
		if card <= 1024 {
			size = numDocs
		}
	case mode == 1026:
		size = numDocs / (card/1024 + 1)
	}
	if size == 0 {
		return 0, errZapLayout
	}
	return size, nil
}

// zapPostings is one term's postings in one segment.
type zapPostings struct {
	all       *roaring.Bitmap // documents, deleted ones too
	deleted   *roaring.Bitmap // nil: none
	chunkSize uint64
	ends      []uint64 // each frequency chunk's end in data
	data      []byte
	oneLen    uint64 // a 1-hit list's length (all holds its document)
}

// zapSource walks a zapPostings.
type zapSource struct {
	p     *zapPostings
	it    roaring.IntPeekable
	chunk uint64 // the chunk buf holds; noChunk before the first
	end   uint64 // the first document number past it
	buf   []byte
	at    int // next entry in buf
}

const noChunk = math.MaxUint64

func (p *zapPostings) source() *zapSource {
	return &zapSource{p: p, it: p.all.Iterator(), chunk: noChunk}
}

// load makes doc's chunk the one read, from its start, when it is not
// (documents come in increasing order).
func (s *zapSource) load(doc uint64) error {
	if doc < s.end {
		return nil
	}
	p := s.p
	c := doc / p.chunkSize
	if c >= uint64(len(p.ends)) {
		return fmt.Errorf("%w: chunk %d of %d", errZapLayout, c, len(p.ends))
	}
	var start uint64
	if c > 0 {
		start = p.ends[c-1]
	}
	s.chunk, s.end, s.buf, s.at = c, (c+1)*p.chunkSize, p.data[start:p.ends[c]], 0
	return nil
}

// entry reads the frequency and length of document doc, the next posting.
func (s *zapSource) entry(doc uint64) (int, uint64, error) {
	if s.p.ends == nil {
		return 1, s.p.oneLen, nil
	}
	if err := s.load(doc); err != nil {
		return 0, 0, err
	}
	fl, w := binary.Uvarint(s.buf[s.at:])
	if w <= 0 {
		return 0, 0, errZapLayout
	}
	s.at += w
	freq := fl >> 1
	if freq == 0 {
		return 0, 0, nil
	}
	norm, w := binary.Uvarint(s.buf[s.at:])
	if w <= 0 {
		return 0, 0, errZapLayout
	}
	s.at += w
	return int(freq), norm, nil
}

// skip passes over the entry of document doc, the next posting, without
// decoding it: two uvarints, or one when the frequency is 0 (a first
// byte of 0 or 1).
func (s *zapSource) skip(doc uint64) error {
	if s.p.ends == nil {
		return nil
	}
	if err := s.load(doc); err != nil {
		return err
	}
	b, at := s.buf, s.at
	if at < len(b) && b[at] < 2 {
		s.at = at + 1
		return nil
	}
	for range 2 {
		for at < len(b) && b[at] >= 0x80 {
			at++
		}
		if at >= len(b) {
			return errZapLayout
		}
		at++
	}
	s.at = at
	return nil
}

// exactLen bounds the lengths whose float32 norm gives them back exactly
// (docLen; checked for every length below it by a test): a length below it
// is used as read, others as their norm gives them, as every reader of
// norms does.
const exactLen = 1 << 22

// zapLen is the length the walk uses for a stored length.
func zapLen(length uint64) int {
	if length < exactLen {
		return int(length)
	}
	return docLen(zapNorm(length))
}

// zapNorm is the norm zap's Posting.Norm gives for a stored length.
func zapNorm(length uint64) float64 {
	return float64(float32(1.0 / math.Sqrt(float64(uint32(length)))))
}

func (s *zapSource) next() (uint64, int, int, error) { return s.scan(0) }

func (s *zapSource) advance(target uint64) (uint64, int, int, error) {
	if target > math.MaxUint32 {
		return done, 0, 0, nil
	}
	// A target in a later chunk: seek the bitmap to that chunk's first
	// document number. The posting found is the first of its chunk (a
	// later one than the chunk held), whose entries load then reads from
	// the start.
	if s.p.ends != nil && (s.chunk == noChunk || target/s.p.chunkSize > s.chunk) {
		s.it.AdvanceIfNeeded(uint32(target / s.p.chunkSize * s.p.chunkSize))
	}
	return s.scan(target)
}

// scan moves to the first live posting at or after target, passing over
// the entries of those before it.
func (s *zapSource) scan(target uint64) (uint64, int, int, error) {
	for s.it.HasNext() {
		doc := uint64(s.it.Next())
		if doc < target || s.p.deleted != nil && s.p.deleted.Contains(uint32(doc)) {
			if err := s.skip(doc); err != nil {
				return done, 0, 0, err
			}
			continue
		}
		freq, length, err := s.entry(doc)
		if err != nil {
			return done, 0, 0, err
		}
		return doc, freq, zapLen(length), nil
	}
	return done, 0, 0, nil
}

// uvarintAt reads a uvarint at off in mem (w ≤ 0 when it cannot).
func uvarintAt(mem []byte, off uint64) (uint64, int) {
	if off >= uint64(len(mem)) {
		return 0, 0
	}
	return binary.Uvarint(mem[off:])
}
