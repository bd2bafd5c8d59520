//go:build unix

package rundir

import (
	"errors"
	"syscall"
)

// ProcessAlive reports whether a process with this PID runs (or may: one
// owned by another user answers EPERM).
func ProcessAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
