package cfaith

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"halu/runner/engine"
)

// Window is the context window the construction's prompts need to hold
// each knowledge document whole (engine.Suite.Window): the question agent's
// prompt, with the document, for every type, beside --max-tokens for the
// reply. The authors' code sends each document whole; a server would cut
// a prompt longer than its window silently, so a model whose context
// cannot hold the longest is refused before the first call, naming the
// document and the remedy (--chunk-tokens, a named departure).
func (b *Builder) Window(ctx context.Context, c *engine.Calls) (int, error) {
	need := engine.WindowNeed{Remedy: "choose an agent model with a longer context, lower --max-tokens, or pass --chunk-tokens N to split long documents into parts of at most N tokens (a named departure)"}
	for _, d := range b.docs {
		for _, typ := range b.cfg.Types {
			n, err := c.Need(ctx, b.cfg.Agent, QAPrompt(b.cfg.Lang, typ, b.cfg.Rules, d.Knowledge), nil, b.cfg.MaxTokens)
			if err != nil {
				return 0, err
			}
			if n > need.Tokens {
				need.Tokens, need.Item = n, d.ID
				need.Holds = fmt.Sprintf("the %s question prompt with the document whole, and --max-tokens %d for the reply", typ, b.cfg.MaxTokens)
			}
		}
	}
	return engine.WindowFor(ctx, c, map[string]engine.WindowNeed{b.cfg.Agent: need})
}

// sentenceEnd is where a knowledge text may be split: after a Chinese full
// stop, question or exclamation mark, or after . ! ? followed by a space.
var sentenceEnd = regexp.MustCompile(`[。！？]|[.!?]["”’)]?\s`)

// Chunk splits each document longer than n cl100k tokens into parts of at
// most n: whole paragraphs (lines) packed together, a paragraph longer
// than n split at sentence ends; a sentence longer than n is a part of its
// own. A split document's parts are documents "ID#1", "ID#2", …; a
// document that fits keeps its ID.
func Chunk(docs []Doc, n int) ([]Doc, error) {
	var tok engine.Tokenizer
	count := func(s string) (int, error) { return tok.Count(s) }
	var out []Doc
	for _, d := range docs {
		k, err := count(d.Knowledge)
		if err != nil {
			return nil, err
		}
		if k <= n {
			out = append(out, d)
			continue
		}
		var pieces []string
		for _, para := range strings.Split(d.Knowledge, "\n") {
			if strings.TrimSpace(para) == "" {
				continue
			}
			pk, err := count(para)
			if err != nil {
				return nil, err
			}
			if pk <= n {
				pieces = append(pieces, para+"\n")
				continue
			}
			last := 0
			for _, m := range sentenceEnd.FindAllStringIndex(para, -1) {
				pieces = append(pieces, para[last:m[1]])
				last = m[1]
			}
			if last < len(para) {
				pieces = append(pieces, para[last:])
			}
			pieces[len(pieces)-1] += "\n"
		}
		var parts []string
		var cur strings.Builder
		used := 0
		for _, p := range pieces {
			pk, err := count(p)
			if err != nil {
				return nil, err
			}
			if used > 0 && used+pk > n {
				parts = append(parts, strings.TrimSpace(cur.String()))
				cur.Reset()
				used = 0
			}
			cur.WriteString(p)
			used += pk
		}
		if strings.TrimSpace(cur.String()) != "" {
			parts = append(parts, strings.TrimSpace(cur.String()))
		}
		for i, p := range parts {
			out = append(out, Doc{ID: fmt.Sprintf("%s#%d", d.ID, i+1), Knowledge: p})
		}
	}
	return out, nil
}
