package index

import (
	"context"
	"fmt"
	"math/rand"
	"path/filepath"
	"slices"
	"testing"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/analysis/tokenizer/unicode"
	"github.com/blevesearch/bleve/v2/registry"

	"halu/index/internal/zapv17"
)

func describe(ts analysis.TokenStream) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = fmt.Sprintf("%q %d-%d @%d %v", t.Term, t.Start, t.End, t.Position, t.Type)
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
	if testing.Short() {
		t.Skip("slow (50,000 texts; minutes under -race): make test-slow runs it, and CI")
	}
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
	var scratch termScratch // one for all texts, as a build reuses it
	memory := newTermMemory(fast)
	if memory == nil {
		t.Fatal("halu_en has no term memory")
	}
	for _, text := range texts {
		if c, _ := runeClassOf(text); c != slow {
			quick++
		}
		// The analyzers' own terms (fresh copies: filters rewrite tokens).
		if !sameTokens(t, "tokenizer", text, refTok.Tokenize([]byte(text)), fastTok.Tokenize([]byte(text))) ||
			!sameTokens(t, "analyzer", text, ref.Analyze([]byte(text)), fast.Analyze([]byte(text))) ||
			!sameTerms(t, text, ref.Analyze([]byte(text)), fast, memory, &scratch) ||
			!sameTerms(t, text, ref.Analyze([]byte(text)), ref, nil, &scratch) {
			if bad++; bad == 10 {
				t.Fatal("too many differences")
			}
		}
	}
	if quick < len(texts)/2 {
		t.Fatalf("only %d of %d texts took the fast path", quick, len(texts))
	}
}

// sameTerms checks analyzeTerms with halu_en, as a build counts a text's
// terms, against counting the tokens of bleve's en analyzer.
func sameTerms(t *testing.T, text string, want analysis.TokenStream, a analysis.Analyzer, m *termMemory, s *termScratch) bool {
	t.Helper()
	var counts []zapv17.TermCount
	at := map[string]int{}
	for _, tok := range want {
		if i, ok := at[string(tok.Term)]; ok {
			counts[i].Count++
			continue
		}
		at[string(tok.Term)] = len(counts)
		counts = append(counts, zapv17.TermCount{Term: string(tok.Term), Count: 1})
	}
	got, n := analyzeTerms(a, m, []byte(text), s)
	if n != len(want) || !slices.Equal(got, counts) {
		t.Errorf("terms of %q: %v (length %d), want %v (length %d)", text, got, n, counts, len(want))
		return false
	}
	return true
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

// TestIndexOfEnglishAnalyzerStillServes: an index made before halu_en
// (its mapping names bleve's en) is analysed, built into and searched with
// en, and ranks as a halu_en index of the same articles does.
func TestIndexOfEnglishAnalyzerStillServes(t *testing.T) {
	dir := t.TempDir()
	im := newMapping()
	im.DefaultAnalyzer = en.AnalyzerName
	im.DefaultMapping.Properties[fieldText].Fields[0].Analyzer = en.AnalyzerName
	idx, err := bleve.New(filepath.Join(dir, bleveDir), im)
	if err != nil {
		t.Fatal(err)
	}
	idx.Close()
	input := "../testdata/pubmed/pubmedqa_contexts.jsonl"
	old := build(t, dir, 500, input)
	defer old.Close()
	if name := old.idx.Mapping().AnalyzerNameForPath(fieldText); name != en.AnalyzerName || old.analyzer != old.idx.Mapping().AnalyzerNamed(en.AnalyzerName) {
		t.Fatalf("old index's text field is analysed with %q; halu analyses with another", name)
	}
	cur := build(t, t.TempDir(), 500, input)
	defer cur.Close()
	if name := cur.idx.Mapping().AnalyzerNameForPath(fieldText); name != analyzerName || cur.analyzer != cur.idx.Mapping().AnalyzerNamed(analyzerName) {
		t.Fatalf("new index's text field is analysed with %q; halu analyses with another", name)
	}
	q := "Occupational pesticide exposure and subclinical hypothyroidism: do mitochondria matter?"
	a, err := old.Search(context.Background(), q, SearchOptions{K: 10})
	if err != nil {
		t.Fatal(err)
	}
	b, err := cur.Search(context.Background(), q, SearchOptions{K: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(a) == 0 || len(a) != len(b) {
		t.Fatalf("%d hits on the en index, %d on the halu_en index", len(a), len(b))
	}
	for i := range a {
		if a[i].PMID != b[i].PMID || a[i].Score != b[i].Score {
			t.Fatalf("hit %d: %d (%g) on en, %d (%g) on halu_en", i, a[i].PMID, a[i].Score, b[i].PMID, b[i].Score)
		}
	}
}
