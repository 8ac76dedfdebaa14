package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/goaccel/goaccel/accelerator"
	"github.com/goaccel/goaccel/data"
	"github.com/goaccel/goaccel/internal/testutil"
	"github.com/goaccel/goaccel/trainer"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/layers"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// The elastic tests run `goaccel launch --nnodes 2:3` as separate launcher processes (this
// test binary as goaccel, asGoaccel), whose ranks are this binary again as the test-only
// command fitRankCommand: one rank of a trainer.Fit of a dropout-free toy MLP with a global
// batch of fitGlobal over fitExamples examples, 2 epochs, a checkpoint every 2 updates, in
// DIR/run. Rank 0 appends "step examples loss" to DIR/steps.log after every update and writes
// the final weights to DIR/final.json. $FIT_PAUSE lists "WORLD:RESTARTS:STEP,...": in an
// attempt of that WORLD_SIZE and TORCHELASTIC_RESTART_COUNT, after update STEP, every rank
// writes DIR/paused_WORLD_RESTARTS_STEP_RANK and waits there until it is stopped: the test's
// event to act on.
const (
	fitRankCommand = "elastic-test-fit-rank" // goaccel elastic-test-fit-rank DIR
	fitPluginVar   = "GOACCEL_CMD_TEST_PLUGIN"
	fitPauseVar    = "FIT_PAUSE"
	// fitLeaveVar=1 makes the ranks stop cleanly on SIGTERM (trainer.NotifyInterrupt): save at
	// the step boundary, exit 143; each update then sleeps 150 ms, and rank 0 appends "step
	// world unixnano" to DIR/steps_time.log.
	fitLeaveVar = "FIT_LEAVE"
	fitExamples = 48
	fitGlobal   = 6 // 8 updates an epoch, shared out over 1, 2 or 3 ranks
)

// The test binary's goaccel has the rank command too (this file only: the goaccel binary does not).
func init() { commands[fitRankCommand] = fitRankCmd }

type fitExample struct {
	x []float32
	y int32
}

func fitData() data.Slice[fitExample] {
	out := make(data.Slice[fitExample], fitExamples)
	for i := range out {
		row := make([]float32, 8)
		for j := range row {
			row[j] = float32((i*7+j*13)%17)/17 - 0.5
		}
		y := int32((i * 5) % 3)
		row[y]++
		out[i] = fitExample{x: row, y: y}
	}
	return out
}

func fitCollate(ex []fitExample) ([]*tensors.Tensor, *tensors.Tensor, error) {
	xs := make([][]float32, len(ex))
	ys := make([]int32, len(ex))
	for i, e := range ex {
		xs[i], ys[i] = e.x, e.y
	}
	return []*tensors.Tensor{tensors.FromValue(xs)}, tensors.FromValue(ys), nil
}

// fitRankCmd is `goaccel elastic-test-fit-rank DIR`: one rank of the fit; it ends the process
// through accelerator.Exit, as MPI launchers expect.
func fitRankCmd(args []string, _, stderr io.Writer) int {
	if len(args) != 1 {
		fmt.Fprintf(stderr, "usage: goaccel %s DIR\n", fitRankCommand)
		return 2
	}
	interrupted, err := fitRank(args[0])
	if err != nil {
		fmt.Fprintln(stderr, "fit rank:", err)
		accelerator.Exit(3)
	}
	if interrupted {
		accelerator.Exit(143) // saved on SIGTERM, as trainer.Interrupt's ExitCode says
	}
	accelerator.Exit(0)
	return 0 // not reached: Exit ends the process
}

func fitRank(dir string) (interrupted bool, err error) {
	acc, err := accelerator.New(accelerator.Config{Backend: os.Getenv(fitPluginVar), Quiet: true, Seed: 7})
	if err != nil {
		return false, err
	}
	defer acc.Close()
	train, err := data.NewLoader(fitData(), data.LoaderConfig[fitExample]{GlobalBatchSize: fitGlobal, Shuffle: true, Seed: 3,
		Collate: fitCollate})
	if err != nil {
		return false, err
	}
	logits := func(s *model.Scope, inputs []*graph.Node) *graph.Node {
		h := graph.Tanh(layers.Dense(s.In("hidden"), inputs[0], true, 16))
		return layers.Dense(s.In("out"), h, true, 3)
	}
	store := model.NewStore()
	tr, err := trainer.New(acc, store, optimizer.Adam().LearningRate(0.01).Done(), trainer.SingleLabelClassification(3, logits))
	if err != nil {
		return false, err
	}
	pauses := map[string]bool{}
	for _, p := range strings.Split(os.Getenv(fitPauseVar), ",") {
		pauses[p] = p != ""
	}
	world, restarts := os.Getenv("WORLD_SIZE"), os.Getenv("TORCHELASTIC_RESTART_COUNT")
	cfg := trainer.Config{OutputDir: filepath.Join(dir, "run"), Epochs: 2, SaveEvery: 2, LearningRate: 0.01, Quiet: true}
	leave := os.Getenv(fitLeaveVar) == "1"
	if leave {
		cfg.Interrupt = trainer.NotifyInterrupt(os.Stderr)
		defer cfg.Interrupt.Stop()
	}
	cfg.Callbacks.OnStep = func(ev trainer.StepEvent) error {
		if leave {
			time.Sleep(150 * time.Millisecond)
			if acc.IsMainProcess() {
				f, err := os.OpenFile(filepath.Join(dir, "steps_time.log"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
				if err != nil {
					return err
				}
				fmt.Fprintf(f, "%d %d %d\n", ev.Step, acc.NumProcesses(), time.Now().UnixNano())
				if err := f.Close(); err != nil {
					return err
				}
			}
		}
		if acc.IsMainProcess() {
			f, err := os.OpenFile(filepath.Join(dir, "steps.log"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				return err
			}
			fmt.Fprintf(f, "%d %d %.9g\n", ev.Step, ev.Examples, ev.Loss)
			if err := f.Close(); err != nil {
				return err
			}
		}
		key := fmt.Sprintf("%s:%s:%d", world, restarts, ev.Step)
		if pauses[key] {
			name := fmt.Sprintf("paused_%s_%s_%d_%d", world, restarts, ev.Step, acc.ProcessIndex())
			if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
				return err
			}
			select {} // until the launcher stops this rank
		}
		return nil
	}
	res, err := tr.Fit(train, nil, cfg)
	if err != nil {
		return false, err
	}
	if res.Interrupted {
		return true, nil
	}
	if !acc.IsMainProcess() {
		return false, nil
	}
	w := map[string][]float32{}
	for v := range store.IterVariables() {
		if !v.Trainable {
			continue
		}
		t, err := v.Value()
		if err != nil {
			return false, err
		}
		if err := t.ConstFlatData(func(a any) { w[v.Path()] = append([]float32(nil), a.([]float32)...) }); err != nil {
			return false, err
		}
	}
	b, err := json.Marshal(w)
	if err != nil {
		return false, err
	}
	return false, os.WriteFile(filepath.Join(dir, "final.json"), b, 0o644)
}

// fitRun is what a fit job left in its folder: the final weights and, per update, the
// examples and loss of the last attempt that made it (an update redone after a restart
// counts once, as its last doing).
type fitRun struct {
	weights  map[string][]float32
	examples map[int]int
	loss     map[int]float64
}

func readFitRun(t *testing.T, dir string) fitRun {
	t.Helper()
	r := fitRun{examples: map[int]int{}, loss: map[int]float64{}}
	b, err := os.ReadFile(filepath.Join(dir, "final.json"))
	if err != nil {
		t.Fatalf("the job wrote no final weights: %v", err)
	}
	if err := json.Unmarshal(b, &r.weights); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, "steps.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var step, n int
		var loss float64
		if _, err := fmt.Sscanf(sc.Text(), "%d %d %g", &step, &n, &loss); err != nil {
			t.Fatalf("steps.log: %q: %v", sc.Text(), err)
		}
		r.examples[step], r.loss[step] = n, loss
	}
	return r
}

// compareFitRuns fails the test unless got made the updates of want (the same examples, the
// losses within 2e-5) and ended with its weights within 2e-5.
func compareFitRuns(t *testing.T, got, want fitRun) {
	t.Helper()
	const tol = 2e-5
	if len(got.examples) != len(want.examples) {
		t.Errorf("%d updates, want %d", len(got.examples), len(want.examples))
	}
	total := 0
	for step, n := range want.examples {
		total += n
		if got.examples[step] != n || math.Abs(got.loss[step]-want.loss[step]) > tol {
			t.Errorf("update %d: %d examples, loss %.7g; the uninterrupted run: %d examples, loss %.7g", step,
				got.examples[step], got.loss[step], n, want.loss[step])
		}
	}
	if total != 2*fitExamples {
		t.Errorf("the uninterrupted run saw %d examples, want 2 epochs of %d", total, fitExamples)
	}
	worst, where := 0.0, ""
	for name, w := range want.weights {
		g := got.weights[name]
		if len(g) != len(w) {
			t.Fatalf("variable %s: %d values, want %d", name, len(g), len(w))
		}
		for i := range w {
			if d := math.Abs(float64(g[i] - w[i])); d > worst {
				worst, where = d, fmt.Sprintf("%s[%d]", name, i)
			}
		}
	}
	if worst > tol {
		t.Errorf("the final weights differ from the uninterrupted run's by %g at %s (want at most %g)", worst, where, tol)
	}
	t.Logf("the final weights are within %g of the uninterrupted run's", worst)
}

// fitEnv is the extra environment of the launchers and their fit ranks, on one XLA CPU device
// each; it skips the test without MPI or the CPU plugin.
func fitEnv(t *testing.T) []string {
	t.Helper()
	testutil.NeedMPI(t)
	return []string{fitPluginVar + "=" + testutil.CPUPlugin(t), "GOACCEL_DEVICES=1", "GOACCEL_TIMEOUT=2m"}
}

var (
	baselineMu  sync.Mutex
	baselineRun *fitRun
)

// fitBaseline is the uninterrupted fit: `goaccel launch` of one rank on one device (the global
// batch makes every topology's run the same), made once for the tests that compare with it.
func fitBaseline(t *testing.T) fitRun {
	t.Helper()
	baselineMu.Lock()
	defer baselineMu.Unlock()
	if baselineRun != nil {
		return *baselineRun
	}
	dir, err := os.MkdirTemp("", "goaccel-elastic-baseline-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd, out, errOut := goaccelCmd(t, "launch", "--nproc_per_node", "1", "--tee", "3", "--log_dir", filepath.Join(dir, "logs"),
		self, fitRankCommand, dir)
	cmd.Env = append(cmd.Env, fitEnv(t)...)
	if err := cmd.Run(); err != nil {
		t.Fatalf("the uninterrupted run: %v\n%s%s", err, out, errOut)
	}
	r := readFitRun(t, dir)
	baselineRun = &r
	return r
}

// elasticNode is one launcher of an elastic test job: `goaccel launch` run by this test binary.
type elasticNode struct {
	name string
	cmd  *exec.Cmd
	out  *testutil.SyncBuffer
	done chan struct{}
}

// startNode starts a launcher of the job --nnodes spec on 127.0.0.1:port, the master when
// master is set, whose ranks run the fit in dir with env added to theirs, with more flags.
func startNode(t *testing.T, name string, master bool, spec string, port int, dir string, env []string, flags ...string) *elasticNode {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"launch", "--nnodes", spec, "--master_addr", "127.0.0.1", "--master_port", strconv.Itoa(port),
		"--nproc_per_node", "1", "--tee", "3", "--log_dir", filepath.Join(t.TempDir(), "logs")}
	if master {
		args = append(args, "--node_rank", "0")
	}
	args = append(append(args, flags...), self, fitRankCommand, dir)
	cmd, _, _ := goaccelCmd(t, args...)
	cmd.Env = append(cmd.Env, env...)
	n := &elasticNode{name: name, cmd: cmd, out: &testutil.SyncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = n.out, n.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait(); close(n.done) }()
	t.Cleanup(func() {
		select {
		case <-n.done:
		default:
			_ = n.cmd.Process.Kill()
			<-n.done
		}
	})
	return n
}

// outputs writes every launcher's output, for a failure's message.
func outputs(nodes ...*elasticNode) string {
	var b strings.Builder
	for _, n := range nodes {
		fmt.Fprintf(&b, "--- launcher %s:\n%s", n.name, n.out)
	}
	return b.String()
}

// waitFile waits until path exists, or fails the test after a minute (a job gone wrong),
// showing the launchers' output; it fails at once when a launcher of nodes ended.
func waitFile(t *testing.T, path string, nodes ...*elasticNode) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		for _, n := range nodes {
			select {
			case <-n.done:
				t.Fatalf("launcher %s ended (exit status %d) before %s appeared\n%s", n.name, n.cmd.ProcessState.ExitCode(),
					filepath.Base(path), outputs(nodes...))
			default:
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not appear within a minute\n%s", filepath.Base(path), outputs(nodes...))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// wait waits for the launcher's end (a minute at most) and returns its exit status.
func (n *elasticNode) wait(t *testing.T, all ...*elasticNode) int {
	t.Helper()
	select {
	case <-n.done:
	case <-time.After(time.Minute):
		t.Fatalf("launcher %s did not end within a minute\n%s", n.name, outputs(all...))
	}
	return n.cmd.ProcessState.ExitCode()
}

// freePort is a TCP port of 127.0.0.1 that nothing listened on a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestElasticNodeLostResumes: an elastic job (--nnodes 2:3, --max_restarts 1) of three
// launchers on 127.0.0.1, one rank each, runs a Fit with a global batch; after update 5 the
// third launcher is SIGKILLed. The other two stop their ranks, re-form the job on 2 nodes
// (restart 1, logged with the node that left and the world sizes) and resume from the
// checkpoint of update 4: the updates, the examples of each and the final weights are the
// uninterrupted run's, within 2e-5.
func TestElasticNodeLostResumes(t *testing.T) {
	dir := t.TempDir()
	env := append(fitEnv(t), fitPauseVar+"=3:0:5")
	want := fitBaseline(t)
	port := freePort(t)
	// The last call: long enough for the three launchers to join before the first start,
	// whose nodes the pause keys on (world 3); a slower one would join it at once anyway.
	flags := []string{"--max_restarts", "1", "--rdzv_conf", "last_call_timeout=2"}
	master := startNode(t, "master", true, "2:3", port, dir, env, flags...)
	second := startNode(t, "second", false, "2:3", port, dir, env, flags...)
	third := startNode(t, "third", false, "2:3", port, dir, env, flags...)
	all := []*elasticNode{master, second, third}
	waitFile(t, filepath.Join(dir, "paused_3_0_5_0"), all...)
	if err := third.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for _, n := range all[:2] {
		if code := n.wait(t, all...); code != 0 {
			t.Fatalf("launcher %s: exit status %d\n%s", n.name, code, outputs(all...))
		}
	}
	compareFitRuns(t, readFitRun(t, dir), want)
	log := master.out.String()
	thirdName := fmt.Sprintf("(launcher pid %d)", third.cmd.Process.Pid)
	for _, w := range []string{
		"the elastic job (--nnodes 2:3) starts on ",
		"went away",
		"re-forming the job with the nodes left (restart 1 of 1)",
		"restart count 1 of --max_restarts 1): ",
		thirdName + " (node_rank ",
		") left; 3 -> 2 node(s), world size 3 -> 2",
	} {
		if !strings.Contains(log, w) {
			t.Errorf("the master's log misses %q\n%s", w, outputs(all...))
		}
	}
	if !strings.Contains(second.out.String(), "world size 3 -> 2") {
		t.Errorf("the second launcher did not say the re-formation\n%s", second.out)
	}
	if t.Failed() {
		t.Logf("%s", outputs(all...))
	}
}

// TestElasticNodeComesAndGoes is TestElasticNodeLostResumes with a fourth launcher started
// once the job runs on 2 nodes (after update 9): the job re-forms at once on 3 nodes, without
// counting a restart, and still ends with the uninterrupted run's updates and weights.
func TestElasticNodeComesAndGoes(t *testing.T) {
	dir := t.TempDir()
	env := append(fitEnv(t), fitPauseVar+"=3:0:5,2:1:9")
	want := fitBaseline(t)
	port := freePort(t)
	// The last call: long enough for the three launchers to join before the first start,
	// whose nodes the pause keys on (world 3); a slower one would join it at once anyway.
	flags := []string{"--max_restarts", "1", "--rdzv_conf", "last_call_timeout=2"}
	master := startNode(t, "master", true, "2:3", port, dir, env, flags...)
	second := startNode(t, "second", false, "2:3", port, dir, env, flags...)
	third := startNode(t, "third", false, "2:3", port, dir, env, flags...)
	all := []*elasticNode{master, second, third}
	waitFile(t, filepath.Join(dir, "paused_3_0_5_0"), all...)
	if err := third.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFile(t, filepath.Join(dir, "paused_2_1_9_0"), master, second)
	fourth := startNode(t, "fourth", false, "2:3", port, dir, env, flags...)
	all = append(all, fourth)
	for _, n := range []*elasticNode{master, second, fourth} {
		if code := n.wait(t, all...); code != 0 {
			t.Fatalf("launcher %s: exit status %d\n%s", n.name, code, outputs(all...))
		}
	}
	compareFitRuns(t, readFitRun(t, dir), want)
	log := master.out.String()
	fourthName := fmt.Sprintf("(launcher pid %d)", fourth.cmd.Process.Pid)
	for _, w := range []string{
		fourthName + " joined while the job runs on 2 node(s): re-forming the job to include it (not counted as a restart)",
		"restart count 1 of --max_restarts 1): ",
		fourthName + " came; 2 -> 3 node(s), world size 2 -> 3",
	} {
		if !strings.Contains(log, w) {
			t.Errorf("the master's log misses %q\n%s", w, outputs(all...))
		}
	}
	// The newcomer's rank ran the end of the job, as node_rank 2 of 3, with restart count 1.
	if s := fourth.out.String(); !strings.Contains(s, "node_rank 2 runs ranks 2-2 of 3") {
		t.Errorf("the fourth launcher's node did not run rank 2 of 3:\n%s", s)
	}
}

// TestElasticGracefulLeave: SIGTERM to one node's launcher of an elastic job (--nnodes 2:3,
// --max_restarts 0: a preempted or scaled-down pod) makes the job save at the next step
// boundary (its ranks' trainer.Interrupt, agreed by every rank) and re-form without that node
// at once, counting no restart and losing no step: the re-formed job's first update is the one
// after the save, and the updates and final weights are the uninterrupted run's.
func TestElasticGracefulLeave(t *testing.T) {
	testutil.Long(t, "trains on 3 launchers, then 2, with 150 ms updates (about 13 s) (tier 1: the elastic re-formation tests of this file)")
	dir := t.TempDir()
	env := append(fitEnv(t), fitLeaveVar+"=1")
	want := fitBaseline(t)
	port := freePort(t)
	flags := []string{"--max_restarts", "0", "--rdzv_conf", "last_call_timeout=2"}
	master := startNode(t, "master", true, "2:3", port, dir, env, flags...)
	second := startNode(t, "second", false, "2:3", port, dir, env, flags...)
	third := startNode(t, "third", false, "2:3", port, dir, env, flags...)
	all := []*elasticNode{master, second, third}
	type stepAt struct {
		step, world int
		at          time.Time
	}
	steps := func() []stepAt {
		b, _ := os.ReadFile(filepath.Join(dir, "steps_time.log"))
		var out []stepAt
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var s stepAt
			var ns int64
			if _, err := fmt.Sscanf(line, "%d %d %d", &s.step, &s.world, &ns); err == nil {
				s.at = time.Unix(0, ns)
				out = append(out, s)
			}
		}
		return out
	}
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if s := steps(); len(s) > 0 && s[len(s)-1].world == 3 && s[len(s)-1].step >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the job did not reach update 3 on 3 nodes\n%s", outputs(all...))
		}
	}
	sigterm := time.Now()
	if err := third.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for _, n := range all {
		if code := n.wait(t, all...); code != 0 {
			t.Fatalf("launcher %s: exit status %d\n%s", n.name, code, outputs(all...))
		}
	}
	compareFitRuns(t, readFitRun(t, dir), want)
	saved, resumed := 0, stepAt{}
	for _, s := range steps() {
		if s.world == 3 {
			saved = s.step
		} else if resumed.step == 0 && s.at.After(sigterm) {
			resumed = s
		}
	}
	if resumed.step != saved+1 {
		t.Errorf("the job saved at update %d and went on at update %d: %d update(s) lost", saved, resumed.step, saved+1-resumed.step)
	}
	log := master.out.String()
	for _, w := range []string{"leaves the job (SIGTERM)", "left the job (SIGTERM), which saved at a step boundary",
		"re-forming the job on the 2 node(s) left (not counted as a restart)", "world size 3 -> 2"} {
		if !strings.Contains(log, w) {
			t.Errorf("the master's log misses %q\n%s", w, outputs(all...))
		}
	}
	if !strings.Contains(third.out.String(), "left the elastic job") {
		t.Errorf("the third launcher does not say it left\n%s", third.out)
	}
	t.Logf("SIGTERM to the third launcher after update %d: saved at update %d, the 2-node job's first update (%d) %s "+
		"after the SIGTERM; 0 restarts counted (--max_restarts 0)\n%s", saved, saved, resumed.step,
		resumed.at.Sub(sigterm).Round(time.Millisecond), outputs(all...))
}
