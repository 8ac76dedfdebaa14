//go:build linux

package checkpoint

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// openWrite creates (or truncates) the file at path for writing, bypassing the page cache
// (O_DIRECT) where the file system allows it; direct reports whether it does.
func openWrite(path string) (f *os.File, direct bool, err error) {
	const flags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	f, err = os.OpenFile(path, flags|unix.O_DIRECT, 0o644)
	if err == nil {
		return f, true, nil
	}
	if !errors.Is(err, unix.EINVAL) { // EINVAL: this file system has no O_DIRECT (tmpfs, some FUSE).
		return nil, false, err
	}
	f, err = os.OpenFile(path, flags, 0o644)
	return f, false, err
}

// setBuffered turns O_DIRECT off on f, for a write whose size or alignment O_DIRECT refuses.
func setBuffered(f *os.File) error {
	fd := int(f.Fd())
	fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil {
		return err
	}
	_, err = unix.FcntlInt(uintptr(fd), unix.F_SETFL, fl&^unix.O_DIRECT)
	return err
}

// isAlignErr reports whether err is how a direct write says its buffer, size or offset is not
// aligned as the device needs.
func isAlignErr(err error) bool { return errors.Is(err, unix.EINVAL) }
