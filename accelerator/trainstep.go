package accelerator

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/goaccel/goaccel/accelerator/internal/collective"
	"github.com/goaccel/goaccel/accelerator/internal/precision"
	"github.com/goaccel/goaccel/accelerator/internal/strategy"
	"github.com/goaccel/goaccel/data"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
	"github.com/gomlx/gomlx/support/exceptions"
)

// TrainStep is a training step function compiled for this Job's devices: build it once with
// Job.TrainStep and run it on every global batch. It keeps its own compiled graphs (one per
// input shape, plus a second graph for the batches that only accumulate gradients), so two
// TrainSteps never share a graph, even when they were made by the same code.
type TrainStep struct {
	job    *Job
	fn     StepFn
	runner strategy.Runner // the job's strategy's graphs and buffers for this step
	// stage runs a global batch: the runner inside the wrappers that Job.TrainStep composes
	// (the memory plan's check, Verify, micro-batches).
	stage batchStage
	// classes is the class count the loss requires of the labels (0: none), known once the
	// step was traced; tracing checks the batch being traced.
	classes int
	tracing *data.GlobalBatch
	stats   StepStats
	micro   int              // micro-batches per global batch, set by the first Run (autobatch.go)
	planned [][]shapes.Shape // the argument shapes whose memory plan was checked
}

// StepStats is where a TrainStep's time went, for benchmarks and logs.
type StepStats struct {
	// Batches is the number of global batches run (with gradient accumulation over k
	// batches, k of them make one step).
	Batches int
	// Total is the wall time spent in Run.
	Total time.Duration
	// Updates is the number of optimizer updates (steps) applied: Batches / k with gradient
	// accumulation over k batches.
	Updates int
	// Sync is the part of Total spent in the all-reduces between processes (0 in a single
	// process, where the devices' gradients are averaged inside the compiled step).
	Sync time.Duration
	// SyncBytes is the number of gradient bytes each process all-reduces per optimizer update
	// (0 in a single process). With gradient accumulation over k batches the gradients stay
	// on the devices until the k-th batch, so this is also the bytes per k batches. Under
	// Config.Sharding over several processes it is the reduce-scatter's bytes (the gradients,
	// padded, and the loss), and SyncedBytes adds the all-gather's of the weights.
	// Under Config.GradientCompression it is the 16-bit buffer each process sends, 2 bytes per
	// gradient padded to a multiple of the number of processes.
	SyncBytes int64
	// SyncedBytes is the number of bytes each process all-reduced so far: SyncBytes per
	// update, plus the loss of the global batch and its weight, 8 bytes on the update's batch
	// (in its buckets; 16, on their own, under compression) and 16 on a batch that only
	// accumulates.
	SyncedBytes int64
}

// Stats returns where the step's time went so far. With a single process, Run returns before
// the devices finish (batches queue up), so Total is meaningful only when the loss is read
// after each batch.
func (t *TrainStep) Stats() StepStats { return t.stats }

// batchStage runs one global batch, whose executor arguments are args; with accumulate it
// only accumulates its gradients (no update). The strategy's runner is the innermost stage,
// wrapped by those Job.TrainStep composes.
type batchStage func(gb *data.GlobalBatch, args []any, accumulate bool) (Loss, error)

// Run runs the step on one global batch (forward, backward, gradient sync and optimizer
// update on all devices) and returns the loss of the global batch, as returned by the step
// function (a mean over the global batch's real examples). With gradient accumulation over k
// batches, the update happens on every k-th call.
func (t *TrainStep) Run(gb *data.GlobalBatch) (Loss, error) {
	l, err := t.run(gb)
	if err != nil {
		err = precision.ExplainGoBackendDense(err, t.job.acc.precision, t.job.acc.info.Backend)
		return Loss{}, wrapOp("TrainStep.Run", err)
	}
	return l, nil
}

func (t *TrainStep) run(gb *data.GlobalBatch) (Loss, error) {
	if t.fn == nil {
		return Loss{}, errors.New("accelerator: TrainStep.Run: the step function is nil")
	}
	args, err := t.job.args(gb)
	if err == nil {
		err = checkLabels(gb, t.classes)
	}
	if err != nil {
		return Loss{}, err
	}
	accumulate, start, syncBefore := t.job.accumulatesBatch(), time.Now(), t.stats.Sync
	loss, err := t.stage(gb, args, accumulate)
	if err == nil {
		err = t.count(start, syncBefore, accumulate)
	}
	return loss, err // Run drops the loss of a failed step
}

// accumulatesBatch reports whether the job's next batch only accumulates its gradients: with
// WithGradientAccumulation over k batches, every batch but each k-th.
func (j *Job) accumulatesBatch() bool {
	return j.opts.accumulate > 1 && (j.batchesRun+1)%int64(j.opts.accumulate) != 0
}

// count records a batch run since start in the step's stats, the timeline and the busy time
// of the straggler report (syncBefore: the stats' Sync before the batch).
func (t *TrainStep) count(start time.Time, syncBefore time.Duration, accumulate bool) error {
	j := t.job
	j.batchesRun++
	t.stats.Batches++
	if !accumulate {
		t.stats.Updates++
	}
	end := time.Now()
	t.stats.Total += end.Sub(start)
	if tl := j.acc.tl; tl != nil { // tested here: boxing the args would allocate even when off
		tl.Add("step", "step", start, end, "batch", j.batchesRun, "accumulate", accumulate)
	}
	if b := j.busyRecorder(); b != nil { // who is slow (straggler.go)
		return b.afterStep(j.acc, end.Sub(start), t.stats.Sync-syncBefore, !accumulate)
	}
	return nil
}

// graphFn wraps the user's step function into the graph function compiled by model.Exec.
func (t *TrainStep) graphFn(accumulate bool) func(s *model.Scope, inputs []*Node) []*Node {
	j := t.job
	return func(s *model.Scope, inputs []*Node) []*Node {
		g := inputs[0].Graph()
		s.Store().SetTraining(g, true)
		st := &backwardState{job: j, accumulate: accumulate}
		g.AttachState(backwardKey{}, st)
		return []*Node{t.traceUser(s, inputs, st)}
	}
}

// traceUser calls the user's step function on the graph's inputs and checks what it did.
func (t *TrainStep) traceUser(s *model.Scope, inputs []*Node, st *backwardState) *Node {
	b := t.job.unpack(inputs)
	st.mask = b.Mask
	loss := t.job.traceStep(s, b, st, t.fn) // t.fn(s, b), cast under mixed precision
	if loss == nil {
		exceptions.Panicf("the step function returned a nil loss")
	}
	if t.classes = labelClasses(b); t.classes > 0 {
		if err := checkLabels(t.tracing, t.classes); err != nil {
			panic(err) // before the first execution: no update is made
		}
	}
	if !st.called {
		exceptions.Panicf("the step function never called Accelerator.Backward(s, loss): without it " +
			"no gradient is computed and no update is made; call it once on the batch loss")
	}
	if !loss.Shape().IsScalar() {
		exceptions.Panicf("the step function must return the scalar loss, got shape %s", loss.Shape())
	}
	return loss
}

// execTracing executes a compiled step on args, telling the tracer which batch it traces.
func (t *TrainStep) execTracing(e *model.Exec, gb *data.GlobalBatch, args []any) ([]*tensors.Tensor, error) {
	t.tracing = gb
	outs, err := execCatching(e, args)
	t.tracing = nil
	if err != nil {
		return nil, fmt.Errorf("accelerator: %s: %w", batchPlace(gb), err)
	}
	return outs, nil
}

// execCatching runs e on args and returns GoMLX's panics while it feeds the variables to the
// graph (a variable whose initialisation failed in an earlier step) as errors, as the rest of
// Exec's failures are.
func execCatching(e *model.Exec, args []any) (outs []*tensors.Tensor, err error) {
	if caught := exceptions.TryCatch[error](func() { outs, err = e.Exec(args...) }); caught != nil {
		return nil, caught
	}
	return outs, err
}

// Loss is the scalar loss of a training step. Reading it waits for the step to finish on
// the devices; not reading it lets steps queue up.
type Loss struct{ t *tensors.Tensor }

// Value copies the loss to the host as a float64, whatever its dtype (float32, float64,
// bfloat16, float16). A loss that cannot be read is an error, never a quiet 0.
func (l Loss) Value() (float64, error) {
	if l.t == nil {
		return math.NaN(), errors.New("accelerator: Loss.Value: the loss of a failed or missing step")
	}
	v, err := scalarFloat(l.t)
	if err != nil {
		return math.NaN(), fmt.Errorf("accelerator: Loss.Value: %w", err)
	}
	return v, nil
}

// scalarFloat reads a one-element tensor of any numeric dtype as a float64.
func scalarFloat(t *tensors.Tensor) (float64, error) { return strategy.ScalarFloat(t) }

// runnerStep is a TrainStep as the strategy.Step its runner runs: the user's step function
// traced the ways the runners need it, execution with the tracer's bookkeeping, and the
// step's stats. (A type of its own, so that these methods stay off TrainStep's public face.)
type runnerStep struct{ t *TrainStep }

// Graph is the user's step function with Backward making the update in the graph (graphFn).
func (r runnerStep) Graph(accumulate bool) strategy.GraphFn { return r.t.graphFn(accumulate) }

// GradientsGraph is the user's step function with Backward computing the gradients only; it
// returns the loss and the batch's weight and, on the update's batch (accumulate false), each
// variable's gradient weighted by the batch's weight, plus, with accumulation, what the
// batches before it left in the accumulators (which it resets). With accumulate, the weighted
// gradients go to the accumulators instead.
func (r runnerStep) GradientsGraph(accumulate bool, traced func([]*model.Variable, dtypes.DType)) strategy.GraphFn {
	t := r.t
	return func(s *model.Scope, inputs []*Node) []*Node {
		j := t.job
		g := inputs[0].Graph()
		s.Store().SetTraining(g, true)
		st := &backwardState{job: j, gradsOnly: true}
		g.AttachState(backwardKey{}, st)
		loss := t.traceUser(s, inputs, st)
		if _, ok := j.opt.(strategy.GradientOptimizer); !ok {
			exceptions.Panicf("accelerator: optimizer %T does not accept gradients (UpdateGraphWithGradients), so it cannot "+
				"be used over several processes; use one of GoMLX's optimizers (Adam, AdamW, SGD, RMSProp)", j.opt)
		}
		traced(st.vars, loss.DType())
		out := []*Node{loss, st.weight}
		if j.accumulating() {
			sums, _ := accumulateWeighted(s.Store().RootScope(), g, st.vars, st.grads, st.weight, accumulate)
			return append(out, sums...)
		}
		for _, gr := range st.grads {
			out = append(out, Mul(gr, ConvertDType(st.weight, gr.DType())))
		}
		return out
	}
}

// ApplyGraph is the mean gradients (the inputs, one per variable of vars) clipped and applied
// as Backward applies them in a single process.
func (r runnerStep) ApplyGraph(vars []*model.Variable, lossDType dtypes.DType) strategy.GraphFn {
	t := r.t
	return func(s *model.Scope, inputs []*Node) []*Node {
		g := inputs[0].Graph()
		for _, v := range vars {
			_ = v.NodeValue(g) // the optimizer updates the variables the graph uses, in Store order
		}
		root := s.Store().RootScope()
		t.job.applyGradients(root, g, inputs, lossDType)
		return []*Node{optimizer.GetGlobalStepVar(root).NodeValue(g)}
	}
}

// Exec executes e on gb (execTracing), with the variables made equal on all replicas after a
// graph's first execution when synced is not nil (Job.execCreatingVariables).
func (r runnerStep) Exec(e *model.Exec, gb *data.GlobalBatch, args []any, synced *bool) ([]*tensors.Tensor, error) {
	t := r.t
	if synced == nil {
		return t.execTracing(e, gb, args)
	}
	return t.job.execCreatingVariables(synced, func() ([]*tensors.Tensor, error) { return t.execTracing(e, gb, args) })
}

// Compile compiles e for gb's argument shapes, telling the tracer which batch it traces.
func (r runnerStep) Compile(e *model.Exec, gb *data.GlobalBatch, args []any) (*Graph, error) {
	t := r.t
	t.tracing = gb
	span := t.job.acc.tl.Start("compile", "execute")
	g, err := e.Compile(strategy.ArgShapes(args)...)
	span.End()
	t.tracing = nil
	if err != nil {
		return nil, fmt.Errorf("accelerator: compiling the step for its memory plan (%s): %w", batchPlace(gb), err)
	}
	return g, nil
}

// Timed is the account of the step's collectives (collective.Timed): their time in the
// step's stats (Sync), their bytes in SyncedBytes, and, for a named one, a span of the
// timeline.
func (r runnerStep) Timed() collective.Timed { return r.t.timed() }

// timed is the account of the step's collectives: their time in the step's stats (Sync),
// their bytes in SyncedBytes, and, for a named one, a span of the timeline. Every collective
// of the strategies goes through it.
func (t *TrainStep) timed() collective.Timed {
	return collective.Timed{Sync: &t.stats.Sync, Bytes: &t.stats.SyncedBytes, TL: t.job.acc.tl}
}

// SetSyncBytes records the bytes each process sends per update.
func (r runnerStep) SetSyncBytes(n int64) { r.t.stats.SyncBytes = n }
