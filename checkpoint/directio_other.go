//go:build !linux

package checkpoint

import "os"

// openWrite creates (or truncates) the file at path for writing. Only Linux bypasses the page
// cache (see directio_linux.go): direct is always false here.
func openWrite(path string) (f *os.File, direct bool, err error) {
	f, err = os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	return f, false, err
}

// setBuffered is a no-op: files are never opened for direct writes here.
func setBuffered(*os.File) error { return nil }

// isAlignErr is always false: there are no direct writes here.
func isAlignErr(error) bool { return false }
