package spawn

import (
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// TestMoreRanksThanCores: without GPUs, --nproc (in any spelling) or Config.Nproc above the
// cores of the process's CPU affinity is refused naming it and the cores, unless
// --oversubscribe or Config.Oversubscribe asks for it; a process that already is a rank
// starts none, so nothing is refused.
func TestMoreRanksThanCores(t *testing.T) {
	cores := runtime.NumCPU()
	over := strconv.Itoa(cores + 1)
	noGPU := []string{"CUDA_VISIBLE_DEVICES="}
	for _, c := range []struct {
		args []string
		env  []string
		cfg  Config
		want string // in the error; "": accepted with cores+1 ranks (0 ranks with RANK)
	}{
		{args: []string{"--nproc", over}, env: noGPU, want: "--nproc " + over + ": more ranks than the " + strconv.Itoa(cores) + " CPU cores"},
		{args: []string{"--nproc_per_node=" + over}, env: noGPU, want: "--nproc_per_node " + over},
		{cfg: Config{Nproc: cores + 1}, env: noGPU, want: "spawn.Config.Nproc " + over},
		{args: []string{"--nproc", over, "--oversubscribe"}, env: noGPU},
		{args: []string{"--oversubscribe=true", "--nproc", over}, env: noGPU},
		{cfg: Config{Nproc: cores + 1, Oversubscribe: true}, env: noGPU},
		{args: []string{"--nproc", over}, env: []string{"CUDA_VISIBLE_DEVICES=0"}},
		{args: []string{"--nproc", over}, env: append([]string{"RANK=0", "WORLD_SIZE=2"}, noGPU...)},
		{args: []string{"--oversubscribe=maybe", "--nproc", "1"}, env: noGPU, want: `--oversubscribe="maybe"`},
	} {
		d, err := plan(c.args, c.env, c.cfg)
		if c.want != "" {
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "oversubscribe") {
				t.Errorf("plan(%q, %+v): %+v, %v; want an error with %q", c.args, c.cfg, d, err, c.want)
			}
			continue
		}
		if err != nil {
			t.Errorf("plan(%q, %+v): %v", c.args, c.cfg, err)
			continue
		}
		for _, a := range d.args {
			if strings.Contains(a, "oversubscribe") {
				t.Errorf("plan(%q): the program's arguments keep %q", c.args, a)
			}
		}
	}
}
