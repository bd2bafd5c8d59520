package zapv17

import (
	"encoding/binary"
	"fmt"
	"math/bits"
)

// A postings list's documents are a roaring bitmap, serialized in the
// zap file in roaring's portable format (github.com/RoaringBitmap/
// RoaringFormatSpec): a cookie, the containers' keys and cardinalities,
// offsets, then each container — an array of up to 4,096 sorted 16-bit
// values, a bitmap of 1,024 words, or runs. rbCursor reads it there,
// forward only, and knows each value's rank (its position in the list),
// which places the value's entry in the frequency chunks without stepping
// over the values before it: a bitmap container is passed a word of 64
// documents at a time by counting its bits.

const (
	rbCookieNoRuns = 12346 // arrays and bitmaps only
	rbCookie       = 12347 // runs too; the count is in the cookie
	rbNoOffsets    = 4     // with runs, fewer containers store no offsets
	rbArrayMax     = 4096  // an array container's largest cardinality
)

type rbKind uint8

const (
	rbArray rbKind = iota
	rbBitmap
	rbRun
)

// rbContainer is one container: the high half of its values, how many
// values earlier containers hold, and its contents.
type rbContainer struct {
	key    uint64 // high 16 bits, shifted into place
	before uint64
	card   int
	kind   rbKind
	data   []byte
}

// parseRoaring reads the containers of a serialized bitmap (the slices
// point into b).
func parseRoaring(b []byte) ([]rbContainer, error) {
	bad := func(what string) error { return fmt.Errorf("%w: roaring %s", ErrLayout, what) }
	if len(b) < 8 {
		return nil, bad("header")
	}
	cookie := binary.LittleEndian.Uint32(b)
	at := 4
	var n int
	var runs []byte
	switch {
	case cookie&0xFFFF == rbCookie:
		n = int(cookie>>16) + 1
		if at+(n+7)/8 > len(b) {
			return nil, bad("run flags")
		}
		runs, at = b[at:at+(n+7)/8], at+(n+7)/8
	case cookie == rbCookieNoRuns:
		n, at = int(binary.LittleEndian.Uint32(b[4:])), 8
	default:
		return nil, bad("cookie")
	}
	if n > 1<<16 || at+4*n > len(b) {
		return nil, bad("container count")
	}
	head := b[at : at+4*n]
	at += 4 * n
	if runs == nil || n >= rbNoOffsets {
		at += 4 * n
	}
	cs := make([]rbContainer, n)
	var before uint64
	for i := range cs {
		c := &cs[i]
		c.key = uint64(binary.LittleEndian.Uint16(head[4*i:])) << 16
		c.card = int(binary.LittleEndian.Uint16(head[4*i+2:])) + 1
		c.before = before
		before += uint64(c.card)
		var size int
		switch {
		case runs != nil && runs[i/8]&(1<<(i%8)) != 0:
			if at+2 > len(b) {
				return nil, bad("runs")
			}
			c.kind, size = rbRun, 2+4*int(binary.LittleEndian.Uint16(b[at:]))
		case c.card > rbArrayMax:
			c.kind, size = rbBitmap, 8192
		default:
			c.kind, size = rbArray, 2*c.card
		}
		if at+size > len(b) {
			return nil, bad("container")
		}
		c.data, at = b[at:at+size], at+size
	}
	return cs, nil
}

// rbCursor walks a bitmap's containers in increasing order.
type rbCursor struct {
	cs []rbContainer
	ci int // the container
	// In container ci: an array's index, a bitmap's word or a run, and
	// (bitmaps and runs) how many values lie before it in the container.
	i    int
	rank uint64
}

// seek moves to the least value ≥ t, never back, and returns it and its
// rank; ok is false when none is left.
func (c *rbCursor) seek(t uint64) (v uint64, rank uint64, ok bool) {
	for c.ci < len(c.cs) {
		ct := &c.cs[c.ci]
		if t >= ct.key+1<<16 {
			c.ci, c.i, c.rank = c.ci+1, 0, 0
			continue
		}
		var lo uint64
		if t > ct.key {
			lo = t - ct.key
		}
		d := ct.data
		switch ct.kind {
		case rbArray:
			j := c.i
			for j < ct.card && uint64(binary.LittleEndian.Uint16(d[2*j:])) < lo {
				j++
			}
			c.i = j
			if j < ct.card {
				return ct.key | uint64(binary.LittleEndian.Uint16(d[2*j:])), ct.before + uint64(j), true
			}
		case rbBitmap:
			wi := int(lo >> 6)
			for c.i < wi {
				c.rank += uint64(bits.OnesCount64(binary.LittleEndian.Uint64(d[8*c.i:])))
				c.i++
			}
			w := binary.LittleEndian.Uint64(d[8*c.i:])
			if c.i == wi {
				w &= ^uint64(0) << (lo & 63)
			}
			for w == 0 && c.i < 1023 {
				c.rank += uint64(bits.OnesCount64(binary.LittleEndian.Uint64(d[8*c.i:])))
				c.i++
				w = binary.LittleEndian.Uint64(d[8*c.i:])
			}
			if w != 0 {
				b := bits.TrailingZeros64(w)
				below := binary.LittleEndian.Uint64(d[8*c.i:]) & (1<<b - 1)
				return ct.key | uint64(c.i<<6+b), ct.before + c.rank + uint64(bits.OnesCount64(below)), true
			}
		case rbRun:
			nr := int(binary.LittleEndian.Uint16(d))
			for c.i < nr {
				start := uint64(binary.LittleEndian.Uint16(d[2+4*c.i:]))
				last := start + uint64(binary.LittleEndian.Uint16(d[4+4*c.i:]))
				if lo > last {
					c.rank += last - start + 1
					c.i++
					continue
				}
				v := max(lo, start)
				return ct.key | v, ct.before + c.rank + v - start, true
			}
		}
		c.ci, c.i, c.rank = c.ci+1, 0, 0
	}
	return 0, 0, false
}
