package checkpoint

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/goaccel/goaccel/internal/fsutil"
)

// syncDir fsyncs a directory, so that the entries created or renamed in it reach stable storage.
func syncDir(dir string) error {
	if err := fsutil.SyncDir(dir); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	return nil
}

// replaceDir moves the complete directory src to dst (fsutil.SwapDir: atomically on Linux;
// elsewhere the old dst is first moved aside under a trash name, so that a crash in between
// leaves the previous checkpoints and the latest pointer untouched). The previous dst, if any,
// ends up at the returned path, for the caller to delete.
func replaceDir(src, dst string) (old string, err error) {
	old, err = fsutil.SwapDir(src, dst, trashName(dst))
	if err != nil {
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	return old, nil
}

// trashName returns a fresh hidden name beside path for a directory that is about to be deleted.
func trashName(path string) string {
	f, err := os.MkdirTemp(filepath.Dir(path), trashPrefix+filepath.Base(path)+"-")
	if err != nil {
		return filepath.Join(filepath.Dir(path), trashPrefix+filepath.Base(path))
	}
	_ = os.Remove(f) // Only the unique name is wanted; rename needs the target absent (or empty).
	return f
}

// removeDir deletes a directory tree by first renaming it to a trash name (atomic), so that a
// crash during the deletion never leaves a half-deleted directory under a checkpoint's name.
func removeDir(path string) error {
	trash := trashName(path)
	if err := os.Rename(path, trash); err != nil {
		return fmt.Errorf("checkpoint: removing %s: %w", path, err)
	}
	if err := os.RemoveAll(trash); err != nil {
		return fmt.Errorf("checkpoint: removing %s: %w", path, err)
	}
	return nil
}
