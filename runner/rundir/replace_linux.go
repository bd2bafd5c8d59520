//go:build linux

package rundir

import (
	"errors"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// ReplaceDir puts directory src in dst's place in one step: where dst
// exists, the two are exchanged atomically (renameat2 RENAME_EXCHANGE), so
// that dst is at every moment either its previous content or all of src's
// — a kill between two renames cannot leave it missing; src then holds the
// previous content, for the caller to remove. Where dst does not exist,
// src is renamed to it.
func ReplaceDir(src, dst string) error {
	err := unix.Renameat2(unix.AT_FDCWD, src, unix.AT_FDCWD, dst, unix.RENAME_EXCHANGE)
	if errors.Is(err, unix.ENOENT) {
		if _, serr := os.Stat(dst); errors.Is(serr, fs.ErrNotExist) {
			return os.Rename(src, dst)
		}
	}
	if err != nil {
		return &os.LinkError{Op: "exchange", Old: src, New: dst, Err: err}
	}
	return nil
}
