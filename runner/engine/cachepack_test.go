package engine

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// PackLines returns the lines of the cache dir's packs, in the order the
// cache reads them (the packs by name).
func PackLines(t testing.TB, dir string) []string {
	t.Helper()
	names, _ := filepath.Glob(filepath.Join(dir, cacheFormat, "packs", "*.pack"))
	sort.Strings(names)
	var lines []string
	for _, n := range names {
		f, err := os.Open(n)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			lines = append(lines, sc.Text())
		}
		f.Close()
	}
	return lines
}

// AppendPack writes lines as a pack of their own that sorts after every
// pack written so far (as a later process's would).
func AppendPack(t testing.TB, dir string, lines ...string) {
	t.Helper()
	p := filepath.Join(dir, cacheFormat, "packs", "99999999999999999999-"+time.Now().Format("150405.000000000")+".pack")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Two caches on one directory (two processes' runs) each append to a pack
// of their own; a miss reads the lines the other has appended since (at
// most once a second: here the wait is skipped), a line only once it is
// whole; and a later cache reads every line of both, written at once.
func TestPacksOfOtherWriters(t *testing.T) {
	dir := t.TempDir()
	a, err := OpenCache(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := OpenCache(dir)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := 0; i < 200; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			c := a
			if i%2 == 1 {
				c = b
			}
			if err := c.Put(Key(i), i); err != nil {
				t.Error(err)
			}
		}(i)
	}
	wg.Wait()
	var got int
	b.scanned = time.Now()
	if hit, _ := b.Get(Key(0), &got); hit {
		t.Fatal("a line another writer appended was read before the wait between reads")
	}
	b.scanned = time.Time{}
	if hit, err := b.Get(Key(0), &got); !hit || err != nil || got != 0 {
		t.Fatalf("another writer's line: hit %v, %d, %v", hit, got, err)
	}
	// A line being written (no newline yet) is not read; once whole it is.
	line, err := encodeEntry(Key("late"), "late")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, cacheFormat, "packs", "99999999999999999999-1.pack")
	os.WriteFile(p, line[:len(line)/2], 0o644)
	b.scanned = time.Time{}
	var s string
	if hit, _ := b.Get(Key("late"), &s); hit {
		t.Fatal("a line without its newline was read")
	}
	os.WriteFile(p, append(line, '\n'), 0o644)
	b.scanned = time.Time{}
	if hit, err := b.Get(Key("late"), &s); !hit || err != nil || s != "late" {
		t.Fatalf("the line once whole: hit %v, %q, %v", hit, s, err)
	}
	c, err := OpenCache(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 200; i++ {
		if hit, err := c.Get(Key(i), &got); !hit || err != nil || got != i {
			t.Fatalf("entry %d: hit %v, %d, %v", i, hit, got, err)
		}
	}
	if n := len(PackLines(t, dir)); n != 201 {
		t.Errorf("%d lines in the packs, want 201", n)
	}
}

// A cache an earlier halu filled (one file per entry, oldFormat) keeps
// answering; its damaged entries are counted and removed, as they were.
func TestOldLayoutEntriesStillAnswer(t *testing.T) {
	dir := t.TempDir()
	good, bad := Key("good"), Key("bad")
	for key, b := range map[string][]byte{good: nil, bad: []byte(`{"key":"` + bad + `","sha256":"0","value":1}`)} {
		if b == nil {
			var err error
			if b, err = encodeEntry(key, 7); err != nil {
				t.Fatal(err)
			}
		}
		p := filepath.Join(dir, oldFormat, key[:2], key+".json")
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c, err := OpenCache(dir)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if hit, err := c.Get(good, &n); !hit || err != nil || n != 7 {
		t.Fatalf("an entry of the old layout: hit %v, %d, %v", hit, n, err)
	}
	if hit, _ := c.Get(bad, &n); hit || c.Damaged() != 1 {
		t.Fatalf("a damaged entry of the old layout: hit %v, %d damaged", hit, c.Damaged())
	}
	if _, err := os.Stat(c.oldPath(bad)); !os.IsNotExist(err) {
		t.Errorf("the damaged entry was kept: %v", err)
	}
}

// A cache that more runs wrote than it holds packs open (maxOpenPacks)
// reads every pack's lines, opening and closing packs as reads need them;
// a pack removed since it was read (the cache cleared) reads as a miss.
func TestManyPacks(t *testing.T) {
	dir := t.TempDir()
	for i := 0; i < maxOpenPacks+6; i++ {
		w, err := OpenCache(dir)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Put(Key(i), i); err != nil {
			t.Fatal(err)
		}
		w.own.f.Close() // the writer's process ends
	}
	c, err := OpenCache(dir)
	if err != nil {
		t.Fatal(err)
	}
	for round := 0; round < 2; round++ {
		for i := 0; i < maxOpenPacks+6; i++ {
			var got int
			if hit, err := c.Get(Key(i), &got); !hit || err != nil || got != i {
				t.Fatalf("round %d, entry %d: hit %v, %d, %v", round, i, hit, got, err)
			}
			if len(c.opened) > maxOpenPacks {
				t.Fatalf("%d packs open", len(c.opened))
			}
		}
	}
	if err := os.RemoveAll(filepath.Join(dir, cacheFormat)); err != nil {
		t.Fatal(err)
	}
	var got int
	if hit, err := c.Get(Key(0), &got); hit || err != nil {
		t.Fatalf("an entry of a removed pack, closed since: hit %v, %v; want a miss", hit, err)
	}
}

// A pack read whole by a process other than its writer gets an index file
// (once idxEvery bytes of lines are beyond the one it had), which later
// processes read instead of the lines it covers: shown by a line whose
// key a read of the pack would not find (its head overwritten) and which
// the index file still lists — read, and found damaged. An index file
// that is not sound, or that covers more than its pack holds, is not read.
func TestPackIndexFiles(t *testing.T) {
	dir := t.TempDir()
	w, err := OpenCache(dir)
	if err != nil {
		t.Fatal(err)
	}
	const n = 600
	big := strings.Repeat("x", 2000)
	for i := 0; i < n; i++ {
		if err := w.Put(Key(i), fmt.Sprint(i, big)); err != nil {
			t.Fatal(err)
		}
	}
	pack := filepath.Join(dir, cacheFormat, "packs", w.own.name)
	idx := pack + ".idx"
	if _, err := os.Stat(idx); !os.IsNotExist(err) {
		t.Fatalf("the writer wrote an index file: %v", err)
	}
	if _, err := OpenCache(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(idx); err != nil {
		t.Fatalf("a reader of %d lines wrote no index file: %v", n, err)
	}
	// Line 0's head overwritten: not a line a read of the pack indexes.
	b, _ := os.ReadFile(pack)
	copy(b, strings.Repeat("#", len(keyHead)+8))
	os.WriteFile(pack, b, 0o644)
	// hits reads every key from a cache opened now.
	hits := func(name string) (*Cache, int) {
		c, err := OpenCache(dir)
		if err != nil {
			t.Fatal(err)
		}
		h := 0
		for i := 0; i < n; i++ {
			var s string
			if hit, err := c.Get(Key(i), &s); err != nil {
				t.Fatal(err)
			} else if hit {
				if s != fmt.Sprint(i, big) {
					t.Fatalf("%s: entry %d reads %.20q", name, i, s)
				}
				h++
			}
		}
		return c, h
	}
	if c, h := hits("through the index file"); h != n-1 || c.Damaged() != 1 {
		t.Fatalf("through the index file: %d hits, %d damaged; want %d, 1 (line 0 listed by it, read, damaged)", h, c.Damaged(), n-1)
	}
	// The index file damaged: not read; the pack's lines are.
	ib, _ := os.ReadFile(idx)
	ib[len(idxMagic)+8+idxLine+3] ^= 1 // line 1's key
	os.WriteFile(idx, ib, 0o644)
	if c, h := hits("past a damaged index file"); h != n-1 || c.Damaged() != 0 {
		t.Fatalf("past a damaged index file: %d hits, %d damaged; want %d, 0", h, c.Damaged(), n-1)
	}
	// Written anew, sound, by that read (line 0 not in it).
	if c, h := hits("through the index file written again"); h != n-1 || c.Damaged() != 0 {
		t.Fatalf("through the index file written again: %d hits, %d damaged; want %d, 0", h, c.Damaged(), n-1)
	}
	// The pack cut to half its size: the index file covers more than it
	// holds and is not read.
	os.Truncate(pack, int64(len(b)/2))
	if c, h := hits("a pack cut short"); h < n/2-2 || h > n/2 || c.Damaged() != 0 {
		t.Fatalf("a pack cut to half: %d hits, %d damaged; want about %d, 0", h, c.Damaged(), n/2)
	}
}

// A miss whose read of other processes' lines fails (the packs' directory
// not a directory any more) is a miss, not an error: the key is asked of
// the server; lines already indexed still answer.
func TestRescanThatFailsIsAMiss(t *testing.T) {
	dir := t.TempDir()
	c, err := OpenCache(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Put(Key("kept"), "kept"); err != nil {
		t.Fatal(err)
	}
	packs := filepath.Join(dir, cacheFormat, "packs")
	if err := os.Rename(packs, packs+".moved"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(packs, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	c.scanned = time.Time{}
	var s string
	if hit, err := c.Get(Key("new"), &s); hit || err != nil {
		t.Fatalf("a key no line answers: hit %v, %v; want a miss", hit, err)
	}
	if hit, err := c.Get(Key("kept"), &s); !hit || err != nil || s != "kept" {
		t.Fatalf("a line indexed before: hit %v, %q, %v", hit, s, err)
	}
}
