package kg

import (
	"bufio"
	"bytes"
	"container/heap"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	bolt "go.etcd.io/bbolt"
)

const (
	// sortBuffer is how many bytes of records the external sort holds
	// before it writes a sorted run to disk.
	sortBuffer = 32 << 20
	// mentionChunk is how many mentions go into the store at once.
	mentionChunk = 100_000
	// edgeChunk is how many edges one store transaction writes.
	edgeChunk = 50_000
	// maxProblems is how many skipped lines an import lists (all are
	// counted).
	maxProblems = 1000
)

// extSorter sorts byte records larger than memory: records are buffered,
// written out as sorted runs when the buffer is full, and merged when read.
type extSorter struct {
	dir, name string
	limit     int
	buf       [][]byte
	size      int
	runs      []string
}

func newExtSorter(dir, name string, limit int) *extSorter {
	return &extSorter{dir: dir, name: name, limit: limit}
}

func (s *extSorter) add(rec []byte) error {
	s.buf = append(s.buf, rec)
	s.size += len(rec) + 24 // the slice header too
	if s.size >= s.limit {
		return s.spill()
	}
	return nil
}

// spill writes the buffer as one sorted run: each record as a uvarint
// length and its bytes.
func (s *extSorter) spill() error {
	if len(s.buf) == 0 {
		return nil
	}
	slices.SortFunc(s.buf, bytes.Compare)
	p := filepath.Join(s.dir, fmt.Sprintf("%s-%04d.run", s.name, len(s.runs)))
	f, err := os.Create(p)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var lb [binary.MaxVarintLen64]byte
	for _, r := range s.buf {
		w.Write(lb[:binary.PutUvarint(lb[:], uint64(len(r)))])
		w.Write(r)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	s.runs = append(s.runs, p)
	s.buf, s.size = s.buf[:0], 0
	return nil
}

// each calls fn with every record added, in byte order (duplicates kept),
// reading the runs back one buffered record each.
func (s *extSorter) each(fn func(rec []byte) error) error {
	if err := s.spill(); err != nil {
		return err
	}
	h := &runHeap{}
	for _, p := range s.runs {
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		r := &runReader{r: bufio.NewReaderSize(f, 256<<10)}
		if ok, err := r.next(); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		} else if ok {
			heap.Push(h, r)
		}
	}
	for h.Len() > 0 {
		r := (*h)[0]
		if err := fn(r.cur); err != nil {
			return err
		}
		ok, err := r.next()
		if err != nil {
			return err
		}
		if ok {
			heap.Fix(h, 0)
		} else {
			heap.Pop(h)
		}
	}
	return nil
}

type runReader struct {
	r   *bufio.Reader
	cur []byte
}

func (r *runReader) next() (bool, error) {
	n, err := binary.ReadUvarint(r.r)
	if err == io.EOF {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	r.cur = make([]byte, n)
	if _, err := io.ReadFull(r.r, r.cur); err != nil {
		return false, err
	}
	return true, nil
}

type runHeap []*runReader

func (h runHeap) Len() int           { return len(h) }
func (h runHeap) Less(i, j int) bool { return bytes.Compare(h[i].cur, h[j].cur) < 0 }
func (h runHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *runHeap) Push(x any)        { *h = append(*h, x.(*runReader)) }
func (h *runHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// edgeRecord is an edge row as a sortable record: its store key, a zero
// byte and the PMID big-endian, so that one edge's rows are adjacent and
// their PMIDs ascending.
func edgeRecord(r edgeRow) []byte {
	k := edgeKey(r.head, r.tail, r.rel)
	out := make([]byte, 0, len(k)+9)
	out = append(out, k...)
	out = append(out, 0)
	return binary.BigEndian.AppendUint64(out, r.pmid)
}

// writeEdges writes the sorted edge records into the store in key order:
// each edge's PMIDs merged with any it had, its forward adjacency entry,
// and its nodes. The backward adjacency entries, in another order, go
// through a second sort and are written after.
func (g *KG) writeEdges(ctx context.Context, edges *extSorter, tmp string, limit int) error {
	back := newExtSorter(tmp, "back", limit)
	type group struct {
		key   []byte
		pmids []uint64
	}
	var batch []group
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := g.update(func(tx *bolt.Tx) error {
			eb, ab, nb := tx.Bucket(bucketEdge), tx.Bucket(bucketAdj), tx.Bucket(bucketNode)
			// Keys arrive in order: pages are filled, not split in half.
			eb.FillPercent, ab.FillPercent = 0.95, 0.95
			for _, gr := range batch {
				old := decodePMIDs(eb.Get(gr.key))
				if err := eb.Put(gr.key, encodePMIDs(mergeSorted(old, gr.pmids))); err != nil {
					return err
				}
				parts := strings.SplitN(string(gr.key), "\x00", 3)
				h, t, rel := parts[0], parts[1], parts[2]
				if err := ab.Put([]byte(h+"\x00"+t+"\x00"+rel+"\x00>"), nil); err != nil {
					return err
				}
				for _, id := range []string{h, t} {
					if nb.Get([]byte(id)) == nil {
						typ, _, _ := strings.Cut(id, "|")
						b, _ := json.Marshal(Node{ID: id, Type: typ})
						if err := nb.Put([]byte(id), b); err != nil {
							return err
						}
					}
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, gr := range batch {
			parts := strings.SplitN(string(gr.key), "\x00", 3)
			if err := back.add([]byte(parts[1] + "\x00" + parts[0] + "\x00" + parts[2] + "\x00<")); err != nil {
				return err
			}
		}
		batch = batch[:0]
		return ctx.Err()
	}
	err := edges.each(func(rec []byte) error {
		key, pmid := rec[:len(rec)-9], binary.BigEndian.Uint64(rec[len(rec)-8:])
		if n := len(batch); n > 0 && bytes.Equal(batch[n-1].key, key) {
			if p := batch[n-1].pmids; p[len(p)-1] != pmid {
				batch[n-1].pmids = append(p, pmid)
			}
			return nil
		}
		if len(batch) >= edgeChunk {
			if err := flush(); err != nil {
				return err
			}
		}
		batch = append(batch, group{key: key, pmids: []uint64{pmid}})
		return nil
	})
	if err != nil {
		return err
	}
	if err := flush(); err != nil {
		return err
	}
	var keys [][]byte
	put := func() error {
		err := g.update(func(tx *bolt.Tx) error {
			ab := tx.Bucket(bucketAdj)
			for _, k := range keys {
				if err := ab.Put(k, nil); err != nil {
					return err
				}
			}
			return nil
		})
		keys = keys[:0]
		return err
	}
	err = back.each(func(rec []byte) error {
		if n := len(keys); n > 0 && bytes.Equal(keys[n-1], rec) {
			return nil
		}
		keys = append(keys, rec)
		if len(keys) >= edgeChunk {
			return put()
		}
		return nil
	})
	if err != nil {
		return err
	}
	return put()
}
