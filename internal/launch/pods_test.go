package launch

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The environments Kubeflow's controllers give a pod's container, from their sources:
//
//   - PyTorchJob (kubeflow/training-operator, pkg/controller.v1/pytorch/envvar.go setPodEnv and
//     master.go): every container gets PYTHONUNBUFFERED=0; with a Master replica,
//     MASTER_PORT = the container port named pytorchjob-port (23456 by default), MASTER_ADDR =
//     "<job>-master-0" (the master's service), WORLD_SIZE = the replicas of all types, RANK =
//     the replica's index, plus 1 for a Worker. No LOCAL_RANK, no PMI.
//   - TrainJob (kubeflow/trainer, pkg/runtime/framework/plugins/torch/torch.go EnforceMLPolicy):
//     PET_NNODES = numNodes, PET_NPROC_PER_NODE = numProcPerNode, PET_NODE_RANK = the pod's
//     job-completion index, PET_MASTER_ADDR = "<trainjob>-node-0-0.<trainjob>", PET_MASTER_PORT
//     = 29400 (constants.ContainerTrainerPort), for torchrun to read.
//
// podEnv is the pod's environment for i = 0 (the master, or node 0) and 1.
func pytorchJobEnv(i int) []string {
	return []string{"PYTHONUNBUFFERED=0", "MASTER_PORT=23456", "MASTER_ADDR=goaccel-master-0", "WORLD_SIZE=2",
		fmt.Sprintf("RANK=%d", i)}
}

func trainJobEnv(i int) []string {
	return []string{"PET_NNODES=2", "PET_NPROC_PER_NODE=1", fmt.Sprintf("PET_NODE_RANK=%d", i),
		"PET_MASTER_ADDR=goaccel-node-0-0.goaccel", "PET_MASTER_PORT=29400"}
}

// runPods runs cmd(i) in two "pods": network namespaces of their own (netnsHosts), each with
// its own host name and an /etc/hosts that names both pods as the cluster's DNS would, and
// returns their outputs; a pod that fails or outlives 3 minutes fails the test.
func runPods(t *testing.T, names [2]string, env func(i int) []string, args func(i int) []string) [2]string {
	t.Helper()
	ns, addr := netnsHosts(t)
	hosts := filepath.Join(t.TempDir(), "hosts")
	body := fmt.Sprintf("127.0.0.1 localhost\n%s %s %s\n%s %s\n", addr[0], names[0], strings.Split(names[0], ".")[0], addr[1], names[1])
	if err := os.WriteFile(hosts, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	var outs [2]*syncBuffer
	var cmds [2]*exec.Cmd
	dones := [2]chan error{}
	for i := range cmds {
		host := strings.Split(names[i], ".")[0]
		script := `mount --bind "$0" /etc/hosts && hostname "$1" && shift && exec "$@"`
		cmds[i] = exec.Command("ip", append([]string{"netns", "exec", ns[i], "unshare", "--uts", "--mount", "sh", "-c", script,
			hosts, host}, args(i)...)...)
		cmds[i].Env = append(removeKey(removeKey(os.Environ(), workerSwitch), launcherSwitch), env(i)...)
		outs[i] = &syncBuffer{}
		cmds[i].Stdout, cmds[i].Stderr = outs[i], outs[i]
		if err := cmds[i].Start(); err != nil {
			t.Fatal(err)
		}
		dones[i] = make(chan error, 1)
		go func() { dones[i] <- cmds[i].Wait() }()
	}
	var got [2]string
	for i := range cmds {
		var err error
		select {
		case err = <-dones[i]:
		case <-time.After(3 * time.Minute):
			for _, c := range cmds {
				_ = c.Process.Kill()
			}
			err = fmt.Errorf("did not end within 3 minutes")
		}
		got[i] = outs[i].String()
		if err != nil {
			t.Errorf("pod %s: %v\n%s", names[i], err, got[i])
		}
	}
	return got
}

// TestPodsEnvRendezvous: two pods of a PyTorchJob (two network namespaces with exactly the
// variables its controller sets) run the program alone: they meet by env:// at the master's
// service, and MPI's all-reduce spans both.
func TestPodsEnvRendezvous(t *testing.T) {
	needMPI(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	outs := runPods(t, [2]string{"goaccel-master-0", "goaccel-worker-0"},
		func(i int) []string {
			return append(pytorchJobEnv(i), workerSwitch+"=envrdzv", "GOACCEL_DEVICES=1", "GOACCEL_TIMEOUT=60s")
		},
		func(int) []string { return []string{self} })
	for i, out := range outs {
		if want := fmt.Sprintf("rank %d of 2: allreduce 3", i); !strings.Contains(out, want) {
			t.Errorf("pod %d's output misses %q:\n%s", i, want, out)
		}
	}
	t.Logf("PyTorchJob's two pods, the program alone (env://): %s\n%s%s", time.Since(start).Round(time.Millisecond), outs[0], outs[1])
}

// TestPodsLaunchPET: two pods of a TrainJob (PET_* as its torch plugin sets them) run
// `goaccel launch PROGRAM`, which reads them as torchrun does: one job of 2 ranks across the
// pods.
func TestPodsLaunchPET(t *testing.T) {
	needMPI(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	outs := runPods(t, [2]string{"goaccel-node-0-0.goaccel", "goaccel-node-0-1.goaccel"},
		func(i int) []string {
			return append(trainJobEnv(i), launcherSwitch+"=1", "GOACCEL_DEVICES=1",
				"GOACCEL_JOB_SECRET="+testSecret, workerSwitch+"=gompi")
		},
		func(int) []string { return []string{self, "launch", "--tee", "3", "--join_timeout", "60", self} })
	for i, out := range outs {
		if want := fmt.Sprintf("go rank %d of 2 ", i); !strings.Contains(out, want) {
			t.Errorf("pod %d's output misses %q:\n%s", i, want, out)
		}
	}
	t.Logf("TrainJob's two pods, goaccel launch with PET_*: %s\n%s%s", time.Since(start).Round(time.Millisecond), outs[0], outs[1])
}
