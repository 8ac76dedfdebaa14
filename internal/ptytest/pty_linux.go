// Package ptytest opens pseudo-terminals for tests that check what a program shows on a
// terminal (progress bars) as opposed to a pipe or a file (plain lines).
package ptytest

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Open opens a pseudo-terminal pair (master, slave) with the Linux /dev/ptmx interface: a
// test writes a program's output to slave, which is a terminal, and reads the screen from
// master.
func Open() (*os.File, *os.File, error) {
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, err
	}
	fd := int(master.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		master.Close()
		return nil, nil, fmt.Errorf("unlocking the pty: %w", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		master.Close()
		return nil, nil, fmt.Errorf("reading the pty number: %w", err)
	}
	slave, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		master.Close()
		return nil, nil, err
	}
	return master, slave, nil
}
