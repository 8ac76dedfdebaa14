package launch

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// goSource reports whether program names Go source rather than an executable, as `go run`
// takes it: a file whose name ends in .go, or a directory that holds a Go package (a .go file
// that is not a test). The launcher builds such a program once, before it starts the ranks,
// so that every rank runs the same executable.
func goSource(program string) bool {
	st, err := os.Stat(program)
	if err != nil {
		return false
	}
	if !st.IsDir() {
		return st.Mode().IsRegular() && strings.HasSuffix(program, ".go")
	}
	files, err := filepath.Glob(filepath.Join(program, "*.go"))
	if err != nil {
		return false
	}
	for _, f := range files {
		if !strings.HasSuffix(f, "_test.go") {
			return true
		}
	}
	return false
}

// buildGo builds the Go source program (a file or a package folder, as the user typed it) with
// `go build` into a new temporary folder and returns the executable and a function that removes
// the folder. The build's own output is in the error when it fails; say reports the build.
func buildGo(ctx context.Context, program string, say func(format string, args ...any)) (string, func(), error) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		return "", nil, fmt.Errorf("program %s is Go source, and building it needs the go command, which is not in $PATH "+
			"(build it where Go is installed, `go build -o train %s`, and launch ./train)", program, program)
	}
	dir, err := os.MkdirTemp("", "goaccel-build-")
	if err != nil {
		return "", nil, fmt.Errorf("program %s: a folder for its build: %w", program, err)
	}
	cleanup := func() { _ = os.RemoveAll(dir) }
	name := strings.TrimSuffix(filepath.Base(filepath.Clean(program)), ".go")
	if name == "." || name == string(filepath.Separator) || name == "" {
		name = "program"
	}
	exe := filepath.Join(dir, name)
	// go build runs in the source's folder, so that the module it belongs to is the one that
	// builds it, wherever the launcher was started.
	workDir, target := program, "."
	if st, err := os.Stat(program); err == nil && !st.IsDir() {
		workDir, target = filepath.Dir(program), filepath.Base(program)
	}
	start := time.Now()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, goTool, "build", "-o", exe, target)
	cmd.Dir, cmd.Stdout, cmd.Stderr = workDir, &out, &out
	if err := cmd.Run(); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("program %s is Go source and `go build %s` failed in %s (%v):\n%s", program, target, workDir, err,
			strings.TrimRight(out.String(), "\n"))
	}
	say("built %s with `go build` in %.1f s; every rank runs that executable", program, time.Since(start).Seconds())
	return exe, cleanup, nil
}

// sayTo returns a printer of launcher notices to w (os.Stderr when nil), for the steps Run
// takes before it has a launcher.
func sayTo(w io.Writer) func(format string, args ...any) {
	if w == nil {
		w = os.Stderr
	}
	return func(format string, args ...any) { fmt.Fprintf(w, "goaccel launch: "+format+"\n", args...) }
}
