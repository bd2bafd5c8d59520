package index

import (
	"sync"

	"github.com/RoaringBitmap/roaring/v2"

	"halu/index/internal/zapv17"
)

// listKey is one term's list in one open segment under one set of
// deletions: the bitmap a snapshot of the segment holds, compared by
// identity (a newer snapshot's deletions are another bitmap; the key
// holds the bitmap, so its address is not reused while cached).
type listKey struct {
	seg     any // the open segment: never changed, never reused while open
	deleted *roaring.Bitmap
	term    string
}

// listEntry is what looking a key's list up found: its live postings
// (0: none), and the direct reader of it where the segment's layout is
// understood and the reader counted the same as zap's dictionary (nil:
// through zap's iterator).
type listEntry struct {
	live uint64
	zp   *zapv17.Postings
}

// listCache holds the lists looked up so far, up to listCacheMax bytes by
// estimate; past it, they are dropped and looked up again. A query's lists
// are looked up on one core before its walks start: looking each up in
// zap's dictionary for its count and again directly, for every query, was
// 7% of a query's CPU at 1M documents, most of it for the same common
// terms query after query. A list read directly is looked up once for a
// segment and its deletions, a term the segment lacks too.
type listCache struct {
	mu    sync.Mutex
	m     map[listKey]listEntry
	bytes int
	max   int // 0: listCacheMax (tests set less)
}

// listCacheMax bounds the cache's estimated size: 64 MiB.
const listCacheMax = 64 << 20

// get returns key's entry, or ok false.
func (c *listCache) get(k listKey) (listEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[k]
	return e, ok
}

// put keeps e for k.
func (c *listCache) put(k listKey, e listEntry) {
	size := 96 + len(k.term) + e.zp.Size()
	c.mu.Lock()
	defer c.mu.Unlock()
	limit := c.max
	if limit == 0 {
		limit = listCacheMax
	}
	if c.m == nil || c.bytes+size > limit {
		c.m, c.bytes = map[listKey]listEntry{}, 0
	}
	if _, ok := c.m[k]; !ok {
		c.m[k] = e
		c.bytes += size
	}
}
