package engine

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"halu/runner/rundir"
)

// cacheFormat names the layout of entries; entries of another layout live
// in another directory. Replies of the layout before it (oldFormat) are
// still read where a cache holds them.
const cacheFormat = "v3"

// oldFormat is the layout of one file per entry (dir/v2/ab/abcdef….json),
// read, never written: a cache filled by an earlier halu keeps answering.
const oldFormat = "v2"

// Cache is a content-addressed store of model responses on disk. Its
// entries are lines appended to pack files (dir/v3/packs/*.pack), one
// pack per writing process, so that storing a reply is one write to a file
// the process holds open — not a file of its own, made, written and
// renamed (five system calls, a third of halu's CPU against a fast
// server) — and concurrent runs never write into one file. Each line is an
// entry carrying the key it answers and the SHA-256 of its value, checked
// on every read: an entry damaged on disk (cut short by a kill or a power
// cut, zeroed, edited) is dropped, counted and fetched again, never used;
// the entry fetched again is appended, and a later line of a key answers
// before an earlier one. The index of where each key's line is (its pack,
// offset and length) is held in memory, built at open by reading every
// pack's keys, and brought up to date with other processes' packs at most
// once a second when a key misses.
type Cache struct {
	dir string
	// damaged counts entries dropped on read; unchecked those of an older
	// halu without a checksum, dropped too (errUnchecked).
	damaged   atomic.Int64
	unchecked atomic.Int64

	mu      sync.Mutex
	index   map[indexKey]loc
	packs   []*pack          // every pack read or written, in the order read
	byName  map[string]*pack // the same, by file name
	own     *pack            // the pack this process appends to (nil until its first write)
	opened  []*pack          // the packs open for reads, the first opened first
	scanned time.Time        // when the packs were last read for new lines
	oldDir  bool             // the cache holds entries of oldFormat
	// made holds the directories writes of served records have made or
	// found; tmpPrefix begins this process's temporary files (its id,
	// which cleanTemp reads).
	made      sync.Map
	tmpPrefix string
}

// indexKey is the first half of a key's SHA-256: what the index tells
// keys apart by (a line's own key is checked on every read).
type indexKey [sha256.Size / 2]byte

// loc is where an entry's line is: its pack (c.packs[pack]), offset and
// length (the newline excluded). It holds no pointer, so that the
// collector does not look through the index.
type loc struct {
	off  int64
	pack uint32
	n    uint32
}

// pack is one pack file: its handle when open (for reads, and for appends
// when it is this process's own) and how far its lines have been read
// into the index.
type pack struct {
	id      uint32 // its place in c.packs
	name    string
	f       *os.File
	read    int64
	idxRead bool // its index file was looked for
}

// maxOpenPacks is how many packs a cache holds open for reads at most
// (beside its own): a cache that many runs wrote has a pack for each, and
// a process may not open files without end. The first opened is closed
// first, and opened again when a read needs it.
const maxOpenPacks = 64

// reopenTries is how many times a read opens a pack that other reads
// closed (maxOpenPacks) before it says so.
const reopenTries = 8

// rescanEvery is how often at most a miss reads the packs again for lines
// other processes have appended since.
const rescanEvery = time.Second

// entry is a cache line: the value with the key it answers and its hash.
type entry struct {
	Key   string          `json:"key"`
	Sum   string          `json:"sha256"`
	Value json.RawMessage `json:"value"`
}

// OpenCache opens (creating) a cache directory, reads the index of its
// packs, and removes the temporary files that writers which died (killed
// mid-write) left behind. A cache that cannot be written to (a read-only
// copy) still serves reads: its writes fail, and the engine counts them.
func OpenCache(dir string) (*Cache, error) {
	c := &Cache{dir: dir, tmpPrefix: strconv.Itoa(os.Getpid()) + "-", index: map[indexKey]loc{}, byName: map[string]*pack{}}
	if err := os.MkdirAll(c.packDir(), 0o755); err != nil {
		if st, serr := os.Stat(dir); serr != nil || !st.IsDir() {
			return nil, fmt.Errorf("cache %s: %w", dir, err)
		}
	}
	if st, err := os.Stat(filepath.Join(dir, oldFormat)); err == nil && st.IsDir() {
		c.oldDir = true
	}
	c.mu.Lock()
	err := c.rescan()
	c.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("cache %s: %w", dir, err)
	}
	c.cleanTemp()
	return c, nil
}

// Dir returns the cache directory.
func (c *Cache) Dir() string { return c.dir }

// Damaged returns how many damaged entries reads have dropped so far.
func (c *Cache) Damaged() int { return int(c.damaged.Load()) }

// Unchecked returns how many entries without a checksum (an older halu's)
// reads have dropped so far.
func (c *Cache) Unchecked() int { return int(c.unchecked.Load()) }

// errUnchecked is an entry written before entries carried a checksum.
var errUnchecked = errors.New("entry has no checksum")

// Key returns the content address of v: the SHA-256 of its JSON encoding.
// Struct fields encode in declaration order and map keys sorted, so equal
// requests give equal keys.
func Key(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("cache key: %v", err)) // only plain data is keyed
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// oldPath is where a cache of oldFormat holds key's entry.
func (c *Cache) oldPath(key string) string {
	return filepath.Join(c.dir, oldFormat, key[:2], key+".json")
}

func (c *Cache) packDir() string { return filepath.Join(c.dir, cacheFormat, "packs") }

func (c *Cache) tmpDir() string { return filepath.Join(c.dir, cacheFormat, "tmp") }

// Get decodes the entry for key into v and reports whether there was a
// sound one. A damaged entry is dropped and counted, and reads as a miss.
func (c *Cache) Get(key string, v any) (bool, error) {
	k, ok := keyBytes(key)
	if !ok {
		return false, fmt.Errorf("cache: %q is not a key", key)
	}
	c.mu.Lock()
	at, found := c.index[k]
	if !found && time.Since(c.scanned) >= rescanEvery {
		// Lines of other processes that cannot be read now (their
		// directory gone, a pack unreadable) are lines not seen: the
		// key is asked of the server, as a miss is.
		_ = c.rescan()
		at, found = c.index[k]
	}
	c.mu.Unlock()
	if !found {
		if c.oldDir {
			return c.get(c.oldPath(key), key, v)
		}
		return false, nil
	}
	b, err := c.readAt(at)
	if errors.Is(err, fs.ErrNotExist) {
		c.forget(k, at) // its pack removed (the cache cleared) since it was read
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("cache %s: %w", c.dir, err)
	}
	if err := check(b, key, v); err != nil {
		c.drop(err)
		c.forget(k, at) // the refetched value's line answers next
		return false, nil
	}
	return true, nil
}

// forget drops k from the index while it is at.
func (c *Cache) forget(k indexKey, at loc) {
	c.mu.Lock()
	if c.index[k] == at {
		delete(c.index, k)
	}
	c.mu.Unlock()
}

// readAt reads the line at. A pack closed meanwhile (maxOpenPacks) is
// opened again (a few times: other reads may close it again before this
// one reads). A line cut short on disk since it was indexed reads short,
// and fails its check.
func (c *Cache) readAt(at loc) ([]byte, error) {
	b := make([]byte, at.n)
	for try := 1; ; try++ {
		c.mu.Lock()
		p := c.packs[at.pack]
		f, err := c.file(p)
		c.mu.Unlock()
		if err != nil {
			return nil, err
		}
		n, err := f.ReadAt(b, at.off)
		if errors.Is(err, os.ErrClosed) && try < reopenTries {
			continue
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: %w", p.name, err)
		}
		return b[:n], nil
	}
}

// file returns p's handle, opening it when it is closed and closing the
// first opened beyond maxOpenPacks. c.mu is held.
func (c *Cache) file(p *pack) (*os.File, error) {
	if p.f != nil {
		return p.f, nil
	}
	f, err := os.Open(filepath.Join(c.packDir(), p.name))
	if err != nil {
		return nil, err
	}
	p.f = f
	c.opened = append(c.opened, p)
	for len(c.opened) > maxOpenPacks {
		old := c.opened[0]
		c.opened = c.opened[1:]
		old.f.Close()
		old.f = nil
	}
	return f, nil
}

// drop counts an entry a read dropped: damaged, or unchecked.
func (c *Cache) drop(err error) {
	if errors.Is(err, errUnchecked) {
		c.unchecked.Add(1)
	} else {
		c.damaged.Add(1)
	}
}

// keyBytes is key's indexKey, from its hex.
func keyBytes(key string) (k indexKey, ok bool) {
	if len(key) != 2*sha256.Size {
		return k, false
	}
	var full [sha256.Size]byte
	_, err := hex.Decode(full[:], []byte(key))
	copy(k[:], full[:])
	return k, err == nil
}

// rescan reads the packs' lines appended since they were last read —
// every pack's, new packs' whole — into the index. c.mu is held.
func (c *Cache) rescan() error {
	c.scanned = time.Now()
	names, err := os.ReadDir(c.packDir())
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	for _, de := range names {
		name := de.Name()
		if !strings.HasSuffix(name, ".pack") || c.byName[name] != nil {
			continue
		}
		p := &pack{id: uint32(len(c.packs)), name: name}
		c.packs = append(c.packs, p)
		c.byName[name] = p
	}
	for _, p := range c.packs {
		if p != c.own {
			if err := c.readPack(p); err != nil {
				return err
			}
		}
	}
	return nil
}

// keyHead begins every entry's line: its key follows.
const keyHead = `{"key":"`

// readPack indexes p's whole lines from where its last read stopped (a
// pack that has not grown since is not opened). At a pack's first read its
// index file, when it has a sound one, gives the lines it covers, and the
// lines after them are read from the pack; when those are idxEvery bytes
// or more, the index file is written anew covering them too, so that the
// next process reads ~28 bytes a line, not the line. A line that does not
// begin with a key (zeroed by a power cut, say) answers nothing; a last
// line without its newline (being written, or cut short by a kill) is left
// for a later read. c.mu is held.
func (c *Cache) readPack(p *pack) error {
	st, err := os.Stat(filepath.Join(c.packDir(), p.name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil // removed (the cache cleared): what was indexed reads from the handle, or fails
	}
	if err != nil || st.Size() == p.read {
		return err
	}
	var body []byte // the index file's lines, when one is to be written
	first := p.read == 0 && !p.idxRead
	if first {
		p.idxRead = true
		body = c.readIndexFile(p, st.Size())
	}
	keep := first && st.Size()-p.read >= idxEvery
	if st.Size() == p.read {
		return nil
	}
	f, err := c.file(p)
	if err != nil {
		return err
	}
	if _, err := f.Seek(p.read, io.SeekStart); err != nil {
		return err
	}
	r := bufio.NewReaderSize(f, 64<<10)
	off := p.read
	for {
		line, err := r.ReadSlice('\n')
		k, keyed := lineKey(line) // before the next read reuses line's bytes
		n := len(line)
		for errors.Is(err, bufio.ErrBufferFull) {
			line, err = r.ReadSlice('\n')
			n += len(line)
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				return fmt.Errorf("%s: %w", p.name, err)
			}
			break // a line without its newline is not whole yet
		}
		if keyed {
			at := loc{pack: p.id, off: off, n: uint32(n - 1)}
			c.index[k] = at
			if keep {
				body = appendIdx(body, k, at)
			}
		}
		off += int64(n)
		p.read = off
	}
	if keep {
		c.writeIndexFile(p, body)
	}
	return nil
}

// lineKey is the key a pack's line begins with.
func lineKey(line []byte) (indexKey, bool) {
	if len(line) < len(keyHead)+2*sha256.Size || string(line[:len(keyHead)]) != keyHead {
		return indexKey{}, false
	}
	return keyBytes(string(line[len(keyHead) : len(keyHead)+2*sha256.Size]))
}

// An index file (a pack's name + ".idx") lists the lines of the pack's
// first bytes: idxMagic, how many bytes of the pack it covers (8 bytes),
// then for each line its indexKey, offset (8 bytes) and length (4 bytes),
// in the pack's order, then the SHA-256 of all that. A pack is appended
// to, never rewritten, so an index of its beginning stays true however
// much is appended after.
const (
	idxMagic = "HALUIDX1"
	idxLine  = len(indexKey{}) + 8 + 4
	// idxEvery is how many bytes of lines a read must find beyond a
	// pack's index file before it writes the file anew.
	idxEvery = 1 << 20
)

// appendIdx appends the index file line of k at at to b.
func appendIdx(b []byte, k indexKey, at loc) []byte {
	b = append(b, k[:]...)
	b = binary.LittleEndian.AppendUint64(b, uint64(at.off))
	return binary.LittleEndian.AppendUint32(b, at.n)
}

// readIndexFile indexes the lines p's index file lists, when it is sound
// and covers no more than the pack's size bytes, sets p.read past them,
// and returns its lines; an index file that is not sound is not read
// (the pack's lines are). c.mu is held.
func (c *Cache) readIndexFile(p *pack, size int64) []byte {
	b, err := os.ReadFile(filepath.Join(c.packDir(), p.name+".idx"))
	head := len(idxMagic) + 8
	if err != nil || len(b) < head+sha256.Size || string(b[:len(idxMagic)]) != idxMagic || (len(b)-head-sha256.Size)%idxLine != 0 {
		return nil
	}
	sum := sha256.Sum256(b[:len(b)-sha256.Size])
	covered := int64(binary.LittleEndian.Uint64(b[len(idxMagic):]))
	if !bytes.Equal(sum[:], b[len(b)-sha256.Size:]) || covered > size {
		return nil
	}
	body := b[head : len(b)-sha256.Size]
	for i := 0; i < len(body); i += idxLine {
		var k indexKey
		copy(k[:], body[i:])
		c.index[k] = loc{pack: p.id, off: int64(binary.LittleEndian.Uint64(body[i+len(k):])), n: binary.LittleEndian.Uint32(body[i+len(k)+8:])}
	}
	p.read = covered
	return body[:len(body):len(body)] // appended to in a copy, not over the checksum
}

// writeIndexFile writes p's index file covering its lines up to p.read:
// body lists them. A failed write (a cache read-only here) costs the next
// process a read of the lines.
func (c *Cache) writeIndexFile(p *pack, body []byte) {
	b := make([]byte, 0, len(idxMagic)+8+len(body)+sha256.Size)
	b = append(b, idxMagic...)
	b = binary.LittleEndian.AppendUint64(b, uint64(p.read))
	b = append(b, body...)
	sum := sha256.Sum256(b)
	b = append(b, sum[:]...)
	_ = c.placeFile(filepath.Join(c.packDir(), p.name+".idx"), b)
}

// servedPath is where a model's served record lives: beside the replies,
// not among them (it is a record of the server, not a reply), a file of
// its own.
func (c *Cache) servedPath(key string) string { return filepath.Join(c.dir, "served", key+".json") }

// get reads the entry in the file p (a served record, or an entry of
// oldFormat): a damaged one is removed and counted.
func (c *Cache) get(p, key string, v any) (bool, error) {
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		if st, serr := os.Stat(p); serr == nil && st.IsDir() {
			// Not an entry halu wrote (a directory where an entry goes):
			// damaged, and cleared.
			c.damaged.Add(1)
			os.RemoveAll(p)
			return false, nil
		}
		return false, fmt.Errorf("cache %s: %w", c.dir, err)
	}
	if err := check(b, key, v); err != nil {
		c.drop(err)
		os.Remove(p) // the refetched value replaces it
		return false, nil
	}
	return true, nil
}

// check decodes an entry's value into v after checking that the entry
// answers key and its value is the one written.
func check(b []byte, key string, v any) error {
	var e entry
	if err := json.Unmarshal(b, &e); err != nil {
		return err
	}
	if e.Key != key {
		return fmt.Errorf("entry answers key %q", e.Key)
	}
	if len(e.Value) == 0 || bytes.Equal(e.Value, []byte("null")) {
		return errors.New("entry has no value")
	}
	if e.Sum == "" {
		return errUnchecked
	}
	sum := sha256.Sum256(e.Value)
	if hex.EncodeToString(sum[:]) != e.Sum {
		return errors.New("entry's value does not match its checksum")
	}
	if err := json.Unmarshal(e.Value, v); err != nil {
		return err
	}
	// A checksum proves the value is the one written, not that it was fit
	// to write: a reply cut off before the server's end (one written by
	// hand, or by an older halu) is no reply.
	if c, ok := v.(interface{ Complete() error }); ok {
		return c.Complete()
	}
	return nil
}

// Put stores v under key: its line appended to this process's pack.
func (c *Cache) Put(key string, v any) error {
	k, ok := keyBytes(key)
	if !ok {
		return fmt.Errorf("cache: %q is not a key", key)
	}
	b, err := encodeEntry(key, v)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.append(k, b); err != nil {
		return fmt.Errorf("cache %s: %w", c.dir, err)
	}
	return nil
}

// append writes the line b of key k at the end of this process's pack and
// indexes it. The pack is made at the first write, and made anew when it
// is gone (the cache cleared while a run writes to it) or a write to it
// failed (a line cut short must not run into the next). c.mu is held.
func (c *Cache) append(k indexKey, b []byte) error {
	if c.own != nil && !c.ownStill() {
		c.own = nil
	}
	if c.own == nil {
		if err := c.newPack(); err != nil {
			return err
		}
	}
	p := c.own
	n, err := p.f.Write(b)
	if err != nil {
		p.read += int64(n)
		c.own = nil
		return err
	}
	c.index[k] = loc{pack: p.id, off: p.read, n: uint32(len(b) - 1)}
	p.read += int64(len(b))
	return nil
}

// ownStill reports whether this process's pack is still where it was made.
func (c *Cache) ownStill() bool {
	st, err := os.Stat(filepath.Join(c.packDir(), c.own.name))
	if err != nil {
		return false
	}
	fst, err := c.own.f.Stat()
	return err == nil && os.SameFile(st, fst)
}

// newPack makes this process's pack: named by the time and the process,
// so that packs sort in the order they were begun.
func (c *Cache) newPack() error {
	if err := os.MkdirAll(c.packDir(), 0o755); err != nil {
		return err
	}
	name := fmt.Sprintf("%020d-%d.pack", time.Now().UnixNano(), os.Getpid())
	f, err := os.OpenFile(filepath.Join(c.packDir(), name), os.O_RDWR|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	p := &pack{id: uint32(len(c.packs)), name: name, f: f} // never closed for maxOpenPacks: not among opened
	c.packs = append(c.packs, p)
	c.byName[name] = p
	c.own = p
	return nil
}

// put writes v under key as the file p (a served record).
func (c *Cache) put(p, key string, v any) error {
	b, err := encodeEntry(key, v)
	if err != nil {
		return err
	}
	return c.write(p, b)
}

// encodeEntry is the entry of v under key.
func encodeEntry(key string, v any) ([]byte, error) {
	val, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	sum := sha256.Sum256(val)
	b, err := json.Marshal(entry{Key: key, Sum: hex.EncodeToString(sum[:]), Value: val})
	if err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	return b, nil
}

// write puts the file b at p atomically. The directories it needs are made
// the first time and remembered; when they are gone since (the cache
// cleared while a run writes to it), they are made again, once.
func (c *Cache) write(p string, b []byte) error {
	err := c.placeFile(p, b)
	if errors.Is(err, fs.ErrNotExist) {
		c.made.Clear()
		err = c.placeFile(p, b)
	}
	if err != nil {
		return fmt.Errorf("cache %s: %w", c.dir, err)
	}
	return nil
}

// placeFile makes (or remembers) the temporary and the file's directory
// and puts b at p through the first.
func (c *Cache) placeFile(p string, b []byte) error {
	for _, dir := range []string{c.tmpDir(), filepath.Dir(p)} {
		if _, ok := c.made.Load(dir); ok {
			continue
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		c.made.Store(dir, true)
	}
	return rundir.PlaceFile(c.tmpDir(), c.tmpPrefix, p, b)
}

// cleanTemp removes temporary files whose writer is gone: its process no
// longer runs, or the file is a day old. Files of live writers (other runs
// sharing the cache) stay.
func (c *Cache) cleanTemp() {
	ents, err := os.ReadDir(c.tmpDir())
	if err != nil {
		return
	}
	for _, de := range ents {
		name := de.Name()
		pid, err := strconv.Atoi(name[:max(strings.IndexByte(name, '-'), 0)])
		stale := err != nil || !rundir.ProcessAlive(pid)
		if info, err := de.Info(); err == nil && time.Since(info.ModTime()) > 24*time.Hour {
			stale = true
		}
		if stale {
			os.Remove(filepath.Join(c.tmpDir(), name))
		}
	}
}
