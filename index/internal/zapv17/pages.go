package zapv17

import (
	"sync"
	"time"

	segment "github.com/blevesearch/scorch_segment_api/v2"
	zap "github.com/blevesearch/zapx/v17"
)

// A zap segment file is read through a read-only shared memory map: every
// page of it a process has read stays in that process's resident memory
// until the segment is closed, though the kernel holds the same page in
// its page cache. Reading a whole segment — a merge, a checksum — then
// grows the process by the segment's size: the 1M-document index's build
// peaked at 2.5 GiB, 2.2 of it pages of its own files, and a run that
// checks the index before its first call held the whole index.
// ReleasePages and releaseWhile hand such pages back: the mapping stays,
// and a page read again is mapped again from the page cache (or the disk),
// with the same bytes, since nothing writes a segment after it is made.

// releaseEvery is how often releaseWhile releases its segments' pages: a
// merge reads about 100 MB a second here, so what it holds is bounded by
// some tens of MB.
const releaseEvery = 200 * time.Millisecond

// releaseWhile releases the mapped pages of the file-backed segments in
// segs (zap's *Segment; an in-memory segment's bytes are the process's own
// and are never released) every releaseEvery until the function it
// returns is called, which waits for the releasing to stop: a range must
// be released only while it is mapped, and the segments are closed only
// after a merge returns.
func releaseWhile(segs []segment.Segment) func() {
	var maps [][]byte
	for _, s := range segs {
		if zs, ok := s.(*zap.Segment); ok {
			maps = append(maps, zs.Data())
		}
	}
	if len(maps) == 0 {
		return func() {}
	}
	release := func() {
		for _, m := range maps {
			ReleasePages(m)
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(releaseEvery)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				release()
				return
			case <-tick.C:
				release()
			}
		}
	}()
	return func() {
		close(stop)
		wg.Wait()
	}
}
