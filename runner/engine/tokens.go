package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync"

	"github.com/tiktoken-go/tokenizer"
)

// Tokenizer counts tokens with tiktoken's cl100k_base encoding, the unit in
// which the papers cap answer lengths (HIC-Bench: "not exceeding 70 tokens").
// Its zero value is ready; the vocabulary loads on first use.
//
// A count is remembered by the text's SHA-256 (a run sizes its window
// from the same prompt for every model, and a suite counts the same
// documents for every item that retrieves them): encoding is ~0.14 ms per
// kilobyte and hashing ~1 µs. The memory is bounded: at memoLimit texts
// the remembered counts are let go and counting starts over. The count of
// a prompt of storeMin bytes or more is also kept in the response cache
// (store, when the run has one), so that a rerun — which sizes its window
// from every prompt before the first item, its replies all cached — does
// not encode its prompts again.
type Tokenizer struct {
	once  sync.Once
	codec tokenizer.Codec
	err   error
	store *Cache

	mu   sync.Mutex
	memo map[[sha256.Size]byte]int
}

// storeMin is the shortest prompt whose count is kept in the response
// cache: reading an entry (~20 µs) costs less than encoding a quarter of
// a kilobyte (~35 µs).
const storeMin = 256

// countKey is the cache key of the count of the text whose SHA-256 is
// sum. It hashes a prefix no reply's key (a request's JSON) begins with.
func countKey(sum [sha256.Size]byte) string {
	k := sha256.Sum256(append([]byte("halu cl100k_base token count\x00"), sum[:]...))
	return hex.EncodeToString(k[:])
}

// memoLimit bounds the counts a Tokenizer remembers (about 60 bytes each).
const memoLimit = 1 << 18

// Count returns the number of cl100k_base tokens in s.
func (t *Tokenizer) Count(s string) (int, error) { return t.count(s, false) }

// countPrompt is Count for a prompt a window is sized from: its count is
// kept in the response cache too (when it is storeMin bytes or more), as
// the prompt of a rerun is the same. An answer's count is not: no later
// run counts it again.
func (t *Tokenizer) countPrompt(s string) (int, error) { return t.count(s, true) }

func (t *Tokenizer) count(s string, keep bool) (int, error) {
	t.once.Do(func() { t.codec, t.err = tokenizer.Get(tokenizer.Cl100kBase) })
	if t.err != nil {
		return 0, fmt.Errorf("tokenizer: %w", t.err)
	}
	if len(s) < memoMin {
		return t.encode(s)
	}
	key := sha256.Sum256([]byte(s))
	t.mu.Lock()
	n, ok := t.memo[key]
	t.mu.Unlock()
	if ok {
		return n, nil
	}
	stored := keep && t.store != nil && len(s) >= storeMin
	if stored {
		if ok, _ := t.store.Get(countKey(key), &n); ok && n >= 0 {
			t.remember(key, n)
			return n, nil
		}
	}
	n, err := t.encode(s)
	if err != nil {
		return 0, err
	}
	if stored {
		// Written before Count returns (not in the background): a count
		// is asked outside a run too (a suite's window from a library
		// caller), where nothing would wait for the write. A failed write
		// costs a count next time.
		t.store.Put(countKey(key), n)
	}
	t.remember(key, n)
	return n, nil
}

// remember keeps n as the count of the text whose SHA-256 is key.
func (t *Tokenizer) remember(key [sha256.Size]byte, n int) {
	t.mu.Lock()
	if t.memo == nil || len(t.memo) >= memoLimit {
		t.memo = map[[sha256.Size]byte]int{}
	}
	t.memo[key] = n
	t.mu.Unlock()
}

// memoMin is the shortest text whose count is remembered: shorter ones
// encode about as fast as they hash.
const memoMin = 64

// encode counts s's tokens.
func (t *Tokenizer) encode(s string) (int, error) {
	ids, _, err := t.codec.Encode(s)
	if err != nil {
		return 0, fmt.Errorf("tokenizer: %w", err)
	}
	return len(ids), nil
}

// Tokens returns the engine's tokenizer.
func (e *Engine) Tokens() *Tokenizer { return &e.tok }
