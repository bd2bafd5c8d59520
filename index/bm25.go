package index

import (
	"fmt"
	"math"
)

// BM25Params are BM25's term-frequency saturation k1 and length
// normalisation b.
type BM25Params struct {
	K1 float64 `json:"k1"`
	B  float64 `json:"b"`
}

var (
	// TextbookBM25 is Robertson & Zaragoza's k1 1.2, b 0.75 (also
	// Lucene's and bleve's).
	TextbookBM25 = BM25Params{K1: 1.2, B: 0.75}
	// PyseriniBM25 is pyserini's default k1 0.9, b 0.4, the retriever
	// behind the TruthHypo authors' code.
	PyseriniBM25 = BM25Params{K1: 0.9, B: 0.4}
)

func (p BM25Params) String() string { return fmt.Sprintf("k1 %g, b %g", p.K1, p.B) }

// CorpusStats are the collection statistics BM25 needs, over live documents.
type CorpusStats struct {
	Docs     uint64 `json:"docs"`
	TotalLen uint64 `json:"total_len"` // analysed tokens of all documents
}

// AvgLen is the mean document length in analysed tokens.
func (c CorpusStats) AvgLen() float64 {
	if c.Docs == 0 {
		return 0
	}
	return float64(c.TotalLen) / float64(c.Docs)
}

// IDF is BM25's inverse document frequency in its non-negative form
// (Lucene's): ln(1 + (N − df + 0.5)/(df + 0.5)).
func IDF(docs, df uint64) float64 {
	return math.Log(1 + (float64(docs)-float64(df)+0.5)/(float64(df)+0.5))
}

// BM25 scores one document for a query: the sum over the query's distinct
// terms t of
//
//	IDF(t) · tf·(k1+1) / (tf + k1·(1 − b + b·dl/avgdl))
//
// with tf the term's count in the document, dl the document's length and
// avgdl the corpus mean, k1 and b p's (zero: TextbookBM25). df maps each
// query term to its document frequency; tf to its count in the document.
func (p BM25Params) Score(terms []string, tf map[string]int, df map[string]uint64, dl int, st CorpusStats) float64 {
	if p == (BM25Params{}) {
		p = TextbookBM25
	}
	avg := st.AvgLen()
	if avg == 0 {
		return 0
	}
	var s float64
	for _, t := range terms {
		f := float64(tf[t])
		if f == 0 {
			continue
		}
		s += p.TermScore(IDF(st.Docs, df[t]), f, float64(dl), avg)
	}
	return s
}

// TermScore is one term's part of the score: idf · f·(k1+1) / (f + k1·(1 −
// b + b·dl/avg)). Score and the pruned top k both use it, so their sums
// agree to the bit.
func (p BM25Params) TermScore(idf, f, dl, avg float64) float64 {
	return idf * f * (p.K1 + 1) / (f + p.K1*(1-p.B+p.B*dl/avg))
}

// BM25 scores one document with TextbookBM25 (see BM25Params.Score).
func BM25(terms []string, tf map[string]int, df map[string]uint64, dl int, st CorpusStats) float64 {
	return TextbookBM25.Score(terms, tf, df, dl, st)
}
