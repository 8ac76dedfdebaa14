package launch

import (
	"bytes"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestParseArgs(t *testing.T) {
	env := []string{"CUDA_VISIBLE_DEVICES=0,1"}
	cases := []struct {
		args  []string
		check func(inv *invocation) bool
	}{
		{[]string{"--nproc-per-node=2", "./train"}, func(i *invocation) bool { return i.cfg.NprocPerNode == 2 && i.cfg.Program == "./train" }},
		{[]string{"--nproc_per_node", "3", "./train", "--nproc_per_node", "9"}, func(i *invocation) bool {
			return i.cfg.NprocPerNode == 3 && reflect.DeepEqual(i.cfg.Args, []string{"--nproc_per_node", "9"})
		}},
		{[]string{"--nproc_per_node", "gpu", "x"}, func(i *invocation) bool { return i.cfg.NprocPerNode == 2 }},
		{[]string{"x"}, func(i *invocation) bool { return i.cfg.NprocPerNode == 2 }}, // auto: one per GPU
		{[]string{"-np", "4", "./train", "-np", "2"}, func(i *invocation) bool {
			return i.cfg.NprocPerNode == 4 && reflect.DeepEqual(i.cfg.Args, []string{"-np", "2"})
		}},
		{[]string{"-np=2", "--tee", "3", "x"}, func(i *invocation) bool { return i.cfg.NprocPerNode == 2 && i.cfg.Tee == 3 }},
		{[]string{"--tee=0", "x"}, func(i *invocation) bool { return i.cfg.Tee == TeeNone }},
		{[]string{"-H", "localhost:2,127.0.0.1:3", "-np", "4", "x"}, func(i *invocation) bool {
			return reflect.DeepEqual(i.hosts, []hostSlots{{"localhost", 2}, {"127.0.0.1", 2}}) &&
				i.cfg.NNodes == 2 && i.cfg.NprocPerNode == 2
		}},
		{[]string{"--nnodes", "2", "--node-rank", "1", "--master_addr", "10.0.0.1", "--master-port", "1234",
			"--max_restarts", "2", "--log_dir", "/tmp/l", "--timeout", "90", "x", "a"}, func(i *invocation) bool {
			c := i.cfg
			return c.NNodes == 2 && c.NodeRank == 1 && c.MasterAddr == "10.0.0.1" && c.MasterPort == 1234 &&
				c.MaxRestarts == 2 && c.LogDir == "/tmp/l" && c.Timeout.Seconds() == 90 && reflect.DeepEqual(c.Args, []string{"a"})
		}},
		{[]string{"--standalone", "--master_port", "5", "x"}, func(i *invocation) bool {
			return i.cfg.MasterPort == 0 && i.cfg.MasterAddr == "127.0.0.1"
		}},
		{[]string{"--timeout", "30m", "--", "x"}, func(i *invocation) bool { return i.cfg.Timeout.Minutes() == 30 && i.cfg.Program == "x" }},
		{[]string{"--nnodes", "1:2", "--rdzv_conf", "close_timeout=0", "x"}, func(i *invocation) bool { return i.cfg.CloseTimeout < 0 }},
		{[]string{"--nnodes", "1:2", "--rdzv_conf", "close_timeout=45", "x"}, func(i *invocation) bool {
			return i.cfg.CloseTimeout == 45*time.Second
		}},
		{[]string{"x"}, func(i *invocation) bool { return i.cfg.CloseTimeout == 0 }}, // Run's default: DefaultCloseTimeout
		// Elastic: the master is --node_rank 0; the others give none (-1), or any other value.
		{[]string{"--nnodes", "2:4", "--node_rank", "0", "--max_restarts", "3", "x"}, func(i *invocation) bool {
			c := i.cfg
			return c.MinNodes == 2 && c.NNodes == 4 && c.NodeRank == 0 && c.MaxRestarts == 3 && c.LastCallTimeout == 0
		}},
		{[]string{"--nnodes=1:3", "--rdzv_conf", "last_call_timeout=2.5,join_timeout=1m", "x"}, func(i *invocation) bool {
			c := i.cfg
			return c.MinNodes == 1 && c.NNodes == 3 && c.NodeRank == -1 && c.LastCallTimeout.Seconds() == 2.5 && c.JoinTimeout.Minutes() == 1
		}},
		{[]string{"--nnodes", "3:3", "--node-rank", "2", "x"}, func(i *invocation) bool {
			return i.cfg.MinNodes == 3 && i.cfg.NNodes == 3 && i.cfg.NodeRank == 2
		}},
		{[]string{"--nnodes", "4", "x"}, func(i *invocation) bool { return i.cfg.MinNodes == 0 && i.cfg.NNodes == 4 && i.cfg.NodeRank == 0 }},
	}
	for _, c := range cases {
		inv, err := parseArgs(c.args, env)
		if err != nil || !c.check(inv) {
			t.Errorf("%q: %v %+v", c.args, err, inv)
		}
	}
}

func TestBadInput(t *testing.T) {
	t.Setenv("CUDA_VISIBLE_DEVICES", "")
	t.Setenv("GOACCEL_DEVICES", "4")
	t.Setenv("GOACCEL_MPI_LIB", "")
	cases := []struct {
		name string
		env  map[string]string
		args []string
		want []string
	}{
		{"unknown flag", nil, []string{"--nproc_per_nod", "2", "true"}, []string{"unknown flag --nproc_per_nod (did you mean --nproc_per_node?)"}},
		{"unknown kebab flag", nil, []string{"--max-restart", "2", "true"}, []string{"did you mean --max-restarts?"}},
		{"no program", nil, []string{"--nproc_per_node", "2"}, []string{"no program to run", "usage: goaccel launch"}},
		{"more ranks than devices", nil, []string{"--nproc_per_node", "8", "--oversubscribe", "true"},
			[]string{"--nproc_per_node 8 is more than the 4 CPU devices", "GOACCEL_DEVICES=4"}},
		{"more ranks than GPUs", map[string]string{"CUDA_VISIBLE_DEVICES": "0,1"}, []string{"--nproc_per_node", "3", "--no_mpi_check", "true"},
			[]string{"--nproc_per_node 3 does not divide the 2 visible GPUs"}},
		{"gpu without GPUs", nil, []string{"--nproc_per_node", "gpu", "true"}, []string{"no GPU is visible"}},
		{"missing program", nil, []string{"./no-such-trainer", "--epochs", "1"}, []string{`program "./no-such-trainer" not found`}},
		{"MPI not installed", map[string]string{"GOACCEL_MPI_LIB": "/nonexistent/libmpi.so.12"}, []string{"--nproc_per_node", "2", "true"},
			[]string{"GOACCEL_MPI_LIB=/nonexistent/libmpi.so.12", "goaccel setup", "pip install", "mpich==5.0.2", "--no_mpi_check"}},
		{"nnodes MIN above MAX", nil, []string{"--nnodes", "3:2", "true"}, []string{`--nnodes "3:2": MIN 3 is more than MAX 2`}},
		{"nnodes MIN 0", nil, []string{"--nnodes", "0:2", "true"}, []string{`--nnodes "0:2": MIN is 0: an elastic job needs at least 1 node`}},
		{"nnodes not numbers", nil, []string{"--nnodes=a:b", "true"}, []string{`--nnodes "a:b": want MIN:MAX with two whole numbers`}},
		{"nnodes not a number", nil, []string{"--nnodes", "two", "true"}, []string{`--nnodes "two": want a positive number of nodes, or MIN:MAX`}},
		{"nnodes half a range", nil, []string{"--nnodes", "2:", "true"}, []string{`--nnodes "2:": want MIN:MAX`}},
		{"rdzv_conf unknown key", nil, []string{"--nnodes", "1:2", "--rdzv_conf", "timeout=5", "true"},
			[]string{`--rdzv_conf "timeout=5": unknown key "timeout": goaccel reads last_call_timeout, join_timeout and close_timeout`}},
		{"rdzv_conf bad seconds", nil, []string{"--nnodes", "1:2", "--rdzv-conf", "last_call_timeout=soon", "true"},
			[]string{`--rdzv_conf last_call_timeout "soon": want seconds`}},
		{"rdzv_conf static job", nil, []string{"--nnodes", "2", "--rdzv_conf", "last_call_timeout=5", "true"},
			[]string{"only an elastic job (--nnodes MIN:MAX, or --rdzv_backend c10d)"}},
		{"rdzv_conf and join_timeout", nil, []string{"--nnodes", "1:2", "--rdzv_conf", "join_timeout=5", "--join_timeout", "9", "true"},
			[]string{"--rdzv_conf join_timeout and --join_timeout both"}},
		{"node_rank out of range", nil, []string{"--nnodes", "2", "--node_rank", "2", "--no_mpi_check", "true"}, []string{"--node_rank 2 is out of range"}},
		{"standalone with nodes", nil, []string{"--standalone", "--nnodes", "2", "true"}, []string{"--standalone runs one node"}},
		{"bad tee", nil, []string{"--tee", "5", "true"}, []string{"--tee 5"}},
		{"-np beyond -H slots", nil, []string{"-np", "5", "-H", "localhost:2,127.0.0.1:2", "true"}, []string{"-np 5 is more than the 4 slots"}},
		{"remote first host", nil, []string{"-H", "gpu-node-17:2,localhost:2", "true"}, []string{"the first host (gpu-node-17) must be this machine"}},
		{"-np with --nproc_per_node", nil, []string{"-np", "2", "--nproc_per_node", "2", "true"}, []string{"give one"}},
	}
	for _, c := range cases {
		for k, v := range c.env {
			t.Setenv(k, v)
		}
		var out, errOut bytes.Buffer
		code := Main(c.args, &out, &errOut)
		for k := range c.env {
			switch k {
			case "CUDA_VISIBLE_DEVICES", "GOACCEL_MPI_LIB":
				t.Setenv(k, "")
			}
		}
		if code != 2 {
			t.Errorf("%s: exit %d, want 2\n%s", c.name, code, errOut.String())
		}
		for _, w := range c.want {
			if !strings.Contains(errOut.String(), w) {
				t.Errorf("%s: stderr misses %q:\n%s", c.name, w, errOut.String())
			}
		}
	}
}

func TestHelp(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := Main([]string{"--help"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	for _, w := range []string{"usage: goaccel launch [flags] PROGRAM [ARGS...]", "--nproc_per_node", "--master_addr",
		"-np", "-H, --hosts", "--max_restarts", "--tee"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("help misses %q:\n%s", w, out.String())
		}
	}
}

func TestResolveNproc(t *testing.T) {
	gpus := []string{"CUDA_VISIBLE_DEVICES=3,5"}
	none := []string{"CUDA_VISIBLE_DEVICES="}
	for _, c := range []struct {
		spec string
		env  []string
		want int
	}{{"4", none, 4}, {"gpu", gpus, 2}, {"auto", gpus, 2}, {"", gpus, 2}, {"", none, 1},
		// torchrun's cpu and auto without GPUs: one rank per core (torch's cpu_count, the affinity's).
		{"cpu", none, runtime.NumCPU()}, {"cpu", gpus, runtime.NumCPU()}, {"auto", none, runtime.NumCPU()},
		{"auto", []string{"CUDA_VISIBLE_DEVICES=0,1", "GOMLX_BACKEND=xla:cpu"}, runtime.NumCPU()},
		{"", []string{"CUDA_VISIBLE_DEVICES=0,1", "GOMLX_BACKEND=xla:cpu"}, 1}} {
		if n, err := ResolveNproc(c.spec, c.env); err != nil || n != c.want {
			t.Errorf("ResolveNproc(%q, %v) = %d, %v; want %d", c.spec, c.env, n, err, c.want)
		}
	}
	for spec, want := range map[string]string{
		"0":    `--nproc_per_node "0": want a positive number, gpu, cpu or auto`,
		"-1":   `--nproc_per_node "-1": want a positive number, gpu, cpu or auto`,
		"many": `--nproc_per_node "many": want a positive number, gpu, cpu or auto`,
		"gpu":  "--nproc_per_node gpu: no GPU is visible (CUDA_VISIBLE_DEVICES, /dev/nvidia*): give a number, cpu or auto",
	} {
		if _, err := ResolveNproc(spec, none); err == nil || err.Error() != want {
			t.Errorf("ResolveNproc(%q) = %v, want the error %q", spec, err, want)
		}
	}
}

// TestNprocCPU: --nproc_per_node cpu (and $PET_NPROC_PER_NODE=cpu, and auto without GPUs)
// starts one rank per core, each with one CPU device, or its share of GOACCEL_DEVICES when
// that is set (more ranks than those devices is then an error, as for a number).
func TestNprocCPU(t *testing.T) {
	none := "CUDA_VISIBLE_DEVICES="
	for _, c := range []struct {
		args, env []string
	}{
		{[]string{"--nproc_per_node", "cpu", "x"}, []string{none}},
		{[]string{"--nproc-per-node=auto", "x"}, []string{none}},
		{[]string{"x"}, []string{none, "PET_NPROC_PER_NODE=cpu"}},
	} {
		inv, err := parseArgs(c.args, c.env)
		if err != nil {
			t.Fatalf("%v with %v: %v", c.args, c.env, err)
		}
		if inv.cfg.NprocPerNode != runtime.NumCPU() {
			t.Errorf("%v with %v: %d ranks, want one per core (%d)", c.args, c.env, inv.cfg.NprocPerNode, runtime.NumCPU())
		}
		if _, _, err := splitNode(inv.cfg.Env, inv.cfg.NprocPerNode); err != nil {
			t.Errorf("%v with %v: %v", c.args, c.env, err)
		}
	}
	// The node's CPU devices for n ranks of one core each: what splitNode gives each rank.
	for _, c := range []struct {
		n    int
		env  []string
		want string // each rank's GOACCEL_DEVICES
	}{
		{2, []string{none}, "1"},                        // one device a rank, whatever the count
		{16, []string{none}, "1"},                       //
		{16, []string{none, "GOACCEL_DEVICES=32"}, "2"}, // the user's devices, shared
		{16, []string{none, "GOACCEL_DEVICES=16"}, "1"},
	} {
		shares, _, err := splitNode(c.env, c.n)
		if err != nil {
			t.Fatalf("%d ranks, %v: %v", c.n, c.env, err)
		}
		if got := shares[c.n-1].vars["GOACCEL_DEVICES"]; got != c.want {
			t.Errorf("%d ranks, %v: GOACCEL_DEVICES=%s a rank, want %s", c.n, c.env, got, c.want)
		}
	}
	// More ranks than the devices GOACCEL_DEVICES gives stays an error.
	if _, _, err := splitNode([]string{none, "GOACCEL_DEVICES=4"}, 16); err == nil {
		t.Errorf("16 ranks with GOACCEL_DEVICES=4 was accepted")
	}
	// gpu without a GPU, from PET_NPROC_PER_NODE: named as the variable.
	_, err := parseArgs([]string{"x"}, []string{none, "PET_NPROC_PER_NODE=gpu"})
	if want := "$PET_NPROC_PER_NODE (--nproc_per_node) gpu: no GPU is visible"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("PET_NPROC_PER_NODE=gpu without GPUs: %v, want %q", err, want)
	}
}

func TestSplitNode(t *testing.T) {
	devs := func(env []string, n int, key string) ([]string, string) {
		shares, note, err := splitNode(env, n)
		if err != nil {
			t.Fatalf("splitNode(%v, %d): %v", env, n, err)
		}
		var out []string
		for _, s := range shares {
			out = append(out, s.vars[key])
		}
		return out, note
	}
	four := []string{"CUDA_VISIBLE_DEVICES=4,5,6,7"}
	if got, _ := devs(four, 2, "CUDA_VISIBLE_DEVICES"); !reflect.DeepEqual(got, []string{"4,5", "6,7"}) {
		t.Errorf("4 GPUs / 2 ranks: %v", got)
	}
	if got, note := devs(four[:1:1], 8, "CUDA_VISIBLE_DEVICES"); !reflect.DeepEqual(got, []string{"4", "4", "5", "5", "6", "6", "7", "7"}) ||
		!strings.Contains(note, "2 ranks share each GPU") {
		t.Errorf("4 GPUs / 8 ranks: %v %q", got, note)
	}
	cpu := []string{"CUDA_VISIBLE_DEVICES=", "GOACCEL_DEVICES=4"}
	if got, note := devs(cpu, 3, "GOACCEL_DEVICES"); !reflect.DeepEqual(got, []string{"1", "1", "1"}) ||
		!strings.Contains(note, "3 ranks x 1 CPU device use 3 of the 4 of this node (GOACCEL_DEVICES=4): 1 is left unused") {
		t.Errorf("4 CPU devices / 3 ranks: %v %q", got, note)
	}
	if _, note := devs([]string{"CUDA_VISIBLE_DEVICES=", "GOACCEL_DEVICES=8"}, 3, "GOACCEL_DEVICES"); note !=
		"3 ranks x 2 CPU devices use 6 of the 8 of this node (GOACCEL_DEVICES=8): 2 are left unused; --nproc_per_node 1, 2, 4 or 8 uses them all" {
		t.Errorf("8 CPU devices / 3 ranks: %q", note)
	}
	if got, note := devs([]string{"CUDA_VISIBLE_DEVICES="}, 3, "GOACCEL_DEVICES"); !reflect.DeepEqual(got, []string{"1", "1", "1"}) || note != "" {
		t.Errorf("no GOACCEL_DEVICES, 3 ranks: %v %q, want one device each and no note", got, note)
	}
	if got, _ := devs([]string{"CUDA_VISIBLE_DEVICES=0,1", "GOMLX_BACKEND=cpu", "GOACCEL_DEVICES=2"}, 2, "CUDA_VISIBLE_DEVICES"); !reflect.DeepEqual(got, []string{"", ""}) {
		t.Errorf("a CPU backend must not be given GPUs: %v", got)
	}
	if got, _ := devs(append(cpu, "GOMAXPROCS=7"), 2, "GOMAXPROCS"); !reflect.DeepEqual(got, []string{"", ""}) {
		t.Errorf("a GOMAXPROCS already set must be kept: %v", got)
	}
}

func TestProcessMapping(t *testing.T) {
	for _, c := range []struct {
		nprocs []int
		want   string
	}{{[]int{3}, "(vector,(0,1,3))"}, {[]int{2, 2}, "(vector,(0,2,2))"}, {[]int{2, 3, 3}, "(vector,(0,1,2),(1,2,3))"}} {
		if got := processMapping(c.nprocs); got != c.want {
			t.Errorf("processMapping(%v) = %s, want %s", c.nprocs, got, c.want)
		}
	}
}
