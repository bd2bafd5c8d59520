package index

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"context"
)

// TestBenchIndex is `make bench-index`: it builds an index of N documents
// (every real abstract at hand, then documents remixed from their
// sentences: see benchDoc) with the halu binary, a quarter at a time
// (update builds, one file each), timing queries at
// each size and fitting their growth; it measures ingest rate, bytes per
// document, peak RSS and the latency of 1,000 claim-length queries
// (PubMedQA conclusions), pruned against exhaustive scoring, then does the
// same with SQLite FTS5 and its bm25() on the same documents and queries,
// and reports the top-10 overlap of the two rankings. It runs only when
// HALU_BENCH_N is set; HALU_BENCH_HALU names the halu binary. With
// HALU_BENCH_VOCAB=grow, each remixed document also carries terms of a
// vocabulary that grows with the corpus as PubMed's does (vocabTail).
func TestBenchIndex(t *testing.T) {
	nStr := os.Getenv("HALU_BENCH_N")
	if nStr == "" {
		t.Skip("set HALU_BENCH_N (make bench-index) to run the index benchmark")
	}
	n, err := strconv.Atoi(nStr)
	if err != nil || n <= 0 {
		t.Fatalf("HALU_BENCH_N=%q", nStr)
	}
	haluBin := os.Getenv("HALU_BENCH_HALU")
	if haluBin == "" {
		t.Fatal("HALU_BENCH_HALU must name the halu binary")
	}
	work := t.TempDir()

	// Documents: every real abstract at hand, repeated with PMID offsets.
	var base []Article
	sources := []string{"../testdata/pubmed/pubmedqa_contexts.jsonl", "../../shared/data/pubmed/abstracts_combined.jsonl"}
	seen := map[uint64]bool{}
	for _, src := range sources {
		if _, err := os.Stat(src); err != nil {
			continue
		}
		_ = ReadInput(src, func(o Op) error {
			if !seen[o.Article.PMID] {
				seen[o.Article.PMID] = true
				base = append(base, o.Article)
			}
			return nil
		}, func(Problem) {})
	}
	sentences := make([][]string, len(base))
	for j, a := range base {
		sentences[j] = strings.SplitAfter(a.Abstract, ". ")
	}
	// The documents in four files of a quarter each: the index is built
	// one more file at a time (an update build, as a user adds a year of
	// PubMed), and queried at each size, so that growth is measured.
	const stages = 4
	var docFiles []string
	var f *os.File
	var bw *bufio.Writer
	sqlPath := filepath.Join(work, "load.sql")
	sf, _ := os.Create(sqlPath)
	sw := bufio.NewWriterSize(sf, 1<<20)
	fmt.Fprintln(sw, "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;")
	fmt.Fprintln(sw, "CREATE VIRTUAL TABLE docs USING fts5(pmid UNINDEXED, text, tokenize='porter');")
	fmt.Fprintln(sw, "BEGIN;")
	grow := os.Getenv("HALU_BENCH_VOCAB") == "grow"
	tail := map[uint64]bool{} // the synthetic terms drawn
	for i := 0; i < n; i++ {
		if i*stages/n == len(docFiles) {
			if bw != nil {
				bw.Flush()
				f.Close()
			}
			docFiles = append(docFiles, filepath.Join(work, fmt.Sprintf("docs-%d.jsonl", len(docFiles)+1)))
			f, _ = os.Create(docFiles[len(docFiles)-1])
			bw = bufio.NewWriterSize(f, 1<<20)
		}
		a := benchDoc(base, sentences, i)
		if grow && i >= len(base) {
			a.Abstract += " " + vocabTail(i, tail)
		}
		line, _ := json.Marshal(a)
		bw.Write(append(line, '\n'))
		fmt.Fprintf(sw, "INSERT INTO docs VALUES(%d,'%s');\n", a.PMID, strings.ReplaceAll(docText(a), "'", "''"))
	}
	fmt.Fprintln(sw, "COMMIT;")
	bw.Flush()
	f.Close()
	sw.Flush()
	sf.Close()

	// Queries: 1,000 PubMedQA conclusions.
	var queries []string
	qf, err := os.Open("../testdata/pubmed/pubmedqa_long_answers.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	s := bufio.NewScanner(qf)
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() {
		var q struct {
			LongAnswer string `json:"long_answer"`
		}
		json.Unmarshal(s.Bytes(), &q)
		queries = append(queries, q.LongAnswer)
	}
	qf.Close()

	// halu: each stage's build in a child process, to read its peak RSS;
	// after each, the pruned top 10 of every query, three rounds (below).
	ixDir := filepath.Join(work, "ix")
	ctx := context.Background()
	var haluBuild time.Duration
	var haluRSS int64
	type point struct {
		docs       float64
		build, p50 time.Duration
		mem        memPeak         // this quarter's build
		rounds     []time.Duration // each round's p50
	}
	const stageRounds = 3
	var points []point
	for s := 1; s <= stages; s++ {
		t0 := time.Now()
		cmd := exec.Command(haluBin, "index", "build", "--out", ixDir, docFiles[s-1])
		out, peak, err := peakRSS(cmd)
		if err != nil {
			t.Fatalf("halu index build: %v\n%s", err, out)
		}
		haluBuild += time.Since(t0)
		haluRSS = max(haluRSS, peak.HWM) // KiB
		l, err := OpenLiterature(ixDir, false)
		if err != nil {
			t.Fatal(err)
		}
		lat, rounds := queryRounds(t, l, queries, stageRounds)
		st, _ := l.Stats(ctx)
		l.Close()
		points = append(points, point{float64(st.Docs), haluBuild, pct(lat, 0.5), peak, rounds})
	}
	// The builds done, the index compacted (halu index compact: its
	// segments merged into one) and queried again, three rounds; every
	// figure below is of the compacted index.
	t0 := time.Now()
	out, compactPeak, err := peakRSS(exec.Command(haluBin, "index", "compact", ixDir))
	if err != nil {
		t.Fatalf("halu index compact: %v\n%s", err, out)
	}
	compactTook := time.Since(t0)
	compactSaid := strings.TrimSpace(string(out))
	cl, err := OpenLiterature(ixDir, false)
	if err != nil {
		t.Fatal(err)
	}
	compactLat, compactRounds := queryRounds(t, cl, queries, stageRounds)
	cl.Close()
	l, err := OpenLiterature(ixDir, false)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	st, _ := l.Stats(context.Background())
	haluTop := make([][]uint64, len(queries))
	lat := make([]time.Duration, len(queries))
	for i, q := range queries {
		t0 := time.Now()
		hits, err := l.Search(ctx, q, SearchOptions{K: 10})
		lat[i] = time.Since(t0)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range hits {
			haluTop[i] = append(haluTop[i], h.PMID)
		}
	}
	// The same queries scored exhaustively (every posting), interleaved
	// with pruned ones on one reader: the ratio is what pruning buys.
	every := max(1, len(queries)/200)
	var pruned, exhaustive []time.Duration
	adv, _ := l.idx.Advanced()
	rd, err := adv.Reader()
	if err != nil {
		t.Fatal(err)
	}
	cst := l.corpus()
	for i := 0; i < len(queries); i += every {
		terms := unique(l.terms(queries[i]))
		for _, prune := range []bool{true, false} {
			t0 := time.Now()
			if _, _, err := l.topK(ctx, rd, terms, 10, SearchOptions{K: 10}, cst, prune); err != nil {
				t.Fatal(err)
			}
			if prune {
				pruned = append(pruned, time.Since(t0))
			} else {
				exhaustive = append(exhaustive, time.Since(t0))
			}
		}
	}
	rd.Close()
	// A batch of 10 (one KnowHD item's claims) on one snapshot.
	t0 = time.Now()
	for i := 0; i+10 <= len(queries); i += 10 {
		if _, err := l.SearchBatch(ctx, queries[i:i+10], SearchOptions{K: 10}); err != nil {
			t.Fatal(err)
		}
	}
	batchPer := time.Since(t0) / time.Duration(len(queries)/10*10)

	// SQLite FTS5.
	db := filepath.Join(work, "fts.db")
	t0 = time.Now()
	load := exec.Command("sqlite3", db)
	load.Stdin, _ = os.Open(sqlPath)
	out, ftsPeak, err := peakRSS(load)
	if err != nil {
		t.Fatalf("sqlite3 load: %v\n%s", err, out)
	}
	ftsBuild := time.Since(t0)
	ftsSize := fileSize(db)
	var qsql strings.Builder
	qsql.WriteString(".timer on\n.mode list\n")
	wordRE := regexp.MustCompile(`[A-Za-z0-9]+`)
	ftsQueries := queries
	if v, err := strconv.Atoi(os.Getenv("HALU_BENCH_FTS_QUERIES")); err == nil && v > 0 && v < len(queries) {
		ftsQueries = queries[:v] // FTS5 takes seconds a query on a large corpus
	}
	for _, q := range ftsQueries {
		var terms []string
		for _, w := range wordRE.FindAllString(q, -1) {
			terms = append(terms, `"`+w+`"`)
		}
		fmt.Fprintf(&qsql, "SELECT '#'; SELECT pmid FROM docs WHERE docs MATCH '%s' ORDER BY bm25(docs) LIMIT 10;\n", strings.Join(terms, " OR "))
	}
	qc := exec.Command("sqlite3", db)
	qc.Stdin = strings.NewReader(qsql.String())
	// The shell times each input line, and each query is one line (the "#"
	// marker and the MATCH), so there is one timer line per query.
	var stdout, stderr bytes.Buffer
	qc.Stdout, qc.Stderr = &stdout, &stderr
	if err := qc.Run(); err != nil {
		t.Fatalf("sqlite3 queries: %v\n%s", err, stderr.String())
	}
	var ftsTop [][]uint64
	var ftsLat []time.Duration
	timeRE := regexp.MustCompile(`^Run Time: real ([0-9.]+)`)
	// sqlite3 writes its timer lines to stdout, in order.
	for _, line := range strings.Split(stdout.String(), "\n") {
		if m := timeRE.FindStringSubmatch(line); m != nil {
			sec, _ := strconv.ParseFloat(m[1], 64)
			ftsLat = append(ftsLat, time.Duration(sec*float64(time.Second)))
		}
	}
	cur := -1
	for _, line := range strings.Split(stdout.String(), "\n") {
		if line == "#" {
			cur++
			ftsTop = append(ftsTop, nil)
		} else if p, err := strconv.ParseUint(strings.TrimSpace(line), 10, 64); err == nil && cur >= 0 {
			ftsTop[cur] = append(ftsTop[cur], p)
		}
	}
	if len(ftsLat) != len(ftsQueries) {
		t.Fatalf("read %d FTS5 timings for %d queries", len(ftsLat), len(ftsQueries))
	}
	overlap := 0.0
	for i := range queries {
		if i >= len(ftsTop) {
			break
		}
		set := map[uint64]bool{}
		for _, p := range ftsTop[i] {
			set[p] = true
		}
		common := 0
		for _, p := range haluTop[i] {
			if set[p] {
				common++
			}
		}
		if d := max(len(haluTop[i]), len(ftsTop[i])); d > 0 {
			overlap += float64(common) / float64(d)
		}
	}
	overlap /= float64(len(ftsTop))

	p := pct
	haluRate := float64(n) / haluBuild.Seconds()
	ftsRate := float64(n) / ftsBuild.Seconds()
	fmt.Printf("\nindex benchmark: %d documents (%d real abstracts, then abstracts remixed from their sentences), %d queries (PubMedQA conclusions)\n", n, len(base), len(queries))
	if grow {
		fmt.Printf("vocabulary growing (HALU_BENCH_VOCAB=grow): %d terms a remixed document drawn from a Zipf law (s = %g), %d distinct synthetic terms besides the real abstracts' words\n", tailTerms, tailZipf, len(tail))
	}
	fmt.Printf("%-22s %12s %14s %14s %10s %10s\n", "engine", "ingest doc/s", "bytes/doc", "peak RSS MiB", "p50 ms", "p95 ms")
	fmt.Printf("%-22s %12.0f %14.0f %14.1f %10.2f %10.2f\n", "halu (compacted)", haluRate, float64(st.SizeBytes)/float64(n), float64(haluRSS)/1024, ms(p(lat, 0.5)), ms(p(lat, 0.95)))
	fmt.Printf("%-22s %12.0f %14.0f %14.1f %10.2f %10.2f\n", "SQLite FTS5 bm25()", ftsRate, float64(ftsSize)/float64(n), float64(ftsPeak.HWM)/1024, ms(p(ftsLat, 0.5)), ms(p(ftsLat, 0.95)))
	fmt.Printf("top-10 overlap halu vs FTS5 (%d queries): %.1f%%\n", len(ftsTop), 100*overlap)
	fmt.Printf("halu top 10, %d queries interleaved: pruned (MaxScore, all cores) p50 %.2f ms, p95 %.2f ms; exhaustive p50 %.2f ms, p95 %.2f ms (%.1f× at p50); in batches of 10: %.2f ms per query\n",
		len(pruned), ms(p(pruned, 0.5)), ms(p(pruned, 0.95)), ms(p(exhaustive, 0.5)), ms(p(exhaustive, 0.95)), float64(p(exhaustive, 0.5))/float64(p(pruned, 0.5)), ms(batchPer))
	const full = 26_000_000
	fmt.Printf("projection to the full baseline (%d abstracts, linear): halu ingest %.1f h, %.0f GiB on disk; FTS5 ingest %.1f h, %.0f GiB\n",
		full, full/haluRate/3600, float64(st.SizeBytes)/float64(n)*full/(1<<30), full/ftsRate/3600, float64(ftsSize)/float64(n)*full/(1<<30))
	// Growth measured at four sizes (the index built a quarter at a time),
	// fitted as a power law and carried to the full baseline.
	var xs, lat50 []float64
	var prev point
	for _, pt := range points {
		var each []string
		for _, r := range pt.rounds {
			each = append(each, fmt.Sprintf("%.2f", ms(r)))
		}
		fmt.Printf("  at %8.0f documents: this quarter's build %.0f docs/s (cumulative %.1f s), peak RSS %s (at most %s anonymous, %s of mapped files), pruned query p50 %.2f ms (%d queries × %d rounds; rounds' p50 %s ms)\n",
			pt.docs, (pt.docs-prev.docs)/(pt.build-prev.build).Seconds(), pt.build.Seconds(), mib(pt.mem.HWM), mib(pt.mem.Anon), mib(pt.mem.File),
			ms(pt.p50), len(queries), len(pt.rounds), strings.Join(each, ", "))
		xs, lat50 = append(xs, pt.docs), append(lat50, ms(pt.p50))
		prev = pt
	}
	var each []string
	for _, r := range compactRounds {
		each = append(each, fmt.Sprintf("%.2f", ms(r)))
	}
	last := points[len(points)-1]
	fmt.Printf("  compacted (halu index compact, %.1f s wall, %.1f µs a document, peak RSS %s: %q): pruned query p50 %.2f ms (%d queries × %d rounds; rounds' p50 %s ms) against %.2f ms before; builds and compaction %.1f µs a document\n",
		compactTook.Seconds(), 1e6*compactTook.Seconds()/last.docs, mib(compactPeak.HWM), compactSaid, ms(pct(compactLat, 0.5)), len(queries), len(compactRounds), strings.Join(each, ", "), ms(last.p50),
		1e6*(last.build+compactTook).Seconds()/last.docs)
	qa, qb := powerFit(xs, lat50)
	fmt.Printf("fitted query p50 = %.3g·N^%.2f ms (a power law through the %d measured sizes, least squares on logarithms) → %.0f ms at %d documents\n",
		qa, qb, len(points), qa*math.Pow(full, qb), full)
}

// queryRounds times every query's pruned top 10 on l, rounds times over,
// after one unmeasured pass over a fifth of them (the freshly built files
// into the page cache: one pass of 200 queries gave 20.1 ms at 750k
// documents in one run and 29.3 ms in the next, and a fit carried 26×
// further magnifies that). It returns every latency and each round's p50.
func queryRounds(t *testing.T, l *Literature, queries []string, rounds int) (lat, p50s []time.Duration) {
	t.Helper()
	ctx := context.Background()
	for i := 0; i < len(queries); i += 5 {
		if _, err := l.Search(ctx, queries[i], SearchOptions{K: 10}); err != nil {
			t.Fatal(err)
		}
	}
	for range rounds {
		var round []time.Duration
		for _, q := range queries {
			t0 := time.Now()
			if _, err := l.Search(ctx, q, SearchOptions{K: 10}); err != nil {
				t.Fatal(err)
			}
			round = append(round, time.Since(t0))
		}
		p50s = append(p50s, pct(round, 0.5))
		lat = append(lat, round...)
	}
	return lat, p50s
}

// benchDoc is the i-th document of the benchmark corpus: the real abstracts
// first, then, past them, distinct documents remixed from them — the title
// of abstract i mod len(base) over as many sentences as its abstract has,
// each drawn at random from any abstract — with PMIDs from 100,000,000 on
// (below 2³², like real ones). A corpus of exact copies would rank ties of
// identical documents, which real PubMed does not hold and which defeat
// top-k pruning; remixed documents keep the real vocabulary, sentence
// lengths and term statistics.
func benchDoc(base []Article, sentences [][]string, i int) Article {
	j := i % len(base)
	a := base[j]
	if i < len(base) {
		return a
	}
	r := rand.New(rand.NewSource(int64(i)))
	var b strings.Builder
	for range sentences[j] {
		from := sentences[r.Intn(len(sentences))]
		s := from[r.Intn(len(from))]
		if !strings.HasSuffix(s, " ") {
			s += " "
		}
		b.WriteString(s)
	}
	a.Abstract = strings.TrimSpace(b.String())
	a.PMID = 100_000_000 + uint64(i-len(base))
	return a
}

// The growing vocabulary (HALU_BENCH_VOCAB=grow): tailTerms terms a
// document, each a made-up word drawn from a Zipf law of exponent tailZipf
// over an unbounded list of them. Distinct terms then grow with the
// corpus as N^(1/s) — Heaps' law, exponent 0.8, as PubMed's vocabulary
// grows: 1.6 M distinct made-up words over 1 M documents (45 a document:
// ~1.8 M, about PubMed's at that size), where the real abstracts' words
// stop at ~70 k whatever the corpus's size, and no index cost that grows
// with the vocabulary (the terms' dictionary, the stems remembered, the
// merges) could show.
const (
	tailTerms = 45
	tailZipf  = 1.25
)

// vocabTail is the i-th document's made-up words (the same for the same
// i), each added to seen. A word is "zq" and its rank in consonants only
// (no vowel, y or s), which the analyzer keeps whole: Porter's stemmer
// changes no word without a vowel, and none is an English stop word.
func vocabTail(i int, seen map[uint64]bool) string {
	const letters = "bcdfghjklmnpqrtvwxz"
	z := rand.NewZipf(rand.New(rand.NewSource(int64(i)+1<<40)), tailZipf, 1, 1<<40)
	var b strings.Builder
	for k := range tailTerms {
		r := z.Uint64()
		seen[r] = true
		if k > 0 {
			b.WriteByte(' ')
		}
		b.WriteString("zq")
		for {
			b.WriteByte(letters[r%uint64(len(letters))])
			if r /= uint64(len(letters)); r == 0 {
				break
			}
		}
	}
	return b.String()
}

// peakRSS runs cmd and returns its combined output and its memory at its
// highest (KiB), read from /proc/PID/status every 20 ms while it runs: the
// peak resident set (VmHWM), and the highest of its two parts sampled —
// anonymous pages (RssAnon: the Go heap, stacks) and pages of mapped files
// (RssFile: the binary, the index's own segment files) — which need not
// peak together. The rusage of wait4 is not used: Go starts a child on the
// parent's address space (vfork), and Linux carries the parent's
// high-water mark into the child's at exec, so a big test process made
// every child look as big as itself.
func peakRSS(cmd *exec.Cmd) ([]byte, memPeak, error) {
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return nil, memPeak{}, err
	}
	status := fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)
	var peak memPeak
	stop := make(chan struct{})
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			if b, err := os.ReadFile(status); err == nil {
				peak.read(string(b))
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	err := cmd.Wait()
	close(stop)
	<-polled
	return out.Bytes(), peak, err
}

// mib prints a figure in KiB as MiB, "–" when it was never sampled.
func mib(kib int64) string {
	if kib <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f MiB", float64(kib)/1024)
}

// memPeak is a process's memory at its highest, in KiB (peakRSS).
type memPeak struct {
	HWM, Anon, File int64
}

// read takes the highest of each figure from one read of
// /proc/PID/status.
func (m *memPeak) read(status string) {
	for _, line := range strings.Split(status, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		v, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			continue
		}
		switch f[0] {
		case "VmHWM:":
			m.HWM = max(m.HWM, v)
		case "RssAnon:":
			m.Anon = max(m.Anon, v)
		case "RssFile:":
			m.File = max(m.File, v)
		}
	}
}

// pct is the q-quantile of d (nearest rank below).
func pct(d []time.Duration, q float64) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	if len(s) == 0 {
		return 0
	}
	return s[int(q*float64(len(s)-1))]
}

// powerFit fits y = a·x^b by least squares on logarithms and returns a, b.
func powerFit(x, y []float64) (a, b float64) {
	var sx, sy, sxx, sxy float64
	n := float64(len(x))
	for i := range x {
		lx, ly := math.Log(x[i]), math.Log(y[i])
		sx, sy, sxx, sxy = sx+lx, sy+ly, sxx+lx*lx, sxy+lx*ly
	}
	b = (n*sxy - sx*sy) / (n*sxx - sx*sx)
	a = math.Exp((sy - b*sx) / n)
	return a, b
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func fileSize(p string) int64 {
	st, err := os.Stat(p)
	if err != nil {
		return 0
	}
	return st.Size()
}

// TestBenchKGImport is part of `make bench-index`: `halu kg import` of a
// relation2pubtator3-format file of HALU_BENCH_KG_ROWS rows (2,000,000 in
// make bench-index) over 200,000 entities, in a child process, reporting
// its time and peak RSS; the import must stay within 500 MiB.
func TestBenchKGImport(t *testing.T) {
	nStr := os.Getenv("HALU_BENCH_KG_ROWS")
	if nStr == "" {
		t.Skip("set HALU_BENCH_KG_ROWS (make bench-index) to run the KG import benchmark")
	}
	n, err := strconv.Atoi(nStr)
	if err != nil || n <= 0 {
		t.Fatalf("HALU_BENCH_KG_ROWS=%q", nStr)
	}
	haluBin := os.Getenv("HALU_BENCH_HALU")
	if haluBin == "" {
		t.Fatal("HALU_BENCH_HALU must name the halu binary")
	}
	work := t.TempDir()
	rel := filepath.Join(work, "relation2pubtator3")
	f, _ := os.Create(rel)
	w := bufio.NewWriterSize(f, 1<<20)
	types := []string{"Association", "Positive_Correlation", "Negative_Correlation", "Bind", "Cotreatment"}
	entity := func(i uint64) string {
		switch i % 3 {
		case 0:
			return fmt.Sprintf("Gene|%d", i/3+1)
		case 1:
			return fmt.Sprintf("Chemical|MESH:C%06d", i/3+1)
		}
		return fmt.Sprintf("Disease|MESH:D%06d", i/3+1)
	}
	x := uint64(88172645463325252) // xorshift: the same file every run
	next := func() uint64 { x ^= x << 13; x ^= x >> 7; x ^= x << 17; return x }
	for i := 0; i < n; i++ {
		fmt.Fprintf(w, "%d\t%s\t%s\t%s\n", next()%38_000_000+1, types[next()%5], entity(next()%200_000), entity(next()%200_000))
	}
	w.Flush()
	f.Close()
	t0 := time.Now()
	cmd := exec.Command(haluBin, "kg", "import", "--out", filepath.Join(work, "kg"), rel)
	out, peak, err := peakRSS(cmd)
	rss := peak.HWM // KiB
	if err != nil {
		t.Fatalf("halu kg import: %v\n%s", err, out)
	}
	took := time.Since(t0)
	var size int64
	filepath.Walk(filepath.Join(work, "kg"), func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			size += fi.Size()
		}
		return nil
	})
	t.Logf("kg import of %d relation rows: %s (%.0f rows/s), peak RSS %.0f MiB, store %.0f MiB\n%s",
		n, took.Round(time.Millisecond), float64(n)/took.Seconds(), float64(rss)/1024, float64(size)/(1<<20), strings.TrimSpace(string(out)))
	if rss > 500*1024 {
		t.Errorf("peak RSS %.0f MiB, over 500 MiB", float64(rss)/1024)
	}
}
