package kg

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"halu/index"
)

func openKG(t *testing.T, files ...string) *KG {
	t.Helper()
	g, err := Open(t.TempDir(), true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	if _, err := g.Import(context.Background(), files); err != nil {
		t.Fatal(err)
	}
	return g
}

// importSample imports the BioRED sample into a store at dir and closes it,
// leaving the sealed store on disk.
func importSample(tb testing.TB, dir string) {
	tb.Helper()
	g, err := Open(dir, true)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := g.Import(context.Background(), []string{"../../testdata/kg/biored_train_sample.pubtator"}); err != nil {
		tb.Fatal(err)
	}
	if err := g.Close(); err != nil {
		tb.Fatal(err)
	}
}

func TestNormalizeIDAndLabels(t *testing.T) {
	tests := map[[2]string]string{
		{"DiseaseOrPhenotypicFeature", "D003924"}: "Disease|MESH:D003924",
		{"GeneOrGeneProduct", "3175"}:             "Gene|3175",
		{"", "Chemical|MESH:D005947"}:             "Chemical|MESH:D005947",
		{"SequenceVariant", "c|DEL|4153|A"}:       "Variant|c|DEL|4153|A",
		{"Disease", "OMIM:604370"}:                "Disease|OMIM:604370",
	}
	for in, want := range tests {
		if got := NormalizeID(in[0], in[1]); got != want {
			t.Errorf("NormalizeID(%q, %q) = %q, want %q", in[0], in[1], got, want)
		}
	}
	labels := []struct{ rel, h, t, want string }{
		{"Positive_Correlation", "Disease|MESH:D1", "Gene|1", "stimulate"},
		{"Negative_Correlation", "Disease|MESH:D1", "Gene|1", "inhibit"},
		{"Positive_Correlation", "Chemical|MESH:D1", "Gene|1", "positive_correlate"},
		{"Negative_Correlation", "Gene|2", "Gene|1", "negative_correlate"},
		{"Positive_Correlation", "Chemical|MESH:D1", "Disease|MESH:D2", "cause"},
		{"Negative_Correlation", "Chemical|MESH:D1", "Disease|MESH:D2", "treat"},
		{"Association", "Chemical|MESH:D1", "Disease|MESH:D2", "associate"},
		{"Bind", "Chemical|MESH:D1", "Gene|3", "interact"},
		{"Drug_Interaction", "Chemical|MESH:D1", "Chemical|MESH:D2", "drug_interaction"},
	}
	for _, l := range labels {
		if got := RelationLabel(l.rel, l.h, l.t); got != l.want {
			t.Errorf("RelationLabel(%s, %s, %s) = %s, want %s", l.rel, l.h, l.t, got, l.want)
		}
	}
}

func TestKGFromBioRED(t *testing.T) {
	g := openKG(t, "../../testdata/kg/biored_train_sample.pubtator")
	// 10491763: "10491763 Association 3175 D003924" with 3175 a gene and
	// D003924 a disease (type II diabetes): oriented Disease → Gene.
	edges, err := g.EdgesAmong([]string{"Gene|3175", "Disease|MESH:D003924", "Gene|999"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(edges) != 1 || edges[0].Head != "Disease|MESH:D003924" || edges[0].Tail != "Gene|3175" ||
		edges[0].Relation != "associate" || len(edges[0].PMIDs) != 1 || edges[0].PMIDs[0] != 10491763 {
		t.Fatalf("edges = %+v", edges)
	}
	// The cutoff is strict: support from PMID 10491763 does not count below it.
	if edges, _ := g.EdgesAmong([]string{"Gene|3175", "Disease|MESH:D003924"}, 10491763); len(edges) != 0 {
		t.Fatalf("cutoff: %+v", edges)
	}
	// Names, case-insensitive; synonyms (several names) map to one id.
	for _, name := range []string{"Type II Diabetes", "maturity-onset diabetes"} {
		nodes := g.Lookup(name)
		if len(nodes) == 0 || nodes[0].ID != "Disease|MESH:D003924" {
			t.Fatalf("Lookup(%q) = %+v", name, nodes)
		}
	}
	// A claim written in words finds its entities.
	found := map[string]bool{}
	for _, n := range g.EntitiesIn("Variation in HNF-6 raises the risk of type II diabetes.") {
		found[n.ID] = true
	}
	if !found["Gene|3175"] || !found["Disease|MESH:D003924"] {
		t.Fatalf("EntitiesIn found %v", found)
	}
	// A multi-id mention (MODY → 3172,3651,6927) names each gene.
	if n := g.Lookup("MODY"); len(n) != 3 {
		t.Fatalf("MODY: %+v", n)
	}
	st, _ := g.Stats()
	if st.Edges == 0 || st.Nodes == 0 || st.Names == 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestKGFormats(t *testing.T) {
	dir := t.TempDir()
	rel := filepath.Join(dir, "relation2pubtator3")
	os.WriteFile(rel, []byte("100\tPositive_Correlation\tChemical|MESH:D000001\tGene|7\n"+
		"200\tPositive_Correlation\tGene|7\tChemical|MESH:D000001\n"+
		"garbage line\n"), 0o644)
	names := filepath.Join(dir, "names.tsv")
	os.WriteFile(names, []byte("id\tname\ttype\nMESH:D000001\tCalcimycin\tChemical\n7\tTP53\tGene\n"), 0o644)
	g, err := Open(t.TempDir(), true)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	info, err := g.Import(context.Background(), []string{rel, names, "../../testdata/kg/pubtator3.37026113_240614.pubtator", "../../testdata/kg/netmedex_edges_sample.tsv"})
	if err != nil {
		t.Fatal(err)
	}
	if info.Skipped != 1 || !strings.Contains(info.Problems[0].String(), "relation2pubtator3:3") {
		t.Fatalf("problems %+v", info.Problems)
	}
	// Both rows are one edge (same orientation), supported by two articles.
	e, _ := g.EdgesAmong([]string{"Gene|7", "Chemical|MESH:D000001"}, 0)
	if len(e) != 1 || e[0].Relation != "positive_correlate" || len(e[0].PMIDs) != 2 {
		t.Fatalf("edges %+v", e)
	}
	if n := g.Lookup("calcimycin"); len(n) != 1 || n[0].ID != "Chemical|MESH:D000001" {
		t.Fatalf("name table: %+v", n)
	}
	// PubTator 3 export: 37026113 Association MESH:D010024 (GIOP, a disease) 5594 (gene).
	e, _ = g.EdgesAmong([]string{"Disease|MESH:D010024", "Gene|5594"}, 0)
	if len(e) != 1 || e[0].Relation != "associate" {
		t.Fatalf("pubtator3 edges %+v", e)
	}
	// Header TSV: 39780051 Chemical|MESH:D013657 → Disease|MESH:D009369 associate.
	e, _ = g.EdgesAmong([]string{"Chemical|MESH:D013657", "Disease|MESH:D009369"}, 0)
	if len(e) != 1 || e[0].PMIDs[0] != 39780051 {
		t.Fatalf("tsv edges %+v", e)
	}
}

func TestKGChains(t *testing.T) {
	// A hand-made graph: A–B (2 articles), B–C (1), A–C (1), A–D (1), D–C (3).
	p := filepath.Join(t.TempDir(), "rel")
	os.WriteFile(p, []byte(strings.Join([]string{
		"1\tAssociation\tGene|A\tGene|B", "2\tAssociation\tGene|A\tGene|B",
		"3\tBind\tGene|B\tGene|C",
		"4\tPositive_Correlation\tGene|A\tGene|C",
		"5\tAssociation\tGene|A\tGene|D",
		"6\tAssociation\tGene|D\tGene|C", "7\tAssociation\tGene|D\tGene|C", "8\tAssociation\tGene|D\tGene|C",
	}, "\n")+"\n"), 0o644)
	g := openKG(t, p)
	chains, err := g.Chains("Gene|A", "Gene|C", 2, 10, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Support (distinct articles): A–D–C 4, A–B–C 3, A–C 1. PubTator pairs
	// are undirected and stored in type-then-id order, so C–D is stored C → D
	// and walked backwards here.
	want := []string{
		"Gene|A —associate→ Gene|D ←associate— Gene|C",
		"Gene|A —associate→ Gene|B —interact→ Gene|C",
		"Gene|A —positive_correlate→ Gene|C",
	}
	if len(chains) != 3 {
		t.Fatalf("chains %v", chains)
	}
	for i, w := range want {
		if chains[i].String() != w {
			t.Errorf("chain %d = %q, want %q", i, chains[i].String(), w)
		}
	}
	// At most N; one hop only; cutoff drops the articles 6–8 and with them D–C.
	if c, _ := g.Chains("Gene|A", "Gene|C", 2, 1, 0); len(c) != 1 {
		t.Fatalf("max chains: %d", len(c))
	}
	if c, _ := g.Chains("Gene|A", "Gene|C", 1, 10, 0); len(c) != 1 || len(c[0].Edges) != 1 {
		t.Fatalf("one hop: %v", c)
	}
	c, _ := g.Chains("Gene|A", "Gene|C", 2, 10, 6)
	if len(c) != 2 {
		t.Fatalf("cutoff: %v", c)
	}
	// The authors' search follows edges x → y only: A–D–C walks D–C
	// backwards, so it is not a forward chain, and nothing leads from C to A.
	fw, err := g.ForwardChains("Gene|A", "Gene|C", 2, 10, 0)
	if err != nil || len(fw) != 2 || fw[0].String() != want[1] || fw[1].String() != want[2] {
		t.Fatalf("forward chains %v %v", fw, err)
	}
	if fw, _ := g.ForwardChains("Gene|C", "Gene|A", 2, 10, 0); len(fw) != 0 {
		t.Fatalf("forward chains C → A: %v", fw)
	}
	// Walking an edge against its direction is shown as such.
	c, _ = g.Chains("Gene|C", "Gene|A", 1, 10, 0)
	if len(c) != 1 || c[0].String() != "Gene|C ←positive_correlate— Gene|A" {
		t.Fatalf("reverse: %v", c)
	}
}

// A damaged mention line (a column lost) is not read as a relation, a
// relation naming an entity its document never mentions is not an edge,
// and a file in no format halu reads is refused before anything is written.
func TestKGRejectsDamage(t *testing.T) {
	dir := t.TempDir()
	doc := filepath.Join(dir, "doc.pubtator")
	os.WriteFile(doc, []byte("10|t|Iodide and TSH\n10|a|Iodide raises TSH.\n"+
		"10\t0\t6\tIodide\tChemical\tMESH:D007454\n"+
		"10\t11\t14\tTSH\tGene\t7253\n"+
		"10\t214\t208\tiodide\tMESH:D007454\n"+ // a mention line with its type column lost
		"10\tPositive_Correlation\tMESH:D007454\t7253\n"+
		"10\tAssociation\tMESH:D007454\t9999\n"), 0o644) // 9999 is mentioned nowhere
	g, err := Open(t.TempDir(), true)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	info, err := g.Import(context.Background(), []string{doc})
	if err != nil {
		t.Fatal(err)
	}
	if info.Edges != 1 || info.Skipped != 2 || info.Problems[0].Line != 5 || info.Problems[1].Line != 7 {
		t.Fatalf("info %+v", info)
	}
	st, _ := g.Stats()
	if st.Edges != 1 {
		t.Fatalf("%d edges, want 1", st.Edges)
	}
	e, _ := g.EdgesAmong([]string{"Chemical|MESH:D007454", "Gene|7253"}, 0)
	if len(e) != 1 || e[0].Relation != "positive_correlate" {
		t.Fatalf("edges %+v", e)
	}

	// A JSON export is not a format halu reads: refused, nothing written,
	// even when it comes after a good file.
	g2, err := Open(t.TempDir(), true)
	if err != nil {
		t.Fatal(err)
	}
	defer g2.Close()
	js := filepath.Join(dir, "export.json")
	os.WriteFile(js, []byte(`{"PubTator3": [{"id": "37026113", "passages": []}]}`+"\n"), 0o644)
	_, err = g2.Import(context.Background(), []string{doc, js})
	if !errors.Is(err, ErrFormat) {
		t.Fatalf("JSON input: %v", err)
	}
	if st, _ := g2.Stats(); st.Edges != 0 {
		t.Fatalf("a refused import wrote %d edges", st.Edges)
	}
}

// An import whose sort spills a run every few records (and merges them)
// gives the store an import in one run gives: the same entries in every
// bucket, real BioRED and PubTator 3 files imported twice over (the second
// import merges PMIDs into edges already there).
func TestKGImportMergesSortedRuns(t *testing.T) {
	files := []string{"../../testdata/kg/biored_train_sample.pubtator", "../../testdata/kg/pubtator3.37026113_240614.pubtator", "../../testdata/kg/netmedex_edges_sample.tsv"}
	dump := func(small bool) map[string][]string {
		g, err := Open(t.TempDir(), true)
		if err != nil {
			t.Fatal(err)
		}
		defer g.Close()
		if small {
			g.sortLimit = 300
		}
		for i := 0; i < 2; i++ {
			if _, err := g.Import(context.Background(), files); err != nil {
				t.Fatal(err)
			}
		}
		out := map[string][]string{}
		g.db.View(func(tx *bolt.Tx) error {
			for _, b := range [][]byte{bucketEdge, bucketAdj, bucketNode, bucketName} {
				tx.Bucket(b).ForEach(func(k, v []byte) error {
					out[string(b)] = append(out[string(b)], fmt.Sprintf("%q=%x", k, v))
					return nil
				})
			}
			return nil
		})
		return out
	}
	one, many := dump(false), dump(true)
	for b, entries := range one {
		if len(entries) == 0 || fmt.Sprint(entries) != fmt.Sprint(many[b]) {
			t.Errorf("bucket %s: %d entries in one run, %d merged from many", b, len(entries), len(many[b]))
		}
	}
}

// A damaged kg.db — empty, cut short, bytes overwritten, not a bbolt file
// — is refused by Open against its checksum (ErrDamaged); and below the
// checksum, bbolt's open of it is an ErrDamaged from the open or from the
// first read that reaches the damage (and every read after it), never a
// panic and never an empty graph.
func TestDamagedStoreIsAnErrorNeverAPanic(t *testing.T) {
	src := t.TempDir()
	importSample(t, src)
	whole, err := os.ReadFile(filepath.Join(src, kgFile))
	if err != nil {
		t.Fatal(err)
	}
	for name, damage := range map[string]func([]byte) []byte{
		"empty":     func([]byte) []byte { return nil },
		"cut short": func(b []byte) []byte { return b[:len(b)/3] },
		"not bbolt": func([]byte) []byte { return []byte(strings.Repeat("PMID\tx_id\ty_id\n", 400)) },
		"data pages overwritten": func(b []byte) []byte {
			b = append([]byte(nil), b...)
			for i := 4 * 4096; i < len(b); i += 7 {
				b[i] ^= 0x5a
			}
			return b
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, kgFile), damage(whole), 0o644); err != nil {
				t.Fatal(err)
			}
			sum, _ := os.ReadFile(filepath.Join(src, checksumFile))
			os.WriteFile(filepath.Join(dir, checksumFile), sum, 0o644)
			before, _ := os.ReadFile(filepath.Join(dir, kgFile))
			if _, err := Open(dir, false); !errors.Is(err, ErrDamaged) {
				t.Fatalf("Open against the checksum: %v, want ErrDamaged", err)
			}
			g, err := openBolt(dir, false)
			if err == nil {
				defer g.Close()
				nodes := g.Lookup("type II diabetes")
				_, qerr := g.EdgesAmong([]string{"Disease|MESH:D003924", "Gene|3630"}, 0)
				if g.Err() == nil || !errors.Is(qerr, ErrDamaged) {
					t.Fatalf("reads of a damaged store: %d nodes, Err %v, EdgesAmong %v", len(nodes), g.Err(), qerr)
				}
				err = g.Err()
			}
			if !errors.Is(err, ErrDamaged) {
				t.Fatalf("Open: %v, want ErrDamaged", err)
			}
			if after, _ := os.ReadFile(filepath.Join(dir, kgFile)); string(after) != string(before) {
				t.Error("a read-only open changed the file")
			}
			t.Logf("%v", err)
		})
	}
}

// FuzzReadKGFile: whatever a knowledge-graph input holds, the reader gives
// edges and mentions, skips lines it reports, or refuses the file
// (ErrFormat); never a panic.
func FuzzReadKGFile(f *testing.F) {
	for _, p := range []string{"../../testdata/kg/biored_train_sample.pubtator"} {
		b, err := os.ReadFile(p)
		if err == nil {
			f.Add(b[:min(len(b), 4000)])
		}
	}
	f.Add([]byte("pmid\tx_id\ty_id\trelation\n1\tGene|1\tGene|2\tAssociation\n"))
	f.Add([]byte("123|t|Title\n123\t0\t4\tSalt\tChemical\tD012\n123\tAssociation\tD012\t7\n\n"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(dir, "in.txt")
		os.WriteFile(p, b, 0o644)
		_, err := readKGFile(p, 0, func(edgeRow) error { return nil }, func(mention) error { return nil }, func(index.Problem) {})
		if err != nil && !errors.Is(err, ErrFormat) {
			t.Fatalf("an error that is not ErrFormat: %v", err)
		}
	})
}

// FuzzOpenStore: whatever bytes kg.db holds, bbolt's open (below the
// checksum Open verifies first) and a read either work or give
// ErrDamaged; never a panic, never a crash.
func FuzzOpenStore(f *testing.F) {
	src := f.TempDir()
	importSample(f, src)
	whole, _ := os.ReadFile(filepath.Join(src, kgFile))
	f.Add(whole, 16384, byte(0x5a))
	f.Add(whole, 0, byte(0xff))
	f.Add(whole[:8192], 100, byte(1))
	f.Fuzz(func(t *testing.T, db []byte, at int, x byte) {
		db = append([]byte(nil), db...)
		for i := max(0, at); i < len(db) && i < max(0, at)+512; i++ {
			db[i] ^= x
		}
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, kgFile), db, 0o644)
		g, err := openBolt(dir, false)
		if err != nil {
			if !errors.Is(err, ErrDamaged) {
				t.Fatalf("Open: not ErrDamaged: %v", err)
			}
			return
		}
		defer g.Close()
		g.Lookup("type II diabetes")
		if _, err := g.Stats(); err != nil && !errors.Is(err, ErrDamaged) {
			t.Fatalf("Stats: %v", err)
		}
		if _, err := g.Chains("Disease|MESH:D003924", "Gene|3630", 2, 8, 0); err != nil && !errors.Is(err, ErrDamaged) {
			t.Fatalf("Chains: %v", err)
		}
	})
}

// SearchNodes ranks nodes by BM25 over their type, concept id and names.
// Three nodes (documents "gene 7 tp53", "gene 8 tumor protein p63",
// "chemical mesh d000001 calcimycin": N 3, mean length 4); the query "Gene
// TP53" by hand, k1 1.2, b 0.75: idf(gene) = ln 1.6, idf(tp53) = ln(8/3);
// Gene|7 (length 3) 1.616118, Gene|8 (length 5) 0.426395; with pyserini's
// k1 0.9, b 0.4: 1.522974 and 0.448747.
func TestSearchNodes(t *testing.T) {
	names := filepath.Join(t.TempDir(), "names.tsv")
	os.WriteFile(names, []byte("id\tname\ttype\n7\tTP53\tGene\n8\ttumor protein p63\tGene\nMESH:D000001\tCalcimycin\tChemical\n"), 0o644)
	g := openKG(t, names)
	for _, c := range []struct {
		p    index.BM25Params
		want [2]float64
	}{{index.TextbookBM25, [2]float64{1.616118, 0.426395}}, {index.PyseriniBM25, [2]float64{1.522974, 0.448747}}} {
		hits, err := g.SearchNodes("Gene TP53", 100, c.p)
		if err != nil || len(hits) != 2 || hits[0].ID != "Gene|7" || hits[1].ID != "Gene|8" ||
			math.Abs(hits[0].Score-c.want[0]) > 1e-6 || math.Abs(hits[1].Score-c.want[1]) > 1e-6 {
			t.Fatalf("%v: %+v %v", c.p, hits, err)
		}
	}
	if hits, _ := g.SearchNodes("Gene TP53", 1, index.TextbookBM25); len(hits) != 1 {
		t.Errorf("k 1: %+v", hits)
	}
	if hits, _ := g.SearchNodes("MESH:D000001", 100, index.TextbookBM25); len(hits) != 1 || hits[0].ID != "Chemical|MESH:D000001" {
		t.Errorf("by id: %+v", hits)
	}
	if hits, err := g.SearchNodes("insulin", 100, index.TextbookBM25); err != nil || len(hits) != 0 {
		t.Errorf("no term: %+v %v", hits, err)
	}
	// A graph imported before the index: refused as input, with the remedy.
	g.update(func(tx *bolt.Tx) error { return tx.DeleteBucket(bucketNodeTerm) })
	if _, err := g.SearchNodes("TP53", 100, index.TextbookBM25); !errors.Is(err, ErrNoNodeIndex) {
		t.Errorf("no index: %v", err)
	}
}

// Copies of a store with 200 random bytes overwritten inside its used
// pages, at several seeds: every one is refused by Open (ErrDamaged, naming
// the checksum) — never read as a different graph; an import into one is
// the same clear error, never a panic. A store whose import did not end
// (no checksum) is refused too (ErrUnverified); the undamaged copy opens,
// with the digest its import sealed.
func TestDamagedCopiesRefusedByChecksum(t *testing.T) {
	src := t.TempDir()
	importSample(t, src)
	whole, _ := os.ReadFile(filepath.Join(src, kgFile))
	sum, _ := os.ReadFile(filepath.Join(src, checksumFile))
	ok, err := Open(src, false)
	if err != nil || ok.Digest() != strings.TrimSpace(string(sum)) || len(ok.Digest()) != 64 {
		t.Fatalf("the sealed store: %v, digest %q", err, ok.Digest())
	}
	ok.Close()
	for seed := int64(1); seed <= 8; seed++ {
		b := append([]byte(nil), whole...)
		r := rand.New(rand.NewSource(seed))
		for i := 0; i < 200; i++ {
			at := 4096*2 + r.Intn(len(b)-4096*2) // past the meta pages: inside the used pages
			b[at] ^= byte(1 + r.Intn(255))
		}
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, kgFile), b, 0o644)
		os.WriteFile(filepath.Join(dir, checksumFile), sum, 0o644)
		if _, err := Open(dir, false); !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), "checksum") {
			t.Errorf("seed %d: Open of a damaged copy: %v", seed, err)
		}
		if _, err := Open(dir, true); !errors.Is(err, ErrDamaged) {
			t.Errorf("seed %d: an import into a damaged copy: %v", seed, err)
		}
	}
	// An import that did not end: no checksum, refused.
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, kgFile), whole, 0o644)
	if _, err := Open(dir, false); !errors.Is(err, ErrUnverified) {
		t.Errorf("a store without its checksum: %v", err)
	}
}

// What a killed import left of its sort (an import-NNN directory beside
// kg.db) is removed by the next import, which holds the store's lock.
func TestImportRemovesAKilledImportsFiles(t *testing.T) {
	dir := t.TempDir()
	stale := filepath.Join(dir, "import-123456")
	os.MkdirAll(stale, 0o755)
	os.WriteFile(filepath.Join(stale, "edges-0001"), []byte("run of a killed sort"), 0o644)
	importSample(t, dir)
	if left, _ := filepath.Glob(filepath.Join(dir, "import-*")); len(left) != 0 {
		t.Errorf("left: %v", left)
	}
}
