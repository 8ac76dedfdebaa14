package main

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goaccel/goaccel/internal/envvar"
	"github.com/goaccel/goaccel/internal/testutil"
)

// TestQuickstartPods: the quickstart in two "pods" (network namespaces with their own host
// names and an /etc/hosts naming both) with exactly the variables Kubeflow's controllers set
// (internal/launch's pods_test.go cites their sources): a PyTorchJob's Master and Worker run
// the program alone and meet by env://; a TrainJob's two nodes run `goaccel launch quickstart`,
// which reads PET_*. Both print the losses of the one-process run.
func TestQuickstartPods(t *testing.T) {
	testutil.Long(t, "builds the quickstart and goaccel, runs the quickstart 5 times (tier 1: internal/launch TestPodsEnvRendezvous, TestPodsLaunchPET)")
	testutil.NeedMPI(t)
	dir := t.TempDir()
	bin := buildQuickstart(t, dir)
	goaccel := buildGoaccel(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	want := oneProcess(t, ctx, bin)
	base := []string{envvar.Devices.KV("1"), envvar.Timeout.KV("2m")}
	for _, job := range []struct {
		name  string
		names [2]string
		env   func(i int) []string
		cmd   []string
	}{
		{"PyTorchJob, the program alone", [2]string{"qs-master-0", "qs-worker-0"}, func(i int) []string {
			return []string{"PYTHONUNBUFFERED=0", "MASTER_PORT=23456", "MASTER_ADDR=qs-master-0", "WORLD_SIZE=2", "RANK=" + strconv.Itoa(i)}
		}, []string{bin}},
		{"TrainJob, goaccel launch", [2]string{"qs-node-0-0.qs", "qs-node-0-1.qs"}, func(i int) []string {
			return []string{"PET_NNODES=2", "PET_NPROC_PER_NODE=1", "PET_NODE_RANK=" + strconv.Itoa(i),
				"PET_MASTER_ADDR=qs-node-0-0.qs", "PET_MASTER_PORT=29400", envvar.JobSecret.KV("the pods' job secret, from a Secret")}
		}, []string{goaccel, "launch", bin}},
	} {
		pods := testutil.NeedPods(t, job.names)
		outs := make([]string, 2)
		errs := make([]error, 2)
		var wg sync.WaitGroup
		start := time.Now()
		for i := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := pods.Command(i, append(bareEnv(base...), job.env(i)...), job.cmd[0], job.cmd[1:]...)
				c.WaitDelay = 5 * time.Second
				out, err := c.CombinedOutput()
				outs[i], errs[i] = string(out), err
			}()
		}
		wg.Wait()
		took := time.Since(start)
		for i, err := range errs {
			if err != nil {
				t.Errorf("%s: pod %s: %v\n%s", job.name, job.names[i], err, outs[i])
			}
		}
		got := epochLine.FindAllString(outs[0], -1)
		if strings.Join(got, "\n") != strings.Join(want, "\n") || !strings.Contains(outs[0], "processes 2") {
			t.Errorf("%s printed\n%s\nwant, as one process:\n%s\n--- pod 0:\n%s", job.name, strings.Join(got, "\n"),
				strings.Join(want, "\n"), outs[0])
		}
		t.Logf("%s (%s): losses %s; one process: %s\n--- pod %s:\n%s", job.name, took.Round(time.Millisecond), lossesOf(got),
			lossesOf(want), job.names[0], outs[0])
	}
}
