package index

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/analysis/tokenizer/unicode"
	"github.com/blevesearch/bleve/v2/registry"
)

func describe(ts analysis.TokenStream) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = fmt.Sprintf("%q %d-%d @%d", t.Term, t.Start, t.End, t.Position)
	}
	return out
}

func sameTokens(t *testing.T, what, text string, want, got analysis.TokenStream) bool {
	t.Helper()
	w, g := describe(want), describe(got)
	for i := 0; i < max(len(w), len(g)); i++ {
		if i >= len(w) || i >= len(g) || w[i] != g[i] {
			var wi, gi string
			if i < len(w) {
				wi = w[i]
			}
			if i < len(g) {
				gi = g[i]
			}
			t.Errorf("%s of %q: token %d is %s, want %s", what, text, i, gi, wi)
			return false
		}
	}
	return true
}

// randomText is text over an alphabet of the characters the ASCII
// tokenizer treats specially, with a few non-ASCII ones.
func randomText(r *rand.Rand) string {
	alphabet := "aZk09.,;:' -\n\t()/%+\""
	switch r.Intn(4) {
	case 0:
		alphabet += "_é’α·\u00ad"
	case 1:
		alphabet += "éαΩµ±\u00a0\u2009≤×–“ÿ÷"
	}
	runes := []rune(alphabet)
	n := r.Intn(24)
	b := make([]rune, n)
	for i := range b {
		b[i] = runes[r.Intn(len(runes))]
	}
	return string(b)
}

// TestAnalyzerMatchesEnglish holds halu's analyzer to bleve's English one:
// the same terms, offsets and positions on every real abstract at hand and
// on 50,000 random strings, and its tokenizer to the Unicode tokenizer.
func TestAnalyzerMatchesEnglish(t *testing.T) {
	cache := registry.NewCache()
	ref, err := cache.AnalyzerNamed(en.AnalyzerName)
	if err != nil {
		t.Fatal(err)
	}
	fast, err := cache.AnalyzerNamed(analyzerName)
	if err != nil {
		t.Fatal(err)
	}
	refTok := unicode.NewUnicodeTokenizer()
	fastTok, _ := cache.TokenizerNamed(fastTokenizerName)
	var texts []string
	for _, src := range []string{"../testdata/pubmed/pubmedqa_contexts.jsonl", "../testdata/pubmed/pubmedqa_long_answers.jsonl", "../../shared/data/pubmed/abstracts_combined.jsonl"} {
		_ = ReadInput(src, func(o Op) error {
			texts = append(texts, docText(o.Article))
			return nil
		}, func(Problem) {})
	}
	if len(texts) < 1000 {
		t.Fatalf("%d real texts read", len(texts))
	}
	r := rand.New(rand.NewSource(1))
	for i := 0; i < 50_000; i++ {
		texts = append(texts, randomText(r))
	}
	texts = append(texts, "e.g. U.S.A. don't 1,000.5 3;4 a:b a.1 1.a x'y'z '", "IL-6 p<0.05 (n=12) 5'-UTR 3' end Ca2+ 95%CI")
	bad, quick := 0, 0
	for _, text := range texts {
		if c, _ := runeClassOf(text); c != slow {
			quick++
		}
		// The analyzers' own terms (fresh copies: filters rewrite tokens).
		if !sameTokens(t, "tokenizer", text, refTok.Tokenize([]byte(text)), fastTok.Tokenize([]byte(text))) ||
			!sameTokens(t, "analyzer", text, ref.Analyze([]byte(text)), fast.Analyze([]byte(text))) {
			if bad++; bad == 10 {
				t.Fatal("too many differences")
			}
		}
	}
	if quick < len(texts)/2 {
		t.Fatalf("only %d of %d texts took the fast path", quick, len(texts))
	}
}

// runeClassOf is slow when text has a character fastTokenizer leaves to
// the Unicode tokenizer.
func runeClassOf(text string) (uint8, int) {
	for i := 0; i < len(text); {
		c, n := runeClass([]byte(text), i)
		if c == slow {
			return slow, i
		}
		i += n
	}
	return other, len(text)
}

func TestZZCount(t *testing.T) {
	n, a := 0, 0
	for _, src := range []string{"../testdata/pubmed/pubmedqa_contexts.jsonl", "../../shared/data/pubmed/abstracts_combined.jsonl"} {
		_ = ReadInput(src, func(o Op) error {
			n++
			if c, _ := runeClassOf(docText(o.Article)); c != slow {
				a++
			}
			return nil
		}, func(Problem) {})
	}
	t.Logf("%d of %d real texts ascii", a, n)
}
