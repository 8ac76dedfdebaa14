package testutil

import (
	"os"
	"path/filepath"
	"testing"
)

// PolarityDir returns ../shared/data/rt-polarity beside the repository root (the folder with
// go.mod above the test's working directory), or skips the test loudly when the data is not
// there.
func PolarityDir(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Skip("SKIPPED: repository root (go.mod) not found, so ../shared/data/rt-polarity cannot be located")
		}
		dir = parent
	}
	p := filepath.Join(dir, "..", "shared", "data", "rt-polarity")
	if _, err := os.Stat(filepath.Join(p, "rt-polarity.pos")); err != nil {
		t.Skipf("SKIPPED: the rt-polarity data is absent (%v); put it at ../shared/data/rt-polarity beside the repository", err)
	}
	return p
}
