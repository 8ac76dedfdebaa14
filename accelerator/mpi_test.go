package accelerator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goaccel/goaccel/data"
	"github.com/goaccel/goaccel/internal/launch"
	"github.com/goaccel/goaccel/internal/testutil"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// The tests in this file run the test binary itself as the ranks of a real job: goaccel
// launch's library starts it several times, MPI connects the ranks, and TestMain sends each
// rank to workerMain instead of the tests.

const (
	workerRole   = "GOACCEL_TEST_WORKER"        // which worker body a rank runs
	workerOut    = "GOACCEL_TEST_OUT"           // the folder ranks write their results to
	workerPlugin = "GOACCEL_TEST_PLUGIN"        // the XLA CPU plugin
	workerDelay  = "GOACCEL_TEST_BARRIER_DELAY" // "barrier" and "stall" workers: how long rank 1 stays away
)

func TestMain(m *testing.M) {
	if role := os.Getenv(workerRole); role != "" {
		code := 0
		if err := workerMain(role); err != nil {
			fmt.Println("worker error:", err)
			code = 3
		}
		Exit(code)
	}
	os.Exit(m.Run())
}

// workerResult is what a rank of the "train" worker writes.
type workerResult struct {
	Rank, Processes, Devices int
	Adam, SGD                []float64
	AdamParams, SGDParams    map[string][]float32
	EvalIndices              []int
	EvalValues               []float64
	StreamIndices            []int
	Reduced                  float64
}

// workerMain is the body of one rank.
func workerMain(role string) error {
	a, err := New(Config{Backend: os.Getenv(workerPlugin), Quiet: true, Seed: 7}) // Timeout: $GOACCEL_TIMEOUT
	if err != nil {
		return err
	}
	defer a.Close()
	switch role {
	case "train":
		res := workerResult{Rank: a.ProcessIndex(), Processes: a.NumProcesses(), Devices: a.NumDevices()}
		if res.Adam, res.AdamParams, err = toyRun(a, optimizer.Adam().LearningRate(0.01).Done(), 30); err != nil {
			return err
		}
		if res.SGD, res.SGDParams, err = toyRun(a, sgd(0.5), 5); err != nil {
			return err
		}
		x, y := toyData(10)
		job, err := a.Prepare(model.NewStore(), optimizer.Adam().Done(), nil)
		if err != nil {
			return err
		}
		g, err := job.Evaluate(&fixedSource{x: x, y: y, batch: 2}, job.EvalStep(func(s *model.Scope, b GraphBatch) []*Node {
			return []*Node{Reshape(Slice(b.Inputs[0], AxisRange(), AxisElem(0)), -1)}
		}))
		if err != nil {
			return err
		}
		res.EvalIndices = g.Indices
		if res.EvalValues, err = g.Floats(0); err != nil {
			return err
		}
		// An 11-example stream, dealt round-robin over the replicas (uneven shares).
		xs, ys := toyData(11)
		stream, err := data.NewStreamLoader[toyPoint](toyPoints(xs, ys), data.LoaderConfig[toyPoint]{BatchSize: 2, Collate: collateToyPoints})
		if err != nil {
			return err
		}
		gs, err := job.Evaluate(stream, job.EvalStep(func(s *model.Scope, b GraphBatch) []*Node {
			return []*Node{Reshape(Slice(b.Inputs[0], AxisRange(), AxisElem(0)), -1)}
		}))
		if err != nil {
			return err
		}
		res.StreamIndices = gs.Indices
		if res.Reduced, err = a.Reduce(float64(a.ProcessIndex()+1), OpSum); err != nil {
			return err
		}
		return writeRankResult(a, res)
	case "tokens":
		res, err := tokenEval(a)
		if err != nil {
			return err
		}
		return writeRankResult(a, res)
	case "stall":
		return stallWorker(a)
	case "bench":
		return benchWorker(a)
	case "barrier":
		return barrierWorker(a)
	case "blocks":
		return blocksWorker(a)
	case "topology":
		return topologyWorker(a)
	case "timeline":
		return timelineWorker(a)
	case "straggler":
		return stragglerWorker(a)
	case "skipeval":
		return skipEvalWorker(a)
	case "lossscale":
		return lossScaleWorker(a)
	case "zero1":
		return zero1Worker(a)
	}
	return fmt.Errorf("unknown worker role %q", role)
}

// writeRankResult writes a worker's result as rank_<rank>.json in $GOACCEL_TEST_OUT.
func writeRankResult(a *Accelerator, res any) error {
	b, err := json.Marshal(res)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(os.Getenv(workerOut), fmt.Sprintf("rank_%d.json", a.ProcessIndex())), b, 0o644)
}

// readRankResult reads rank's result from dir into res, or fails the test showing the job's
// output.
func readRankResult(t *testing.T, dir string, rank int, out string, res any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("rank_%d.json", rank)))
	if err != nil {
		t.Fatalf("rank %d wrote no result: %v\n%s", rank, err, out)
	}
	if err := json.Unmarshal(b, res); err != nil {
		t.Fatal(err)
	}
}

// launchWorkers runs this test binary as nproc ranks of the given worker role, the CPU devices
// (total) split between them by the launcher, and returns the launcher's error and output.
func launchWorkers(t testing.TB, role string, nproc, total int, env ...string) (error, string) {
	t.Helper()
	return launchNodes(t, role, 1, nproc, total, env...)
}

// launchNodes is launchWorkers with nodes launchers of nproc ranks each (--nnodes N
// --node_rank i --master_addr 127.0.0.1 on this host: the code path of N machines); total is
// the CPU devices of each node.
func launchNodes(t testing.TB, role string, nodes, nproc, total int, env ...string) (error, string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	port := 0
	if nodes > 1 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port = l.Addr().(*net.TCPAddr).Port
		l.Close()
	}
	outs := make([]bytes.Buffer, nodes)
	errs := make([]error, nodes)
	var wg sync.WaitGroup
	for i := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cfg := workerConfig(t, exe, role, nproc, total, env...)
			cfg.Stdout, cfg.Stderr = &outs[i], &outs[i]
			if nodes > 1 {
				cfg.NNodes, cfg.NodeRank, cfg.MasterAddr, cfg.MasterPort = nodes, i, "127.0.0.1", port
				cfg.Secret = "the tests' job secret, 16 bytes or more" // every node's launcher proves it
			}
			errs[i] = launch.Run(ctx, cfg)
		}()
	}
	wg.Wait()
	var all strings.Builder
	for i := range nodes {
		fmt.Fprintf(&all, "--- node %d ---\n%s", i, outs[i].String())
	}
	return errors.Join(errs...), all.String()
}

// workerConfig is the launcher's configuration for nproc ranks of this test binary (exe)
// running the worker role, with total CPU devices and env added to the environment.
func workerConfig(t testing.TB, exe, role string, nproc, total int, env ...string) launch.Config {
	return launch.Config{
		Program: exe, Args: []string{"-test.run=^$"}, NprocPerNode: nproc, LogDir: t.TempDir(), Tee: 3,
		Env: append(os.Environ(), append(env, workerRole+"="+role, workerPlugin+"="+cpuPlugin(t),
			fmt.Sprintf("GOACCEL_DEVICES=%d", total))...),
	}
}

// TestEquivalenceOverMPI is the multi-process promise with real processes and MPI: 2
// processes x 2 XLA CPU devices, 4 x 1, and 2 "machines" (two launchers, --nnodes 2) of 1 x 1
// train the toy model to the losses and variables of 1 process x 1 device (30 Adam steps, 5
// SGD steps: summing instead of averaging would multiply SGD's step), every process ends with
// identical variables, evaluation of 10 examples at per-device batch 2 and of an 11-example
// stream gathers exactly those examples in order on every process, and Reduce sums.
func TestEquivalenceOverMPI(t *testing.T) {
	t.Parallel()
	testutil.NeedMPI(t)
	ref := newXLA(t, 1)
	refAdam, refAdamParams := trainToy(t, ref, optimizer.Adam().LearningRate(0.01).Done(), 30)
	refSGD, refSGDParams := trainToy(t, ref, sgd(0.5), 5)
	layouts := []struct{ nodes, procs, devices int }{{1, 2, 2}, {1, 4, 1}, {2, 1, 1}}
	if testing.Short() { // tier 1: processes and devices together; 4 ranks and 2 launchers in make test-all
		layouts = layouts[:1]
	}
	for _, layout := range layouts {
		name := fmt.Sprintf("%dx%d", layout.procs, layout.devices)
		if layout.nodes > 1 {
			name = fmt.Sprintf("%d nodes x %s", layout.nodes, name)
		}
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			start := time.Now()
			err, out := launchNodes(t, "train", layout.nodes, layout.procs, layout.procs*layout.devices,
				workerOut+"="+dir, "GOACCEL_TIMEOUT=3m")
			if err != nil {
				t.Fatalf("launch: %v\n%s", err, out)
			}
			t.Logf("%s ran in %s", name, time.Since(start).Round(time.Millisecond))
			var rank0 workerResult
			procs := layout.nodes * layout.procs
			for r := range procs {
				var res workerResult
				readRankResult(t, dir, r, out, &res)
				if r == 0 {
					rank0 = res
				}
				if res.Processes != procs || res.Devices != layout.devices {
					t.Errorf("rank %d ran as %d processes x %d devices, want %dx%d", r, res.Processes, res.Devices, procs, layout.devices)
				}
				worstLoss, worstParam := 0.0, 0.0
				for _, c := range []struct {
					got, want             []float64
					gotParams, wantParams map[string][]float32
				}{{res.Adam, refAdam, res.AdamParams, refAdamParams}, {res.SGD, refSGD, res.SGDParams, refSGDParams}} {
					for i := range c.want {
						worstLoss = max(worstLoss, math.Abs(c.got[i]-c.want[i]))
					}
					for name, p := range c.wantParams {
						worstParam = max(worstParam, maxDiff(c.gotParams[name], p))
					}
				}
				if worstLoss > equivTol || worstParam > equivTol {
					t.Errorf("rank %d: max |loss diff| %g, max |param diff| %g from 1 process x 1 device (tolerance %g)",
						r, worstLoss, worstParam, equivTol)
				}
				for name, p := range res.AdamParams {
					if d := maxDiff(p, rank0.AdamParams[name]); d != 0 {
						t.Errorf("rank %d's %s differs from rank 0's by %g", r, name, d)
					}
				}
				if !slices.Equal(res.EvalIndices, seqInts(10)) {
					t.Errorf("rank %d gathered %v, want the 10 examples once each, in order", r, res.EvalIndices)
				}
				if !slices.Equal(res.StreamIndices, seqInts(11)) {
					t.Errorf("rank %d gathered %v from the 11-example stream, want each once, in order", r, res.StreamIndices)
				}
				if want := float64(procs * (procs + 1) / 2); res.Reduced != want {
					t.Errorf("rank %d: Reduce(rank+1, OpSum) = %g, want %g", r, res.Reduced, want)
				}
				t.Logf("rank %d: max |loss diff| %.2g, max |param diff| %.2g from 1x1", r, worstLoss, worstParam)
			}
		})
	}
}

// launchStalled runs role on 2 ranks of 1 device, rank 1 staying away for 60 s, with a timeout of
// 3 s set by env: the job must fail, well before rank 1 comes back. It returns the launcher's
// error and output.
func launchStalled(t *testing.T, role, env string) (error, string) {
	t.Helper()
	start := time.Now()
	err, out := launchWorkers(t, role, 2, 2, env, workerDelay+"=60s")
	if err == nil {
		t.Fatalf("the job succeeded; want rank 0 to time out\n%s", out)
	}
	if d := time.Since(start); d > 45*time.Second {
		t.Errorf("the job took %s to fail; the timeout is 3 s", d)
	}
	return err, out
}

// TestBarrierTimeoutNamesTheMissingRank: a rank that never reaches WaitForEveryone makes the
// others fail after the timeout with an error that names it and wraps ErrTimeout, instead of
// hanging.
func TestBarrierTimeoutNamesTheMissingRank(t *testing.T) {
	testutil.NeedMPI(t)
	err, out := launchStalled(t, "barrier", "GOACCEL_TIMEOUT=3s")
	if !strings.Contains(out, "WaitForEveryone") || !strings.Contains(out, "rank 1 never arrived") {
		t.Errorf("rank 0's error does not name the barrier and rank 1:\n%s", out)
	}
	if !strings.Contains(out, "rank 0: the error wraps accelerator.ErrTimeout") {
		t.Errorf("rank 0's error does not wrap ErrTimeout:\n%s", out)
	}
	t.Logf("launcher: %v", err)
	t.Logf("output:\n%s", out)
}

// TestStartedByHandWithRankVariables: a program started alone with RANK/WORLD_SIZE set (no
// launcher) gets an error that says so, not a hang waiting for the other process.
func TestStartedByHandWithRankVariables(t *testing.T) {
	t.Parallel()
	testutil.NeedMPI(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), workerRole+"=train", workerPlugin+"="+cpuPlugin(t), "RANK=0", "WORLD_SIZE=2")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "rank 0 of 2") || !strings.Contains(string(out), "started by hand") {
		t.Errorf("got %v:\n%s\nwant an error saying the program was started by hand with RANK/WORLD_SIZE", err, out)
	}
}

// toyPoint is a toy example as a stream element.
type toyPoint struct {
	x     []float32
	label int32
}

func toyPoints(x [][]float32, y []int32) data.Slice[toyPoint] {
	pts := make(data.Slice[toyPoint], len(x))
	for i := range pts {
		pts[i] = toyPoint{x[i], y[i]}
	}
	return pts
}

func collateToyPoints(b []toyPoint) ([]*tensors.Tensor, *tensors.Tensor, error) {
	xs, ys := make([][]float32, len(b)), make([]int32, len(b))
	for i, p := range b {
		xs[i], ys[i] = p.x, p.label
	}
	return []*tensors.Tensor{tensors.FromValue(xs)}, tensors.FromValue(ys), nil
}
