//go:build linux

package fsutil

import "golang.org/x/sys/unix"

// exchange atomically swaps the directory entries a and b (renameat2 with RENAME_EXCHANGE).
func exchange(a, b string) error {
	return unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
}
