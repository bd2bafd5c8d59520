package index

import (
	"hash/maphash"
	"slices"
	"sync/atomic"
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/analysis/token/lowercase"
	"github.com/blevesearch/bleve/v2/analysis/token/porter"
	"github.com/blevesearch/bleve/v2/analysis/tokenizer/unicode"
	"github.com/blevesearch/bleve/v2/registry"

	"halu/index/internal/zapv17"
)

// analyzerName is halu's English analyzer: bleve's "en" (Unicode word
// segmentation, English possessives removed, lower case, English stop
// words, Porter stemming), made faster where a build spends its time, with
// the same terms: text made of ASCII and common Latin-1, Greek and symbol
// characters is segmented by fastTokenizer (the Unicode word-break rules
// as they apply to those), other text by bleve's tokenizer, and stems are
// remembered. TestAnalyzerMatchesEnglish holds it to "en" on every real
// abstract at hand and on random text.
const analyzerName = "halu_en"

func init() {
	registry.RegisterTokenizer(fastTokenizerName, func(map[string]interface{}, *registry.Cache) (analysis.Tokenizer, error) {
		return fastTokenizer{unicode.NewUnicodeTokenizer()}, nil
	})
	registry.RegisterTokenFilter(stemCacheName, func(map[string]interface{}, *registry.Cache) (analysis.TokenFilter, error) {
		return newStemCache(), nil
	})
	registry.RegisterAnalyzer(analyzerName, func(_ map[string]interface{}, cache *registry.Cache) (analysis.Analyzer, error) {
		tok, err := cache.TokenizerNamed(fastTokenizerName)
		if err != nil {
			return nil, err
		}
		a := &analysis.DefaultAnalyzer{Tokenizer: tok}
		for _, name := range []string{en.PossessiveName, lowercase.Name, en.StopName, stemCacheName} {
			f, err := cache.TokenFilterNamed(name)
			if err != nil {
				return nil, err
			}
			a.TokenFilters = append(a.TokenFilters, f)
		}
		return a, nil
	})
}

const (
	fastTokenizerName = "halu_fast_unicode"
	stemCacheName     = "halu_porter_cached"
)

// fastTokenizer segments text into words by the rules of Unicode word
// segmentation (UAX #29) as they apply to ASCII and to the other
// characters common in abstracts whose word-break class is plain (Latin-1
// and Greek letters; spaces, ±, ≤, ≥, °, ×, ® and the like, which
// separate): letters and digits join; a full stop, apostrophe or colon
// between two letters joins them; a full stop, apostrophe, comma or
// semicolon between two digits joins them; everything else separates. Text
// with any other character (the underscore, which the rules join in ways
// this does not follow, among them) goes to the Unicode tokenizer.
type fastTokenizer struct{ slow analysis.Tokenizer }

// Character classes of fastTokenizer.
const (
	other = iota
	letter
	digit
	stop  // '.' and '\'': joins two letters or two digits
	colon // joins two letters
	comma // ',' and ';': join two digits
	slow  // the Unicode tokenizer decides
)

var asciiClass = func() (c [128]uint8) {
	for b := 'a'; b <= 'z'; b++ {
		c[b], c[b-'a'+'A'] = letter, letter
	}
	for b := '0'; b <= '9'; b++ {
		c[b] = digit
	}
	c['.'], c['\''], c[':'], c[','], c[';'], c['_'] = stop, stop, colon, comma, comma, slow
	return c
}()

// runeClass is the class of r; its byte length is n.
func runeClass(input []byte, i int) (class uint8, n int) {
	if b := input[i]; b < 0x80 {
		return asciiClass[b], 1
	}
	r, n := utf8.DecodeRune(input[i:])
	switch {
	case r >= 0xC0 && r <= 0xFF && r != 0xD7 && r != 0xF7, r == 0xB5,
		r >= 0x391 && r <= 0x3A9 && r != 0x3A2, r >= 0x3B1 && r <= 0x3C9:
		return letter, n
	case r == 0xA0, r >= 0x2002 && r <= 0x200A, r == 0x202F,
		r == 0xB1, r == 0xB0, r == 0xD7, r == 0xAE, r == 0xA3, r == 0x2122,
		r == 0x2264, r == 0x2265, r == 0x223C, r == 0x2248, r == 0x2212,
		r == 0x2022, r == 0x2013, r == 0x2014, r == 0x201C, r == 0x201D:
		return other, n
	}
	return slow, n
}

func (t fastTokenizer) Tokenize(input []byte) analysis.TokenStream {
	out, _, ok := t.tokenize(input, nil, nil)
	if !ok {
		return t.slow.Tokenize(input)
	}
	return out
}

// tokenize is Tokenize into toks' and out's memory, returned for reuse;
// ok is false, and nothing returned, for a text the Unicode tokenizer
// must segment.
func (t fastTokenizer) tokenize(input []byte, toks []analysis.Token, out analysis.TokenStream) (analysis.TokenStream, []analysis.Token, bool) {
	// word is the class of the character at i when it is a letter or a
	// digit, else other.
	word := func(i int) uint8 {
		if i >= len(input) {
			return other
		}
		if c, _ := runeClass(input, i); c == letter || c == digit {
			return c
		}
		return other
	}
	// One pass: every character is classified here or inside a word (a
	// character the rules leave to bleve never joins a word, so it ends
	// up here), and the first such character hands the whole text over.
	toks = toks[:0]
	if toks == nil {
		toks = make([]analysis.Token, 0, len(input)/6)
	}
	for i := 0; i < len(input); {
		c, n := runeClass(input, i)
		if c == slow {
			return nil, toks, false
		}
		if c != letter && c != digit {
			i += n
			continue
		}
		start := i
		last := c // the class of the word's last letter or digit
		for i += n; i < len(input); {
			c, n := runeClass(input, i)
			if c == letter || c == digit {
				last = c
				i += n
				continue
			}
			// Punctuation joins when the same kind of character is on
			// both sides and the rules join that kind with it.
			if word(i+n) != last || !(c == stop || c == colon && last == letter || c == comma && last == digit) {
				break
			}
			i += n
		}
		typ := analysis.AlphaNumeric
		if numericTerm(input[start:i]) {
			typ = analysis.Numeric
		}
		toks = append(toks, analysis.Token{Term: input[start:i], Start: start, End: i, Position: len(toks) + 1, Type: typ})
	}
	out = slices.Grow(out[:0], len(toks))[:len(toks)]
	for i := range toks {
		out[i] = &toks[i]
	}
	return out, toks, true
}

func numericTerm(b []byte) bool {
	for _, c := range b {
		if (c < '0' || c > '9') && c != '.' && c != ',' && c != ';' && c != '\'' {
			return false
		}
	}
	return true
}

// stemCache is bleve's Porter stemmer with the stems it has made
// remembered: a corpus repeats its words, and stemming was a fifth of
// analysing it. The memory is direct-mapped (a word's hash picks its one
// slot, a newer word takes the slot over) and lock-free, so analysing on
// every core does not contend for it.
type stemCache struct {
	porter *porter.PorterStemmer
	memo   *wordMemo[stemEntry]
}

type stemEntry struct {
	word string
	stem []byte
	term string // stem as a string
}

// wordMemo is a direct-mapped, lock-free memory of entries keyed by a
// word: the word's hash picks its one slot, a newer word takes the slot
// over, and analysing on every core does not contend for it.
type wordMemo[E any] struct {
	seed  maphash.Seed
	slots []atomic.Pointer[E]
}

const wordMemoSlots = 1 << 18

func newWordMemo[E any]() *wordMemo[E] {
	return &wordMemo[E]{seed: maphash.MakeSeed(), slots: make([]atomic.Pointer[E], wordMemoSlots)}
}

// get returns the entry remembered for word, or makes, remembers and
// returns one.
func (m *wordMemo[E]) get(word []byte, key func(*E) string, make func() *E) *E {
	slot := &m.slots[maphash.Bytes(m.seed, word)&(wordMemoSlots-1)]
	if e := slot.Load(); e != nil && key(e) == string(word) {
		return e
	}
	e := make()
	slot.Store(e)
	return e
}

func newStemCache() *stemCache {
	return &stemCache{porter: porter.NewPorterStemmer(), memo: newWordMemo[stemEntry]()}
}

func (s *stemCache) Filter(input analysis.TokenStream) analysis.TokenStream {
	for _, tok := range input {
		if !tok.KeyWord {
			tok.Term = s.entry(tok).stem
		}
	}
	return input
}

// entry returns the stem of tok's term, remembered or made (the Porter
// stemmer may rewrite tok's term in place).
func (s *stemCache) entry(tok *analysis.Token) *stemEntry {
	return s.memo.get(tok.Term, func(e *stemEntry) string { return e.word }, func() *stemEntry {
		word := string(tok.Term)
		s.porter.Filter(analysis.TokenStream{tok})
		return &stemEntry{word: word, stem: tok.Term, term: string(tok.Term)}
	})
}

// termScratch is one analysing goroutine's memory, reused from text to
// text: halu_en's tokens, and the map that counts terms.
type termScratch struct {
	toks   []analysis.Token
	stream analysis.TokenStream
	at     map[string]int
}

// termMemory remembers what halu_en makes of a word: the term its filters
// (possessive, lower case, stop words, then the stem) leave of it, or
// nothing. Each filter reads one token alone, so the chain is a function
// of the word, and a build, which meets the same words over and over,
// looks each up once instead of running four filters. It is direct-mapped
// and lock-free, as stemCache is, and belongs to one analyzer.
type termMemory struct {
	tok     fastTokenizer
	filters []analysis.TokenFilter // all but the last, the stem memory
	stems   *stemCache
	memo    *wordMemo[termEntry]
}

type termEntry struct {
	word string
	term string
	drop bool // a stop word
}

// newTermMemory returns the memory of a, or nil when a is not halu_en
// (bleve's en of an older index).
func newTermMemory(a analysis.Analyzer) *termMemory {
	da, ok := a.(*analysis.DefaultAnalyzer)
	if !ok || len(da.CharFilters) > 0 || len(da.TokenFilters) == 0 {
		return nil
	}
	ft, isFast := da.Tokenizer.(fastTokenizer)
	sc, isCache := da.TokenFilters[len(da.TokenFilters)-1].(*stemCache)
	if !isFast || !isCache {
		return nil
	}
	return &termMemory{tok: ft, filters: da.TokenFilters[:len(da.TokenFilters)-1], stems: sc,
		memo: newWordMemo[termEntry]()}
}

// entry returns what the filters make of tok's term.
func (m *termMemory) entry(tok *analysis.Token) *termEntry {
	return m.memo.get(tok.Term, func(e *termEntry) string { return e.word }, func() *termEntry {
		e := &termEntry{word: string(tok.Term)}
		t := *tok
		t.Term = []byte(e.word) // the filters rewrite terms in place
		stream := analysis.TokenStream{&t}
		for _, f := range m.filters {
			stream = f.Filter(stream)
		}
		switch {
		case len(stream) == 0:
			e.drop = true
		case stream[0].KeyWord:
			e.term = string(stream[0].Term)
		default:
			e.term = m.stems.entry(stream[0]).term
		}
		return e
	})
}

// analyzeTerms analyses text with a and returns its distinct terms with
// their counts, in order of first occurrence, and its length in tokens.
// With m (a's memory) it tokenizes in s's memory and looks each word's
// term up; without, a runs as bleve runs it. Either way the terms are a's
// (TestAnalyzerMatchesEnglish).
func analyzeTerms(a analysis.Analyzer, m *termMemory, text []byte, s *termScratch) ([]zapv17.TermCount, int) {
	if s.at == nil {
		s.at = map[string]int{}
	}
	clear(s.at)
	var tokens analysis.TokenStream
	if m != nil {
		var ok bool
		if tokens, s.toks, ok = m.tok.tokenize(text, s.toks, s.stream); ok {
			s.stream = tokens
		} else {
			tokens = m.tok.slow.Tokenize(text)
		}
	} else {
		tokens = a.Analyze(text)
	}
	out := make([]zapv17.TermCount, 0, len(tokens)/2+1)
	n := 0
	for _, tok := range tokens {
		var term string
		if m == nil {
			term = string(tok.Term) // bleve's en: each token is its term
		} else if e := m.entry(tok); !e.drop {
			term = e.term
		} else {
			continue
		}
		n++
		if i, ok := s.at[term]; ok {
			out[i].Count++
			continue
		}
		s.at[term] = len(out)
		out = append(out, zapv17.TermCount{Term: term, Count: 1})
	}
	return out, n
}
