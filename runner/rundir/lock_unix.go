//go:build unix

package rundir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// lockFile is the file in a run directory a live run holds locked.
const lockFile = LockFile

// ErrRunLocked is returned when another process holds a run directory.
var ErrRunLocked = errors.New("run directory in use")

// LockDir takes the exclusive lock on run directory dir for as long as the
// process lives or until release is called: a second run, resume or rerun
// on dir fails at once naming the holder's PID. The lock is flock(2)'s, so
// the system releases it when its holder dies, kill -9 included.
func LockDir(dir string) (release func(), err error) {
	f, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("run %s: lock: %w", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		b, _ := os.ReadFile(f.Name())
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			holder := strings.TrimSpace(string(b))
			if holder == "" {
				holder = "unknown"
			}
			return nil, fmt.Errorf("%w: %s is held by another halu process (PID %s); wait for it to end or stop it, then resume", ErrRunLocked, dir, holder)
		}
		return nil, fmt.Errorf("run %s: lock: %w", dir, err)
	}
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

// Live reports whether a process holds run directory dir now: a manifest
// that says "running" without one is of a run that died.
func Live(dir string) bool {
	f, err := os.Open(filepath.Join(dir, lockFile))
	if err != nil {
		return false
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		return errors.Is(err, syscall.EWOULDBLOCK)
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false
}
