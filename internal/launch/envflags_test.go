package launch

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestPETVariables: goaccel launch takes torchrun's PET_* (what Kubeflow's PyTorchJob and
// TrainJob set in every pod) as its flags' defaults, the command line winning; under Slurm,
// once per node, --nnodes, --node_rank and the master come from Slurm's variables; every bad
// value is named as typed.
func TestPETVariables(t *testing.T) {
	base := []string{"CUDA_VISIBLE_DEVICES=", "GOACCEL_DEVICES=4"}
	with := func(kv ...string) []string { return append(append([]string{}, base...), kv...) }
	for _, tc := range []struct {
		name  string
		env   []string
		args  []string
		check func(c Config) bool
		err   string
	}{
		{name: "PyTorchJob, static", env: with("PET_NNODES=2", "PET_NPROC_PER_NODE=2", "PET_NODE_RANK=1",
			"PET_MASTER_ADDR=job-master-0", "PET_MASTER_PORT=23456"),
			check: func(c Config) bool {
				return c.NNodes == 2 && c.MinNodes == 0 && c.NprocPerNode == 2 && c.NodeRank == 1 && c.MasterAddr == "job-master-0" &&
					c.MasterPort == 23456
			}},
		{name: "PyTorchJob, elastic", env: with("PET_NNODES=2:4", "PET_NPROC_PER_NODE=1", "PET_RDZV_BACKEND=c10d",
			"PET_RDZV_ENDPOINT=job-worker-0:23456", "PET_RDZV_ID=job", "PET_MAX_RESTARTS=3", "PET_RDZV_CONF=join_timeout=60,close_timeout=5"),
			check: func(c Config) bool {
				return c.NNodes == 4 && c.MinNodes == 2 && c.NodeRank == -1 && c.BindMaster && c.MasterAddr == "job-worker-0" &&
					c.MasterPort == 23456 && c.RdzvID == "job" && c.MaxRestarts == 3 && c.JoinTimeout == time.Minute &&
					c.CloseTimeout == 5*time.Second
			}},
		{name: "the command line wins", env: with("PET_NNODES=2", "PET_NODE_RANK=1", "PET_MASTER_ADDR=h", "PET_NPROC_PER_NODE=3"),
			args: []string{"--nproc_per_node", "1", "--node_rank", "0"},
			check: func(c Config) bool {
				return c.NNodes == 2 && c.NodeRank == 0 && c.NprocPerNode == 1 && c.MasterAddr == "h"
			}},
		{name: "c10d, default port", args: []string{"--rdzv_backend", "c10d", "--rdzv_endpoint", "10.0.0.1", "--nnodes", "2"},
			check: func(c Config) bool {
				return c.MinNodes == 2 && c.NNodes == 2 && c.NodeRank == -1 && c.BindMaster && c.MasterPort == DefaultC10dPort
			}},
		{name: "static endpoint", args: []string{"--rdzv_endpoint", "[::1]:7000", "--nnodes", "2", "--node_rank", "1"},
			check: func(c Config) bool {
				return c.MasterAddr == "::1" && c.MasterPort == 7000 && c.NodeRank == 1 && !c.BindMaster
			}},
		{name: "standalone", args: []string{"--standalone", "--rdzv_backend", "c10d", "--rdzv_conf", "join_timeout=5"},
			check: func(c Config) bool { return c.NNodes == 1 && c.MinNodes == 0 && c.NodeRank == 0 && c.MasterPort == 0 }},
		{name: "sbatch, once per node", env: with("SLURM_JOB_ID=77", "SLURM_STEP_ID=0", "SLURM_STEP_NUM_NODES=4",
			"SLURM_STEP_NODELIST=gpu[01-04]", "SLURMD_NODENAME=gpu03", "SLURM_NODEID=5", "SLURM_PROCID=2"),
			check: func(c Config) bool {
				return c.NNodes == 4 && c.NodeRank == 2 && c.MasterAddr == "gpu01" && c.MasterPort == SlurmPort(77, 0)
			}},
		{name: "one Slurm node", env: with("SLURM_JOB_ID=77", "SLURM_STEP_ID=0", "SLURM_STEP_NUM_NODES=1", "SLURM_STEP_NODELIST=gpu01"),
			check: func(c Config) bool { return c.NNodes == 1 && c.MasterAddr == "127.0.0.1" }},
		{name: "PyTorchJob, standalone", env: with("PET_STANDALONE=", "PET_NPROC_PER_NODE=2"),
			check: func(c Config) bool {
				return c.NNodes == 1 && c.NprocPerNode == 2 && c.MasterAddr == "127.0.0.1" && c.MasterPort == 0
			}},
		{name: "bad PET_NNODES", env: with("PET_NNODES=two"), err: `$PET_NNODES (--nnodes) "two": want a positive number of nodes`},
		{name: "bad PET_NNODES range", env: with("PET_NNODES=4:2"), err: `$PET_NNODES (--nnodes) "4:2": MIN 4 is more than MAX 2`},
		{name: "bad PET_NODE_RANK", env: with("PET_NODE_RANK=first"), err: `$PET_NODE_RANK="first" is not a whole number (torchrun reads it as --node_rank)`},
		{name: "bad PET_RDZV_BACKEND", env: with("PET_RDZV_BACKEND=etcd", "PET_RDZV_ENDPOINT=h"), err: `$PET_RDZV_BACKEND (--rdzv_backend) "etcd": goaccel's launchers meet by c10d`},
		{name: "bad PET_RDZV_CONF", env: with("PET_NNODES=1:2", "PET_RDZV_CONF=timeout=3"), err: `$PET_RDZV_CONF (--rdzv_conf) "timeout=3": unknown key "timeout"`},
		{name: "bad endpoint port", args: []string{"--rdzv_endpoint", "h:99999"}, err: `--rdzv_endpoint "h:99999": "99999" is not a port`},
		{name: "c10d without endpoint", args: []string{"--rdzv_backend", "c10d"}, err: "--rdzv_backend c10d: give --rdzv_endpoint"},
		{name: "endpoint and master", args: []string{"--rdzv_endpoint", "h", "--master_addr", "g"}, err: "give one"},
		{name: "bad Slurm host list", env: with("SLURM_STEP_ID=0", "SLURM_STEP_NUM_NODES=2", "SLURM_STEP_NODELIST=gpu[01-"),
			err: `$SLURM_STEP_NODELIST: host list "gpu[01-": a [ without its ]: give --master_addr`},
	} {
		inv, err := parseArgs(append(tc.args, "x"), tc.env)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: parseArgs = %v; want an error with %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil || !tc.check(inv.cfg) {
			t.Errorf("%s: parseArgs = %v, %+v", tc.name, err, inv)
		}
	}
}

// TestC10dAndRdzvID: two launchers on this machine with --rdzv_backend c10d and the same
// --rdzv_endpoint and no --node_rank: the first to bind the port serves the rendezvous and
// both run (ranks numbered by it); a third launcher with another --rdzv_id is refused with
// both ids named, and the job goes on.
func TestC10dAndRdzvID(t *testing.T) {
	dir := t.TempDir()
	env := removeKey(os.Environ(), launcherSwitch)
	env = append(env, workerSwitch+"=shm", "TICKS=60", dirVar+"="+dir, "GOACCEL_DEVICES=1", "GOACCEL_JOB_SECRET="+testSecret)
	port := freePort(t)
	flags := func(id string) []string {
		return []string{"--rdzv_backend", "c10d", "--rdzv_endpoint", "127.0.0.1:" + strconv.Itoa(port), "--rdzv_id", id,
			"--no_mpi_check", "--rdzv_conf", "join_timeout=20"}
	}
	start := func(name, id string) *elasticNode {
		self, _ := os.Executable()
		args := append([]string{"launch", "--nnodes", "2", "--nproc_per_node", "1", "--tee", "3"}, flags(id)...)
		return startNodeArgs(t, name, env, append(args, self))
	}
	a := start("a", "job1")
	b := start("b", "job1")
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(a.out.String()+b.out.String(), "worker 1 of 2 starting"); {
		if time.Now().After(deadline) {
			t.Fatalf("the job did not start\n%s", outputs(a, b))
		}
		time.Sleep(20 * time.Millisecond)
	}
	c := start("other", "job2") // while the job runs: its ranks tick for 3 s
	all := []*elasticNode{a, b, c}
	for _, n := range []*elasticNode{a, b} {
		if code := n.wait(t, all...); code != 0 {
			t.Fatalf("launcher %s: exit %d\n%s", n.name, code, outputs(all...))
		}
	}
	if code := c.wait(t, all...); code != 1 || !strings.Contains(c.out.String(),
		`this launcher has --rdzv_id "job2" but the master at port `+strconv.Itoa(port)+` has --rdzv_id "job1"`) {
		t.Errorf("the launcher of another job: exit %d\n%s", code, outputs(all...))
	}
	if out := a.out.String() + b.out.String(); !strings.Contains(out, "worker 0 of 2 starting") ||
		!strings.Contains(out, "worker 1 of 2 starting") {
		t.Errorf("the ranks did not both start:\n%s", out)
	}
	served := strings.Count(a.out.String()+b.out.String(), "serving the rendezvous at 127.0.0.1:")
	if served != 1 {
		t.Errorf("%d launchers say they serve the rendezvous, want 1\n%s", served, outputs(all...))
	}
}
