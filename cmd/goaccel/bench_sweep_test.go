package main

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/internal/testutil"
)

// TestBenchSweep runs `goaccel bench --sweep` for one round on a very small BERT on XLA's CPU
// plugin (this test binary is the bench's worker): two sequence lengths on one device, one
// point dropped by --sweep_max_tokens, and 2 devices at the same global batch; sweep.md has a
// row per point measured with its steps/s and peak RSS, names the dropped point, and
// sweep.png is a PNG.
func TestBenchSweep(t *testing.T) {
	testutil.Long(t, "goaccel bench --sweep starts a bench worker for every point (its table, ratios and worker protocol are checked in tier 1 by cmd/goaccel/internal/bench)")
	testutil.CPUPlugin(t)
	t.Setenv(asGoaccel, "1") // the workers, started from this binary, run as goaccel
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	code := benchCmd([]string{"--sweep", "--work", "tiny:hidden=32:layers=1:heads=2:ff=64:vocab=128",
		"--sweep_seq", "8,16", "--sweep_batch", "2", "--sweep_max_tokens", "16", "--sweep_devices", "1,2",
		"--sweep_global_batch", "2", "--rounds", "1", "--steps", "1", "--warmup", "0", "--python", "none",
		"--run_dir", dir}, &out, &errOut)
	if code != 0 {
		t.Fatalf("status %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
	}
	md, err := os.ReadFile(filepath.Join(dir, "sweep.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := 0
	for _, line := range strings.Split(string(md), "\n") {
		f := strings.Split(line, "|")
		if len(f) < 11 || strings.TrimSpace(f[1]) == "seq" || strings.HasPrefix(strings.TrimSpace(f[1]), "-") {
			continue
		}
		rows++
		// seq, batch/dev, devices, tokens/step, then goaccel's steps/s and (column 9) peak RSS.
		if got := strings.TrimSpace(f[1]) + " " + strings.TrimSpace(f[4]); got != "8 16" {
			t.Errorf("row %q: seq and tokens %q, want 8 16 (L16 B2 is dropped)", line, got)
		}
		if s := strings.TrimSpace(f[5]); s == "-" || s == "0.000" {
			t.Errorf("row %q: no goaccel steps/s", line)
		}
		if s := strings.TrimSpace(f[9]); s == "-" {
			t.Errorf("row %q: no goaccel peak RSS", line)
		}
	}
	if rows != 2 {
		t.Errorf("sweep.md has %d rows of figures, want 2 (1 and 2 devices at L8 B2):\n%s", rows, md)
	}
	if !strings.Contains(string(md), "dropped: L16 B2 (32 tokens per step > --sweep_max_tokens 16)") {
		t.Errorf("sweep.md does not name the dropped point:\n%s", md)
	}
	f, err := os.Open(filepath.Join(dir, "sweep.png"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := png.Decode(f); err != nil {
		t.Errorf("sweep.png: %v", err)
	}
}
