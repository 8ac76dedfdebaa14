package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/goaccel/goaccel/internal/home"
	"github.com/goaccel/goaccel/internal/testutil"
)

// TestFreshModule is SLOW (it builds a new module and runs pip; timings in docs/setup.md;
// skipped under -short). It does what a user of goaccel does in their own module, outside this
// checkout: a new module (replace github.com/goaccel/goaccel => the checkout) holding a copy of
// examples/quickstart gets the command with `go get -tool .../cmd/goaccel`; before `go tool
// goaccel setup`, `go run .` trains on the pure-Go backend and its plan line names goaccel
// setup; setup installs XLA's CPU plugin and MPICH into $GOACCEL_HOME (a temporary folder, as
// is $XDG_DATA_HOME); after it `go run .` trains on XLA, `goaccel env` names the folder and its
// MPICH, and `goaccel launch --nproc_per_node 2 ./prog` trains over MPI; a second setup
// installs nothing. GOMODCACHE, GOCACHE and pip's cache are the caller's, so nothing is
// downloaded or rebuilt that is already there; Go runs with GOPROXY=off (the module's go.sum is
// the checkout's) once `go mod graph` in the checkout has the module graph's go.mod files in
// the cache, pip as the environment configures it.
func TestFreshModule(t *testing.T) {
	testutil.Long(t, "the fresh-module test builds a new module and runs pip")
	if _, err := home.FindPip(); err != nil {
		msg := "SKIPPING the fresh-module test: " + err.Error()
		if os.Getenv("CI") != "" {
			t.Fatal("CI is set but " + msg)
		}
		t.Skip(msg)
	}
	checkout, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	mod, homeDir, xdg := filepath.Join(tmp, "mod"), filepath.Join(tmp, "home"), filepath.Join(tmp, "xdg")
	if err := os.MkdirAll(mod, 0o755); err != nil {
		t.Fatal(err)
	}
	gomod := "module example.com/fresh\n\ngo 1.26\n\nreplace github.com/goaccel/goaccel => " + checkout + "\n"
	copyFile(t, filepath.Join(checkout, "go.sum"), filepath.Join(mod, "go.sum"))
	copyFile(t, filepath.Join(checkout, "examples", "quickstart", "main.go"), filepath.Join(mod, "main.go"))
	if err := os.WriteFile(filepath.Join(mod, "go.mod"), []byte(gomod), 0o644); err != nil {
		t.Fatal(err)
	}
	drop := map[string]bool{"PJRT_PLUGIN_LIBRARY_PATH": true, "GOACCEL_MPI_LIB": true, "GOACCEL_MPI_ABI": true,
		"GOMLX_BACKEND": true, "GOACCEL_HOME": true, "XDG_DATA_HOME": true, "GOACCEL_DEVICES": true, "GOWORK": true, "GOPROXY": true}
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); !drop[k] {
			env = append(env, kv)
		}
	}
	env = append(env, "GOACCEL_HOME="+homeDir, "XDG_DATA_HOME="+xdg, "GOWORK=off", "GOPROXY=off", "GOMLX_NO_AUTO_INSTALL=1")
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	run := func(args ...string) string {
		t.Helper()
		start := time.Now()
		cmd := exec.CommandContext(ctx, args[0], args[1:]...)
		cmd.Dir, cmd.Env = mod, env
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		t.Logf("%s: %.1f s", strings.Join(args, " "), time.Since(start).Seconds())
		if err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out.String())
		}
		return out.String()
	}
	trained := func(what, out string) { // five epochs' evaluation, printed once (by rank 0)
		t.Helper()
		if n := strings.Count(out, "test accuracy"); n != 5 {
			t.Errorf("%s: %d lines with a test accuracy, want 5:\n%s", what, n, out)
		}
	}
	wantIn := func(what, out string, wants ...string) {
		t.Helper()
		for _, w := range wants {
			if !strings.Contains(out, w) {
				t.Errorf("%s: output misses %q:\n%s", what, w, out)
			}
		}
	}

	// The module graph's go.mod files, which `go get` reads and a build of the checkout does
	// not (a fresh machine's module cache lacks some), fetched as the caller's Go would.
	graph := exec.CommandContext(ctx, "go", "mod", "graph")
	graph.Dir = checkout
	if out, err := graph.CombinedOutput(); err != nil {
		t.Fatalf("go mod graph in %s: %v\n%s", checkout, err, out)
	}
	run("go", "get", "-tool", "github.com/goaccel/goaccel/cmd/goaccel")
	out := run("go", "run", ".")
	if strings.Contains(out, "backend xla") {
		t.Logf("NOTE: before setup a system-wide XLA plugin is used, so the pure-Go start is not shown:\n%s", out)
	} else {
		wantIn("go run . before setup", out, "backend go (pure Go)", "goaccel setup")
	}
	trained("go run . before setup", out)

	out = run("go", "tool", "goaccel", "setup")
	wantIn("goaccel setup", out, "folder "+homeDir+" (from $GOACCEL_HOME)",
		"lammps-jax-pjrt-cpu==0.11.2: installed: "+filepath.Join(homeDir, "pjrt-cpu", "lammps_jax_pjrt_cpu", "pjrt_c_api_cpu_plugin.so"),
		"mpich==5.0.2: installed: "+filepath.Join(homeDir, "mpich", "lib", "libmpi_abi.so.1"))

	out = run("go", "run", ".")
	wantIn("go run . after setup", out, "backend xla:cpu ("+filepath.Join(homeDir, "pjrt-cpu"))
	trained("go run . after setup", out)

	out = run("go", "tool", "goaccel", "env")
	wantIn("goaccel env", out, "- goaccel home: "+homeDir+" (from $GOACCEL_HOME); installed by goaccel setup: lammps-jax-pjrt-cpu==0.11.2, mpich==5.0.2",
		"- MPI (for several processes): "+filepath.Join(homeDir, "mpich", "lib", "libmpi_abi.so.1")+" (standard ABI, from goaccel home)")

	run("go", "build", "-o", "prog", ".")
	out = run("go", "tool", "goaccel", "launch", "--nproc_per_node", "2", "./prog")
	wantIn("goaccel launch --nproc_per_node 2 ./prog", out, "processes 2", "[rank 0] ")
	trained("goaccel launch --nproc_per_node 2 ./prog", out)

	out = run("go", "tool", "goaccel", "setup")
	if strings.Count(out, ": already installed: ") != 2 {
		t.Errorf("a second setup reinstalled something:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(xdg, "goaccel")); err == nil {
		t.Errorf("something was installed into $XDG_DATA_HOME/goaccel although GOACCEL_HOME was set")
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
