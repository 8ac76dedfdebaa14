//go:build unix

package hub

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// lockFile takes the exclusive flock(2) of path as Python's filelock takes it for
// huggingface_hub (filelock's UnixFileLock: the file opened for writing, created with mode
// 0o664 by WeakFileLock, flock LOCK_EX|LOCK_NB retried until it is free), so that Go and Python
// processes exclude each other. The file is left in place when unlocked, as filelock leaves it
// (removing it would let a third process lock a new file while a second holds the old one).
func lockFile(ctx context.Context, path string) (unlock func(), err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o664)
	if err != nil {
		return nil, err
	}
	wait := time.Millisecond
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return func() { _ = unix.Flock(int(f.Fd()), unix.LOCK_UN); f.Close() }, nil
		}
		if err != unix.EWOULDBLOCK && err != unix.EINTR {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waiting for the lock %s (another process downloading): %w", path, ctx.Err())
		case <-time.After(wait):
		}
		wait = min(2*wait, 50*time.Millisecond)
	}
}
