package index

import (
	"bufio"
	"encoding/json"
	"math/rand"
	"os"
	"reflect"
	"testing"
)

// TestDecodeArticleLine holds the JSONL fast path to encoding/json: on
// every line of the real JSONL files at hand, and on 200,000 lines made
// from them by random edits (escapes of every kind, surrogates, invalid
// UTF-8, control characters, numbers JSON refuses, other and repeated
// keys, null, broken syntax), a line it decodes is decoded exactly as
// encoding/json decodes it, and encoding/json accepts it. Most real lines
// take the fast path.
func TestDecodeArticleLine(t *testing.T) {
	var lines [][]byte
	for _, src := range []string{"../testdata/pubmed/pubmedqa_contexts.jsonl", "../testdata/pubmed/pubmedqa_long_answers.jsonl", "../../shared/data/pubmed/abstracts_combined.jsonl"} {
		f, err := os.Open(src)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<24)
		for sc.Scan() {
			lines = append(lines, append([]byte(nil), sc.Bytes()...))
		}
		f.Close()
	}
	if len(lines) < 1000 {
		t.Fatalf("%d real lines read", len(lines))
	}
	check := func(line []byte) bool {
		t.Helper()
		var fast, ref jsonArticle
		if !decodeArticleLine(line, &fast) {
			return false
		}
		if err := json.Unmarshal(line, &ref); err != nil {
			t.Fatalf("fast path took a line encoding/json refuses (%v): %q", err, line)
		}
		if !reflect.DeepEqual(fast, ref) {
			t.Fatalf("line %q: fast %+v, encoding/json %+v", line, fast, ref)
		}
		return true
	}
	took := 0
	for _, l := range lines {
		if check(l) {
			took++
		}
	}
	if took < len(lines)*9/10 {
		t.Errorf("the fast path took %d of %d real lines", took, len(lines))
	}
	edits := []string{`\u00e9`, `\u00E9x`, `\ud83d\ude00`, `\udc00`, `\u12`, `\u0000`, `\"`, `\\`, `\/`, `\b\f\n\r\t`, `\x`, `\`,
		"\n", "\t", "\x01", "\xff", "é", "α", " ", `,"x":1`, `,"Title":"T"`, `,"title":"again"`, `,"pmid":7`, `"`, `{`, `}`, `:`, `,`,
		`null`, `0`, `01`, `-1`, `1.5`, `1e3`, `"12"`, `true`, `[1]`, `,"sources":["a","b"]`, `,"sources":[]`, `,"s":[`, `,"PMID":"3"`, `,"ſ":"x"`}
	r := rand.New(rand.NewSource(7))
	fast := 0
	for i := 0; i < 200_000; i++ {
		l := append([]byte(nil), lines[r.Intn(len(lines))]...)
		if len(l) > 400 {
			l = append(l[:200:200], l[len(l)-200:]...) // keep both ends: keys and the close
		}
		for k := r.Intn(3) + 1; k > 0; k-- {
			at := r.Intn(len(l) + 1)
			e := edits[r.Intn(len(edits))]
			l = append(l[:at:at], append([]byte(e), l[at:]...)...)
		}
		if check(l) {
			fast++
		}
	}
	t.Logf("fast path: %d of %d real lines, %d of 200000 edited ones", took, len(lines), fast)
	if fast == 0 {
		t.Error("no edited line took the fast path")
	}
}
