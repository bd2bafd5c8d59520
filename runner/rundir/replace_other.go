//go:build !linux

package rundir

import "os"

// ReplaceDir puts directory src in dst's place: dst is moved aside into
// src's name and src renamed to it (two steps where the system has no
// atomic exchange); src then holds the previous content.
func ReplaceDir(src, dst string) error {
	aside := src + ".old"
	if err := os.Rename(dst, aside); err != nil && !os.IsNotExist(err) {
		return err
	}
	if err := os.Rename(src, dst); err != nil {
		os.Rename(aside, dst)
		return err
	}
	return os.Rename(aside, src)
}
