// Package fsutil holds the small file-system helpers shared by goaccel's packages: writing a
// file durably (fsync before close), replacing a file atomically, and syncing a directory.
package fsutil

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
)

// TempPrefix starts the name of the temporary file that WriteAtomic creates beside its target
// (".tmp-<target name>-<random>"). A crash can leave such a file behind; code that owns a
// directory may delete entries with this prefix.
const TempPrefix = ".tmp-"

// WriteFileAtomic replaces the file at path with data, so that a reader, or the file system
// after a crash, sees either the old content or the new one, never a mix. See WriteAtomic.
func WriteFileAtomic(path string, data []byte) error {
	return WriteAtomic(path, writeBytes(data))
}

// WriteAtomic replaces the file at path with what write writes, atomically: write fills a new
// temporary file in path's directory, which is then flushed, fsynced, closed and renamed over
// path, and the directory is fsynced so that the rename itself is durable. write's writes are
// buffered. On any error (write's included) the temporary file is removed, path is left as it
// was, and the error names path. The new file has mode 0644 less the umask, like a file made
// by os.Create (not os.CreateTemp's 0600), whether it is the first version or a replacement.
func WriteAtomic(path string, write func(w io.Writer) error) error {
	dir := filepath.Dir(path)
	f, err := CreateTemp(dir, TempPrefix+filepath.Base(path)+"-")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	tmp := f.Name()
	err = fill(f, write)
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return SyncDir(dir)
}

// WriteFileSync writes data to the file at path (created with mode 0644 before umask, or
// truncated) and fsyncs it before closing. Unlike WriteFileAtomic it writes in place: a crash
// can leave a partial file, so use it for files in a directory that is itself put in place
// atomically, or that nothing reads before the write succeeded. See WriteSync.
func WriteFileSync(path string, data []byte) error {
	return WriteSync(path, writeBytes(data))
}

// WriteSync writes what write writes to the file at path (created with mode 0644 before
// umask, or truncated), buffered, then flushes, fsyncs and closes it. Errors, write's
// included, name path; a failed write leaves a partial or empty file.
func WriteSync(path string, write func(w io.Writer) error) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err == nil {
		err = fill(f, write)
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// fill runs write on a buffer over f, then flushes, fsyncs and closes f (always closed).
func fill(f *os.File, write func(w io.Writer) error) error {
	bw := bufio.NewWriter(f) // Large writes go straight to f; small ones are batched.
	err := write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// writeBytes returns a write function for WriteAtomic and WriteSync that writes data.
func writeBytes(data []byte) func(io.Writer) error {
	return func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	}
}

// SyncDir fsyncs the directory dir, so that the entries created, renamed or removed in it
// reach stable storage.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("syncing directory %s: %w", dir, err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("syncing directory %s: %w", dir, err)
	}
	return nil
}

// CreateTemp creates a new file in dir named prefix followed by a random string, open for
// reading and writing, with mode 0644 less the umask: the mode of a file made by os.Create,
// so that a file later renamed into place can be shared like any other (os.CreateTemp's
// files are 0600).
func CreateTemp(dir, prefix string) (*os.File, error) {
	for range 1000 {
		name := filepath.Join(dir, prefix+randomSuffix())
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, err
		}
	}
	return nil, fmt.Errorf("creating a temporary file in %s: no free name", dir)
}

// MkdirTemp creates a new directory in dir named prefix followed by a random string, with
// mode 0755 less the umask, the mode of os.MkdirAll's directories (os.MkdirTemp's are 0700),
// and returns its path.
func MkdirTemp(dir, prefix string) (string, error) {
	for range 1000 {
		name := filepath.Join(dir, prefix+randomSuffix())
		err := os.Mkdir(name, 0o755)
		if err == nil {
			return name, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", err
		}
	}
	return "", fmt.Errorf("creating a temporary directory in %s: no free name", dir)
}

func randomSuffix() string { return strconv.FormatUint(rand.Uint64(), 36) }

// SwapDir puts the complete directory src in place of dst. When dst exists it is replaced
// atomically where the OS allows it (Linux: renameat2 with RENAME_EXCHANGE), so that dst never
// goes missing; elsewhere the old dst is first renamed to aside, then src to dst (a crash in
// between leaves the old one at aside and dst missing). The previous dst, if any, ends up at
// the returned path, for the caller to delete after it has made the change durable.
func SwapDir(src, dst, aside string) (old string, err error) {
	if _, err := os.Lstat(dst); errors.Is(err, os.ErrNotExist) {
		if err := os.Rename(src, dst); err != nil {
			return "", fmt.Errorf("renaming %s into place: %w", dst, err)
		}
		return "", nil
	}
	if err := exchange(src, dst); err == nil {
		return src, nil // src now holds the previous content of dst.
	}
	if err := os.Rename(dst, aside); err != nil {
		return "", fmt.Errorf("moving old %s aside: %w", dst, err)
	}
	if err := os.Rename(src, dst); err != nil {
		_ = os.Rename(aside, dst)
		return "", fmt.Errorf("renaming %s into place: %w", dst, err)
	}
	return aside, nil
}

// ReplaceDir fills a new directory with fill and puts it in place of the directory dst (which
// need not exist): fill writes into a temporary directory beside dst, which is synced and then
// swapped with dst (SwapDir: atomically on Linux); the old one is deleted last. If fill fails,
// dst is left as it was. Where the swap is not atomic, a crash between its two renames leaves
// dst missing and both versions in folders named TempPrefix+base(dst)+"-...", which a later
// ReplaceDir deletes.
func ReplaceDir(dst string, fill func(dir string) error) error {
	parent, base := filepath.Dir(dst), filepath.Base(dst)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("writing %s: %w", dst, err)
	}
	old, _ := filepath.Glob(filepath.Join(parent, TempPrefix+base+"-*"))
	for _, o := range old {
		_ = os.RemoveAll(o)
	}
	tmp, err := MkdirTemp(parent, TempPrefix+base+"-")
	if err != nil {
		return fmt.Errorf("writing %s: %w", dst, err)
	}
	if err := fill(tmp); err != nil {
		_ = os.RemoveAll(tmp)
		return fmt.Errorf("writing %s: %w", dst, err)
	}
	if err := SyncDir(tmp); err != nil {
		_ = os.RemoveAll(tmp)
		return err
	}
	replaced, err := SwapDir(tmp, dst, filepath.Join(parent, TempPrefix+base+"-old-"+randomSuffix()))
	if err != nil {
		_ = os.RemoveAll(tmp)
		return fmt.Errorf("writing %s: %w", dst, err)
	}
	if err := SyncDir(parent); err != nil {
		return err
	}
	if replaced != "" {
		_ = os.RemoveAll(replaced)
	}
	return nil
}
