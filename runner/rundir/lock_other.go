//go:build !unix

package rundir

import "errors"

// ErrRunLocked is returned when another process holds a run directory.
var ErrRunLocked = errors.New("run directory in use")

// LockDir cannot lock on this system: runs on one directory are not
// excluded from each other.
func LockDir(dir string) (release func(), err error) { return func() {}, nil }

// Live cannot tell on this system.
func Live(dir string) bool { return false }
