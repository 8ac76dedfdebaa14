package hub

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/goaccel/goaccel/internal/testutil"
)

// TestLockExcludesPython: while huggingface_hub's lock (utils.WeakFileLock, Python's filelock)
// holds a blob's lock file, lockFile waits; once Python lets go, it takes it; and Python waits
// for a lock Go holds.
func TestLockExcludesPython(t *testing.T) {
	testutil.Long(t, "runs Python's huggingface_hub")
	py := testutil.Python(t, "huggingface_hub", "huggingface_hub (make deps)")
	path := filepath.Join(t.TempDir(), ".locks", "models--org--x", "abc.lock")
	script := `
import sys, time
from huggingface_hub.utils import WeakFileLock
with WeakFileLock(sys.argv[1], timeout=float(sys.argv[2])):
    print("locked", flush=True)
    sys.stdin.readline()
print("released", flush=True)`
	run := func(timeout string) (*exec.Cmd, *bufio.Reader, func()) {
		cmd := exec.Command(py, "-c", script, path, timeout)
		in, _ := cmd.StdinPipe()
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd, bufio.NewReader(out), func() { in.Close() }
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd, out, release := run("60")
	if line, _ := out.ReadString('\n'); strings.TrimSpace(line) != "locked" {
		t.Fatalf("python: %q", line)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	_, err := lockFile(ctx, path)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Go took a lock Python holds: %v", err)
	}
	release()
	cmd.Wait()
	unlock, err := lockFile(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	// Python, given 0.5 s, times out on the lock Go holds.
	b, err := exec.Command(py, "-c", script, path, "0.5").CombinedOutput()
	if err == nil || !strings.Contains(string(b), "Timeout") {
		t.Errorf("Python took a lock Go holds: %v\n%s", err, b)
	}
	unlock()
}
