package zapv17

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/blevesearch/vellum"
	zap "github.com/blevesearch/zapx/v17"
)

// A term's postings read straight from a zap (v17) segment file, for the
// pruned walk. zap's own iterator finds the document at or after a target
// by stepping its roaring iterator one document at a time and skipping each
// passed posting's frequency and norm, on every call; the walk asks that of
// every non-essential list for every candidate, which was most of a query's
// time. This reader reads the bitmap where it lies in the file, knowing
// each document's rank (roaring.go), so that a jump passes a word of 64
// documents at a time; it keeps one position in the frequency chunk, passes
// the entries of the documents jumped over by counting varint ends eight
// bytes at a time, and decodes a posting's frequency and norm only when it
// stops on it (Source).
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
// OpenDict refuses a segment of any other version or chunk mode, and
// the walk checks each list's document count against zap's own before using
// it; on either it reads through zap's iterator instead. The pruned-equals-
// exhaustive test holds the two readers to the same documents and scores.

// Check opens the segment file at path as zap does and closes it: the
// error zap gives for a file cut short or overwritten, or nil.
func Check(path string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("zap: %v", r)
		}
	}()
	s, err := (&zap.ZapPlugin{}).Open(path) // zap's reader checks the footer and the version
	if err != nil {
		return err
	}
	return s.Close()
}

// Dict is a segment's text-field term dictionary, read directly.
type Dict struct {
	seg       *zap.Segment
	fst       *vellum.FST
	chunkMode uint32
}

var ErrLayout = errors.New("zap segment layout not understood")

// OpenDict opens the term dictionary of field in a persisted zap v17
// segment; ErrLayout when s is anything else.
func OpenDict(s any, field string) (*Dict, error) {
	seg, ok := s.(*zap.Segment)
	if !ok || seg.Version() != 17 {
		return nil, ErrLayout
	}
	if m := seg.ChunkMode(); m == 0 || m > 1026 {
		return nil, ErrLayout
	}
	addr, err := seg.DictAddr(field)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrLayout, err)
	}
	mem := seg.Data()
	n, w := uvarintAt(mem, addr)
	if w <= 0 || n == 0 || addr+uint64(w)+n > uint64(len(mem)) {
		return nil, ErrLayout
	}
	start := addr + uint64(w)
	fst, err := vellum.Load(mem[start : start+n])
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrLayout, err)
	}
	return &Dict{seg: seg, fst: fst, chunkMode: seg.ChunkMode()}, nil
}

// postings returns term's postings with the documents in deleted left out
// (nil when the term is not in the segment) and how many live documents
// they hold.
func (d *Dict) Postings(term []byte, deleted *roaring.Bitmap) (*Postings, uint64, error) {
	v, ok, err := d.fst.Get(term)
	if err != nil || !ok {
		return nil, 0, err
	}
	p := &Postings{deleted: deleted}
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
		var low [2]byte
		binary.LittleEndian.PutUint16(low[:], uint16(doc))
		p.containers = []rbContainer{{key: doc &^ 0xFFFF, card: 1, kind: rbArray, data: low[:]}}
		return p, 1, nil
	}
	mem := d.seg.Data()
	var off [3]uint64 // frequency chunks, locations, bitmap length
	at := v
	for i := range off {
		x, w := uvarintAt(mem, at)
		if w <= 0 {
			return nil, 0, ErrLayout
		}
		off[i], at = x, at+uint64(w)
	}
	if at+off[2] > uint64(len(mem)) {
		return nil, 0, ErrLayout
	}
	p.all = roaring.New()
	if _, err := p.all.FromBuffer(mem[at : at+off[2]]); err != nil {
		return nil, 0, fmt.Errorf("%w: %v", ErrLayout, err)
	}
	if p.containers, err = parseRoaring(mem[at : at+off[2]]); err != nil {
		return nil, 0, err
	}
	card := p.all.GetCardinality()
	p.chunkSize, err = zapChunkSize(d.chunkMode, card, d.seg.NumDocs())
	if err != nil {
		return nil, 0, err
	}
	at = off[0]
	nc, w := uvarintAt(mem, at)
	if w <= 0 || nc > uint64(len(mem)) {
		return nil, 0, ErrLayout
	}
	at += uint64(w)
	p.ends = make([]uint64, nc)
	for i := range p.ends {
		p.ends[i], w = uvarintAt(mem, at)
		if w <= 0 {
			return nil, 0, ErrLayout
		}
		at += uint64(w)
	}
	if nc > 0 && at+p.ends[nc-1] > uint64(len(mem)) {
		return nil, 0, ErrLayout
	}
	p.data = mem[at:]
	// Every entry is read as two uvarints: a field indexed with
	// frequencies, which the list's first entry shows.
	var start uint64
	for _, end := range p.ends {
		if end > start {
			if fl, w := binary.Uvarint(p.data[start:end]); w <= 0 || fl>>1 == 0 {
				return nil, 0, ErrLayout
			}
			break
		}
		start = end
	}
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
		return 0, ErrLayout
	}
	return size, nil
}

// Postings is one term's postings in one segment.
type Postings struct {
	all       *roaring.Bitmap // documents, deleted ones too
	deleted   *roaring.Bitmap // nil: none
	chunkSize uint64
	ends      []uint64 // each frequency chunk's end in data
	data      []byte
	oneLen    uint64 // a 1-hit list's length (all holds its document)
	// containers are all's, read in place (a 1-hit list's made).
	containers []rbContainer
}

// Size estimates the bytes p holds beside the segment's own (its chunk
// ends, its containers read here and by the roaring bitmap); 0 for nil.
func (p *Postings) Size() int {
	if p == nil {
		return 0
	}
	return 128 + 8*len(p.ends) + 2*72*len(p.containers)
}

// Chunks is how many frequency chunks the list's entries are in.
func (p *Postings) Chunks() int { return len(p.ends) }

// Documents is the list's documents, deleted ones too.
func (p *Postings) Documents() *roaring.Bitmap { return p.all }

// WithDeleted is the same list with its deleted documents read too: what
// the segment file holds, whichever snapshot's deletions p leaves out.
func (p *Postings) WithDeleted() *Postings {
	q := *p
	q.deleted = nil
	return &q
}

// Source walks a Postings: its documents with their ranks from the
// serialized bitmap (rbCursor), and the frequency entries of the documents
// it passes over skipped by counting varint ends eight bytes at a time, not
// byte by byte — every entry of a field with frequencies is two uvarints
// (postings checks the list's first).
type Source struct {
	p    *Postings
	rb   rbCursor
	from uint64 // the least document still to come
	// chunk is the frequency chunk whose entries buf holds; at is the
	// offset in buf of the entry of the document of rank read.
	chunk uint64
	buf   []byte
	at    int
	read  uint64
}

const noChunk = math.MaxUint64

func (p *Postings) Source() *Source {
	return &Source{p: p, rb: rbCursor{cs: p.containers}, chunk: noChunk}
}

// entry reads the frequency and length of document doc, of rank pos,
// past every entry already read.
func (s *Source) entry(doc, pos uint64) (int, uint64, error) {
	p := s.p
	if p.ends == nil {
		return 1, p.oneLen, nil
	}
	if c := doc / p.chunkSize; c != s.chunk {
		if err := s.openChunk(c); err != nil {
			return 0, 0, err
		}
		s.read = 0
		if c > 0 {
			s.read = p.all.Rank(uint32(c*p.chunkSize - 1))
		}
	}
	var ok bool
	if s.at, ok = skipUvarints(s.buf, s.at, 2*(pos-s.read)); !ok {
		return 0, 0, ErrLayout
	}
	fl, w := binary.Uvarint(s.buf[s.at:])
	if w <= 0 || fl>>1 == 0 {
		return 0, 0, ErrLayout
	}
	s.at += w
	norm, w := binary.Uvarint(s.buf[s.at:])
	if w <= 0 {
		return 0, 0, ErrLayout
	}
	s.at += w
	s.read = pos + 1
	return int(fl >> 1), norm, nil
}

// openChunk moves the source to the start of frequency chunk c.
func (s *Source) openChunk(c uint64) error {
	p := s.p
	if c >= uint64(len(p.ends)) {
		return fmt.Errorf("%w: chunk %d of %d", ErrLayout, c, len(p.ends))
	}
	var start uint64
	if c > 0 {
		start = p.ends[c-1]
	}
	s.chunk, s.buf, s.at = c, p.data[start:p.ends[c]], 0
	return nil
}

// skipUvarints returns the offset in b past n more uvarints from at, a
// word of eight bytes at a time: a uvarint ends at each byte below 0x80.
func skipUvarints(b []byte, at int, n uint64) (int, bool) {
	for n > 0 {
		if at+8 <= len(b) {
			ends := ^binary.LittleEndian.Uint64(b[at:]) & 0x8080808080808080
			if c := uint64(bits.OnesCount64(ends)); c < n {
				at, n = at+8, n-c
				continue
			}
			for ; n > 1; n-- {
				ends &= ends - 1
			}
			return at + bits.TrailingZeros64(ends)/8 + 1, true
		}
		for at < len(b) && b[at] >= 0x80 {
			at++
		}
		if at >= len(b) {
			return at, false
		}
		at, n = at+1, n-1
	}
	return at, true
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
	return DocLen(zapNorm(length))
}

// Done is the document number a source gives when it has no more.
const Done = math.MaxUint64

// DocLen is the length a norm stands for (bleve: float32(1/√len)).
func DocLen(norm float64) int {
	if norm <= 0 {
		return 0
	}
	return int(math.Round(1 / (norm * norm)))
}

// zapNorm is the norm zap's Posting.Norm gives for a stored length.
func zapNorm(length uint64) float64 {
	return float64(float32(1.0 / math.Sqrt(float64(uint32(length)))))
}

// Next is the next live posting: its document (Done at the end), the
// term's frequency and the field's length in it.
func (s *Source) Next() (uint64, int, int, error) { return s.scan(0) }

// Advance is the first live posting at or after target, as Next gives it.
func (s *Source) Advance(target uint64) (uint64, int, int, error) {
	if target > math.MaxUint32 {
		return Done, 0, 0, nil
	}
	return s.scan(target)
}

// scan moves to the first live posting at or after target.
func (s *Source) scan(target uint64) (uint64, int, int, error) {
	for {
		doc, pos, ok := s.rb.seek(max(target, s.from))
		if !ok {
			s.from = Done
			return Done, 0, 0, nil
		}
		s.from = doc + 1
		if s.p.deleted != nil && s.p.deleted.Contains(uint32(doc)) {
			continue
		}
		freq, length, err := s.entry(doc, pos)
		if err != nil {
			return Done, 0, 0, err
		}
		return doc, freq, zapLen(length), nil
	}
}

// uvarintAt reads a uvarint at off in mem (w ≤ 0 when it cannot).
func uvarintAt(mem []byte, off uint64) (uint64, int) {
	if off >= uint64(len(mem)) {
		return 0, 0
	}
	return binary.Uvarint(mem[off:])
}

// Posting is one posting as Fill gives it: a document of the segment, the
// term's frequency in it and the field's length.
type Posting struct {
	Doc       uint32
	Freq, Len int32
}

// Fill appends to ps every live posting before end that Next would give
// one by one from here, and returns the first at or after end as Next
// gives it. It is the walk's read of an essential term's postings in a
// window of documents: where the list has no deletions, the documents of
// an array or bitmap container are read in order and their entries one
// after the other, not each found again by a seek and its entry placed by
// its rank (scan) — about a third of a query's time went there.
func (s *Source) Fill(end uint64, ps []Posting) ([]Posting, uint64, int, int, error) {
	for {
		doc, freq, dl, err := s.scan(0)
		if err != nil || doc >= end {
			return ps, doc, freq, dl, err
		}
		ps = append(ps, Posting{Doc: uint32(doc), Freq: int32(freq), Len: int32(dl)})
		if s.p.deleted != nil || s.p.ends == nil {
			continue
		}
		// The entry of doc was the last read: the container's next
		// documents' entries follow it.
		if ps, err = s.fillContainer(end, ps); err != nil {
			return ps, Done, 0, 0, err
		}
	}
}

// fillContainer appends the postings before end that follow the one just
// read in its container, when that is an array or a bitmap, and leaves the
// cursor where scan goes on from.
func (s *Source) fillContainer(end uint64, ps []Posting) ([]Posting, error) {
	rb := &s.rb
	ct := &rb.cs[rb.ci]
	d := ct.data
	switch ct.kind {
	case rbArray:
		j := rb.i + 1
		for ; j < ct.card; j++ {
			doc := ct.key | uint64(binary.LittleEndian.Uint16(d[2*j:]))
			if doc >= end {
				break
			}
			freq, dl, err := s.nextEntry(doc)
			if err != nil {
				return ps, err
			}
			ps = append(ps, Posting{Doc: uint32(doc), Freq: freq, Len: dl})
			s.from = doc + 1
		}
		rb.i = j
	case rbBitmap:
		// rb.i is the word of the document just read, rb.rank the
		// count of the words before it.
		lo := s.from - ct.key // the next document's offset
		for lo < 1<<16 {
			wi := int(lo >> 6)
			if wi != rb.i {
				rb.rank += uint64(bits.OnesCount64(binary.LittleEndian.Uint64(d[8*rb.i:])))
				rb.i = wi
			}
			w := binary.LittleEndian.Uint64(d[8*wi:]) & (^uint64(0) << (lo & 63))
			for w != 0 {
				doc := ct.key | uint64(wi<<6+bits.TrailingZeros64(w))
				if doc >= end {
					return ps, nil
				}
				w &= w - 1
				freq, dl, err := s.nextEntry(doc)
				if err != nil {
					return ps, err
				}
				ps = append(ps, Posting{Doc: uint32(doc), Freq: freq, Len: dl})
				s.from = doc + 1
			}
			lo = uint64(wi+1) << 6
			if ct.key+lo >= end {
				return ps, nil
			}
		}
	}
	return ps, nil
}

// nextEntry reads the entry after the last one read, document doc's: the
// walk in order over a list without deletions.
func (s *Source) nextEntry(doc uint64) (int32, int32, error) {
	p := s.p
	if c := doc / p.chunkSize; c != s.chunk {
		// doc is the chunk's first document: its entry is the chunk's
		// first, and s.read its rank already.
		if err := s.openChunk(c); err != nil {
			return 0, 0, err
		}
	}
	fl, at := uvarintIn(s.buf, s.at)
	if at < 0 || fl>>1 == 0 {
		return 0, 0, ErrLayout
	}
	length, at := uvarintIn(s.buf, at)
	if at < 0 {
		return 0, 0, ErrLayout
	}
	s.at = at
	s.read++
	return int32(fl >> 1), int32(zapLen(length)), nil
}

// uvarintIn reads the uvarint at at in b and returns the offset past it
// (−1 when it cannot): one and two bytes, most entries' fields, read
// without a call.
func uvarintIn(b []byte, at int) (uint64, int) {
	if at+1 < len(b) {
		if x := b[at]; x < 0x80 {
			return uint64(x), at + 1
		} else if y := b[at+1]; y < 0x80 {
			return uint64(x&0x7f) | uint64(y)<<7, at + 2
		}
	}
	if at > len(b) {
		return 0, -1
	}
	v, w := binary.Uvarint(b[at:])
	if w <= 0 {
		return 0, -1
	}
	return v, at + w
}
