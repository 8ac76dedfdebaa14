//go:build !linux

package ptytest

import (
	"errors"
	"os"
)

// Open is only implemented on Linux; elsewhere it returns an error (tests skip).
func Open() (*os.File, *os.File, error) {
	return nil, nil, errors.New("pseudo-terminals are only opened on Linux by this test")
}
