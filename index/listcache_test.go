package index

import (
	"fmt"
	"testing"
)

// The cache never holds more than its bound by its own estimate: past
// it, what it held is dropped and the entry put is kept.
func TestListCacheIsBounded(t *testing.T) {
	c := listCache{max: 400}
	for i := range 20 {
		k := listKey{seg: "s", term: fmt.Sprintf("t%02d", i)} // 99 bytes each
		c.put(k, listEntry{live: uint64(i)})
		if c.bytes > c.max {
			t.Fatalf("after %d entries: %d bytes held, bound %d", i+1, c.bytes, c.max)
		}
		if e, ok := c.get(k); !ok || e.live != uint64(i) {
			t.Fatalf("entry %d not kept: %+v %v", i, e, ok)
		}
		if want := (i%4 + 1) * 99; c.bytes != want {
			t.Fatalf("after %d entries: %d bytes held, want %d", i+1, c.bytes, want)
		}
	}
}
