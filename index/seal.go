package index

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	"github.com/blevesearch/bleve/v2/index/scorch"
	zap "github.com/blevesearch/zapx/v17"
	"golang.org/x/sync/errgroup"

	"halu/index/internal/zapv17"
)

// The index's identity and soundness by content. bleve keeps no checksum a
// reader checks, and a run recognised an index by its path: another index
// put there, or one rebuilt without some documents, was read by a resumed
// run as if it were the first. So a build that ends writes a seal beside
// the index (SealFile): each live segment's name, size and the CRC-32 its
// footer holds, the documents, and the sha256 of those — the index's
// digest. A run records the seal (hypo's Datasets), so a resume, rerun or
// merge with another index under the same path is refused before a call.
//
// What is checked when:
//   - Opening an index to search (read-only: nothing is merged or
//     rewritten by a reader) compares its live segments with the seal —
//     names, sizes and footers, no data read, whatever the index's size:
//     a segment added, removed, cut or replaced is ErrDamaged at once.
//   - Each segment's data is checked against its footer's CRC-32 before a
//     run's first call (Verify: one read of the index, on all cores) and,
//     in any other process, the first time a search reads it
//     (verifySegment): a byte changed inside a segment is ErrDamaged — an
//     input error, exit 2 — and never a document with other text.
//   - A build removes the seal when it starts and writes it when it ends,
//     after bleve settled, every segment's CRC computed over its data: a
//     build that did not end leaves no seal.

// SealFile is the seal's name in the index directory.
const SealFile = "halu-index.seal.json"

// SealPath is the seal of the index in dir: the file a run records as the
// index's identity.
func SealPath(dir string) string { return filepath.Join(dir, SealFile) }

// Seal is an index's identity: its live segments as its build left them.
type Seal struct {
	Segments []SealedSegment `json:"segments"`
	Docs     uint64          `json:"docs"`
	// Digest is the sha256 of the segments (name, size, CRC) and the
	// document count, one line each.
	Digest string `json:"digest"`
}

// SealedSegment is one live segment file.
type SealedSegment struct {
	Name string `json:"name"`
	Size int64  `json:"size"`
	CRC  uint32 `json:"crc32"`
}

// ErrUnsealed is an index with no seal: its last build did not end, or an
// older halu built it.
var ErrUnsealed error = unsealedError{}

type unsealedError struct{}

func (unsealedError) Error() string    { return "the index has no seal" }
func (unsealedError) InputError() bool { return true }

func (s Seal) digest() string {
	h := sha256.New()
	for _, g := range s.Segments {
		fmt.Fprintf(h, "%s %d %08x\n", g.Name, g.Size, g.CRC)
	}
	fmt.Fprintf(h, "docs %d\n", s.Docs)
	return hex.EncodeToString(h.Sum(nil))
}

// liveSegments are the segments of the index's current snapshot: their
// files as zap opened them. release closes the snapshot.
func (l *Literature) liveSegments() (segs []*zap.Segment, docs uint64, release func(), err error) {
	adv, err := l.idx.Advanced()
	if err != nil {
		return nil, 0, nil, err
	}
	r, err := adv.Reader()
	if err != nil {
		return nil, 0, nil, err
	}
	snap, ok := r.(*scorch.IndexSnapshot)
	if !ok {
		r.Close()
		return nil, 0, nil, fmt.Errorf("index %s: not a scorch index", l.dir)
	}
	for _, ss := range snap.Segments() {
		zs, ok := ss.Segment().(*zap.Segment)
		if !ok {
			continue // an in-memory segment not yet persisted: none after a build settled
		}
		segs = append(segs, zs)
	}
	sort.Slice(segs, func(i, j int) bool { return segs[i].Path() < segs[j].Path() })
	docs, _ = snap.DocCount()
	return segs, docs, func() { r.Close() }, nil
}

// sealed is the seal the index's live segments make, from their footers
// (full: each segment's data checked against its CRC first).
func (l *Literature) sealed(full bool) (Seal, error) {
	segs, docs, release, err := l.liveSegments()
	if err != nil {
		return Seal{}, err
	}
	defer release()
	s := Seal{Docs: docs}
	for _, zs := range segs {
		if full {
			if err := l.verifySegment(zs); err != nil {
				return Seal{}, err
			}
		}
		fi, err := os.Stat(zs.Path())
		if err != nil {
			return Seal{}, fmt.Errorf("index %s: %w", l.dir, err)
		}
		s.Segments = append(s.Segments, SealedSegment{Name: filepath.Base(zs.Path()), Size: fi.Size(), CRC: zs.CRC()})
	}
	s.Digest = s.digest()
	return s, nil
}

// writeSeal seals the index as it stands (after a build settled), every
// segment's data checked against its CRC.
func (l *Literature) writeSeal() error {
	s, err := l.sealed(true)
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	tmp := SealPath(l.dir) + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, SealPath(l.dir))
}

// unseal removes the seal before a build changes the index.
func (l *Literature) unseal() error {
	if err := os.Remove(SealPath(l.dir)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("index %s: %w", l.dir, err)
	}
	return nil
}

// ReadSeal reads the seal of the index in dir.
func ReadSeal(dir string) (Seal, error) {
	var s Seal
	b, err := os.ReadFile(SealPath(dir))
	if errors.Is(err, fs.ErrNotExist) {
		if _, merr := os.Stat(filepath.Join(dir, compactingFile)); merr == nil {
			return s, fmt.Errorf("%w: index %s: its compaction did not end: `halu index compact %s` finishes and seals it", ErrUnsealed, dir, dir)
		}
		return s, fmt.Errorf("%w: index %s: no %s beside it — its last build did not end, or an older halu built it: `halu index build --out %s` with its inputs finishes and seals it (or build it again into a new directory)",
			ErrUnsealed, dir, SealFile, dir)
	}
	if err != nil {
		return s, fmt.Errorf("index %s: %w", dir, err)
	}
	if err := json.Unmarshal(b, &s); err != nil || s.Digest != s.digest() {
		return s, fmt.Errorf("%w: index %s: %s is not whole", ErrDamaged, dir, SealFile)
	}
	return s, nil
}

// checkSeal compares the index's live segments with its seal (footers
// only: no segment's data is read), and returns the seal.
func (l *Literature) checkSeal() (Seal, error) {
	want, err := ReadSeal(l.dir)
	if err != nil {
		return want, err
	}
	got, err := l.sealed(false)
	if err != nil {
		return want, err
	}
	if got.Digest == want.Digest {
		return want, nil
	}
	return want, fmt.Errorf("%w: index %s is not what its build sealed: %s (rebuild it: halu index build --out NEWDIR FILE...)", ErrDamaged, l.dir, sealDiff(want, got))
}

// sealDiff says how two seals differ, for a reader.
func sealDiff(want, got Seal) string {
	at := map[string]SealedSegment{}
	for _, g := range got.Segments {
		at[g.Name] = g
	}
	var out []string
	for _, w := range want.Segments {
		g, ok := at[w.Name]
		switch {
		case !ok:
			out = append(out, "segment "+w.Name+" is gone")
		case g.Size != w.Size:
			out = append(out, fmt.Sprintf("segment %s is %d bytes, sealed at %d", w.Name, g.Size, w.Size))
		case g.CRC != w.CRC:
			out = append(out, fmt.Sprintf("segment %s was replaced (its footer's CRC %08x, sealed %08x)", w.Name, g.CRC, w.CRC))
		}
		delete(at, w.Name)
	}
	for n := range at {
		out = append(out, "segment "+n+" was not sealed")
	}
	sort.Strings(out)
	if got.Docs != want.Docs {
		out = append(out, fmt.Sprintf("%d documents, sealed with %d", got.Docs, want.Docs))
	}
	if len(out) == 0 {
		return "its segments differ"
	}
	return strings.Join(out, "; ")
}

// verifySegment checks zs's data against the CRC-32 in its footer, once per
// segment file and process: a changed byte is ErrDamaged.
func (l *Literature) verifySegment(zs *zap.Segment) error {
	if _, ok := l.verified.Load(zs.Path()); ok {
		return nil
	}
	mem := zs.Data()
	if len(mem) < 4 {
		return fmt.Errorf("%w: index %s: segment %s is cut short", ErrDamaged, l.dir, filepath.Base(zs.Path()))
	}
	if got := checksum(mem[:len(mem)-4]); got != zs.CRC() {
		return fmt.Errorf("%w: index %s: segment %s does not match its checksum (CRC-32 %08x, its footer %08x): a byte of it changed on disk — rebuild the index (halu index build --out NEWDIR FILE...)",
			ErrDamaged, l.dir, filepath.Base(zs.Path()), got, zs.CRC())
	}
	l.verified.Store(zs.Path(), true)
	return nil
}

// checksumChunk is how much of a segment checksum reads before it releases
// what it read: a multiple of any page size.
const checksumChunk = 16 << 20

// checksum is the CRC-32 (IEEE) of mem, a segment's mapped data, whose
// pages it releases as it goes (zapv17.ReleasePages): a build's seal and a
// run's check of the index read every segment, and held the whole index
// in resident memory after (2.2 GiB of the 1M-document build's 2.5 GiB).
func checksum(mem []byte) uint32 {
	var crc uint32
	for off := 0; off < len(mem); off += checksumChunk {
		part := mem[off:min(off+checksumChunk, len(mem))]
		crc = crc32.Update(crc, crc32.IEEETable, part)
		zapv17.ReleasePages(part)
	}
	return crc
}

// Verify checks every live segment's data against its checksum, on all
// cores: what a run does before its first call, so that a damaged index
// is refused before anything is asked of a model (one read of the index;
// each segment is then not read for it again in the process).
func (l *Literature) Verify(ctx context.Context) error {
	segs, _, release, err := l.liveSegments()
	if err != nil {
		return err
	}
	defer release()
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(runtime.GOMAXPROCS(0))
	for _, zs := range segs {
		g.Go(func() error {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return l.verifySegment(zs)
		})
	}
	return g.Wait()
}
