package kg

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode"

	bolt "go.etcd.io/bbolt"

	"halu/index"
)

// The node index lets a claim's entity strings find graph nodes by BM25,
// as KnowHD's authors do (the top node_k = 100 nodes per entity): every
// node is a document made of its type, its concept id and every name it
// was mentioned by. Buckets: ntok (term\x00node → term count, uvarint),
// nlen (node → document length, uvarint); the meta bucket keeps the node
// count and the total length. A graph imported before the index existed
// has neither bucket: SearchNodes says to import it again.
var (
	bucketNodeTerm = []byte("ntok")
	bucketNodeLen  = []byte("nlen")
	metaNodeStats  = []byte("node_stats")
)

// NodeTerms are the terms of a node's document or of a query: lower-cased
// runs of letters and digits ("IL-6" → "il", "6"; "MESH:D003924" → "mesh",
// "d003924").
func NodeTerms(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

// indexNodes (re)builds the node index from the node and name buckets:
// each node's texts are sorted together by id through an external sort,
// its term counts written to nlen and, through a second sort, to ntok in
// key order.
func (g *KG) indexNodes(ctx context.Context, tmp string, limit int) error {
	texts := newExtSorter(tmp, "nodetexts", limit)
	err := g.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketNode).Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			var n Node
			_ = json.Unmarshal(v, &n)
			_, cid, _ := strings.Cut(string(k), "|")
			if err := texts.add([]byte(string(k) + "\x00" + n.Type + " " + cid)); err != nil {
				return err
			}
		}
		mc := tx.Bucket(bucketName).Cursor()
		for k, _ := mc.First(); k != nil; k, _ = mc.Next() {
			name, id, ok := strings.Cut(string(k), "\x00")
			if ok {
				if err := texts.add([]byte(id + "\x00" + name)); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	err = g.update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketNodeTerm, bucketNodeLen} {
			if tx.Bucket(b) != nil {
				if err := tx.DeleteBucket(b); err != nil {
					return err
				}
			}
			if _, err := tx.CreateBucket(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	postings := newExtSorter(tmp, "nodeterms", limit)
	type doc struct {
		id  string
		len int
	}
	var batch []doc
	var docs, total uint64
	putLens := func() error {
		err := g.update(func(tx *bolt.Tx) error {
			b := tx.Bucket(bucketNodeLen)
			b.FillPercent = 0.95
			for _, d := range batch {
				if err := b.Put([]byte(d.id), binary.AppendUvarint(nil, uint64(d.len))); err != nil {
					return err
				}
			}
			return nil
		})
		batch = batch[:0]
		if err == nil {
			err = ctx.Err()
		}
		return err
	}
	cur, tf := "", map[string]int{}
	closeDoc := func() error {
		if cur == "" {
			return nil
		}
		n := 0
		for t, c := range tf {
			n += c
			if err := postings.add([]byte(t + "\x00" + cur + "\x00" + strconv.Itoa(c))); err != nil {
				return err
			}
		}
		docs++
		total += uint64(n)
		batch = append(batch, doc{cur, n})
		clear(tf)
		if len(batch) >= edgeChunk {
			return putLens()
		}
		return nil
	}
	err = texts.each(func(rec []byte) error {
		id, text, _ := strings.Cut(string(rec), "\x00")
		if id != cur {
			if err := closeDoc(); err != nil {
				return err
			}
			cur = id
		}
		for _, t := range NodeTerms(text) {
			tf[t]++
		}
		return nil
	})
	if err == nil {
		err = closeDoc()
	}
	if err == nil {
		err = putLens()
	}
	if err != nil {
		return err
	}
	if err := g.writeNodePostings(postings); err != nil {
		return err
	}
	return g.update(func(tx *bolt.Tx) error {
		st, _ := json.Marshal(index.CorpusStats{Docs: docs, TotalLen: total})
		return tx.Bucket(bucketMeta).Put(metaNodeStats, st)
	})
}

// writeNodePostings writes the sorted term\x00node\x00count records into
// ntok in key order, in transactions of edgeChunk keys.
func (g *KG) writeNodePostings(postings *extSorter) error {
	var keys, vals [][]byte
	put := func() error {
		err := g.update(func(tx *bolt.Tx) error {
			b := tx.Bucket(bucketNodeTerm)
			b.FillPercent = 0.95
			for i, k := range keys {
				if err := b.Put(k, vals[i]); err != nil {
					return err
				}
			}
			return nil
		})
		keys, vals = keys[:0], vals[:0]
		return err
	}
	err := postings.each(func(rec []byte) error {
		i := bytes.LastIndexByte(rec, 0)
		c, _ := strconv.Atoi(string(rec[i+1:]))
		keys, vals = append(keys, rec[:i]), append(vals, binary.AppendUvarint(nil, uint64(c)))
		if len(keys) >= edgeChunk {
			return put()
		}
		return nil
	})
	if err == nil {
		err = put()
	}
	return err
}

// ErrNoNodeIndex marks a graph imported before halu kept a node index.
var ErrNoNodeIndex error = inputError("this knowledge graph has no node index (imported by an older halu): import it again with `halu kg import`")

// NodeHit is a node SearchNodes found, with its BM25 score.
type NodeHit struct {
	ID    string  `json:"id"`
	Score float64 `json:"score"`
}

// SearchNodes returns the k nodes whose documents (type, concept id and
// every name) score highest by BM25 with parameters p for query, best
// first, ties by id — KnowHD's claim → node step in the authors' code
// (node_k = 100). No term of the query in any node gives none.
func (g *KG) SearchNodes(query string, k int, p index.BM25Params) ([]NodeHit, error) {
	if p == (index.BM25Params{}) {
		p = index.TextbookBM25
	}
	terms := NodeTerms(query)
	var out []NodeHit
	err := g.view(func(tx *bolt.Tx) error {
		tb, lb := tx.Bucket(bucketNodeTerm), tx.Bucket(bucketNodeLen)
		if tb == nil || lb == nil {
			return ErrNoNodeIndex
		}
		var st index.CorpusStats
		if err := json.Unmarshal(tx.Bucket(bucketMeta).Get(metaNodeStats), &st); err != nil {
			return fmt.Errorf("%w: kg %s: the node index has no statistics", ErrDamaged, g.dir)
		}
		avg := st.AvgLen()
		if avg == 0 {
			return nil
		}
		score := map[string]float64{}
		seen := map[string]bool{}
		c := tb.Cursor()
		for _, t := range terms {
			if seen[t] {
				continue
			}
			seen[t] = true
			prefix := []byte(t + "\x00")
			type posting struct {
				id string
				tf uint64
			}
			var ps []posting
			for key, v := c.Seek(prefix); key != nil && bytes.HasPrefix(key, prefix); key, v = c.Next() {
				n, _ := binary.Uvarint(v)
				ps = append(ps, posting{string(key[len(prefix):]), n})
			}
			idf := index.IDF(st.Docs, uint64(len(ps)))
			for _, q := range ps {
				dl, _ := binary.Uvarint(lb.Get([]byte(q.id)))
				f := float64(q.tf)
				score[q.id] += p.TermScore(idf, f, float64(dl), avg)
			}
		}
		for id, s := range score {
			out = append(out, NodeHit{id, s})
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool {
		if out[i].Score != out[j].Score {
			return out[i].Score > out[j].Score
		}
		return out[i].ID < out[j].ID
	})
	if k > 0 && len(out) > k {
		out = out[:k]
	}
	return out, err
}
