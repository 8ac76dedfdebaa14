//go:build !unix

package hub

import (
	"context"
	"errors"
)

// lockFile needs flock(2), which huggingface_hub's filelock uses on Unix; this system has none
// that Python's processes would also take, so downloading is refused rather than unlocked.
func lockFile(ctx context.Context, path string) (unlock func(), err error) {
	return nil, errors.New("downloading into the shared cache needs a Unix file lock (flock), which this system lacks: " + path)
}
