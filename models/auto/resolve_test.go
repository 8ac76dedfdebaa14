package auto

import (
	"os"
	"path/filepath"
	"testing"
)

// TestSnapshotStaysInRepo: a refs/ file naming ".." and a revision with ".." elements find no
// snapshot (they would name the repository folder itself, or a folder outside it).
func TestSnapshotStaysInRepo(t *testing.T) {
	repo := t.TempDir()
	for _, d := range []string{"refs", "snapshots"} {
		if err := os.MkdirAll(filepath.Join(repo, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(repo, "refs", "main"), []byte("..\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, rev := range []string{"main", "../snapshots/..", "x/../../.."} {
		if dir, _ := findSnapshot(repo, rev); dir != "" {
			t.Errorf("revision %q: snapshot %s, want none", rev, dir)
		}
	}
}
