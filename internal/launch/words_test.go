package launch

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// launcherLine returns the "node_rank N runs ranks ..." line of out.
func launcherLine(out, node string) string {
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "node_rank "+node+" runs ranks") {
			return line
		}
	}
	return ""
}

// Each launcher says whose output its terminal shows: by default rank 0's where rank 0 runs,
// none on the other nodes; with --tee, its own ranks'.
func TestLauncherSaysWhichOutputIsShown(t *testing.T) {
	for _, c := range []struct {
		tee          int
		node0, node1 string
	}{
		{0, "(rank 0's output is shown here)", "(no rank's output is shown here: rank 0's is shown by node_rank 0's launcher; --tee 3 shows this node's)"},
		{3, "(the stdout and stderr of ranks 0-1 are shown here)", "(the stdout and stderr of ranks 2-3 are shown here)"},
		{1, "(the stdout of ranks 0-1 is shown here)", "(the stdout of ranks 2-3 is shown here)"},
		{TeeNone, "(no rank's output is shown here: --tee 0)", "(no rank's output is shown here: --tee 0)"},
	} {
		t.Run(fmt.Sprintf("tee %d", c.tee), func(t *testing.T) {
			c0, dir, out := testJob(t, "env", 2, "GOACCEL_DEVICES=2")
			c0.Tee = c.tee
			c1 := c0
			c1.LogDir = filepath.Join(dir, "logs1")
			for i, err := range runNodes(t, []Config{c0, c1}) {
				if err != nil {
					t.Fatalf("node %d: %v\n%s", i, err, out)
				}
			}
			if l := launcherLine(out.String(), "0"); !strings.HasSuffix(l, c.node0) {
				t.Errorf("node_rank 0 says %q, want it to end %q", l, c.node0)
			}
			if l := launcherLine(out.String(), "1"); !strings.HasSuffix(l, c.node1) {
				t.Errorf("node_rank 1 says %q, want it to end %q", l, c.node1)
			}
		})
	}
}

// A program that exists but cannot run is named for what it is, not "not found".
func TestProgramNotRunnable(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "train.py")
	if err := os.WriteFile(script, []byte("print(1)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ program, want string }{
		{dir, "program " + dir + " is a directory"},
		{script, "program " + script + " is not executable (chmod +x " + script + ", or name its interpreter: goaccel launch [flags] python3 " + script + ")"},
	} {
		var out, errOut bytes.Buffer
		if code := Main([]string{"--no_mpi_check", c.program}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), c.want) {
			t.Errorf("%s: exit %d, stderr %q; want 2 and %q", c.program, code, errOut.String(), c.want)
		}
	}
}

// A 3-rank job on 4 CPU devices says, in one line, that one device is unused and what uses all.
func TestUnusedDevicesSaid(t *testing.T) {
	t.Setenv("GOACCEL_DEVICES", "4")
	t.Setenv("CUDA_VISIBLE_DEVICES", "")
	var out, errOut bytes.Buffer
	if code := Main([]string{"--nproc_per_node", "3", "--oversubscribe", "--no_mpi_check", "true"}, &out, &errOut); code != 0 { // --oversubscribe: 3 ranks on CI's 2 cores
		t.Fatalf("exit %d\n%s", code, errOut.String())
	}
	want := "goaccel launch: 3 ranks x 1 CPU device use 3 of the 4 of this node (GOACCEL_DEVICES=4): 1 is left unused; " +
		"--nproc_per_node 1, 2 or 4 uses them all\n"
	if !strings.Contains(errOut.String(), want) {
		t.Errorf("stderr misses %q:\n%s", want, errOut.String())
	}
}
