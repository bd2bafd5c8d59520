// Package kg is halu's knowledge-graph store: typed biomedical relations
// between entities named in TruthHypo's "Type|ConceptID" convention
// (Gene|3175, Disease|MESH:D003924), each with the PMIDs of the articles
// that support it, kept on disk in a bbolt B+tree so PubTator-scale graphs
// (tens of millions of edges) need no more memory than the pages in use.
// It imports PubTator documents, relation2pubtator3 files, TruthHypo-style
// edge tables and name tables (Import), and answers the lookups KnowHD and
// the hypothesis agents make: nodes by id or name, edges among entities,
// chains between two of them.
package kg

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"halu/index"
)

// Buckets: edge (head\x00tail\x00relation → PMIDs, delta-varint), adj
// (node\x00other\x00relation\x00direction → nothing: the adjacency index),
// node (id → type and name), name (lower-cased name\x00id → mention count);
// the node index (nodesearch.go) is rebuilt by every import.

var (
	bucketEdge = []byte("edge")
	bucketAdj  = []byte("adj")
	bucketNode = []byte("node")
	bucketName = []byte("name")
	bucketMeta = []byte("meta")
	kgFile     = "kg.db"
)

// Edge is one relation with its supporting articles.
type Edge struct {
	Head     string   `json:"head"`
	Relation string   `json:"relation"`
	Tail     string   `json:"tail"`
	PMIDs    []uint64 `json:"pmids"`
}

// Node is an entity of the graph.
type Node struct {
	ID   string `json:"id"`
	Type string `json:"type"`
	Name string `json:"name,omitempty"`
}

// KG is the knowledge-graph store.
type KG struct {
	dir string
	db  *bolt.DB
	// damage is the first sign that kg.db is damaged (ErrDamaged), kept so
	// that every later read fails the same way instead of answering.
	damage atomic.Pointer[error]
	// sortLimit is the import's sort buffer in bytes (0: sortBuffer); tests
	// make it small to merge many runs.
	sortLimit int
	// digest is the verified sha256 of kg.db (checksum.go); writable is
	// set for an import's store, imported when its last import ended well
	// (Close then seals the store), broken when one did not.
	digest                     string
	writable, imported, broken bool
}

// ErrDamaged marks a kg.db that is not whole: empty, cut short, or with
// pages that are not what the B+tree says they are.
var ErrDamaged error = inputError("kg.db is damaged")

// inputError is an error in what halu was given to read, not in halu or
// the machine: the command exits with the usage status (2), as for a
// wrong flag. (Its InputError method is what the command looks for.)
type inputError string

func (e inputError) Error() string { return string(e) }

// InputError marks e as an input error.
func (inputError) InputError() bool { return true }

// buckets are the store's buckets; a kg.db without them is not one halu
// wrote.
var buckets = [][]byte{bucketEdge, bucketAdj, bucketNode, bucketName, bucketMeta}

// openTimeout bounds the wait for a kg.db another process holds for writing
// (an import).
const openTimeout = 10 * time.Second

// Open opens the store in dir: for reading only (queries, the hypo
// suite), or — with create — for an import, creating it when there is
// none. An existing kg.db is first verified against the checksum its
// import wrote (checksum.go): one that does not match is refused
// (ErrDamaged), one without a checksum too (ErrUnverified), before bbolt
// reads a page. A kg.db that is empty, cut short, not a bbolt file or
// without the store's buckets is refused (ErrDamaged), never opened as an
// empty graph; damage found later, in a page a read reaches, fails that
// read and every later one (Err), never a crash.
func Open(dir string, create bool) (*KG, error) {
	var digest string
	if st, err := os.Stat(filepath.Join(dir, kgFile)); err == nil && st.Size() > 0 {
		if digest, err = verify(dir); err != nil {
			return nil, err
		}
	}
	g, err := openBolt(dir, create)
	if err != nil {
		return nil, err
	}
	g.digest, g.writable = digest, create
	return g, nil
}

// openBolt opens kg.db with bbolt, checking its buckets (see Open; its
// checksum is Open's to verify).
func openBolt(dir string, create bool) (*KG, error) {
	p := filepath.Join(dir, kgFile)
	st, err := os.Stat(p)
	switch {
	case err != nil && !create:
		return nil, fmt.Errorf("kg %s: no knowledge graph here (import one with `halu kg import --out %s FILE...`)", dir, dir)
	case err != nil:
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("kg %s: %w", dir, err)
		}
	case st.Size() == 0:
		return nil, fmt.Errorf("%w: kg %s: %s is empty (import the graph again into a new directory)", ErrDamaged, dir, p)
	}
	db, err := bolt.Open(p, 0o644, &bolt.Options{NoFreelistSync: true, ReadOnly: !create, Timeout: openTimeout})
	if err != nil {
		if errors.Is(err, berrors.ErrTimeout) {
			return nil, fmt.Errorf("kg %s: held by another process (an import still running?): %w", dir, err)
		}
		return nil, fmt.Errorf("%w: kg %s: %v (import the graph again into a new directory)", ErrDamaged, dir, err)
	}
	g := &KG{dir: dir, db: db}
	if create {
		err = g.guard(func() error {
			return db.Update(func(tx *bolt.Tx) error {
				for _, b := range buckets {
					if _, err := tx.CreateBucketIfNotExists(b); err != nil {
						return err
					}
				}
				return nil
			})
		})
	} else {
		err = g.view(func(tx *bolt.Tx) error {
			for _, b := range buckets {
				if tx.Bucket(b) == nil {
					return fmt.Errorf("%w: kg %s: %s has no %q bucket: not a knowledge graph halu wrote", ErrDamaged, dir, p, b)
				}
			}
			if tx.Size() > st.Size() {
				return fmt.Errorf("%w: kg %s: %s is cut short (%d bytes of %d)", ErrDamaged, dir, p, st.Size(), tx.Size())
			}
			return nil
		})
	}
	if err != nil {
		db.Close()
		return nil, err
	}
	return g, nil
}

// Err is the damage a read of the store found (ErrDamaged), or nil. Reads
// that return no error (Node, Lookup, EntitiesIn) answer nothing once the
// store is damaged: a caller checks Err before it trusts their silence.
func (g *KG) Err() error {
	if d := g.damage.Load(); d != nil {
		return *d
	}
	return nil
}

// update runs fn in a write transaction (guard).
func (g *KG) update(fn func(tx *bolt.Tx) error) error {
	return g.guard(func() error { return g.db.Update(fn) })
}

// view runs fn in a read transaction (guard).
func (g *KG) view(fn func(tx *bolt.Tx) error) error {
	return g.guard(func() error { return g.db.View(fn) })
}

// guard runs a transaction of the store, turning what a damaged kg.db does
// to bbolt — a panic on a page that is not what its parent says, a fault on
// a page past the file's end — into ErrDamaged, kept for every later read.
// bbolt rolls the transaction back as the panic passes.
func (g *KG) guard(fn func() error) (err error) {
	if d := g.damage.Load(); d != nil {
		return *d
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: kg %s: %v (import the graph again into a new directory)", ErrDamaged, g.dir, r)
			g.damage.CompareAndSwap(nil, &err)
		}
	}()
	old := debug.SetPanicOnFault(true)
	defer debug.SetPanicOnFault(old)
	return fn()
}

// Close closes the store. A store whose import ended well is sealed: its
// checksum written beside it, for every later Open to verify.
func (g *KG) Close() error {
	if err := g.db.Close(); err != nil {
		return err
	}
	if g.writable && g.imported && !g.broken {
		sum, err := seal(g.dir)
		if err != nil {
			return fmt.Errorf("kg %s: checksum: %w", g.dir, err)
		}
		g.digest = sum
	}
	return nil
}

// entity types as TruthHypo writes them, from PubTator and BioRED spellings.
var typeNames = map[string]string{
	"gene": "Gene", "geneorgeneproduct": "Gene",
	"disease": "Disease", "diseaseorphenotypicfeature": "Disease",
	"chemical": "Chemical", "chemicalentity": "Chemical",
	"species": "Species", "organismtaxon": "Species",
	"mutation": "Variant", "variant": "Variant", "sequencevariant": "Variant", "dnamutation": "Variant", "proteinmutation": "Variant", "snp": "Variant",
	"cellline": "CellLine",
}

// NormalizeType maps an entity type to TruthHypo's spelling.
func NormalizeType(t string) string {
	if n, ok := typeNames[strings.ToLower(strings.TrimSpace(t))]; ok {
		return n
	}
	return strings.TrimSpace(t)
}

var meshBare = regexp.MustCompile(`^[CD]\d{6,9}$`)

// NormalizeID returns "Type|ConceptID", adding the MESH: prefix BioRED
// leaves off.
func NormalizeID(typ, id string) string {
	id = strings.TrimSpace(id)
	if t, rest, ok := splitTyped(id); ok {
		typ, id = t, rest
	}
	if meshBare.MatchString(id) {
		id = "MESH:" + id
	}
	return NormalizeType(typ) + "|" + id
}

// splitTyped splits "Type|ConceptID" when the prefix is an entity type
// (variant ids such as "c|DEL|4153|A" contain bars of their own).
func splitTyped(id string) (typ, rest string, ok bool) {
	i := strings.Index(id, "|")
	if i <= 0 {
		return "", id, false
	}
	t := NormalizeType(id[:i])
	if _, known := typeOrder[t]; !known && t != "Unknown" {
		return "", id, false
	}
	return t, id[i+1:], true
}

var typeOrder = map[string]int{"Chemical": 0, "Disease": 1, "Gene": 2, "Variant": 3, "Species": 4, "CellLine": 5}

func typeRank(id string) int {
	t, _, _ := strings.Cut(id, "|")
	if r, ok := typeOrder[t]; ok {
		return r
	}
	return 9
}

// orient puts an undirected PubTator pair in TruthHypo's order: Chemical,
// Disease, Gene, …, then by id.
func orient(a, b string) (string, string) {
	ra, rb := typeRank(a), typeRank(b)
	if ra > rb || ra == rb && a > b {
		return b, a
	}
	return a, b
}

// RelationLabel maps a PubTator 3 relation type to TruthHypo's label for the
// entity types involved (read off real PubTator 3 output): Disease–Gene
// Positive/Negative_Correlation → stimulate/inhibit; Chemical–Gene and
// Gene–Gene → positive/negative_correlate; Chemical–Disease → cause/treat;
// Association → associate; Bind → interact; anything else lower-cased.
func RelationLabel(pubtator, head, tail string) string {
	ht, _, _ := strings.Cut(head, "|")
	tt, _, _ := strings.Cut(tail, "|")
	pair := map[string]bool{ht: true, tt: true}
	switch strings.ToLower(pubtator) {
	case "association":
		return "associate"
	case "bind":
		return "interact"
	case "positive_correlation":
		switch {
		case pair["Disease"] && pair["Gene"]:
			return "stimulate"
		case pair["Chemical"] && pair["Disease"]:
			return "cause"
		default:
			return "positive_correlate"
		}
	case "negative_correlation":
		switch {
		case pair["Disease"] && pair["Gene"]:
			return "inhibit"
		case pair["Chemical"] && pair["Disease"]:
			return "treat"
		default:
			return "negative_correlate"
		}
	}
	return strings.ToLower(pubtator)
}

// ImportInfo says what an import read.
type ImportInfo struct {
	Files    []string        `json:"files"`
	Edges    int             `json:"edge_rows"`
	Mentions int             `json:"mentions"`
	Problems []index.Problem `json:"problems,omitempty"`
	Skipped  int             `json:"skipped"`
}

type edgeRow struct {
	pmid     uint64
	rel      string // TruthHypo label
	head     string
	tail     string
	pubtator bool // rel is a PubTator type still to be mapped
	line     int  // where a PubTator relation line was, for problems
}

type mention struct {
	id, typ, name string
}

// Import reads relation files into the store, merging with what is there.
// Accepted: PubTator document files (PMID|t|, PMID|a|, mention lines
// PMID⇥start⇥end⇥text⇥type⇥id, relation lines PMID⇥type⇥id1⇥id2[⇥novelty]) —
// BioRED and PubTator 3 exports; PubTator 3.0's relation2pubtator3 table
// (PMID⇥type⇥Type|id⇥Type|id); header-named TSVs with pmid, x_id, y_id and a
// relation column (pubtator3_relation, relation or truthhypo_label); and
// entity-name tables with columns id and name. Mentions give the
// entity-name table claims are matched against.
//
// A file none of whose first lines is in one of these formats is refused
// (ErrFormat) before anything is written; within a file, a line that
// cannot be an edge or a mention (a relation type that is not a word, a
// relation naming an entity its document never mentions) is skipped and
// reported.
func (g *KG) Import(ctx context.Context, files []string) (info ImportInfo, err error) {
	info = ImportInfo{Files: files}
	if err := CheckFiles(files); err != nil {
		return info, err
	}
	// The store is about to change: until this import ends well, no
	// checksum vouches for it.
	if err := unseal(g.dir); err != nil {
		return info, fmt.Errorf("kg %s: %w", g.dir, err)
	}
	defer func() {
		if err != nil {
			g.broken = true
		} else {
			g.imported = true
		}
	}()
	// What a killed import left of its sort: this process holds the
	// store's lock (bbolt's), so no other import is using them.
	if stale, _ := filepath.Glob(filepath.Join(g.dir, "import-*")); len(stale) > 0 {
		for _, d := range stale {
			os.RemoveAll(d)
		}
	}
	// Edges stream through an external sort and go into the store in key
	// order: memory stays bounded by the sort's buffer, and the B+tree
	// fills page after page instead of touching pages at random.
	tmp, err := os.MkdirTemp(g.dir, "import-")
	if err != nil {
		return info, fmt.Errorf("kg %s: %w", g.dir, err)
	}
	defer os.RemoveAll(tmp)
	limit := sortBuffer
	if g.sortLimit > 0 {
		limit = g.sortLimit
	}
	edges := newExtSorter(tmp, "edges", limit)
	var ments []mention
	flushMentions := func() error {
		if err := g.writeMentions(ments); err != nil {
			return fmt.Errorf("kg %s: %w", g.dir, err)
		}
		ments = ments[:0]
		return nil
	}
	for _, f := range files {
		n, err := readKGFile(f, 0, func(r edgeRow) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			return edges.add(edgeRecord(r))
		}, func(m mention) error {
			ments = append(ments, m)
			if len(ments) >= mentionChunk {
				return flushMentions()
			}
			return nil
		}, func(p index.Problem) {
			if len(info.Problems) < maxProblems {
				info.Problems = append(info.Problems, p)
			}
			info.Skipped++
		})
		info.Edges += n.rows
		info.Mentions += n.mentions
		if err != nil {
			return info, err
		}
	}
	if err := flushMentions(); err != nil {
		return info, err
	}
	if err := g.writeEdges(ctx, edges, tmp, limit); err != nil {
		return info, fmt.Errorf("kg %s: %w", g.dir, err)
	}
	if err := g.indexNodes(ctx, tmp, limit); err != nil {
		return info, fmt.Errorf("kg %s: node index: %w", g.dir, err)
	}
	return info, ctx.Err()
}

func edgeKey(h, t, rel string) []byte { return []byte(h + "\x00" + t + "\x00" + rel) }

func encodePMIDs(p []uint64) []byte {
	buf := make([]byte, 0, len(p)*3)
	var prev uint64
	for _, x := range p {
		buf = binary.AppendUvarint(buf, x-prev)
		prev = x
	}
	return buf
}

func decodePMIDs(b []byte) []uint64 {
	var out []uint64
	var prev uint64
	for len(b) > 0 {
		d, n := binary.Uvarint(b)
		if n <= 0 {
			break
		}
		prev += d
		out = append(out, prev)
		b = b[n:]
	}
	return out
}

func mergeSorted(a, b []uint64) []uint64 {
	out := make([]uint64, 0, len(a)+len(b))
	out = append(out, a...)
	out = append(out, b...)
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	w := 0
	for i, x := range out {
		if i == 0 || x != out[w-1] {
			out[w] = x
			w++
		}
	}
	return out[:w]
}

// writeMentions adds mentions to the name table and names nodes that have
// none yet.
func (g *KG) writeMentions(ments []mention) error {
	if len(ments) == 0 {
		return nil
	}
	return g.update(func(tx *bolt.Tx) error {
		nb, mb := tx.Bucket(bucketNode), tx.Bucket(bucketName)
		for _, m := range ments {
			name := strings.ToLower(strings.Join(strings.Fields(m.name), " "))
			if name == "" {
				continue
			}
			k := []byte(name + "\x00" + m.id)
			var n uint64
			if v := mb.Get(k); v != nil {
				n, _ = binary.Uvarint(v)
			}
			if err := mb.Put(k, binary.AppendUvarint(nil, n+1)); err != nil {
				return err
			}
			var node Node
			if v := nb.Get([]byte(m.id)); v != nil {
				_ = json.Unmarshal(v, &node)
			}
			if node.Name == "" {
				node = Node{ID: m.id, Type: m.typ, Name: strings.Join(strings.Fields(m.name), " ")}
				b, _ := json.Marshal(node)
				if err := nb.Put([]byte(m.id), b); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// Node returns an entity by id.
func (g *KG) Node(id string) (Node, bool) {
	var n Node
	found := false
	_ = g.view(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bucketNode).Get([]byte(id)); v != nil {
			found = json.Unmarshal(v, &n) == nil
		}
		return nil
	})
	return n, found
}

// Lookup returns the entities a name (or synonym, case-insensitive) or an id
// ("Gene|3175", "MESH:D003924", "3175") refers to, most mentioned first.
func (g *KG) Lookup(name string) []Node {
	key := strings.ToLower(strings.Join(strings.Fields(name), " "))
	type hit struct {
		id string
		n  uint64
	}
	var hits []hit
	_ = g.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketName).Cursor()
		prefix := []byte(key + "\x00")
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			n, _ := binary.Uvarint(v)
			hits = append(hits, hit{string(k[len(prefix):]), n})
		}
		nb := tx.Bucket(bucketNode)
		if nb.Get([]byte(name)) != nil {
			hits = append(hits, hit{name, 1 << 62})
		} else if !strings.Contains(name, "|") {
			for _, t := range []string{"Gene", "Chemical", "Disease", "Variant", "Species", "CellLine"} {
				id := NormalizeID(t, name)
				if nb.Get([]byte(id)) != nil {
					hits = append(hits, hit{id, 1 << 61})
				}
			}
		}
		return nil
	})
	sort.SliceStable(hits, func(i, j int) bool { return hits[i].n > hits[j].n })
	var out []Node
	seen := map[string]bool{}
	for _, h := range hits {
		if seen[h.id] {
			continue
		}
		seen[h.id] = true
		if n, ok := g.Node(h.id); ok {
			out = append(out, n)
		}
	}
	return out
}

// EntitiesIn finds the entities a text names: every run of up to six words
// matched against the name table, plus ids written out ("(MESH:D003924)").
func (g *KG) EntitiesIn(text string) []Node {
	words := strings.FieldsFunc(text, func(r rune) bool {
		return !(r == '-' || r == ':' || r == '|' || r == '\'' || r == '.' || r >= '0' && r <= '9' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r > 127)
	})
	for i := range words {
		words[i] = strings.Trim(words[i], ".:'-")
	}
	seen := map[string]bool{}
	var out []Node
	for i := range words {
		for n := 6; n >= 1; n-- {
			if i+n > len(words) {
				continue
			}
			phrase := strings.Join(words[i:i+n], " ")
			if len(phrase) < 2 {
				continue
			}
			for _, node := range g.Lookup(phrase) {
				if !seen[node.ID] {
					seen[node.ID] = true
					out = append(out, node)
				}
			}
		}
	}
	return out
}

func cutoff(p []uint64, below uint64) []uint64 {
	if below == 0 {
		return p
	}
	i := sort.Search(len(p), func(i int) bool { return p[i] >= below })
	return p[:i]
}

// EdgesAmong returns every edge whose head and tail are both among ids
// (TruthHypo eq. 2), each with its supporting PMIDs below the cutoff (0: no
// cutoff); edges with no support left are dropped.
func (g *KG) EdgesAmong(ids []string, belowPMID uint64) ([]Edge, error) {
	set := map[string]bool{}
	for _, id := range ids {
		set[id] = true
	}
	var out []Edge
	err := g.view(func(tx *bolt.Tx) error {
		ac, eb := tx.Bucket(bucketAdj).Cursor(), tx.Bucket(bucketEdge)
		for _, h := range ids {
			prefix := []byte(h + "\x00")
			for k, _ := ac.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = ac.Next() {
				parts := strings.SplitN(string(k), "\x00", 4)
				if len(parts) != 4 || parts[3] != ">" || !set[parts[1]] {
					continue
				}
				p := cutoff(decodePMIDs(eb.Get(edgeKey(parts[0], parts[1], parts[2]))), belowPMID)
				if len(p) > 0 {
					out = append(out, Edge{Head: parts[0], Tail: parts[1], Relation: parts[2], PMIDs: p})
				}
			}
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool {
		if len(out[i].PMIDs) != len(out[j].PMIDs) {
			return len(out[i].PMIDs) > len(out[j].PMIDs)
		}
		return out[i].Head+out[i].Tail+out[i].Relation < out[j].Head+out[j].Tail+out[j].Relation
	})
	return out, err
}

// Chain is a path of edges between two entities.
type Chain struct {
	Edges []Edge `json:"edges"`
	// Support is the number of distinct articles supporting any edge of the
	// chain (below the cutoff).
	Support int `json:"support"`
	// Forward[i] tells whether edge i is walked head → tail.
	Forward []bool `json:"forward"`
}

// String renders the chain as "A —positive_correlate→ B —associate→ C",
// an edge walked against its direction shown as "←relation—".
func (c Chain) String() string {
	if len(c.Edges) == 0 {
		return ""
	}
	var b strings.Builder
	first := c.Edges[0].Head
	if !c.Forward[0] {
		first = c.Edges[0].Tail
	}
	b.WriteString(first)
	for i, e := range c.Edges {
		if c.Forward[i] {
			fmt.Fprintf(&b, " —%s→ %s", e.Relation, e.Tail)
		} else {
			fmt.Fprintf(&b, " ←%s— %s", e.Relation, e.Head)
		}
	}
	return b.String()
}

type step struct {
	other   string
	edge    Edge
	forward bool
}

// neighbours lists a node's edges (both directions), at most limit.
func (g *KG) neighbours(tx *bolt.Tx, id string, below uint64, limit int) []step {
	ac, eb := tx.Bucket(bucketAdj).Cursor(), tx.Bucket(bucketEdge)
	prefix := []byte(id + "\x00")
	var out []step
	for k, _ := ac.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = ac.Next() {
		parts := strings.SplitN(string(k), "\x00", 4)
		if len(parts) != 4 {
			continue
		}
		fwd := parts[3] == ">"
		h, t := parts[0], parts[1]
		if !fwd {
			h, t = t, h
		}
		p := cutoff(decodePMIDs(eb.Get(edgeKey(h, t, parts[2]))), below)
		if len(p) == 0 {
			continue
		}
		out = append(out, step{other: parts[1], edge: Edge{Head: h, Tail: t, Relation: parts[2], PMIDs: p}, forward: fwd})
		if len(out) >= limit {
			break
		}
	}
	return out
}

// Incident returns the edges of node id (both directions) with support
// below the cutoff, at most limit (0: 2,000) in the store's order — the
// node's own knowledge, for when no chain links it to another node.
func (g *KG) Incident(id string, belowPMID uint64, limit int) ([]Edge, error) {
	if limit <= 0 {
		limit = 2000
	}
	var out []Edge
	err := g.view(func(tx *bolt.Tx) error {
		for _, s := range g.neighbours(tx, id, belowPMID, limit) {
			out = append(out, s.edge)
		}
		return nil
	})
	return out, err
}

// Chains returns up to maxChains simple paths of at most hops edges from a
// to b (TruthHypo "+KG": max depth 2, at most 32 chains), each edge walked
// either way, ranked by supporting articles, then fewer hops, then text.
// Each node expands at most 2,000 neighbours, which bounds the work around
// hub entities.
func (g *KG) Chains(a, b string, hops, maxChains int, belowPMID uint64) ([]Chain, error) {
	return g.chains(a, b, hops, maxChains, belowPMID, false)
}

// ForwardChains are Chains whose every edge is walked head → tail (x → y),
// as the TruthHypo authors' graph search follows them.
func (g *KG) ForwardChains(a, b string, hops, maxChains int, belowPMID uint64) ([]Chain, error) {
	return g.chains(a, b, hops, maxChains, belowPMID, true)
}

func (g *KG) chains(a, b string, hops, maxChains int, belowPMID uint64, forwardOnly bool) ([]Chain, error) {
	if hops <= 0 {
		hops = 2
	}
	var out []Chain
	err := g.view(func(tx *bolt.Tx) error {
		var walk func(node string, path []step, visited map[string]bool)
		walk = func(node string, path []step, visited map[string]bool) {
			if len(path) == hops {
				return
			}
			for _, s := range g.neighbours(tx, node, belowPMID, 2000) {
				if visited[s.other] || forwardOnly && !s.forward {
					continue
				}
				next := append(append([]step(nil), path...), s)
				if s.other == b {
					out = append(out, makeChain(next))
					continue
				}
				visited[s.other] = true
				walk(s.other, next, visited)
				delete(visited, s.other)
			}
		}
		walk(a, nil, map[string]bool{a: true})
		return nil
	})
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Support != out[j].Support {
			return out[i].Support > out[j].Support
		}
		if len(out[i].Edges) != len(out[j].Edges) {
			return len(out[i].Edges) < len(out[j].Edges)
		}
		return out[i].String() < out[j].String()
	})
	if maxChains > 0 && len(out) > maxChains {
		out = out[:maxChains]
	}
	return out, err
}

func makeChain(path []step) Chain {
	c := Chain{}
	pm := map[uint64]bool{}
	for _, s := range path {
		c.Edges = append(c.Edges, s.edge)
		c.Forward = append(c.Forward, s.forward)
		for _, p := range s.edge.PMIDs {
			pm[p] = true
		}
	}
	c.Support = len(pm)
	return c
}

// Stats counts the store's contents.
type Stats struct {
	Edges, Nodes, Names int
	SizeBytes           int64
}

// Stats counts edges, nodes and names.
func (g *KG) Stats() (Stats, error) {
	var s Stats
	err := g.view(func(tx *bolt.Tx) error {
		s.Edges = tx.Bucket(bucketEdge).Stats().KeyN
		s.Nodes = tx.Bucket(bucketNode).Stats().KeyN
		s.Names = tx.Bucket(bucketName).Stats().KeyN
		s.SizeBytes = tx.Size()
		return nil
	})
	return s, err
}
