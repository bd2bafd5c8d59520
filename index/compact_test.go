package index

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Compaction merges a built index's segments into one and seals it anew;
// every search returns the same hits with the same scores, replaced
// articles stay replaced; an index with a damaged segment is refused
// untouched, one whose compaction did not end says so and is finished by
// compacting again, and a directory without an index is not made one.
func TestCompact(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	// 9,000 documents (the real abstracts, then remixed ones) in three
	// builds, each settled into its own segments before the next (bleve
	// merges a build's batches in memory as fast as it is written, so one
	// build alone may leave one segment, and the policy's budget for
	// 9,000 documents is five); then an update build replaces ten
	// articles (their old documents deleted in the old segments).
	base, sentences := pubmedQABase(t)
	var first []Article
	var l *Literature
	for part := range 3 {
		var docs []Article
		for i := part * 3000; i < (part+1)*3000; i++ {
			a := benchDoc(base, sentences, i)
			docs = append(docs, a)
			if i < 10 {
				a.Title = "Compaction keeps replaced articles replaced " + a.Title
				first = append(first, a)
			}
		}
		if l == nil {
			l = build(t, dir, 500, writeJSONL(t, docs...))
		} else if _, err := l.Build(ctx, []string{writeJSONL(t, docs...)}, BuildOptions{BatchSize: 500}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.Build(ctx, []string{writeJSONL(t, first...)}, BuildOptions{BatchSize: 5}); err != nil {
		t.Fatal(err)
	}
	l.Close()

	queries := []string{"replaced articles compaction"}
	f, err := os.Open("../testdata/pubmed/pubmedqa_long_answers.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() && len(queries) < 60 {
		var q struct {
			LongAnswer string `json:"long_answer"`
		}
		if err := json.Unmarshal(s.Bytes(), &q); err != nil {
			t.Fatal(err)
		}
		queries = append(queries, q.LongAnswer)
	}
	f.Close()
	search := func() [][]Hit {
		t.Helper()
		l, err := OpenLiterature(dir, false)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		var out [][]Hit
		for _, q := range queries {
			for _, opt := range []SearchOptions{{K: 10}, {K: 32, BelowPMID: 25000000}} {
				hits, err := l.Search(ctx, q, opt)
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, hits)
			}
		}
		return out
	}
	before := search()
	sealBefore, err := ReadSeal(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(sealBefore.Segments) < 2 {
		t.Fatalf("the test wants several segments, the builds left %d", len(sealBefore.Segments))
	}

	// A damaged segment: refused, the index as it was.
	damaged := filepath.Join(t.TempDir(), "damaged")
	copyTree(t, dir, damaged)
	seg := filepath.Join(damaged, bleveDir, "store", sealBefore.Segments[0].Name)
	b, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(seg, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Compact(ctx, damaged); !errors.Is(err, ErrDamaged) {
		t.Fatalf("a damaged segment compacted: %v", err)
	}
	if s, err := ReadSeal(damaged); err != nil || s.Digest != sealBefore.Digest {
		t.Errorf("after a refused compaction the seal is %v, %v", s.Digest, err)
	}
	if _, err := os.Stat(filepath.Join(damaged, compactingFile)); err == nil {
		t.Error("a refused compaction left its marker")
	}

	info, err := Compact(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if info.SegmentsBefore != len(sealBefore.Segments) || info.SegmentsAfter != 1 || info.Docs != sealBefore.Docs {
		t.Errorf("compacted %+v; the seal before: %d segments, %d documents", info, len(sealBefore.Segments), sealBefore.Docs)
	}
	sealAfter, err := ReadSeal(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(sealAfter.Segments) != 1 || sealAfter.Docs != sealBefore.Docs || sealAfter.Digest == sealBefore.Digest {
		t.Errorf("seal after: %+v; before: %+v", sealAfter, sealBefore)
	}
	if _, err := os.Stat(filepath.Join(dir, compactingFile)); err == nil {
		t.Error("a compaction that ended left its marker")
	}
	after := search()
	for i := range before {
		if len(before[i]) != len(after[i]) {
			t.Fatalf("search %d: %d hits before, %d after", i, len(before[i]), len(after[i]))
		}
		for r := range before[i] {
			x, y := before[i][r], after[i][r]
			if x.PMID != y.PMID || x.Score != y.Score || x.Title != y.Title {
				t.Errorf("search %d rank %d: PMID %d score %v %q before, %d %v %q after", i, r+1, x.PMID, x.Score, x.Title, y.PMID, y.Score, y.Title)
			}
		}
	}
	if len(after[0]) == 0 || !strings.HasPrefix(after[0][0].Title, "Compaction keeps") {
		t.Errorf("a replaced article's new text is not the top hit: %+v", after[0])
	}

	// A compaction that did not end: the marker there; a seal that does
	// not match the segments is still refused, and none is allowed.
	if err := os.WriteFile(filepath.Join(dir, compactingFile), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	sealed, _ := os.ReadFile(SealPath(dir))
	other := sealAfter
	other.Docs--
	other.Digest = other.digest()
	b, _ = json.Marshal(other)
	if err := os.WriteFile(SealPath(dir), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Compact(ctx, dir); !errors.Is(err, ErrDamaged) {
		t.Errorf("compacted against a seal of other documents: %v", err)
	}
	if err := os.WriteFile(SealPath(dir), sealed, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(SealPath(dir)); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenLiterature(dir, false); !errors.Is(err, ErrUnsealed) || !strings.Contains(err.Error(), "halu index compact "+dir) {
		t.Errorf("an index whose compaction did not end: %v", err)
	}
	if _, err := Compact(ctx, dir); err != nil {
		t.Fatalf("compacting again: %v", err)
	}
	if s, err := ReadSeal(dir); err != nil || s.Digest != sealAfter.Digest {
		t.Errorf("compacted again: seal %v, %v", s.Digest, err)
	}

	// No index here: an error, and no index made.
	empty := filepath.Join(t.TempDir(), "none")
	if _, err := Compact(ctx, empty); err == nil {
		t.Error("compacted a directory with no index")
	}
	if _, err := os.Stat(empty); err == nil {
		t.Error("compaction made a directory")
	}
}

// copyTree copies the regular files under src to dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A new index is made whole under another name and renamed into place: a
// build killed while bleve wrote its first files leaves only that
// temporary (here, one cut short), which the next build removes and
// starts over from.
func TestCreateLeavesNoHalfMadeIndex(t *testing.T) {
	dir := t.TempDir()
	tmp := filepath.Join(dir, bleveDir+".creating")
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "index_meta.json"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenLiterature(dir, false); err == nil || !strings.Contains(err.Error(), "no index here") {
		t.Errorf("a directory holding only the temporary, opened to search: %v", err)
	}
	l := build(t, dir, 500, "../testdata/pubmed/pubmedqa_contexts.jsonl")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(tmp); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the temporary is still there: %v", err)
	}
	l, err := OpenLiterature(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if st, err := l.Stats(context.Background()); err != nil || st.Docs != 1000 {
		t.Errorf("the index built after: %+v, %v", st, err)
	}
}
