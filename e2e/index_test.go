//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"halu/index"
)

// A literature build killed (SIGKILL) at three points, then run again with
// the same command each time, ends with an index equal to a clean build's:
// document count, corpus statistics and the top 10 of 100 real queries.
// After each kill the statistics match the documents the index holds, and a
// search is refused, naming the command that finishes the build.
func TestIndexBuildSurvivesKill(t *testing.T) {
	work := t.TempDir()
	var base []string
	f, err := os.Open("../testdata/pubmed/pubmedqa_contexts.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		base = append(base, sc.Text())
	}
	f.Close()
	// Four files of 5,000 real abstracts (copies with PMIDs moved up),
	// the last one an update that also replaces articles of the first.
	var inputs []string
	for k := 0; k < 4; k++ {
		var b strings.Builder
		for c := 0; c < 5; c++ {
			for i, line := range base {
				var a map[string]any
				json.Unmarshal([]byte(line), &a)
				var pmid int
				fmt.Sscan(fmt.Sprint(a["pmid"]), &pmid)
				shift := (k*5 + c) * 40_000_000
				if k == 3 && c == 0 && i < 500 {
					shift = 0 // replaces an article of the first file
					a["abstract"] = strings.Join(strings.Fields(fmt.Sprint(a["abstract"]))[:30], " ")
				}
				a["pmid"] = pmid + shift
				out, _ := json.Marshal(a)
				b.Write(append(out, '\n'))
			}
		}
		p := filepath.Join(work, fmt.Sprintf("part%d.jsonl", k))
		os.WriteFile(p, []byte(b.String()), 0o644)
		inputs = append(inputs, p)
	}
	clean := filepath.Join(work, "clean")
	start := time.Now()
	mustHalu(t, "127.0.0.1:1", append([]string{"index", "build", "--out", clean}, inputs...)...)
	whole := time.Since(start)
	t.Logf("clean build of 20,000 documents: %s", whole.Round(time.Millisecond))

	dir := filepath.Join(work, "killed")
	killed := 0
	for i, frac := range []float64{0.1, 0.45, 0.45} {
		cmd := exec.Command(haluBin, append([]string{"index", "build", "--out", dir}, inputs...)...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(frac * float64(whole)))
		cmd.Process.Kill() // SIGKILL
		cmd.Wait()
		var st index.Stats
		r := halu(t, "127.0.0.1:1", "index", "stats", dir)
		if r.code != 0 && strings.Contains(r.stderr, "no index here") {
			// Killed before its index was made (it is made whole, under
			// another name, then renamed into place): nothing to read.
			t.Logf("kill %d at %.0f%% of a clean build's time: before the index was made", i+1, 100*frac)
			continue
		}
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &st) != nil {
			t.Fatalf("stats after kill %d: exit %d\n%s%s", i+1, r.code, r.stdout, r.stderr)
		}
		s := halu(t, "127.0.0.1:1", "index", "search", dir, "lace plant leaves")
		t.Logf("kill %d at %.0f%% of a clean build's time: %d documents (bleve holds %d); %s", i+1, 100*frac, st.Docs, st.Indexed, st.Unfinished)
		if st.Docs != st.Indexed {
			t.Fatalf("kill %d: statistics say %d documents, the index holds %d", i+1, st.Docs, st.Indexed)
		}
		if st.Unfinished != "" {
			killed++
			if s.code == 0 || !strings.Contains(s.stderr, "run the same `halu index build` again") {
				t.Fatalf("kill %d: a search of the unfinished index: exit %d\n%s%s", i+1, s.code, s.stdout, s.stderr)
			}
		}
	}
	if killed == 0 {
		t.Fatal("no kill landed inside a build")
	}
	mustHalu(t, "127.0.0.1:1", append([]string{"index", "build", "--out", dir}, inputs...)...)

	a, err := index.OpenLiterature(clean, false)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := index.OpenLiterature(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	sa, _ := a.Stats(context.Background())
	sb, _ := b.Stats(context.Background())
	if sa.Docs != sb.Docs || sa.Indexed != sb.Indexed || sa.AvgLen != sb.AvgLen || sb.Unfinished != "" || sa.Docs != 19500 {
		t.Fatalf("after the kills: %d docs (bleve %d), avg len %v, %q; clean: %d (%d), %v", sb.Docs, sb.Indexed, sb.AvgLen, sb.Unfinished, sa.Docs, sa.Indexed, sa.AvgLen)
	}
	var queries []string
	ql, _ := os.ReadFile("../testdata/pubmed/pubmedqa_long_answers.jsonl")
	for _, line := range strings.Split(string(ql), "\n") {
		var q struct {
			LongAnswer string `json:"long_answer"`
		}
		if json.Unmarshal([]byte(line), &q) == nil && q.LongAnswer != "" {
			queries = append(queries, q.LongAnswer)
		}
	}
	if len(queries) < 100 {
		t.Fatalf("%d queries", len(queries))
	}
	for i, q := range queries[:100] {
		ha, err := a.Search(context.Background(), q, index.SearchOptions{K: 10})
		if err != nil {
			t.Fatal(err)
		}
		hb, err := b.Search(context.Background(), q, index.SearchOptions{K: 10})
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(ha) != fmt.Sprint(hb) {
			t.Fatalf("query %d: top 10 differ after the kills:\n%v\nclean:\n%v", i, hb, ha)
		}
	}
}
