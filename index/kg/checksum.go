package kg

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"halu/index"
)

// The store's checksum: bbolt keeps none, and a byte changed inside a used
// page can change what a query answers (an edge's PMIDs, a node's name)
// without any error. So an import that ends well writes the sha256 of the
// whole kg.db beside it (kg.db.sha256), and every Open verifies it before
// bbolt reads a page: a damaged or half-copied store is refused before the
// first model call, never read as a different graph.
//
// Why the whole file, not a checksum per value or per page: a per-value
// checksum leaves keys and branch pages unguarded (a changed key is
// another edge), and a per-page one needs bbolt's page format changed.
// The whole file costs one sequential read at open (about a second per
// GB here) and doubles as the store's identity: the digest a run records,
// so that a resume with another graph under the same path is refused.

// checksumFile holds the hex sha256 of kg.db as its last import left it.
const checksumFile = "kg.db.sha256"

// ErrUnverified is a kg.db with no checksum beside it: its last import did
// not end (killed, or refused mid-way), or an older halu wrote it.
var ErrUnverified error = inputError("kg.db has no checksum")

// fileSum is the hex sha256 of the file at p.
func fileSum(p string) (string, error) { return index.FileSHA256(p) }

// verify checks kg.db in dir against its checksum and returns the digest.
func verify(dir string) (string, error) {
	p := filepath.Join(dir, kgFile)
	want, err := os.ReadFile(filepath.Join(dir, checksumFile))
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("%w: kg %s: %s has none beside it — its last import did not end, or an older halu wrote it: import the graph again into a new directory", ErrUnverified, dir, p)
	}
	if err != nil {
		return "", fmt.Errorf("kg %s: %w", dir, err)
	}
	got, err := fileSum(p)
	if err != nil {
		return "", fmt.Errorf("kg %s: %w", dir, err)
	}
	if w := strings.TrimSpace(string(want)); got != w {
		return "", fmt.Errorf("%w: kg %s: %s does not match the checksum its import wrote (sha256 %.12s, recorded %.12s): damaged on disk or copied in part; import the graph again into a new directory",
			ErrDamaged, dir, p, got, w)
	}
	return got, nil
}

// seal writes the checksum of kg.db in dir (after a whole import, with
// the store closed), through a temporary file renamed into place.
func seal(dir string) (string, error) {
	sum, err := fileSum(filepath.Join(dir, kgFile))
	if err != nil {
		return "", err
	}
	tmp := filepath.Join(dir, checksumFile+".tmp")
	if err := os.WriteFile(tmp, []byte(sum+"\n"), 0o644); err != nil {
		return "", err
	}
	return sum, os.Rename(tmp, filepath.Join(dir, checksumFile))
}

// unseal removes the checksum before the store changes: an import that
// does not end leaves a store that no Open trusts.
func unseal(dir string) error {
	err := os.Remove(filepath.Join(dir, checksumFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// Digest is the sha256 of kg.db as verified when it was opened (or as its
// import sealed it, after Close): the store's identity.
func (g *KG) Digest() string { return g.digest }

// ChecksumPath is the file that holds the store's digest in dir: what a
// run records as the graph it read (its hash changes with the graph).
func ChecksumPath(dir string) string { return filepath.Join(dir, checksumFile) }
