package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSetupErrors: `goaccel setup` without pip, with a pip that fails, and with a folder that
// cannot be created says so, exits 1 and leaves nothing that discovery would pick up.
func TestSetupErrors(t *testing.T) {
	tmp := t.TempDir()
	file := filepath.Join(tmp, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(tmp, "home")
	cases := []struct {
		name string
		path string // $PATH; "" keeps it
		args []string
		want []string
	}{
		{"no pip", tmp, []string{"setup", "--dir", dir},
			[]string{"goaccel setup: nothing installed in " + dir + ": pip not found", "apt-get install python3-pip", "--pip"}},
		{"failing pip", "", []string{"setup", "--dir", dir, "--pip", "false"},
			[]string{"goaccel setup: `false install", "lammps-jax-pjrt-cpu==0.11.2` failed (exit status 1); nothing was installed in " + filepath.Join(dir, "pjrt-cpu")}},
		{"folder under a regular file", "", []string{"setup", "--dir", filepath.Join(file, "sub"), "--pip", "false"},
			[]string{"goaccel setup: cannot create the folder " + filepath.Join(file, "sub"), "not a directory"}},
		{"unexpected argument", "", []string{"setup", "extra"}, []string{"unexpected arguments"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.path != "" {
				t.Setenv("PATH", c.path)
			}
			code, out, errOut := runCmd(c.args...)
			if code == 0 {
				t.Fatalf("exit 0\nstdout: %s", out)
			}
			for _, w := range c.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr misses %q:\n%s", w, errOut)
				}
			}
			if m, _ := filepath.Glob(filepath.Join(dir, "*", "*")); len(m) != 0 {
				t.Errorf("left behind: %v", m)
			}
		})
	}
}
