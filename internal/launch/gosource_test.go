package launch

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGoSourceIsBuiltOnce: `goaccel launch main.go` and `goaccel launch ./folder` build the Go
// source once (as `go run` does) and run the executable as every rank; before, the file was
// refused as "not executable" and then failed with "exec format error". A source that does not
// compile fails before any rank starts, with go build's message.
func TestGoSourceIsBuiltOnce(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatalf("go test runs without the go command in $PATH: %v", err) // it cannot: go test needs it
	}
	src := t.TempDir()
	main := `package main

import (
	"os"
	"path/filepath"
)

func main() {
	_ = os.WriteFile(filepath.Join(os.Getenv("OUT_DIR"), "rank_"+os.Getenv("RANK")), []byte(os.Getenv("WORLD_SIZE")), 0o644)
}
`
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(src, "main.go"), []byte(main), 0o644))
	must(os.WriteFile(filepath.Join(src, "go.mod"), []byte("module example.com/train\n\ngo 1.26\n"), 0o644))
	for _, program := range []string{filepath.Join(src, "main.go"), src} {
		out := t.TempDir()
		logs := &syncBuffer{}
		cfg := Config{Program: program, NprocPerNode: 2, Env: append(removeKey(os.Environ(), launcherSwitch), "OUT_DIR="+out),
			LogDir: filepath.Join(out, "logs"), Stdout: logs, Stderr: logs, Secret: testSecret}
		if err := Run(context.Background(), cfg); err != nil {
			t.Fatalf("launch %s: %v\n%s", program, err, logs)
		}
		for _, rank := range []string{"0", "1"} {
			got, err := os.ReadFile(filepath.Join(out, "rank_"+rank))
			if err != nil || string(got) != "2" {
				t.Errorf("launch %s: rank %s wrote %q (%v), want WORLD_SIZE 2", program, rank, got, err)
			}
		}
		if !strings.Contains(logs.String(), "built "+program) {
			t.Errorf("launch %s: no word of the build in the launcher's output:\n%s", program, logs)
		}
	}
	bad := filepath.Join(t.TempDir(), "broken.go")
	must(os.WriteFile(bad, []byte("package main\n\nfunc main() { undefinedName() }\n"), 0o644))
	err := Run(context.Background(), Config{Program: bad, NprocPerNode: 2, Stdout: &syncBuffer{}, Stderr: &syncBuffer{}, Secret: testSecret})
	if err == nil || !strings.Contains(err.Error(), "go build") || !strings.Contains(err.Error(), "undefinedName") {
		t.Errorf("a Go file that does not compile: %v, want go build's message naming undefinedName", err)
	}
	missing := filepath.Join(t.TempDir(), "nothere.go")
	err = Run(context.Background(), Config{Program: missing, NprocPerNode: 2, Stdout: &syncBuffer{}, Stderr: &syncBuffer{}, Secret: testSecret})
	if err == nil || !strings.Contains(err.Error(), "no such Go file") || !strings.Contains(err.Error(), missing) {
		t.Errorf("a Go file that is not there: %v, want an error naming it", err)
	}
}
