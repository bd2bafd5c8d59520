package zapv17

import (
	"bytes"
	"math/rand"
	"sort"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
)

// TestRBCursorAsRoaringReadsIt holds rbCursor to roaring's own iterator and
// Rank on serialized bitmaps of every container kind — arrays, bitmaps,
// runs, with and without run containers in the file (the offsets differ) —
// read value by value and with random jumps.
func TestRBCursorAsRoaringReadsIt(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	make := func(containers int, density float64, runs bool) *roaring.Bitmap {
		b := roaring.New()
		for c := 0; c < containers; c++ {
			key := uint32(rng.Intn(3)+c*3) << 16
			switch {
			case runs && c%2 == 0:
				b.AddRange(uint64(key)+100, uint64(key)+5000)
				b.AddRange(uint64(key)+9000, uint64(key)+9001)
				b.Add(key + 65535)
			default:
				for v := 0; v < 1<<16; v++ {
					if rng.Float64() < density {
						b.Add(key | uint32(v))
					}
				}
			}
		}
		if runs {
			b.RunOptimize()
		}
		return b
	}
	cases := []struct {
		name string
		b    *roaring.Bitmap
	}{
		{"one value", roaring.BitmapOf(70000)},
		{"arrays", make(3, 0.01, false)},
		{"bitmaps", make(3, 0.3, false)},
		{"arrays and bitmaps", make(6, 0.05, false)},
		{"runs, few containers", make(3, 0.3, true)},
		{"runs, many containers", make(8, 0.02, true)},
		{"last value of the range", roaring.BitmapOf(1<<32-1, 5)},
	}
	kinds := map[rbKind]bool{}
	for _, tc := range cases {
		var buf bytes.Buffer
		if _, err := tc.b.WriteTo(&buf); err != nil {
			t.Fatal(err)
		}
		cs, err := parseRoaring(buf.Bytes())
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		for _, c := range cs {
			kinds[c.kind] = true
		}
		want := tc.b.ToArray()
		for _, jumpy := range []bool{false, true} {
			c := rbCursor{cs: cs}
			var got []uint64
			var t0, target uint64
			for {
				target = t0
				if jumpy && rng.Intn(3) == 0 {
					target += uint64(rng.Intn(1 << 17))
				}
				v, rank, ok := c.seek(target)
				if !ok {
					break
				}
				k := sort.Search(len(want), func(i int) bool { return uint64(want[i]) >= target })
				if k == len(want) || uint64(want[k]) != v {
					t.Fatalf("%s: value %d read at or after %d, not the least there", tc.name, v, target)
				}
				if r := tc.b.Rank(uint32(v)) - 1; r != rank {
					t.Fatalf("%s: value %d has rank %d, roaring says %d", tc.name, v, rank, r)
				}
				got = append(got, v)
				t0 = v + 1
			}
			if k := sort.Search(len(want), func(i int) bool { return uint64(want[i]) >= target }); k < len(want) {
				t.Fatalf("%s: the end reported before %d", tc.name, want[k])
			}
			if !jumpy {
				if len(got) != len(want) {
					t.Fatalf("%s: %d values, roaring has %d", tc.name, len(got), len(want))
				}
				for i := range got {
					if got[i] != uint64(want[i]) {
						t.Fatalf("%s: value %d is %d, roaring's %d", tc.name, i, got[i], want[i])
					}
				}
				continue
			}
		}
	}
	for _, k := range []rbKind{rbArray, rbBitmap, rbRun} {
		if !kinds[k] {
			t.Fatalf("no container of kind %d was read", k)
		}
	}
}
