package engine

import (
	"fmt"
	"sync"

	"github.com/tiktoken-go/tokenizer"
)

// Tokenizer counts tokens with tiktoken's cl100k_base encoding, the unit in
// which the papers cap answer lengths (HIC-Bench: "not exceeding 70 tokens").
// Its zero value is ready; the vocabulary loads on first use.
type Tokenizer struct {
	once  sync.Once
	codec tokenizer.Codec
	err   error
}

// Count returns the number of cl100k_base tokens in s.
func (t *Tokenizer) Count(s string) (int, error) {
	t.once.Do(func() { t.codec, t.err = tokenizer.Get(tokenizer.Cl100kBase) })
	if t.err != nil {
		return 0, fmt.Errorf("tokenizer: %w", t.err)
	}
	ids, _, err := t.codec.Encode(s)
	if err != nil {
		return 0, fmt.Errorf("tokenizer: %w", err)
	}
	return len(ids), nil
}

// Tokens returns the engine's tokenizer.
func (e *Engine) Tokens() *Tokenizer { return &e.tok }
