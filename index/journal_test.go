package index

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// realCopies returns n copies of the first per of the 1,000 real PubMedQA
// abstracts, copy k with PMIDs moved up by k·40,000,000, so that a build has
// many real documents (and their real vocabulary) spread over files.
func realCopies(t *testing.T, n, per int) [][]Article {
	t.Helper()
	var base []Article
	err := ReadInput("../testdata/pubmed/pubmedqa_contexts.jsonl", func(op Op) error {
		base = append(base, op.Article)
		return nil
	}, func(Problem) {})
	if err != nil || len(base) != 1000 {
		t.Fatalf("%d articles, %v", len(base), err)
	}
	out := make([][]Article, n)
	for k := range out {
		for _, a := range base[:per] {
			a.PMID += uint64(k) * 40_000_000
			out[k] = append(out[k], a)
		}
	}
	return out
}

// A build on one core with more files than cores finishes: parsers start
// in input order, so the file the writer waits for always has a slot (files
// started out of order once took every slot and the build hung).
func TestBuildOnOneCore(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	// Each file holds more records than a parser may queue ahead (4,096):
	// a file parsed out of order would hold its slot.
	var inputs []string
	for f := 0; f < 4; f++ {
		var arts []Article
		for i := 0; i < 5000; i++ {
			arts = append(arts, Article{PMID: uint64(f*5000 + i + 1), Title: fmt.Sprintf("liver study %d of file %d", i, f)})
		}
		inputs = append(inputs, writeJSONL(t, arts...))
	}
	l, err := OpenLiterature(t.TempDir(), true)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	done := make(chan error, 1)
	go func() {
		_, err := l.Build(context.Background(), inputs, BuildOptions{BatchSize: 500})
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Minute):
		t.Fatal("the build hung")
	}
	// The build returned with bleve's merges done: 40 batches went in.
	adv, err := l.idx.Advanced()
	if err != nil {
		t.Fatal(err)
	}
	m := adv.(interface{ StatsMap() map[string]interface{} }).StatsMap()
	files, _ := m["num_root_filesegments"].(uint64)
	mem, _ := m["num_root_memorysegments"].(uint64)
	if active := m["index_bgthreads_active"]; active != false || files == 0 || files >= 20 || mem != 0 {
		t.Fatalf("after the build: background work %v, %d segments in files, %d in memory", active, files, mem)
	}
	st, _ := l.Stats(context.Background())
	if st.Docs != 20000 || st.Indexed != 20000 {
		t.Fatalf("stats %+v", st)
	}
}

// A build interrupted partway leaves an index whose statistics match its
// documents and which refuses queries, naming what to do; the same build run
// again resumes at the first file not fully in, and the result equals a
// clean build's: documents, statistics and the top 10 of real queries. A
// build of other files is refused while one is unfinished.
func TestInterruptedBuildResumes(t *testing.T) {
	copies := realCopies(t, 5, 500)
	inputs := []string{writeJSONL(t, copies[0]...), writeJSONL(t, copies[1]...), writeJSONL(t, copies[2]...), writeJSONL(t, copies[3]...)}
	// An update file: the first 150 articles of the first file again,
	// shorter (replacements move the corpus length), then 250 new ones.
	var upd []Article
	for _, a := range copies[0][:150] {
		a.Abstract = strings.Join(strings.Fields(a.Abstract)[:20], " ")
		upd = append(upd, a)
	}
	inputs = append(inputs, writeJSONL(t, append(upd, copies[4][:250]...)...))

	clean := build(t, t.TempDir(), 200, inputs...)
	defer clean.Close()
	want, _ := clean.Stats(context.Background())

	dir := t.TempDir()
	for _, stopAt := range []int{1000, 1000} { // Progress reports every 1,000 records
		l, err := OpenLiterature(dir, true)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		_, err = l.Build(ctx, inputs, BuildOptions{BatchSize: 200, Progress: func(n int) {
			if n >= stopAt {
				cancel()
			}
		}})
		cancel()
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("stopped at %d: %v", stopAt, err)
		}
		// A build that did not end leaves no seal: no run trusts it.
		if _, err := ReadSeal(dir); !errors.Is(err, ErrUnsealed) {
			t.Fatalf("stopped at %d: seal %v", stopAt, err)
		}
		l.Close()
		l, err = OpenLiterature(dir, true) // to build again, below
		if err != nil {
			t.Fatal(err)
		}
		st, _ := l.Stats(context.Background())
		_, serr := l.Search(context.Background(), "lace plant leaves", SearchOptions{K: 3})
		t.Logf("stopped at %d: %d docs (bleve %d), %s", stopAt, st.Docs, st.Indexed, st.Unfinished)
		if st.Docs != st.Indexed || st.Docs == 0 || st.Docs > want.Docs || st.Unfinished == "" ||
			!errors.Is(serr, ErrUnfinished) || !strings.Contains(serr.Error(), "run the same `halu index build` again") {
			t.Fatalf("after the interruption at %d: stats %+v, search error %v", stopAt, st, serr)
		}
		if _, err := l.Build(context.Background(), inputs[:2], BuildOptions{}); err == nil || !strings.Contains(err.Error(), "an earlier build did not finish") {
			t.Fatalf("a build of other files: %v", err)
		}
		l.Close()
	}
	l, err := OpenLiterature(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	info, err := l.Build(context.Background(), inputs, BuildOptions{BatchSize: 200})
	if err != nil {
		t.Fatal(err)
	}
	if !info.Inputs[0].AlreadyIn || info.Inputs[4].AlreadyIn {
		t.Errorf("resumed build: inputs %+v", info.Inputs)
	}
	got, _ := l.Stats(context.Background())
	if got.Docs != want.Docs || got.Indexed != want.Indexed || got.AvgLen != want.AvgLen || got.Unfinished != "" {
		t.Fatalf("resumed: %+v\nclean: %+v", got, want)
	}
	sameTop10(t, clean, l, 100)
}

// sameTop10 checks that two indexes return the same top 10 (PMIDs and
// scores) for the first n PubMedQA conclusions.
func sameTop10(t *testing.T, a, b *Literature, n int) {
	t.Helper()
	for i, q := range pubmedQAConclusions(t)[:n] {
		ha, err := a.Search(context.Background(), q.LongAnswer, SearchOptions{K: 10})
		if err != nil {
			t.Fatal(err)
		}
		hb, err := b.Search(context.Background(), q.LongAnswer, SearchOptions{K: 10})
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(top(ha)) != fmt.Sprint(top(hb)) {
			t.Fatalf("query %d: %v\nvs clean %v", i, top(hb), top(ha))
		}
	}
}

func top(hs []Hit) []string {
	var out []string
	for _, h := range hs {
		out = append(out, fmt.Sprintf("%d:%.9f", h.PMID, h.Score))
	}
	return out
}
