package index

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/blevesearch/bleve/v2/index/scorch"
	bindex "github.com/blevesearch/bleve_index_api"

	"halu/index/internal/zapv17"
)

func readAll(t *testing.T, path string) ([]Op, []Problem, error) {
	t.Helper()
	var ops []Op
	var probs []Problem
	err := ReadInput(path, func(o Op) error { ops = append(ops, o); return nil }, func(p Problem) { probs = append(probs, p) })
	return ops, probs, err
}

func TestParseStructuredAbstract(t *testing.T) {
	ops, _, err := readAll(t, "../testdata/pubmed/biopython/pubmed5.xml")
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, o := range ops {
		if o.Article.PMID == 28775130 {
			found = true
			a := o.Article
			if !strings.HasPrefix(a.Abstract, "OBJECTIVES: Animal studies suggest that exposure to pesticides may alter") ||
				!strings.Contains(a.Abstract, " METHODS: Self-reported lifetime pesticide use") ||
				!strings.Contains(a.Abstract, " CONCLUSIONS: Our results suggest") || a.Year != 2018 ||
				!strings.HasPrefix(a.Title, "Occupational pesticide exposure and subclinical hypothyroidism") {
				t.Fatalf("article = %+v", a)
			}
		}
	}
	if !found {
		t.Fatal("PMID 28775130 not read")
	}
}

func TestParseEntitiesMarkupAndDeletes(t *testing.T) {
	xml := `<?xml version="1.0"?>
<PubmedArticleSet>
<PubmedArticle><MedlineCitation><PMID Version="1">111</PMID><Article><Journal><JournalIssue><PubDate><MedlineDate>1998 Dec-1999 Jan</MedlineDate></PubDate></JournalIssue></Journal>
<ArticleTitle>IL-2 &lt; 5 ng/ml in <i>Mus musculus</i> &amp; rats</ArticleTitle>
<Abstract><AbstractText>Levels were 10<sup>3</sup> &gt; baseline.</AbstractText></Abstract></Article></MedlineCitation></PubmedArticle>
<PubmedArticle><MedlineCitation><PMID Version="1">222</PMID><Article><ArticleTitle></ArticleTitle></Article></MedlineCitation></PubmedArticle>
<PubmedArticle><MedlineCitation><PMID Version="1">abc</PMID><Article><ArticleTitle>x</ArticleTitle></Article></MedlineCitation></PubmedArticle>
<DeleteCitation><PMID Version="1">333</PMID><PMID Version="1">444</PMID></DeleteCitation>
</PubmedArticleSet>`
	p := filepath.Join(t.TempDir(), "x.xml")
	os.WriteFile(p, []byte(xml), 0o644)
	ops, probs, err := readAll(t, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(ops) != 3 || ops[0].Article.Title != "IL-2 < 5 ng/ml in Mus musculus & rats" || ops[0].Article.Abstract != "Levels were 103 > baseline." || ops[0].Article.Year != 1998 {
		t.Fatalf("ops = %+v", ops)
	}
	if !ops[1].Delete || ops[1].Article.PMID != 333 || !ops[2].Delete || ops[2].Article.PMID != 444 {
		t.Fatalf("deletes = %+v", ops[1:])
	}
	if len(probs) != 2 || !strings.Contains(probs[0].Reason, "no title and no abstract") || !strings.Contains(probs[1].Reason, `"abc"`) || probs[1].Line != 7 {
		t.Fatalf("problems = %+v", probs)
	}
}

func TestParseBookAndUpdateFile(t *testing.T) {
	ops, _, err := readAll(t, "../testdata/pubmed/book_20301577.xml")
	if err != nil || len(ops) != 1 || ops[0].Article.PMID != 20301577 || ops[0].Article.Title == "" {
		t.Fatalf("book: %+v %v", ops, err)
	}
	ops, _, err = readAll(t, "../testdata/pubmed/pubmed26n1335.xml.gz")
	if err != nil {
		t.Fatal(err)
	}
	adds, dels := 0, 0
	for _, o := range ops {
		if o.Delete {
			dels++
		} else {
			adds++
		}
	}
	if adds == 0 || dels != 6 {
		t.Fatalf("update file: %d adds, %d deletes", adds, dels)
	}
}

func TestCorruptInputsNamePosition(t *testing.T) {
	dir := t.TempDir()
	// A truncated gzip: the first part of a real update file.
	full, _ := os.ReadFile("../testdata/pubmed/pubmed26n1335.xml.gz")
	trunc := filepath.Join(dir, "trunc.xml.gz")
	os.WriteFile(trunc, full[:len(full)/2], 0o644)
	ops, _, err := readAll(t, trunc)
	if err == nil || !strings.Contains(err.Error(), "trunc.xml.gz:") || !strings.Contains(err.Error(), "byte") {
		t.Fatalf("truncated gzip: %v", err)
	}
	if len(ops) == 0 {
		t.Fatal("records before the damage were lost")
	}
	// Broken XML in the middle of a file.
	src, _ := os.ReadFile("../testdata/pubmed/biopython/pubmed2.xml")
	i := bytes.Index(src, []byte("</PubmedArticle>")) + len("</PubmedArticle>")
	broken := append(append(append([]byte{}, src[:i]...), []byte("\n<PubmedArticle><MedlineCitation><PMID>1</PMID></Oops>")...), src[i:]...)
	bp := filepath.Join(dir, "broken.xml")
	os.WriteFile(bp, broken, 0o644)
	whole, _, err := readAll(t, "../testdata/pubmed/biopython/pubmed2.xml")
	if err != nil {
		t.Fatal(err)
	}
	ops, probs, err := readAll(t, bp)
	if err != nil || len(probs) != 1 || !strings.Contains(probs[0].String(), "broken.xml:") ||
		!strings.Contains(probs[0].Reason, "PMID 1: malformed record") {
		t.Fatalf("broken XML: %v, problems %v", err, probs)
	}
	if len(ops) != len(whole) || len(whole) < 2 {
		t.Fatalf("%d records kept around the broken one, want all %d", len(ops), len(whole))
	}
	// A JSONL line that is not JSON: reported with its line, the rest read.
	jp := filepath.Join(dir, "x.jsonl")
	os.WriteFile(jp, []byte("{\"pmid\": 5, \"title\": \"a\"}\nnot json\n{\"pmid\": \"6\", \"abstract\": \"b\", \"year\": \"2001\"}\n"), 0o644)
	ops, probs, err = readAll(t, jp)
	if err != nil || len(ops) != 2 || len(probs) != 1 || probs[0].Line != 2 || ops[1].Article.Year != 2001 {
		t.Fatalf("jsonl: ops %+v probs %+v err %v", ops, probs, err)
	}
}

func build(t *testing.T, dir string, batch int, inputs ...string) *Literature {
	t.Helper()
	l, err := OpenLiterature(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Build(context.Background(), inputs, BuildOptions{BatchSize: batch}); err != nil {
		t.Fatal(err)
	}
	return l
}

func writeJSONL(t *testing.T, arts ...Article) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "a.jsonl")
	var b bytes.Buffer
	for _, a := range arts {
		line, _ := json.Marshal(a)
		b.Write(append(line, '\n'))
	}
	os.WriteFile(p, b.Bytes(), 0o644)
	return p
}

// The three-document corpus of TestBM25HandComputed. Analysed (English:
// lower case, stop words out, Porter stems): d1 [liver cancer] (2 tokens),
// d2 [liver liver fibrosi] (3), d3 [heart diseas] (2).
var tiny = []Article{
	{PMID: 1, Title: "Liver cancer"},
	{PMID: 2, Title: "Liver, liver fibrosis"},
	{PMID: 3, Title: "Heart disease"},
}

func TestBM25HandComputed(t *testing.T) {
	l := build(t, t.TempDir(), 1000, writeJSONL(t, tiny...))
	defer l.Close()
	hits, err := l.Search(context.Background(), "liver", SearchOptions{K: 5})
	if err != nil {
		t.Fatal(err)
	}
	// N = 3, total length 7, avgdl 7/3; df(liver) = 2:
	// IDF = ln(1 + (3 − 2 + 0.5)/(2 + 0.5)) = ln 1.6 = 0.4700036
	// d2: tf 2, dl 3: 0.4700036 · 2·2.2 / (2 + 1.2·(0.25 + 0.75·3/(7/3))) = 0.5981864
	// d1: tf 1, dl 2: 0.4700036 · 2.2 / (1 + 1.2·(0.25 + 0.75·2/(7/3))) = 0.4991763
	if len(hits) != 2 || hits[0].PMID != 2 || hits[1].PMID != 1 {
		t.Fatalf("hits = %+v", hits)
	}
	if math.Abs(hits[0].Score-0.5981864) > 1e-6 || math.Abs(hits[1].Score-0.4991763) > 1e-6 {
		t.Fatalf("scores %.7f %.7f", hits[0].Score, hits[1].Score)
	}
	// τ keeps only documents scoring at least it.
	hits, _ = l.Search(context.Background(), "liver", SearchOptions{K: 5, MinScore: 0.55})
	if len(hits) != 1 || hits[0].PMID != 2 {
		t.Fatalf("min score: %+v", hits)
	}
	// The cutoff is strict: PMID < 2 keeps only d1.
	hits, _ = l.Search(context.Background(), "liver", SearchOptions{K: 5, BelowPMID: 2})
	if len(hits) != 1 || hits[0].PMID != 1 {
		t.Fatalf("cutoff: %+v", hits)
	}
}

// Scores must not depend on how bleve laid out its segments: one batch,
// one-document batches, and a history of replacements and deletions that
// ends in the same documents all score alike.
func TestScoresIndependentOfSegments(t *testing.T) {
	q := "liver fibrosis"
	one := build(t, t.TempDir(), 1000, writeJSONL(t, tiny...))
	defer one.Close()
	many := build(t, t.TempDir(), 1, writeJSONL(t, tiny...))
	defer many.Close()
	churnDir := t.TempDir()
	churn := build(t, churnDir, 1, writeJSONL(t, append(tiny, Article{PMID: 4, Title: "Liver fibrosis liver fibrosis kidney"}, Article{PMID: 2, Title: "old text"})...))
	xml := `<PubmedArticleSet><DeleteCitation><PMID>4</PMID></DeleteCitation></PubmedArticleSet>`
	del := filepath.Join(t.TempDir(), "del.xml")
	os.WriteFile(del, []byte(xml), 0o644)
	if _, err := churn.Build(context.Background(), []string{del, writeJSONL(t, tiny[1])}, BuildOptions{BatchSize: 1}); err != nil {
		t.Fatal(err)
	}
	defer churn.Close()
	var want []Hit
	for i, l := range []*Literature{one, many, churn} {
		hits, err := l.Search(context.Background(), q, SearchOptions{K: 5})
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			want = hits
			continue
		}
		if len(hits) != len(want) {
			t.Fatalf("index %d: %d hits, want %d", i, len(hits), len(want))
		}
		for j := range hits {
			if hits[j].PMID != want[j].PMID || hits[j].Score != want[j].Score {
				t.Fatalf("index %d hit %d: %+v, want %+v", i, j, hits[j], want[j])
			}
		}
	}
	st, _ := churn.Stats(context.Background())
	if st.Docs != 3 || st.AvgLen != 7.0/3 {
		t.Fatalf("churned stats %+v", st)
	}
}

// A segment that gains deletions after a search is searched with them:
// the lists looked up before (listCache) are not those of its later
// snapshots. One batch makes one segment; a deletion alone leaves that
// segment in place with a deletion more.
func TestSearchSeesLaterDeletions(t *testing.T) {
	q := "liver fibrosis"
	l := build(t, t.TempDir(), 1000, writeJSONL(t, append(tiny, Article{PMID: 4, Title: "Liver fibrosis liver fibrosis kidney"})...))
	defer l.Close()
	before := snapshot(t, l)
	defer before.Close()
	hits, err := l.Search(context.Background(), q, SearchOptions{K: 5})
	if err != nil || len(hits) != 3 || hits[0].PMID != 4 {
		t.Fatalf("before the deletion: %+v %v", hits, err)
	}
	del := filepath.Join(t.TempDir(), "del.xml")
	os.WriteFile(del, []byte(`<PubmedArticleSet><DeleteCitation><PMID>4</PMID></DeleteCitation></PubmedArticleSet>`), 0o644)
	if _, err := l.Build(context.Background(), []string{del}, BuildOptions{BatchSize: 1}); err != nil {
		t.Fatal(err)
	}
	after := snapshot(t, l)
	defer after.Close()
	if len(before.Segments()) != 1 || len(after.Segments()) != 1 || before.Segments()[0].Segment() != after.Segments()[0].Segment() ||
		after.Segments()[0].Deleted().GetCardinality() != 1 {
		t.Fatalf("not one segment gaining a deletion: %d segments, then %d", len(before.Segments()), len(after.Segments()))
	}
	fresh := build(t, t.TempDir(), 1000, writeJSONL(t, tiny...))
	defer fresh.Close()
	want, err := fresh.Search(context.Background(), q, SearchOptions{K: 5})
	if err != nil {
		t.Fatal(err)
	}
	got, err := l.Search(context.Background(), q, SearchOptions{K: 5})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d hits after the deletion, want %d: %+v", len(got), len(want), got)
	}
	for i := range got {
		if got[i].PMID != want[i].PMID || got[i].Score != want[i].Score {
			t.Fatalf("hit %d after the deletion: %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestBuildRealDataTitleQueryAndCutoff(t *testing.T) {
	dir := t.TempDir()
	inputs, _ := filepath.Glob("../testdata/pubmed/biopython/*.xml")
	inputs = append(inputs, "../testdata/pubmed/pubmedqa_contexts.jsonl")
	l := build(t, dir, 500, inputs...)
	defer l.Close()
	hits, err := l.Search(context.Background(), "Occupational pesticide exposure and subclinical hypothyroidism among male pesticide applicators", SearchOptions{K: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) == 0 || hits[0].PMID != 28775130 {
		t.Fatalf("title query: %+v", hits)
	}
	hits, _ = l.Search(context.Background(), "Occupational pesticide exposure and subclinical hypothyroidism among male pesticide applicators", SearchOptions{K: 3, BelowPMID: 28775130})
	for _, h := range hits {
		if h.PMID >= 28775130 {
			t.Fatalf("cutoff let %d through", h.PMID)
		}
	}
	st, err := l.Stats(context.Background())
	if err != nil || st.Docs < 1000 || len(st.Builds) != 1 || st.Builds[0].Inputs[0].SHA256 == "" {
		t.Fatalf("stats %+v %v", st, err)
	}
	// The PMID range (read from the pmid field's doc values) is the
	// inputs' own.
	minP, maxP := uint64(math.MaxUint64), uint64(0)
	for _, in := range inputs {
		_ = ReadInput(in, func(o Op) error {
			minP, maxP = min(minP, o.Article.PMID), max(maxP, o.Article.PMID)
			return nil
		}, func(Problem) {})
	}
	if st.MinPMID != minP || st.MaxPMID != maxP {
		t.Fatalf("PMID range %d–%d, inputs hold %d–%d", st.MinPMID, st.MaxPMID, minP, maxP)
	}
	// Reopening keeps everything.
	l.Close()
	l2, err := OpenLiterature(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	st2, _ := l2.Stats(context.Background())
	if st2.Docs != st.Docs {
		t.Fatalf("reopened: %d docs, want %d", st2.Docs, st.Docs)
	}
}

// TestPubMedQARetrieval queries the index of the 1,000 PubMedQA abstracts
// (without their conclusions) with each conclusion and counts how often the
// abstract it concludes ranks in the top 10.
func TestPubMedQARetrieval(t *testing.T) {
	l := build(t, t.TempDir(), 1000, "../testdata/pubmed/pubmedqa_contexts.jsonl")
	defer l.Close()
	n, top1, top10 := 0, 0, 0
	for _, q := range pubmedQAConclusions(t) {
		hits, err := l.Search(context.Background(), q.LongAnswer, SearchOptions{K: 10})
		if err != nil {
			t.Fatal(err)
		}
		n++
		for i, h := range hits {
			if fmtPMID(h.PMID) == q.PMID {
				top10++
				if i == 0 {
					top1++
				}
			}
		}
	}
	t.Logf("PubMedQA conclusions → own abstract: top-1 %d/%d (%.1f%%), top-10 %d/%d (%.1f%%)", top1, n, 100*float64(top1)/float64(n), top10, n, 100*float64(top10)/float64(n))
	if n != 1000 || float64(top10)/float64(n) < 0.9 {
		t.Fatalf("top-10 rate %d/%d below 90%%", top10, n)
	}
}

func fmtPMID(p uint64) string {
	return strings.TrimSpace(strings.TrimLeft(string(rune(0)), "\x00")) + itoa(p)
}

func itoa(p uint64) string {
	var b [20]byte
	i := len(b)
	for p > 0 {
		i--
		b[i] = byte('0' + p%10)
		p /= 10
	}
	return string(b[i:])
}

func FuzzReadPubmedXML(f *testing.F) {
	f.Add([]byte(`<PubmedArticleSet><PubmedArticle><MedlineCitation><PMID>7</PMID><Article><ArticleTitle>A &lt;b&gt; <i>t</i></ArticleTitle>` +
		`<Abstract><AbstractText Label="AIM">x</AbstractText></Abstract></Article></MedlineCitation></PubmedArticle></PubmedArticleSet>`))
	f.Add([]byte(`<PubmedArticleSet><DeleteCitation><PMID>1</PMID></DeleteCitation></PubmedArticleSet>`))
	f.Add([]byte(`<PubmedArticleSet><PubmedBookArticle><BookDocument><PMID>9</PMID><Book><BookTitle>B</BookTitle></Book></BookDocument></PubmedBookArticle></PubmedArticleSet>`))
	f.Fuzz(func(t *testing.T, data []byte) {
		err := readPubmedXML("fuzz.xml", bytes.NewReader(data), func(o Op) error {
			if o.Article.PMID == 0 {
				t.Fatalf("emitted a record without PMID: %+v", o)
			}
			if !o.Delete && o.Article.Title == "" && o.Article.Abstract == "" {
				t.Fatalf("emitted an empty record: %+v", o)
			}
			return nil
		}, func(Problem) {})
		if err != nil && !strings.HasPrefix(err.Error(), "fuzz.xml:") {
			t.Fatalf("error does not name the file: %v", err)
		}
	})
}

// One broken tag in the first of two articles costs that article only: the
// second is kept, and the first is reported with its line, byte and PMID.
func TestBrokenArticleIsSkipped(t *testing.T) {
	for _, tc := range []struct{ name, first string }{
		{"broken inner tag", `<PubmedArticle><MedlineCitation><PMID Version="1">101</PMID><Article><ArticleTitle>Broken <i>tag</ArticleTitle></Article></MedlineCitation></PubmedArticle>`},
		{"broken end tag", `<PubmedArticle><MedlineCitation><PMID Version="1">101</PMID><Article><ArticleTitle>Fine</ArticleTitle></Article></MedlineCitation></PubmedArticl>`},
		{"bad attribute", `<PubmedArticle><MedlineCitation Status=MEDLINE><PMID Version="1">101</PMID><Article><ArticleTitle>x</ArticleTitle></Article></MedlineCitation></PubmedArticle>`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := "<?xml version=\"1.0\"?>\n<PubmedArticleSet>\n" + tc.first + "\n" +
				`<PubmedArticle><MedlineCitation><PMID Version="1">202</PMID><Article><ArticleTitle>Second article</ArticleTitle>` +
				`<Abstract><AbstractText>Kept.</AbstractText></Abstract></Article></MedlineCitation></PubmedArticle>` + "\n</PubmedArticleSet>\n"
			p := filepath.Join(t.TempDir(), "two.xml")
			os.WriteFile(p, []byte(doc), 0o644)
			ops, probs, err := readAll(t, p)
			if err != nil {
				t.Fatal(err)
			}
			if len(ops) != 1 || ops[0].Article.PMID != 202 || ops[0].Article.Abstract != "Kept." {
				t.Fatalf("ops = %+v", ops)
			}
			if len(probs) != 1 || probs[0].Line != 3 || probs[0].Offset == 0 || !strings.HasPrefix(probs[0].Reason, "PMID 101: malformed record") {
				t.Fatalf("problems = %+v", probs)
			}
		})
	}
}

// A record split across the scanner's reads (a large file) is read whole,
// with its line.
func TestRecordsAcrossReads(t *testing.T) {
	var b strings.Builder
	b.WriteString("<PubmedArticleSet>\n")
	const n = 3000
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "<PubmedArticle>\n<MedlineCitation><PMID>%d</PMID><Article><ArticleTitle>Title %d %s</ArticleTitle></Article></MedlineCitation>\n</PubmedArticle>\n",
			i, i, strings.Repeat("word ", i%97))
	}
	b.WriteString("</PubmedArticleSet>\n")
	var ops []Op
	err := readPubmedXML("big.xml", strings.NewReader(b.String()), func(o Op) error { ops = append(ops, o); return nil },
		func(p Problem) { t.Errorf("problem: %v", p) })
	if err != nil || len(ops) != n {
		t.Fatalf("%d of %d records, err %v", len(ops), n, err)
	}
	for i, o := range ops {
		if o.Article.PMID != uint64(i+1) {
			t.Fatalf("record %d has PMID %d", i, o.Article.PMID)
		}
	}
}

// With pyserini's parameters a document's score is computed by hand.
func TestOtherBM25ParamsTopK(t *testing.T) {
	l := build(t, t.TempDir(), 1000, writeJSONL(t, tiny...))
	hits, err := l.Search(context.Background(), "liver", SearchOptions{K: 5, BM25: PyseriniBM25})
	l.Close()
	if err != nil {
		t.Fatal(err)
	}
	// IDF as in TestBM25HandComputed, 0.4700036; k1 0.9, b 0.4:
	// d2: tf 2, dl 3: 0.4700036 · 2·1.9 / (2 + 0.9·(0.6 + 0.4·3/(7/3))) = 0.5947715
	// d1: tf 1, dl 2: 0.4700036 · 1.9 / (1 + 0.9·(0.6 + 0.4·2/(7/3))) = 0.4830795
	if len(hits) != 2 || math.Abs(hits[0].Score-0.5947715) > 1e-6 || math.Abs(hits[1].Score-0.4830795) > 1e-6 {
		t.Fatalf("hits = %+v", hits)
	}
}

// The pruned top 10 is the exhaustive top 10 (every posting of every term
// scored): the same documents in the same order with the same scores, to
// the bit, for each of the 1,000 PubMedQA conclusions as queries, with
// textbook and pyserini parameters and with a PMID cutoff. Every returned
// document's length, read from its norm, is the length stored at build
// time, and its score is BM25Params.Score's.
func TestPrunedTopKIsExhaustive(t *testing.T) {
	if testing.Short() {
		t.Skip("slow (minutes under -race): make test-slow runs it, and CI")
	}
	// Reopened, the index is all zap files, whose postings the walk
	// reads directly.
	dir := t.TempDir()
	if err := build(t, dir, 1000, "../testdata/pubmed/pubmedqa_contexts.jsonl").Close(); err != nil {
		t.Fatal(err)
	}
	l, err := OpenLiterature(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	r := snapshot(t, l)
	defer r.Close()
	for _, ss := range r.Segments() {
		if _, err := zapv17.OpenDict(ss.Segment(), fieldText); err != nil {
			t.Fatalf("a segment's postings are not read directly: %v", err)
		}
	}
	st := l.corpus()
	qs := pubmedQAConclusions(t)
	cutoff := uint64(20000000) // about half the corpus's PMIDs lie below it
	compared := 0
	// Whole segments (as an index this small is walked), every segment
	// cut into 3 ranges walked at once, and whole segments read through
	// zap's iterator.
	// Windows of 64 and of 1 document cross window edges on every list.
	// With blocks, every list read directly has block bounds (a list this
	// small is not dense enough for them), in windows of 4096, 64 and 1:
	// the exact maxima where they were read for the query's setting, else
	// the (frequency, length) pairs'.
	type walkCut struct {
		parts       int
		split       uint64
		zapIterator bool
		window      int
		blocks      bool
	}
	for _, cut := range []walkCut{{}, {3, 1, false, 0, false}, {0, 0, true, 0, false}, {3, 1, false, 64, false}, {0, 0, false, 1, false},
		{0, 0, false, 0, true}, {3, 1, false, 64, true}, {0, 0, false, 1, true}} {
		l.walkParts, l.walkSplit, l.zapIterator, l.walkWindow, l.blockAll = cut.parts, cut.split, cut.zapIterator, cut.window, cut.blocks
		for _, opt := range []SearchOptions{{K: 10}, {K: 10, BM25: PyseriniBM25}, {K: 10, BelowPMID: cutoff}} {
			if cut.blocks && cut.window == 0 {
				// Bounds read afresh: each setting's own exact
				// maxima; in the cuts after, pyserini's queries
				// find textbook's and take the pairs' bounds.
				l.bounds = blockCache{}
			}
			for n, q := range qs {
				terms := unique(l.terms(q.LongAnswer))
				got, df := prunedIsExhaustive(t, l, r, terms, opt, st, fmt.Sprintf("%+v %+v query %d", cut, opt, n+1))
				if n < 50 {
					for _, d := range got {
						if stored := storedLen(t, r, d.pmid); stored != d.dl {
							t.Fatalf("PMID %d: length %d from the norm, %d stored", d.pmid, d.dl, stored)
						}
						tf := map[string]int{}
						for i, term := range terms {
							tf[term] = d.tf[i]
						}
						if want := opt.BM25.Score(terms, tf, df, d.dl, st); want != d.score {
							t.Fatalf("PMID %d: score %v, BM25Params.Score %v", d.pmid, d.score, want)
						}
					}
				}
				compared++
			}
		}
	}
	t.Logf("%d queries: pruned and exhaustive top 10 identical", compared)
}

// prunedIsExhaustive fails unless the pruned top k of terms is the
// exhaustive one (the same documents in the same order with the same
// scores, none at or above a PMID cutoff), and returns it with the terms'
// document frequencies; what names the query in a failure.
func prunedIsExhaustive(t *testing.T, l *Literature, r bindex.IndexReader, terms []string, opt SearchOptions, st CorpusStats, what string) ([]*scoredDoc, map[string]uint64) {
	t.Helper()
	ctx := context.Background()
	got, df, err := l.topK(ctx, r, terms, opt.K, opt, st, true)
	if err != nil {
		t.Fatal(err)
	}
	all, _, err := l.topK(ctx, r, terms, opt.K, opt, st, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(all) {
		t.Fatalf("%s: pruned %d documents, exhaustive %d", what, len(got), len(all))
	}
	for i := range got {
		if got[i].pmid != all[i].pmid || got[i].score != all[i].score {
			t.Fatalf("%s rank %d: pruned PMID %d (%v), exhaustive PMID %d (%v)", what, i+1, got[i].pmid, got[i].score, all[i].pmid, all[i].score)
		}
		if opt.BelowPMID > 0 && got[i].pmid >= opt.BelowPMID {
			t.Fatalf("%s: PMID %d above the cutoff %d", what, got[i].pmid, opt.BelowPMID)
		}
	}
	return got, df
}

func storedLen(t *testing.T, r bindex.IndexReader, pmid uint64) int {
	t.Helper()
	doc, err := r.Document(strconv.FormatUint(pmid, 10))
	if err != nil || doc == nil {
		t.Fatalf("document %d: %v", pmid, err)
	}
	n := -1
	doc.VisitFields(func(f bindex.Field) {
		if f.Name() == fieldLen {
			n = int(storedNumber(f))
		}
	})
	return n
}

// pubmedQAConclusions are the 1,000 PubMedQA conclusions (long answers)
// with the PMID of the abstract each concludes.
func pubmedQAConclusions(t *testing.T) []struct{ PMID, LongAnswer string } {
	t.Helper()
	f, err := os.Open("../testdata/pubmed/pubmedqa_long_answers.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 1<<20), 1<<20)
	var out []struct{ PMID, LongAnswer string }
	for s.Scan() {
		var q struct {
			PMID       string `json:"pmid"`
			LongAnswer string `json:"long_answer"`
		}
		if err := json.Unmarshal(s.Bytes(), &q); err != nil {
			t.Fatal(err)
		}
		out = append(out, struct{ PMID, LongAnswer string }{q.PMID, q.LongAnswer})
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// snapshot is the index's current scorch snapshot (close it).
func snapshot(t *testing.T, l *Literature) *scorch.IndexSnapshot {
	t.Helper()
	adv, err := l.idx.Advanced()
	if err != nil {
		t.Fatal(err)
	}
	r, err := adv.Reader()
	if err != nil {
		t.Fatal(err)
	}
	return r.(*scorch.IndexSnapshot)
}

// An index whose files are not whole — a segment cut short or emptied,
// bleve's root or meta file damaged — is ErrDamaged (an input error) naming
// the file, not bleve's "error parsing mapping JSON".
func TestDamagedIndexIsNamed(t *testing.T) {
	src := filepath.Join(t.TempDir(), "ix")
	build(t, src, 2000, "../testdata/pubmed/pubmedqa_contexts.jsonl").Close()
	segs, _ := filepath.Glob(filepath.Join(src, bleveDir, "store", "*.zap"))
	if len(segs) == 0 {
		t.Fatal("no segment")
	}
	seg := filepath.Base(segs[0])
	for name, tc := range map[string]struct {
		file string
		cut  func(b []byte) []byte
		want string
	}{
		"segment cut short": {filepath.Join("store", seg), func(b []byte) []byte { return b[:len(b)/2] }, "segment " + seg},
		"segment emptied":   {filepath.Join("store", seg), func([]byte) []byte { return nil }, "segment " + seg},
		"root cut short":    {filepath.Join("store", "root.bolt"), func(b []byte) []byte { return b[:100] }, "root.bolt is cut short"},
		"meta damaged":      {"index_meta.json", func([]byte) []byte { return []byte("{") }, "index_meta.json is not whole"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "ix")
			if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(dir, bleveDir, tc.file)
			b, _ := os.ReadFile(p)
			os.WriteFile(p, tc.cut(b), 0o644)
			l, err := OpenLiterature(dir, false)
			if err == nil {
				l.Close()
			}
			var ie interface{ InputError() bool }
			if !errors.Is(err, ErrDamaged) || !errors.As(err, &ie) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want ErrDamaged naming %s", err, tc.want)
			}
		})
	}
}

// FuzzOpenDamagedIndex: an index whose segment is overwritten anywhere
// opens and answers a search, or is an error (ErrDamaged when the segment
// cannot be opened); never a crash.
func FuzzOpenDamagedIndex(f *testing.F) {
	src := filepath.Join(f.TempDir(), "ix")
	l, err := OpenLiterature(src, true)
	if err != nil {
		f.Fatal(err)
	}
	if _, err := l.Build(context.Background(), []string{"../testdata/pubmed/pubmedqa_contexts.jsonl"}, BuildOptions{BatchSize: 2000}); err != nil {
		f.Fatal(err)
	}
	l.Close()
	segs, _ := filepath.Glob(filepath.Join(src, bleveDir, "store", "*.zap"))
	if len(segs) == 0 {
		f.Fatal("no segment")
	}
	seg, _ := filepath.Rel(src, segs[0])
	f.Add(0, 64, byte(0xff), false)
	f.Add(1<<20, 8, byte(1), false)
	f.Add(4096, 0, byte(0), true)
	f.Fuzz(func(t *testing.T, at, n int, x byte, cut bool) {
		dir := filepath.Join(t.TempDir(), "ix")
		if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, seg)
		b, _ := os.ReadFile(p)
		at = max(0, at) % max(1, len(b))
		if cut {
			b = b[:at]
		} else {
			for i := at; i < len(b) && i < at+min(max(n, 0), 4096); i++ {
				b[i] ^= x
			}
		}
		os.WriteFile(p, b, 0o644)
		l, err := OpenLiterature(dir, false)
		if err != nil {
			return
		}
		defer l.Close()
		l.Search(context.Background(), "hypertension risk in children", SearchOptions{K: 5})
		l.Stats(context.Background())
	})
}
