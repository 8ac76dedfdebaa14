package accelerator

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/accelerator/internal/memplan"
	"github.com/goaccel/goaccel/data"
	"github.com/goaccel/goaccel/internal/testutil"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// TestMemoryPlanMatchesMemplan: MemoryPlan's exported fields are memplan.Plan's (names,
// types, order), and a plan crosses to package memplan and back with every field kept, what it
// was made from included (WithSharding still works on it).
func TestMemoryPlanMatchesMemplan(t *testing.T) {
	pub, in := reflect.TypeFor[MemoryPlan](), reflect.TypeFor[memplan.Plan]()
	for i := range pub.NumField() {
		f := pub.Field(i)
		if !f.IsExported() {
			continue
		}
		if i >= in.NumField() || in.Field(i).Name != f.Name || in.Field(i).Type != f.Type {
			t.Errorf("MemoryPlan's field %d is %s %s; memplan.Plan's is not the same", i, f.Name, f.Type)
		}
	}
	mp, err := memplan.Make([]memplan.Var{{Bytes: 64, Dims: []int{16}, Trainable: true}}, nil, "no", 1, 8, 0)
	if err != nil {
		t.Fatal(err)
	}
	p := memoryPlan(mp)
	v := reflect.ValueOf(&p).Elem()
	for i := range v.NumField() { // a distinct value in every exported field
		switch f := v.Field(i); {
		case !pub.Field(i).IsExported():
		case f.CanInt():
			f.SetInt(int64(100 + i))
		case f.Kind() == reflect.String:
			f.SetString(fmt.Sprint("field ", i))
		default:
			t.Fatalf("MemoryPlan's field %s: a type this test does not fill (%s)", pub.Field(i).Name, f.Type())
		}
	}
	if back := memoryPlan(p.plan()); !reflect.DeepEqual(back, p) {
		t.Errorf("through memplan and back: %+v, want %+v", back, p)
	}
	if z3, err := p.WithSharding("zero3", 4); err != nil || z3.Weights != 16 {
		t.Errorf("WithSharding on the plan back from memplan: weights %d (%v), want 16", z3.Weights, err)
	}
	if _, err := (MemoryPlan{}).WithSharding("zero1", 2); err == nil || err.Error() != "accelerator: MemoryPlan.WithSharding: the plan was not made by a TrainStep" {
		t.Errorf("WithSharding on a plan no step made: err = %v", err)
	}
}

func TestDeviceMemoryBudget(t *testing.T) {
	t.Setenv("GOACCEL_DEVICE_MEMORY", "lots")
	if _, err := deviceMemoryBudget(0); err == nil || !strings.Contains(err.Error(), "GOACCEL_DEVICE_MEMORY") {
		t.Errorf("a bad $GOACCEL_DEVICE_MEMORY: err = %v", err)
	}
	t.Setenv("GOACCEL_DEVICE_MEMORY", "512MiB")
	if got, err := deviceMemoryBudget(0); err != nil || got != 512<<20 {
		t.Errorf("$GOACCEL_DEVICE_MEMORY=512MiB: %d, %v", got, err)
	}
	if got, _ := deviceMemoryBudget(1000); got != 1000 {
		t.Errorf("Config.DeviceMemory wins: got %d", got)
	}
}

// planToy prepares the toy MLP on a at per-device batch perDevice (over 64 x replicas
// examples, so an epoch has 2 batches) and returns the job, its step and the source.
func planToy(t *testing.T, a *Accelerator, perDevice int, opts ...PrepareOption) (*Job, *TrainStep, data.Source) {
	t.Helper()
	return planToyWith(t, a, perDevice, optimizer.Adam().LearningRate(0.01).Done(), opts...)
}

// planToyWith is planToy with another optimizer.
func planToyWith(t *testing.T, a *Accelerator, perDevice int, opt optimizer.Interface, opts ...PrepareOption) (*Job, *TrainStep, data.Source) {
	t.Helper()
	return planModel(t, a, perDevice, opt, mlpLogits, opts...)
}

// planModel is planToyWith with another model of the toy data's 8 features.
func planModel(t *testing.T, a *Accelerator, perDevice int, opt optimizer.Interface, logits func(s *model.Scope, x *Node) *Node,
	opts ...PrepareOption) (*Job, *TrainStep, data.Source) {
	t.Helper()
	x, y := toyData(2 * perDevice * a.NumReplicas())
	src := &fixedSource{x: x, y: y, batch: perDevice}
	job, err := a.Prepare(model.NewStore(), opt, src, opts...)
	if err != nil {
		t.Fatal(err)
	}
	train := job.TrainStep(func(s *model.Scope, b GraphBatch) *Node {
		lv := CrossEntropy(logits(s, b.Inputs[0]), b.Labels, b.Mask)
		a.Backward(s, lv)
		return lv
	})
	return job, train, src
}

// TestMemoryBudgetErrorBeforeStep1: a budget below the unsharded plan fails the first Run
// before anything executes, naming the largest part and the ways out.
func TestMemoryBudgetErrorBeforeStep1(t *testing.T) {
	var out bytes.Buffer
	a, err := New(Config{Backend: cpuPlugin(t), Devices: 2, Seed: 7, DeviceMemory: 1024, Output: &out})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	job, train, _ := planToy(t, a, 32)
	if _, err := job.MemoryPlan(); err == nil {
		t.Error("Job.MemoryPlan before any step: no error")
	}
	_, err = train.Run(firstBatch(t, job))
	t.Logf("error: %v", err)
	if !errors.Is(err, ErrMemoryBudget) {
		t.Fatalf("Run over the budget: err = %v, want ErrMemoryBudget", err)
	}
	for _, want := range []string{"TrainStep.Run", "budget 1.0 KiB", "the largest part is the", `"zero1"`, "GradientCheckpointing", "WithAutoBatch", "per-device batch 32"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q", want)
		}
	}
	if st := train.Stats(); st.Batches != 0 || st.Updates != 0 {
		t.Errorf("stats after the refused step: %+v, want nothing run", st)
	}
	for v := range job.Store().IterVariables() {
		if (v.Trainable || strings.Contains(v.Path(), "Adam")) && v.HasValue() {
			t.Errorf("variable %s has a value: the step ran (or initialised) before the check", v.Path())
		}
	}
	p, err := job.MemoryPlan()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s", p)
	if p.Source != "XLA compiled memory statistics" || p.Temporaries <= 0 {
		t.Errorf("plan %+v: want XLA's statistics (go-xla's LoadedExecutable field reachable)", p)
	}
	// 195 parameters: weights and gradients 780 B each, Adam's moments twice that plus the step.
	if p.Weights != 780 || p.Gradients != 780 || p.OptimizerState < 2*780 {
		t.Errorf("plan %+v: want weights = gradients = 780 B, state >= 1560 B", p)
	}
	if !strings.Contains(out.String(), "goaccel: memory plan per device (per-device batch 32)") {
		t.Errorf("the main process did not print the plan:\n%s", out.String())
	}
}

// autoRun trains the toy MLP with Adam for steps batches at per-device batch 32 on a,
// returning the losses and the trainable variables.
func autoRun(t *testing.T, a *Accelerator, steps int, opts ...PrepareOption) ([]float64, map[string][]float32, *TrainStep) {
	t.Helper()
	r, err := autoTrain(a, steps, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return r.losses, r.params, r.step
}

type autoResult struct {
	losses []float64
	params map[string][]float32
	step   *TrainStep
	plans  map[int]int64 // probe: per-device batch -> plan total
}

// autoTrain is autoRun returning its error (for goroutines standing in for processes).
func autoTrain(a *Accelerator, steps int, opts ...PrepareOption) (autoResult, error) {
	x, y := toyData(2 * 32 * a.NumReplicas())
	job, err := a.Prepare(model.NewStore(), optimizer.Adam().LearningRate(0.01).Done(), &fixedSource{x: x, y: y, batch: 32}, opts...)
	if err != nil {
		return autoResult{}, err
	}
	r := autoResult{params: map[string][]float32{}}
	r.step = job.TrainStep(func(s *model.Scope, b GraphBatch) *Node {
		lv := CrossEntropy(mlpLogits(s, b.Inputs[0]), b.Labels, b.Mask)
		a.Backward(s, lv)
		return lv
	})
	for steps == 0 || len(r.losses) < steps {
		for gb, err := range job.Batches() {
			if err != nil {
				return r, err
			}
			if steps == 0 { // probe: the plans of three per-device batches
				r.plans = map[int]int64{}
				for _, b := range []int{32, 16, 8} {
					m, err := microBatch(gb, 0, b)
					if err != nil {
						return r, err
					}
					job.micro = 32 / b
					p, err := r.step.MemoryPlan(m)
					if err != nil {
						return r, err
					}
					r.plans[b] = p.Total()
				}
				return r, nil
			}
			l, err := r.step.Run(gb)
			if err != nil {
				return r, err
			}
			v, err := l.Value()
			if err != nil {
				return r, err
			}
			if r.losses = append(r.losses, v); len(r.losses) == steps {
				break
			}
		}
	}
	for v := range job.Store().IterVariables() {
		if v.Trainable {
			r.params[v.Path()] = flatF32(v.MustValue().Value())
		}
	}
	return r, nil
}

// worstDiff is the largest difference between two runs' losses and variables.
func worstDiff(gotLoss, wantLoss []float64, gotParams, wantParams map[string][]float32) float64 {
	worst := 0.0
	for i := range wantLoss {
		worst = math.Max(worst, math.Abs(gotLoss[i]-wantLoss[i]))
	}
	for k, w := range wantParams {
		worst = math.Max(worst, maxDiff(gotParams[k], w))
	}
	return worst
}

// TestAutoBatchOverProcesses: WithAutoBatch over 2 processes x 1 device (the gradients reduced
// on the host) makes the same choice on both and trains as the whole batch does.
func TestAutoBatchOverProcesses(t *testing.T) {
	testutil.Long(t, "auto batch over 2 processes, 3 runs (TestAutoBatchKeepsTheGlobalBatch checks the same equality in one process in tier 1)")
	run := func() []autoResult {
		return runProcesses(t, 2, 1, func(a *Accelerator) (autoResult, error) { return autoTrain(a, 5, WithAutoBatch()) })
	}
	want := run() // no budget: the whole batch
	probe := runProcesses(t, 2, 1, func(a *Accelerator) (autoResult, error) { return autoTrain(a, 0) })
	p := probe[0].plans
	t.Logf("plans over 2 processes (per-device batch: bytes): %v", p)
	if !(p[8] < p[16] && p[16] < p[32]) {
		t.Fatalf("the plans do not grow with the batch: %v", p)
	}
	t.Setenv("GOACCEL_DEVICE_MEMORY", fmt.Sprint((p[8]+p[16])/2))
	got := run()
	for r := range got {
		if want[r].step.micro != 1 || got[r].step.micro != 4 {
			t.Errorf("rank %d: micro-batches %d without a budget and %d with it, want 1 and 4", r, want[r].step.micro, got[r].step.micro)
		}
		worst := worstDiff(got[r].losses, want[r].losses, got[r].params, want[r].params)
		t.Logf("rank %d: largest difference from the whole-batch run: %.3g", r, worst)
		if worst > 2e-5 {
			t.Errorf("rank %d: auto batch differs by %.3g > 2e-5", r, worst)
		}
	}
}

// TestAutoBatchKeepsTheGlobalBatch: with a budget between the plans of per-device batches 8
// and 16, WithAutoBatch runs the global batch of 2 x 32 as 4 micro-batches of 8 per device and
// trains as the whole batch does (5 Adam steps; losses and variables within 2e-5).
func TestAutoBatchKeepsTheGlobalBatch(t *testing.T) {
	t.Parallel()
	plugin := cpuPlugin(t)
	ref := newXLA(t, 2)
	wantLoss, wantParams, _ := autoRun(t, ref, 5)

	probe := newXLA(t, 2)
	job, train, _ := planToy(t, probe, 32)
	gb := firstBatch(t, job)
	totals := map[int]int64{}
	for _, b := range []int{32, 16, 8} {
		m, err := microBatch(gb, 0, b)
		if err != nil {
			t.Fatal(err)
		}
		job.micro = 32 / b
		p, err := train.MemoryPlan(m)
		if err != nil {
			t.Fatal(err)
		}
		totals[b] = p.Total()
		t.Logf("per-device batch %d: %s", b, p)
	}
	if !(totals[8] < totals[16] && totals[16] < totals[32]) {
		t.Fatalf("the plans do not grow with the batch: %v", totals)
	}
	budget := (totals[8] + totals[16]) / 2

	var out bytes.Buffer
	a, err := New(Config{Backend: plugin, Devices: 2, Seed: 7, DeviceMemory: budget, Output: &out})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	gotLoss, gotParams, step := autoRun(t, a, 5, WithAutoBatch())
	t.Logf("budget %d B:\n%s", budget, out.String())
	if step.micro != 4 || !strings.Contains(out.String(), "auto batch: per-device batch 8 x 4 micro-batch(es) = 32 slots per device") {
		t.Errorf("micro-batches %d, want 4 of per-device batch 8; printed:\n%s", step.micro, out.String())
	}
	if st := step.Stats(); st.Batches != 5 || st.Updates != 5 {
		t.Errorf("stats %+v: want 5 batches and 5 updates (micro-batches are not batches)", st)
	}
	worst := worstDiff(gotLoss, wantLoss, gotParams, wantParams)
	t.Logf("largest difference from the whole-batch run (losses, variables): %.3g", worst)
	if worst > 2e-5 {
		t.Errorf("auto batch differs from the whole batch by %.3g > 2e-5\nlosses %v\nwant   %v", worst, gotLoss, wantLoss)
	}
}

// TestMemoryBudgetOnANewShape: a batch of new shapes (here a per-device batch of 32 after 8, as
// another sequence length would be) is planned and checked before it runs, not only the first.
func TestMemoryBudgetOnANewShape(t *testing.T) {
	probe := newXLA(t, 2)
	job, train, _ := planToy(t, probe, 32)
	big := firstBatch(t, job)
	small, err := microBatch(big, 0, 8)
	if err != nil {
		t.Fatal(err)
	}
	p8, err := train.MemoryPlan(small)
	if err != nil {
		t.Fatal(err)
	}
	p32, err := train.MemoryPlan(big)
	if err != nil {
		t.Fatal(err)
	}
	if p8.Total() >= p32.Total() {
		t.Fatalf("plans: %d B at 8, %d B at 32", p8.Total(), p32.Total())
	}
	a, err := New(Config{Backend: cpuPlugin(t), Devices: 2, Seed: 7, Quiet: true, DeviceMemory: (p8.Total() + p32.Total()) / 2})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	job, train, _ = planToy(t, a, 32)
	big = firstBatch(t, job)
	if small, err = microBatch(big, 0, 8); err != nil {
		t.Fatal(err)
	}
	if _, err := train.Run(small); err != nil {
		t.Fatalf("the batch that fits: %v", err)
	}
	_, err = train.Run(big)
	t.Logf("the larger shape: %v", err)
	if !errors.Is(err, ErrMemoryBudget) || !strings.Contains(err.Error(), "per-device batch 32") {
		t.Errorf("a batch of new, larger shapes over the budget: err = %v, want ErrMemoryBudget at per-device batch 32", err)
	}
	if st := train.Stats(); st.Batches != 1 {
		t.Errorf("%d batches ran, want 1 (the one that fits)", st.Batches)
	}
	if p, _ := job.MemoryPlan(); p.PerDeviceBatch != 32 {
		t.Errorf("Job.MemoryPlan is the plan of per-device batch %d, want the largest (32)", p.PerDeviceBatch)
	}
}

// TestAutoBatchOverAnEpochTail: 11 examples in a batch of 16 slots run as micro-batches (of 4:
// 4, 4 and 3 real examples, and one of padding only, which is skipped) make the update of the
// whole batch, with the masked-mean loss and with a loss weighted per example (SGD).
func TestAutoBatchOverAnEpochTail(t *testing.T) {
	testutil.Long(t, "auto batch over an epoch tail (tier 1: TestAutoBatchKeepsTheGlobalBatch checks auto batch, TestAccumulationOverAnEpochTail the tail)")
	t.Parallel()
	probe := newXLA(t, 1)
	job, train, _ := planToyWith(t, probe, 16, sgd(0.5))
	m, err := microBatch(firstBatch(t, job), 0, 4)
	if err != nil {
		t.Fatal(err)
	}
	job.micro = 4
	p4, err := train.MemoryPlan(m)
	if err != nil {
		t.Fatal(err)
	}
	for _, weighted := range []bool{false, true} {
		want, err := tailRun(newXLA(t, 1), 11, 16, 1, weighted, sgd(0.5))
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		a, err := New(Config{Backend: cpuPlugin(t), Devices: 1, Seed: 7, Output: &out, DeviceMemory: p4.Total()})
		if err != nil {
			t.Fatal(err)
		}
		got, err := tailRun(a, 11, 16, 1, weighted, sgd(0.5), WithAutoBatch())
		a.Close()
		if err != nil {
			t.Fatal(err)
		}
		// The weighted loss's graph is not the probe's: its plan at 4 may be a little larger.
		if !strings.Contains(out.String(), "auto batch: per-device batch ") || strings.Contains(out.String(), " x 1 micro-batch") ||
			(!weighted && !strings.Contains(out.String(), "per-device batch 4 x 4 micro-batch(es)")) {
			t.Errorf("weighted=%v: want micro-batches (4 of 4 for the probe's loss); printed:\n%s", weighted, out.String())
		}
		worst := worstDiff(nil, nil, got, want)
		t.Logf("weighted=%v: largest difference from the whole batch: %.3g", weighted, worst)
		if worst > 2e-5 {
			t.Errorf("weighted=%v: the micro-batched update differs by %.3g", weighted, worst)
		}
	}
}
