package rundir

import (
	"os"
	"path/filepath"
)

// WriteFileAtomic writes b to a temporary file beside path, syncs it and
// renames it into place.
func WriteFileAtomic(path string, b []byte) error {
	return WriteFileVia(filepath.Dir(path), ".tmp-", path, b)
}

// WriteFileVia writes b to a temporary file in dir (on path's file system)
// named prefix…, syncs it and renames it to path.
func WriteFileVia(dir, prefix, path string, b []byte) error {
	tmp, err := os.CreateTemp(dir, prefix+"*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}
