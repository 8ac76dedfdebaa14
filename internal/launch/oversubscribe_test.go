package launch

import (
	"bytes"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// TestMoreCPURanksThanCores: without GPUs, more ranks than the cores of the launcher's CPU
// affinity are refused (exit status 2), naming the flag, or PET_NPROC_PER_NODE when that gave
// the count, and the cores, unless --oversubscribe asks for them; with GPUs the count is the
// GPUs' business.
func TestMoreCPURanksThanCores(t *testing.T) {
	cores := runtime.NumCPU()
	over := strconv.Itoa(cores + 1)
	noGPU := []string{"CUDA_VISIBLE_DEVICES="}
	for _, c := range []struct {
		name string
		args []string
		env  []string
		want []string // in the error; nil: accepted
	}{
		{"--nproc_per_node", []string{"--nproc_per_node", over, "prog"}, noGPU, []string{"--nproc_per_node " + over, strconv.Itoa(cores) + " CPU cores", "--oversubscribe"}},
		{"kebab", []string{"--nproc-per-node=" + over, "prog"}, noGPU, []string{"--nproc_per_node " + over}},
		{"-np", []string{"-np", over, "prog"}, noGPU, []string{"-np " + over, strconv.Itoa(cores) + " CPU cores"}},
		{"PET_NPROC_PER_NODE", []string{"prog"}, append([]string{"PET_NPROC_PER_NODE=" + over}, noGPU...), []string{"PET_NPROC_PER_NODE", over, strconv.Itoa(cores) + " CPU cores"}},
		{"-H's first host", []string{"-H", "localhost:" + over + ",127.0.0.1:1", "prog"}, noGPU, []string{"-H", over, strconv.Itoa(cores) + " CPU cores"}},
		{"--oversubscribe", []string{"--oversubscribe", "--nproc_per_node", over, "prog"}, noGPU, nil},
		{"PET_NPROC_PER_NODE, --oversubscribe", []string{"--oversubscribe", "prog"}, append([]string{"PET_NPROC_PER_NODE=" + over}, noGPU...), nil},
		{"as many as the cores", []string{"--nproc_per_node", strconv.Itoa(cores), "prog"}, noGPU, nil},
		{"cpu", []string{"--nproc_per_node", "cpu", "prog"}, noGPU, nil},
		{"GPUs", []string{"--nproc_per_node", over, "prog"}, []string{"CUDA_VISIBLE_DEVICES=0"}, nil},
	} {
		inv, err := parseArgs(c.args, c.env)
		if c.want == nil {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		if _, ok := err.(flagError); !ok {
			t.Errorf("%s: parseArgs = %+v, %v; want a flag error", c.name, inv, err)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not say %q", c.name, err, w)
			}
		}
	}
	if inv, err := parseArgs([]string{"--oversubscribe", "-H", "localhost:1,127.0.0.1:1", "prog"}, noGPU); err != nil ||
		!strings.Contains(strings.Join(inv.forward, " "), "--oversubscribe") {
		t.Errorf("-H with --oversubscribe: the other hosts' launchers are not told: %v, %v", inv, err)
	}
	t.Setenv("CUDA_VISIBLE_DEVICES", "")
	var out, errOut bytes.Buffer
	if code := Main([]string{"--nproc_per_node", over, "--no_mpi_check", "true"}, &out, &errOut); code != 2 ||
		!strings.Contains(errOut.String(), "--nproc_per_node "+over) {
		t.Errorf("Main: exit %d, stderr %q; want 2 and the flag named", code, errOut.String())
	}
}
