package engine

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
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
// in another directory and are never read.
const cacheFormat = "v2"

// Cache is a content-addressed store of model responses on disk: one JSON
// file per key under dir/v2/ab/abcdef…, written atomically, so concurrent
// runs and a kill at any moment never leave a half-written entry. Each
// entry carries the key it answers and the SHA-256 of its value, checked on
// every read: an entry damaged on disk (truncated, emptied, edited, moved,
// or left empty by a power cut: entries are not fsynced, rundir.PlaceFile)
// is dropped, counted and fetched again, never used.
type Cache struct {
	dir string
	// damaged counts entries dropped on read; unchecked those of an older
	// halu without a checksum, dropped too (errUnchecked).
	damaged   atomic.Int64
	unchecked atomic.Int64
	// writing holds the entries PutLater is writing, by key, so that Get
	// answers from them at once; writes counts those writes.
	mu      sync.Mutex
	writing map[string][]byte
	writes  sync.WaitGroup
	writers chan struct{}
	// made holds the directories writes have made or found, so that an
	// entry's write does not ask the file system for its directory again;
	// tmpPrefix begins this process's temporary files (its id, which
	// cleanTemp reads).
	made      sync.Map
	tmpPrefix string
}

// cacheWriters is how many entries PutLater writes at once.
const cacheWriters = 4

// entry is a cache file: the value with the key it answers and its hash.
type entry struct {
	Key   string          `json:"key"`
	Sum   string          `json:"sha256"`
	Value json.RawMessage `json:"value"`
}

// OpenCache opens (creating) a cache directory and removes the temporary
// files that writers which died (killed mid-write) left behind.
// A cache that cannot be written to (a read-only copy) still serves reads:
// its writes fail, and the engine counts them.
func OpenCache(dir string) (*Cache, error) {
	c := &Cache{dir: dir, writers: make(chan struct{}, cacheWriters), tmpPrefix: strconv.Itoa(os.Getpid()) + "-"}
	if err := os.MkdirAll(c.tmpDir(), 0o755); err != nil {
		if st, serr := os.Stat(dir); serr != nil || !st.IsDir() {
			return nil, fmt.Errorf("cache %s: %w", dir, err)
		}
		return c, nil
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

func (c *Cache) path(key string) string {
	return filepath.Join(c.dir, cacheFormat, key[:2], key+".json")
}

func (c *Cache) tmpDir() string { return filepath.Join(c.dir, cacheFormat, "tmp") }

// Get decodes the entry for key into v and reports whether there was a
// sound one. A damaged entry is removed and counted, and reads as a miss.
func (c *Cache) Get(key string, v any) (bool, error) {
	c.mu.Lock()
	b, ok := c.writing[key]
	c.mu.Unlock()
	if ok && check(b, key, v) == nil {
		return true, nil
	}
	return c.get(c.path(key), key, v)
}

// servedPath is where a model's served record lives: beside the replies,
// not among them (it is a record of the server, not a reply).
func (c *Cache) servedPath(key string) string { return filepath.Join(c.dir, "served", key+".json") }

func (c *Cache) get(p, key string, v any) (bool, error) {
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		if st, serr := os.Stat(p); serr == nil && st.IsDir() {
			// Not an entry halu wrote (a directory where an entry goes):
			// damaged, and cleared so the refetched value replaces it —
			// else it would fail its item on every run.
			c.damaged.Add(1)
			os.RemoveAll(p)
			return false, nil
		}
		return false, fmt.Errorf("cache %s: %w", c.dir, err)
	}
	if err := check(b, key, v); err != nil {
		if errors.Is(err, errUnchecked) {
			c.unchecked.Add(1)
		} else {
			c.damaged.Add(1)
		}
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

// Put stores v under key.
func (c *Cache) Put(key string, v any) error { return c.put(c.path(key), key, v) }

// PutLater stores v under key as Put does, writing it in the background:
// Get answers from it at once, and done, when not nil, gets the write's
// error once it is written (or failed). Wait waits for every such write. A
// call's reply is stored this way so that the server is not kept waiting
// on the disk (an atomic write is five system calls) when the caller keeps
// its slot for a next turn.
func (c *Cache) PutLater(key string, v any, done func(error)) {
	b, err := encodeEntry(key, v)
	if err != nil {
		if done != nil {
			done(err)
		}
		return
	}
	c.mu.Lock()
	if c.writing == nil {
		c.writing = map[string][]byte{}
	}
	c.writing[key] = b
	c.mu.Unlock()
	c.writes.Add(1)
	go func() {
		defer c.writes.Done()
		c.writers <- struct{}{} // a few at once, however many callers keep slots
		err := c.write(c.path(key), b)
		<-c.writers
		c.mu.Lock()
		if w, ok := c.writing[key]; ok && bytes.Equal(w, b) {
			delete(c.writing, key)
		}
		c.mu.Unlock()
		if done != nil {
			done(err)
		}
	}()
}

// Wait returns when every write PutLater began is written (or failed).
func (c *Cache) Wait() { c.writes.Wait() }

func (c *Cache) put(p, key string, v any) error {
	b, err := encodeEntry(key, v)
	if err != nil {
		return err
	}
	return c.write(p, b)
}

// encodeEntry is the cache file of v under key.
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

// write puts the cache file b at p atomically. The directories it needs
// are made the first time and remembered; when they are gone since (the
// cache cleared while a run writes to it), they are made again, once.
func (c *Cache) write(p string, b []byte) error {
	err := c.place(p, b)
	if errors.Is(err, fs.ErrNotExist) {
		c.made.Clear()
		err = c.place(p, b)
	}
	if err != nil {
		return fmt.Errorf("cache %s: %w", c.dir, err)
	}
	return nil
}

// place makes (or remembers) the temporary and the entry's directory and
// puts b at p through the first.
func (c *Cache) place(p string, b []byte) error {
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
