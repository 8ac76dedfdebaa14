package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/accelerator"
	"github.com/goaccel/goaccel/internal/testutil"
	"github.com/goaccel/goaccel/trainer"
)

func runCmd(args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestCommandLine(t *testing.T) {
	cases := []struct {
		name     string
		args     []string
		code     int
		inStdout string
		inStderr string
	}{
		{"no command", nil, 2, "", "usage: goaccel <command>"},
		{"help", []string{"--help"}, 0, "plot RUN_DIR", ""},
		{"unknown command", []string{"train"}, 2, "", `unknown command "train"`},
		{"launch: unknown flag", []string{"launch", "--nproc", "2", "true"}, 2, "", "unknown flag --nproc (did you mean --nproc_per_node?)"},
		{"launch: no program", []string{"launch", "--nproc_per_node", "1"}, 2, "", "no program to run"},
		{"launch: help", []string{"launch", "--help"}, 0, "--nproc_per_node", ""},
		{"launch: one rank", []string{"launch", "--tee", "0", "true"}, 0, "", ""},
		{"plot needs a directory", []string{"plot"}, 2, "", "usage: goaccel plot RUN_DIR"},
		{"plot of a missing run", []string{"plot", "/nonexistent/run"}, 1, "", "metrics.jsonl"},
		{"env takes no arguments", []string{"env", "extra"}, 2, "", "unexpected arguments"},
		{"env bad flag", []string{"env", "--jsn"}, 2, "", "unknown flag: --jsn"},
	}
	for _, c := range cases {
		code, out, errOut := runCmd(c.args...)
		if code != c.code || !strings.Contains(out, c.inStdout) || !strings.Contains(errOut, c.inStderr) {
			t.Errorf("%s: exit %d (want %d)\nstdout: %s\nstderr: %s", c.name, code, c.code, out, errOut)
		}
	}
}

func TestPlotCommand(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	for s := 1; s <= 5; s++ {
		fmt.Fprintf(&b, `{"kind":"train","step":%d,"epoch":0,"loss":%d,"lr":0.1,"time":"t","elapsed_s":0}`+"\n", s, 6-s)
	}
	if err := os.WriteFile(filepath.Join(dir, trainer.MetricsFile), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCmd("plot", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, name := range []string{trainer.CurvesPNG, trainer.CurvesSVG} {
		path := filepath.Join(dir, name)
		if st, err := os.Stat(path); err != nil || st.Size() == 0 || !strings.Contains(out, path) {
			t.Errorf("%s: %v (stdout %q)", name, err, out)
		}
	}
}

func TestEnvReport(t *testing.T) {
	t.Setenv("WORLD_SIZE", "")
	t.Setenv("XLA_FLAGS", "--xla_dump_to=/tmp/x")
	code, out, errOut := runCmd("env")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"- goaccel version:", "- GoMLX version: v0.28.3", "- Go version: go1.",
		"- OS/CPU:", "- PJRT plugins found:", "- Devices per backend:", "go (pure Go): 1 device(s)",
		"- accelerator.New would pick: ", `XLA_FLAGS="--xla_dump_to=/tmp/x"`, "RANK=(unset)", `WORLD_SIZE=""`,
		"CUDA_VISIBLE_DEVICES=", "GOACCEL_DEVICES="} {
		if !strings.Contains(out, want) {
			t.Errorf("env output misses %q:\n%s", want, out)
		}
	}
	code, out, _ = runCmd("env", "--json")
	var rep envReport
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil || rep.Versions.GoMLX != "v0.28.3" || len(rep.Backends) == 0 {
		t.Errorf("env --json: exit %d, %+v\n%s", code, rep, out)
	}
}

// TestEnvFindsHomePlugin: with XLA's CPU plugin in goaccel's home folder ($GOACCEL_HOME, where
// `goaccel setup` installs it), `goaccel env` names the folder, finds the plugin there and picks
// it, without PJRT_PLUGIN_LIBRARY_PATH, from the repository and from a folder outside it.
func TestEnvFindsHomePlugin(t *testing.T) {
	plugin := testutil.CPUPlugin(t)
	homeDir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(homeDir, "pjrt-cpu"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Dir(plugin), filepath.Join(homeDir, "pjrt-cpu", "lammps_jax_pjrt_cpu")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOACCEL_HOME", homeDir)
	t.Setenv("PJRT_PLUGIN_LIBRARY_PATH", "")
	t.Setenv("GOMLX_BACKEND", "")
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	for _, wd := range []string{root, t.TempDir()} {
		t.Chdir(wd)
		code, out, errOut := runCmd("env")
		if code != 0 {
			t.Fatalf("from %s: exit %d: %s", wd, code, errOut)
		}
		for _, want := range []string{"- goaccel home: " + homeDir + " (from $GOACCEL_HOME)", "(from goaccel home)",
			"- accelerator.New would pick: xla:cpu", "GOACCEL_HOME=\"" + homeDir + "\""} {
			if !strings.Contains(out, want) {
				t.Errorf("from %s: env output misses %q:\n%s", wd, want, out)
			}
		}
	}
	// Four CPU devices, as --devices 4 asks: XLA's plugin, not "install the plugin".
	acc, err := accelerator.New(accelerator.Config{Devices: 4, Quiet: true})
	if err != nil {
		t.Fatalf("4 devices with the plugin in goaccel home: %v", err)
	}
	defer acc.Close()
	if info := acc.Info(); info.Backend != "xla" || acc.NumDevices() != 4 {
		t.Errorf("4 devices: %s", acc.Plan())
	}
}
