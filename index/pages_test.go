package index

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/RoaringBitmap/roaring/v2"
	segment "github.com/blevesearch/scorch_segment_api/v2"

	"halu/index/internal/zapv17"
)

// residentKiB is how much of the mapping that starts at mem's first byte
// is resident in this process (/proc/self/smaps' Rss).
func residentKiB(t *testing.T, mem []byte) int {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skipf("no /proc/self/smaps here: %v", err)
	}
	defer f.Close()
	start := fmt.Sprintf("%x-", uintptr(unsafe.Pointer(&mem[0])))
	in := false
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := s.Text()
		if fields := strings.Fields(line); len(fields) > 0 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":") {
			in = strings.HasPrefix(line, start)
			continue
		}
		if in && strings.HasPrefix(line, "Rss:") {
			kb, err := strconv.Atoi(strings.Fields(line)[1])
			if err != nil {
				t.Fatal(err)
			}
			return kb
		}
	}
	t.Fatalf("no mapping starts at %s in /proc/self/smaps", start)
	return 0
}

// touch reads every byte of mem and returns their sum, so that every page
// of it is resident.
func touch(mem []byte) (sum byte) {
	for _, b := range mem {
		sum += b
	}
	return sum
}

// Reading a whole segment — checking it against its checksum, merging it —
// leaves none of its file resident in the process, and changes nothing
// read: the index's build and a run's check of it grew by the index's size.
func TestReadingWholeSegmentsLeavesThemUnresident(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("residency is read from Linux's /proc/self/smaps")
	}
	l := persistedIndex(t, 3000)
	defer l.Close()
	segs, _, release, err := l.liveSegments()
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if len(segs) < 2 {
		t.Fatalf("%d segments; the test merges two or more", len(segs))
	}
	sums := map[string]byte{}
	for _, zs := range segs {
		sums[zs.Path()] = touch(zs.Data())
		if kb := residentKiB(t, zs.Data()); kb*1024 < len(zs.Data())/2 {
			t.Fatalf("segment %s: %d KiB resident after reading its %d bytes; the test cannot see a release", filepath.Base(zs.Path()), kb, len(zs.Data()))
		}
	}

	// The check a run makes before its first call, and a build's seal.
	if err := l.Verify(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, zs := range segs {
		if kb := residentKiB(t, zs.Data()); kb > 4*os.Getpagesize()/1024 {
			t.Errorf("segment %s: %d KiB of its %d bytes resident after it was checked", filepath.Base(zs.Path()), kb, len(zs.Data()))
		}
		if got := touch(zs.Data()); got != sums[zs.Path()] {
			t.Errorf("segment %s reads otherwise after its pages were released", filepath.Base(zs.Path()))
		}
	}

	// A merge of them, as scorch asks the registered writer for one.
	inputs := make([]segment.Segment, len(segs))
	drops := make([]*roaring.Bitmap, len(segs))
	for i, zs := range segs {
		inputs[i] = zs
	}
	out := filepath.Join(t.TempDir(), "merged.zap")
	if _, _, err := zapv17.NewPlugin().Merge(inputs, drops, out, make(chan struct{}), nil); err != nil {
		t.Fatal(err)
	}
	for _, zs := range segs {
		if kb := residentKiB(t, zs.Data()); kb > 4*os.Getpagesize()/1024 {
			t.Errorf("segment %s: %d KiB of its %d bytes resident after a merge read it", filepath.Base(zs.Path()), kb, len(zs.Data()))
		}
	}
	// The merged segment holds what zap's own merge of them holds (zap's
	// merge does not write the same bytes twice: its order of fields
	// varies).
	stock := filepath.Join(t.TempDir(), "stock.zap")
	if _, _, err := zapv17.NewPlugin().ZapPlugin.Merge(inputs, drops, stock, make(chan struct{}), nil); err != nil {
		t.Fatal(err)
	}
	got, want := mergedTerms(t, out), mergedTerms(t, stock)
	if len(got) < 1000 || len(got) != len(want) {
		t.Fatalf("the merge holds %d terms, zap's own %d", len(got), len(want))
	}
	for term, n := range want {
		if got[term] != n {
			t.Fatalf("term %q: in %d documents of the merge, %d of zap's own", term, got[term], n)
		}
	}
}

// mergedTerms opens the segment file at path and returns each term of its
// text field and how many documents hold it.
func mergedTerms(t *testing.T, path string) map[string]uint64 {
	t.Helper()
	seg, err := zapv17.NewPlugin().Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer seg.Close()
	dict, err := seg.Dictionary(fieldText)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]uint64{"\x00docs": seg.Count()}
	it := dict.AutomatonIterator(nil, nil, nil)
	for e, err := it.Next(); e != nil || err != nil; e, err = it.Next() {
		if err != nil {
			t.Fatal(err)
		}
		pl, err := dict.PostingsList([]byte(e.Term), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		out[e.Term] = pl.Count()
	}
	return out
}
