package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/hub/hubtest"
)

// TestDownloadCommand: goaccel download prints the snapshot folder, downloads only what
// --include/--exclude or the files named leave, takes datasets and revisions, copies into
// --local_dir, and an unknown repository is exit status 1 with the Hub's reason.
func TestDownloadCommand(t *testing.T) {
	s := hubtest.NewServer()
	defer s.Close()
	cache := s.Setenv(t)
	first := s.Commit("model", "org/m", map[string][]byte{"config.json": []byte("{}"), "model.safetensors": []byte("weights"), "README.md": []byte("#")})
	s.Ref("model", "org/m", "v1", first)
	s.Commit("model", "org/m", map[string][]byte{"config.json": []byte(`{"v":2}`)})
	dc := s.Commit("dataset", "org/d", map[string][]byte{"data/train.csv": []byte("a,b\n"), "data/test.csv": []byte("a,b\n")})

	dl := func(want int, args ...string) (string, string) {
		t.Helper()
		var out, errb bytes.Buffer
		if code := run(append([]string{"download"}, args...), &out, &errb); code != want {
			t.Fatalf("goaccel download %v: exit %d, want %d\n%s", args, code, want, errb.String())
		}
		return strings.TrimSpace(out.String()), errb.String()
	}
	files := func(dir string) string {
		var names []string
		filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				rel, _ := filepath.Rel(dir, p)
				names = append(names, rel)
			}
			return nil
		})
		return strings.Join(names, ",")
	}
	out, _ := dl(0, "org/m", "--revision", "v1", "--include", "*.json", "--include", "*.safetensors", "--exclude", "model.*")
	if out != filepath.Join(cache, "models--org--m", "snapshots", first) || files(out) != "config.json" {
		t.Errorf("printed %s holding %s", out, files(out))
	}
	out, _ = dl(0, "org/m@v1", "README.md")
	if files(out) != "README.md,config.json" {
		t.Errorf("a file named: %s", files(out))
	}
	out, _ = dl(0, "--repo_type", "dataset", "org/d", "--include", "data/train*")
	if out != filepath.Join(cache, "datasets--org--d", "snapshots", dc) || files(out) != filepath.Join("data", "train.csv") {
		t.Errorf("dataset: %s holding %s", out, files(out))
	}
	local := filepath.Join(t.TempDir(), "here")
	out, _ = dl(0, "org/m", "--local_dir", local)
	if b, err := os.ReadFile(filepath.Join(local, "config.json")); out != local || err != nil || string(b) != `{"v":2}` {
		t.Errorf("--local_dir: printed %s, config %q %v", out, b, err)
	}
	if st, _ := os.Lstat(filepath.Join(local, "config.json")); st.Mode()&os.ModeSymlink != 0 {
		t.Error("--local_dir holds a symlink")
	}
	_, msg := dl(1, "org/none")
	if !strings.Contains(msg, "org/none") || !strings.Contains(msg, "RepoNotFound") {
		t.Errorf("unknown repository: %s", msg)
	}
	t.Logf("%s", msg)
	if _, msg := dl(1, "org/m", "nothere.json"); !strings.Contains(msg, "nothere.json") {
		t.Errorf("a file the repository lacks: %s", msg)
	}
	dl(2, "org/m@v1", "--revision", "main")
	dl(2, "--repo_type", "space", "org/m")
	t.Setenv("HF_HUB_OFFLINE", "1")
	if out, _ := dl(0, "org/m@v1"); out != filepath.Join(cache, "models--org--m", "snapshots", first) {
		t.Errorf("offline: %s", out)
	}
}
