//go:build linux || darwin || freebsd

package zapv17

import "golang.org/x/sys/unix"

// ReleasePages hands the resident pages of mem, a range of a read-only
// file mapping that starts on a page boundary, back to the kernel
// (madvise MADV_DONTNEED). It is advice: an error leaves the pages where
// they were, and changes nothing that is read.
func ReleasePages(mem []byte) {
	if len(mem) > 0 {
		_ = unix.Madvise(mem, unix.MADV_DONTNEED)
	}
}
