package testutil

import (
	"os"
	"path/filepath"
	"testing"
)

func TestCPUPluginPrefersFound(t *testing.T) {
	p := filepath.Join(t.TempDir(), "plugin.so")
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := CPUPlugin(t, "", filepath.Join(t.TempDir(), "absent.so"), p); got != p {
		t.Errorf("CPUPlugin = %q, want %q (the first existing file)", got, p)
	}
}
