package engine

import (
	"crypto/sha256"
	"strings"
	"testing"
)

// A count is the same whether the text was counted before (remembered)
// or not, for short texts (never remembered) and long ones; the counts
// are cl100k_base's ("hello world" is 2 tokens, "hello world" repeated
// 20 times with spaces 40).
func TestTokenCountsRemembered(t *testing.T) {
	long := strings.TrimSpace(strings.Repeat("hello world ", 20))
	tests := []struct {
		text string
		want int
	}{
		{"hello world", 2},
		{long, 40},
		{long + "!", 41},
	}
	var tk Tokenizer
	for round := 0; round < 2; round++ {
		for _, tc := range tests {
			n, err := tk.Count(tc.text)
			if err != nil || n != tc.want {
				t.Errorf("round %d: Count(%.20q…) = %d, %v; want %d", round, tc.text, n, err, tc.want)
			}
		}
	}
	if len(tk.memo) != 2 {
		t.Errorf("%d counts remembered, want 2 (the texts of %d bytes or more)", len(tk.memo), memoMin)
	}
}

// The count of a prompt of storeMin bytes or more is kept in the response
// cache and read from it by a later tokenizer (a rerun) — the entry, not
// an encoding, gives its count; shorter prompts and answers are not kept;
// a damaged entry is counted again.
func TestTokenCountsKeptInTheCache(t *testing.T) {
	cache, err := OpenCache(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	long := strings.TrimSpace(strings.Repeat("hello world ", 100)) // 200 tokens
	first := Tokenizer{store: cache}
	if n, err := first.countPrompt(long); n != 200 || err != nil {
		t.Fatalf("Count = %d, %v; want 200", n, err)
	}
	first.countPrompt(strings.Repeat("x", storeMin-1))
	first.Count(strings.Repeat("y", storeMin)) // an answer's count: not kept
	key := countKey(sha256.Sum256([]byte(long)))
	var kept int
	if ok, err := cache.Get(key, &kept); !ok || err != nil || kept != 200 {
		t.Fatalf("the cache keeps %d (%v, %v), want 200", kept, ok, err)
	}
	if entries := PackLines(t, cache.Dir()); len(entries) != 1 {
		t.Errorf("%d entries, want 1 (a prompt under %d bytes is not kept, nor an answer)", len(entries), storeMin)
	}
	// A rerun's tokenizer answers from the entry: one put there by hand
	// shows it is read, not encoded again.
	if err := cache.Put(key, 7); err != nil {
		t.Fatal(err)
	}
	if n, _ := (&Tokenizer{store: cache}).countPrompt(long); n != 7 {
		t.Errorf("a later tokenizer counted %d, want the kept 7", n)
	}
	// A damaged line of the key, appended last (a later line answers),
	// read by a later run's cache.
	AppendPack(t, cache.Dir(), `{"key":"`+key+`","sha256":"0","value":7}`)
	later, err := OpenCache(cache.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := (&Tokenizer{store: later}).countPrompt(long); n != 200 || later.Damaged() != 1 {
		t.Errorf("over a damaged entry: %d tokens, %d damaged; want 200 counted again, 1", n, later.Damaged())
	}
}
