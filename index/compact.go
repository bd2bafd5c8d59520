package index

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/index/scorch/mergeplan"
)

// Compaction: a build leaves the segments bleve's tiered merge policy
// plans (at 1M documents built in four updates, 18 of them: four of
// ~200k documents, the rest of 2k–20k), which keeps an update build
// cheap — a daily update file does not rewrite the index — but a query
// walks every segment's lists. Compact merges them all into one, as
// Lucene's forceMerge and xapian-compact do, once the builds are done:
// on that 1M index the pruned query p50 fell from 5.4–5.7 ms to
// 4.4–4.6 ms, for a merge of 22 s (docs/benchmarks.md). It is a step of
// its own, not the end of every build: the merge reads and writes the
// whole index, which an update build must not.
//
// The documents, the corpus statistics and so every score stay what
// they were; the segments change, so the seal does too — the index's
// digest is new, and a run recorded against the index before compaction
// is refused on resume (identity by content: the segments a run read are
// gone). Compact before the runs that use the index.

// compactingFile marks a compaction under way: the seal is gone until it
// ends, and running Compact again finishes it.
const compactingFile = "halu-index.compacting"

// CompactInfo is what a compaction did.
type CompactInfo struct {
	SegmentsBefore, SegmentsAfter int
	Docs                          uint64
	Took                          time.Duration
}

// compactPlan is bleve's single-segment plan with every segment in one
// merge task (its own allows ten a task, and left 18 segments as two).
func compactPlan() *mergeplan.MergePlanOptions {
	o := mergeplan.SingleSegmentMergePlanOptions
	o.SegmentsPerMergeTask = math.MaxInt32
	return &o
}

// Compact merges the segments of the index in dir into one and seals it
// again. Only an index its build sealed is compacted (every segment's
// data checked against its checksum first, so that no damage is carried
// into the merged segment and sealed), or one whose compaction did not
// end.
func Compact(ctx context.Context, dir string) (CompactInfo, error) {
	if _, err := os.Stat(filepath.Join(dir, bleveDir)); err != nil {
		return CompactInfo{}, fmt.Errorf("index %s: no index here: %w", dir, err)
	}
	l, err := OpenLiterature(dir, true)
	if err != nil {
		return CompactInfo{}, err
	}
	info, err := l.compact(ctx)
	if cerr := l.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("index %s: %w", dir, cerr)
	}
	return info, err
}

func (l *Literature) compact(ctx context.Context) (CompactInfo, error) {
	var info CompactInfo
	t0 := time.Now()
	if l.readOnly {
		return info, fmt.Errorf("index %s: opened to search: compaction opens it to write (OpenLiterature's create)", l.dir)
	}
	if why := l.Unfinished(); why != "" {
		return info, fmt.Errorf("%s; then compact it", why)
	}
	marker := filepath.Join(l.dir, compactingFile)
	_, err := os.Stat(marker)
	resuming := err == nil
	if !resuming && !errors.Is(err, fs.ErrNotExist) {
		return info, fmt.Errorf("index %s: %w", l.dir, err)
	}
	// A seal there must match (one that ended is compacted again as
	// any); none is allowed only after a compaction that did not end.
	if _, serr := os.Stat(SealPath(l.dir)); serr == nil || !resuming {
		if _, err := l.checkSeal(); err != nil {
			return info, err
		}
	}
	if err := l.Verify(ctx); err != nil {
		return info, err
	}
	segs, _, release, err := l.liveSegments()
	if err != nil {
		return info, err
	}
	release()
	info.SegmentsBefore = len(segs)
	if !resuming {
		if err := os.WriteFile(marker, []byte("a halu index compact did not end: run it again to finish it\n"), 0o644); err != nil {
			return info, fmt.Errorf("index %s: %w", l.dir, err)
		}
		if err := l.unseal(); err != nil {
			return info, err
		}
	}
	if len(segs) > 1 {
		adv, err := l.idx.Advanced()
		if err != nil {
			return info, err
		}
		s, ok := adv.(*scorch.Scorch)
		if !ok {
			return info, fmt.Errorf("index %s: not a scorch index", l.dir)
		}
		if err := s.ForceMerge(ctx, compactPlan()); err != nil {
			return info, fmt.Errorf("index %s: compact: %w", l.dir, err)
		}
		if err := ctx.Err(); err != nil {
			return info, err
		}
		if err := l.settle(ctx); err != nil {
			return info, fmt.Errorf("index %s: compact: %w", l.dir, err)
		}
	}
	segs, docs, release, err := l.liveSegments()
	if err != nil {
		return info, err
	}
	release()
	info.SegmentsAfter, info.Docs = len(segs), docs
	// bleve's force merge says nothing of a merge that failed (it retries
	// or logs it): the segments say whether it merged.
	if info.SegmentsAfter > 1 {
		return info, fmt.Errorf("index %s: compact: bleve left %d segments (a merge failed); the index is unsealed until `halu index compact %s` ends", l.dir, info.SegmentsAfter, l.dir)
	}
	if err := l.writeSeal(); err != nil {
		return info, fmt.Errorf("index %s: seal: %w", l.dir, err)
	}
	if err := os.Remove(marker); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return info, fmt.Errorf("index %s: %w", l.dir, err)
	}
	info.Took = time.Since(t0)
	return info, nil
}
