package gpucheck

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/goaccel/goaccel/internal/testutil"
)

// TestGPUCheckDryRun builds the GPU bundle (make gpu-bundle, fast compression) and runs
// gpu_check.sh --dry-run with it: every part (env, the parity runs against the reference
// losses, goaccel bench, two processes under goaccel launch with the bundle's MPICH, the
// first-step runs) must pass, and the results must be at most 8 files.
func TestGPUCheckDryRun(t *testing.T) {
	testutil.Long(t, "builds three binaries and runs each of them")
	plugin := testutil.CPUPlugin(t)
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, ".deps", "mpich", "lib", "libmpi.so.12")); err != nil {
		msg := "SKIPPING: the bundle needs MPICH in .deps/mpich (make deps): " + err.Error()
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	tmp := t.TempDir()
	bundle, out := filepath.Join(tmp, "gpu"), filepath.Join(tmp, "out")
	build := exec.Command("make", "-C", root, "--no-print-directory", "gpu-bundle", "GPU_BUNDLE="+bundle, "XZ=-0")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("make gpu-bundle: %v\n%s", err, b)
	} else if !strings.Contains(string(b), "limit 64 MiB") {
		t.Errorf("make gpu-bundle does not print the bundle's size:\n%s", b)
	} else {
		t.Logf("%s", b[strings.LastIndex(strings.TrimSpace(string(b)), "\n")+1:])
	}
	cmd := exec.Command("bash", filepath.Join(bundle, "gpu_check.sh"), "--dry-run")
	cmd.Env = append(os.Environ(), "OUT="+out, "PJRT_PLUGIN_LIBRARY_PATH="+plugin)
	start := time.Now()
	b, err := cmd.CombinedOutput()
	t.Logf("gpu_check.sh --dry-run took %s (load average %s):\n%s", time.Since(start).Round(time.Second), loadAverage(), b)
	if err != nil {
		for _, f := range []string{"runs.log", "bench.txt", "launch.log", "env.txt"} {
			if log, _ := os.ReadFile(filepath.Join(out, f)); len(log) > 0 {
				t.Logf("%s:\n%s", f, tail(string(log), 40))
			}
		}
		t.Fatalf("gpu_check.sh --dry-run: %v", err)
	}
	files, _ := os.ReadDir(out)
	if len(files) > 8 {
		t.Errorf("$OUT holds %d files, more than the 8 a lease brings back", len(files))
	}
	summary, _ := os.ReadFile(filepath.Join(out, "summary.txt"))
	for _, want := range []string{"env: ok", "parity quickstart tf32 unset: max rel diff", "PASS", "parity bert_classify tf32 unset",
		"bench mlp: ok", "bench bert: ok", "launch bert_classify 2 processes", "all-reduces", "ttfs cold: ok", "every part passed"} {
		if !strings.Contains(string(summary), want) {
			t.Errorf("summary.txt misses %q:\n%s", want, summary)
		}
	}
}

func loadAverage() string {
	b, _ := os.ReadFile("/proc/loadavg")
	return strings.Join(strings.Fields(string(b))[:min(3, len(strings.Fields(string(b))))], " ")
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
