//go:build !linux

package trainer

import (
	"errors"
	"os"
)

// openPTY is only implemented on Linux.
func openPTY() (*os.File, *os.File, error) {
	return nil, nil, errors.New("pseudo-terminals are only opened on Linux by this test")
}
