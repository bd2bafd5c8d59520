//go:build !(linux || darwin || freebsd)

package zapv17

// ReleasePages does nothing where halu does not know how to release a
// mapping's pages: they stay resident until the segment is closed.
func ReleasePages(mem []byte) {}
