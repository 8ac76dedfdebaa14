//go:build !linux

package fsutil

import "errors"

// exchange is only available on Linux; elsewhere SwapDir moves the old directory aside.
func exchange(a, b string) error {
	return errors.New("atomic exchange not supported on this OS")
}
