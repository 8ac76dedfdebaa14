//go:build !linux

package checkpoint

import "errors"

// exchange is only available on Linux; elsewhere replaceDir moves the old directory aside.
func exchange(a, b string) error {
	return errors.New("atomic exchange not supported on this OS")
}
