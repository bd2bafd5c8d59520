package rundir

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// WriteFileAtomic writes b to path atomically (WriteAtomic).
func WriteFileAtomic(path string, b []byte) error {
	return WriteAtomic(path, func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	})
}

// WriteAtomic writes path through write: into a temporary file beside it
// (TempPrefix(path)…), synced, then renamed over path, so that path holds
// either its previous content or all of the new one whatever happens
// meanwhile — a kill, a full disk, an error in write. The temporary file
// is removed when the write fails; those a killed writer left are removed
// by the next write of path. The file is readable by all (0644), as a
// report or a run's record is meant to be.
func WriteAtomic(path string, write func(io.Writer) error) error {
	dir, prefix := filepath.Dir(path), TempPrefix(path)
	SweepTemps(dir, prefix)
	return writeVia(dir, prefix, path, write)
}

// TempPrefix is the name prefix of WriteAtomic's temporary files for path.
func TempPrefix(path string) string { return "." + filepath.Base(path) + ".tmp-" }

// PlaceFile writes b to a temporary file in dir (on path's file system)
// named prefix… and renames it to path, without an fsync: for a file whose
// reader checks it (a cache entry carries the SHA-256 of its value), where
// a power cut that leaves it empty or cut short costs a refetch, never a
// wrong value — and where the fsync's cost, paid on every model reply,
// fell on the servers (on a machine whose cores run the model, the
// kernel's journal commits take from it). A kill still leaves the old
// file or the new one whole: the rename is atomic and the written bytes
// are the system's once written. The caller sweeps dir.
func PlaceFile(dir, prefix, path string, b []byte) error {
	return place(dir, prefix, path, false, func(f *os.File) error {
		_, err := f.Write(b)
		return err
	})
}

// writeVia writes path through write, buffered, synced and renamed into
// place (WriteAtomic).
func writeVia(dir, prefix, path string, write func(io.Writer) error) error {
	return place(dir, prefix, path, true, func(f *os.File) error {
		bw := bufio.NewWriterSize(f, 64<<10)
		if err := write(bw); err != nil {
			return err
		}
		return bw.Flush()
	})
}

// place writes a temporary file in dir named prefix… through write, makes
// it readable by all (0644), syncs it when sync is set, and renames it to
// path; on any failure the temporary file is removed and path is
// untouched.
func place(dir, prefix, path string, sync bool, write func(*os.File) error) error {
	tmp, err := os.CreateTemp(dir, prefix+"*")
	if err != nil {
		return err
	}
	err = write(tmp)
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if err == nil && sync {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// SweepTemps removes the files in dir whose names start with prefix: the
// temporary files of writers that were killed before their rename. Two
// processes writing one file at once are not supported (the last rename
// would win anyway).
func SweepTemps(dir, prefix string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) {
			os.RemoveAll(filepath.Join(dir, e.Name()))
		}
	}
}

// SweepRunTemps removes what killed writers left in run directory dir:
// the temporary files of its manifest, summary, run file and records.
// Call it holding the run's lock.
func SweepRunTemps(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if n := e.Name(); strings.HasPrefix(n, ".") && strings.Contains(n, ".tmp-") {
			os.RemoveAll(filepath.Join(dir, n))
		}
	}
}
