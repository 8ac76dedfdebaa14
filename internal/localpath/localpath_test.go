package localpath

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// write makes the file at path (and its folders).
func write(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func TestJoin(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "model")
	write(t, filepath.Join(dir, "a.safetensors"))
	write(t, filepath.Join(dir, "sub", "b.safetensors"))
	write(t, filepath.Join(root, "secret"))
	symlink(t, "../secret", filepath.Join(dir, "out"))
	symlink(t, filepath.Join(root, "secret"), filepath.Join(dir, "abs_out"))
	symlink(t, "..", filepath.Join(dir, "up"))
	symlink(t, "sub/b.safetensors", filepath.Join(dir, "in"))
	symlink(t, "out", filepath.Join(dir, "chain"))

	for _, c := range []struct {
		name, want, err string
	}{
		{name: "a.safetensors", want: filepath.Join(dir, "a.safetensors")},
		{name: "sub/b.safetensors", want: filepath.Join(dir, "sub", "b.safetensors")},
		{name: "sub/../a.safetensors", want: filepath.Join(dir, "a.safetensors")},
		{name: "in", want: filepath.Join(dir, "in")},                                   // a link inside the folder
		{name: "missing.safetensors", want: filepath.Join(dir, "missing.safetensors")}, // the caller's open says it is missing
		{name: "", err: "empty"},
		{name: ".", err: "the folder itself"},
		{name: "sub/..", err: "the folder itself"},
		{name: "..", err: "outside the folder"},
		{name: "../secret", err: "outside the folder"},
		{name: "sub/../../secret", err: "outside the folder"},
		{name: filepath.Join(root, "secret"), err: "absolute"},
		{name: "/etc/passwd", err: "absolute"},
		{name: "out", err: "symbolic link"},
		{name: "abs_out", err: "symbolic link"},
		{name: "chain", err: "symbolic link"},
		{name: "up/secret", err: "symbolic link"},
	} {
		got, err := Join(dir, c.name)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("Join(%q): %v", c.name, err)
		case c.err == "" && got != c.want:
			t.Errorf("Join(%q) = %s, want %s", c.name, got, c.want)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("Join(%q) = %q, %v; want an error saying %q", c.name, got, err, c.err)
		case c.err != "" && c.name != "" && !strings.Contains(err.Error(), c.name):
			t.Errorf("Join(%q): error %v does not quote the name", c.name, err)
		}
	}
}

// TestJoinHubCache: a snapshot of the Hugging Face hub cache links its files to the
// repository's blobs/, which is not a way out of the folder.
func TestJoinHubCache(t *testing.T) {
	repo := filepath.Join(t.TempDir(), "models--org--name")
	snap := filepath.Join(repo, "snapshots", "0123abcd")
	write(t, filepath.Join(repo, "blobs", "f00d"))
	write(t, filepath.Join(repo, "secret"))
	if err := os.MkdirAll(snap, 0o755); err != nil {
		t.Fatal(err)
	}
	symlink(t, "../../blobs/f00d", filepath.Join(snap, "model-00001-of-00002.safetensors"))
	symlink(t, "../../secret", filepath.Join(snap, "other"))
	if got, err := Join(snap, "model-00001-of-00002.safetensors"); err != nil || got != filepath.Join(snap, "model-00001-of-00002.safetensors") {
		t.Errorf("a snapshot's link to blobs/: %q, %v", got, err)
	}
	if _, err := Join(snap, "other"); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("a snapshot's link outside blobs/: %v, want an error", err)
	}
	// A folder merely named like a snapshot, outside any models--* repository, gets no such leave.
	plain := filepath.Join(t.TempDir(), "x", "snapshots", "h")
	write(t, filepath.Join(plain, "..", "..", "blobs", "f"))
	if err := os.MkdirAll(plain, 0o755); err != nil {
		t.Fatal(err)
	}
	symlink(t, "../../blobs/f", filepath.Join(plain, "w"))
	if _, err := Join(plain, "w"); err == nil {
		t.Errorf("a link out of a snapshots/ folder outside a models--* repository was taken")
	}
}
