//go:build unix

package fsutil

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestModesFollowUmask: files written atomically (first version and replacement), temporary
// directories and ReplaceDir's result get the modes of os.Create and os.MkdirAll (0644 and
// 0755 less the umask), not os.CreateTemp's 0600 or os.MkdirTemp's 0700.
func TestModesFollowUmask(t *testing.T) {
	for _, c := range []struct {
		umask      int
		file, dirs os.FileMode
	}{{0o022, 0o644, 0o755}, {0o077, 0o600, 0o700}} {
		old := syscall.Umask(c.umask)
		dir := t.TempDir()
		path := filepath.Join(dir, "a.json")
		for range 2 { // create, then replace
			if err := WriteFileAtomic(path, []byte("{}")); err != nil {
				t.Fatal(err)
			}
			if st, _ := os.Stat(path); st.Mode().Perm() != c.file {
				t.Errorf("umask %03o: WriteFileAtomic made mode %v, want %v", c.umask, st.Mode().Perm(), c.file)
			}
		}
		tmp, err := MkdirTemp(dir, "x-")
		if err != nil {
			t.Fatal(err)
		}
		if st, _ := os.Stat(tmp); st.Mode().Perm() != c.dirs {
			t.Errorf("umask %03o: MkdirTemp made mode %v, want %v", c.umask, st.Mode().Perm(), c.dirs)
		}
		best := filepath.Join(dir, "best")
		for range 2 {
			if err := ReplaceDir(best, func(d string) error { return os.WriteFile(filepath.Join(d, "f"), nil, 0o644) }); err != nil {
				t.Fatal(err)
			}
		}
		if st, _ := os.Stat(best); st.Mode().Perm() != c.dirs {
			t.Errorf("umask %03o: ReplaceDir made mode %v, want %v", c.umask, st.Mode().Perm(), c.dirs)
		}
		if m, _ := filepath.Glob(filepath.Join(dir, TempPrefix+"*")); len(m) != 0 {
			t.Errorf("leftovers: %v", m)
		}
		syscall.Umask(old)
	}
}
