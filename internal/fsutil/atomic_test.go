package fsutil

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestWriteAtomic(t *testing.T) {
	errWrite := errors.New("encoder failed")
	cases := []struct {
		name     string
		old      string // content of the target before the call; "" for none
		dirIsNew bool   // the target's directory does not exist
		write    func(w io.Writer) error
		want     string // content after the call
		wantErr  error  // nil: success; otherwise errors.Is target (or errAny)
	}{
		{name: "new file", write: writeString("hello\n"), want: "hello\n"},
		{name: "replaces", old: "old content that is longer", write: writeString("new"), want: "new"},
		{name: "empty", old: "x", write: writeString(""), want: ""},
		{name: "many small writes", write: func(w io.Writer) error {
			for i := range 10000 {
				if _, err := w.Write([]byte{byte('a' + i%26)}); err != nil {
					return err
				}
			}
			return nil
		}, want: strings.Repeat("abcdefghijklmnopqrstuvwxyz", 10000/26) + "abcdefghijklmnop"},
		{name: "write fails", old: "kept", write: func(w io.Writer) error {
			_, _ = w.Write([]byte("partial"))
			return errWrite
		}, want: "kept", wantErr: errWrite},
		{name: "missing directory", dirIsNew: true, write: writeString("x"), wantErr: os.ErrNotExist},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if c.dirIsNew {
				dir = filepath.Join(dir, "absent")
			}
			path := filepath.Join(dir, "file.json")
			if c.old != "" {
				if err := os.WriteFile(path, []byte(c.old), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			err := WriteAtomic(path, c.write)
			if c.wantErr != nil {
				if !errors.Is(err, c.wantErr) {
					t.Fatalf("error %v, want one wrapping %v", err, c.wantErr)
				}
				if !strings.Contains(err.Error(), path) {
					t.Errorf("error %q does not name %s", err, path)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if !c.dirIsNew {
				got, err := os.ReadFile(path)
				if c.old == "" && c.wantErr != nil {
					if !errors.Is(err, os.ErrNotExist) {
						t.Errorf("a failed write created %s", path)
					}
				} else if err != nil || string(got) != c.want {
					t.Errorf("content %q (%v), want %q", got, err, c.want)
				}
				assertNoTemp(t, dir)
			}
		})
	}
}

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "latest")
	for _, content := range []string{"step-1\n", "step-20\n", "s\n"} {
		if err := WriteFileAtomic(path, []byte(content)); err != nil {
			t.Fatal(err)
		}
		if got, err := os.ReadFile(path); err != nil || string(got) != content {
			t.Fatalf("content %q (%v), want %q", got, err, content)
		}
	}
	assertNoTemp(t, dir)

	// Renaming over a non-empty directory fails: the temporary file must not stay behind.
	blocked := filepath.Join(dir, "blocked")
	if err := os.MkdirAll(filepath.Join(blocked, "child"), 0o755); err != nil {
		t.Fatal(err)
	}
	err := WriteFileAtomic(blocked, []byte("x"))
	if err == nil || !strings.Contains(err.Error(), blocked) {
		t.Fatalf("writing over a directory: error %v, want one naming %s", err, blocked)
	}
	assertNoTemp(t, dir)
}

func TestWriteSync(t *testing.T) {
	errWrite := errors.New("encoder failed")
	cases := []struct {
		name    string
		old     string
		missing bool // the directory does not exist
		write   func(io.Writer) error
		want    string // content after the call; after a failure, what the file may hold part of
		wantErr error
	}{
		{name: "new file", write: writeString("abc"), want: "abc"},
		{name: "truncates", old: "a much longer old content", write: writeString("short"), want: "short"},
		{name: "write fails after writing", write: func(w io.Writer) error {
			_, _ = io.WriteString(w, "part")
			return errWrite
		}, want: "part", wantErr: errWrite},
		{name: "missing directory", missing: true, write: writeString("x"), wantErr: os.ErrNotExist},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if c.missing {
				dir = filepath.Join(dir, "absent")
			}
			path := filepath.Join(dir, "weights.safetensors")
			if c.old != "" {
				if err := os.WriteFile(path, []byte(c.old), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			err := WriteSync(path, c.write)
			if c.wantErr != nil {
				if !errors.Is(err, c.wantErr) || !strings.Contains(err.Error(), path) {
					t.Fatalf("error %v, want one wrapping %v and naming %s", err, c.wantErr, path)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if c.missing {
				return
			}
			got, err := os.ReadFile(path)
			if err != nil || string(got) != c.want && (c.wantErr == nil || !strings.HasPrefix(c.want, string(got))) {
				t.Errorf("content %q (%v), want %q (or a prefix of it after a failure)", got, err, c.want)
			}
		})
	}
	path := filepath.Join(t.TempDir(), "manifest.json")
	if err := WriteFileSync(path, []byte("{}\n")); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(path); err != nil || string(got) != "{}\n" {
		t.Errorf("WriteFileSync: content %q (%v)", got, err)
	}
}

func TestSyncDir(t *testing.T) {
	dir := t.TempDir()
	if err := SyncDir(dir); err != nil {
		t.Errorf("SyncDir(%s): %v", dir, err)
	}
	missing := filepath.Join(dir, "missing")
	if err := SyncDir(missing); !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), missing) {
		t.Errorf("SyncDir(missing): error %v, want not-exist naming %s", err, missing)
	}
}

// writeString returns a write function for WriteAtomic that writes s.
func writeString(s string) func(io.Writer) error {
	return func(w io.Writer) error {
		_, err := io.WriteString(w, s)
		return err
	}
}

// assertNoTemp fails if dir holds a temporary file of WriteAtomic.
func assertNoTemp(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), TempPrefix) {
			t.Errorf("temporary file %s left in %s", e.Name(), dir)
		}
	}
}

// TestSwapDir: the new directory takes dst's place and the old one comes back at the returned
// path (on Linux by the exchange: aside stays unused).
func TestSwapDir(t *testing.T) {
	root := t.TempDir()
	src, dst, aside := filepath.Join(root, "new"), filepath.Join(root, "d"), filepath.Join(root, "aside")
	for dir, text := range map[string]string{src: "new", dst: "old"} {
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "f"), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old, err := SwapDir(src, dst, aside)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dst, "f")); string(b) != "new" {
		t.Errorf("dst holds %q, want new", b)
	}
	if b, _ := os.ReadFile(filepath.Join(old, "f")); string(b) != "old" {
		t.Errorf("the returned %s holds %q, want old", old, b)
	}
	if _, err := os.Stat(aside); runtime.GOOS == "linux" && err == nil {
		t.Errorf("on Linux the swap is an exchange, yet %s was used", aside)
	}
	if old, err := SwapDir(filepath.Join(root, "missing"), filepath.Join(root, "absent"), aside); err == nil || old != "" {
		t.Errorf("swapping a missing directory: %q, %v", old, err)
	}
}
