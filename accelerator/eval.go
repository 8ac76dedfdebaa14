package accelerator

import (
	"errors"
	"fmt"

	"github.com/goaccel/goaccel/accelerator/internal/precision"
	"github.com/goaccel/goaccel/accelerator/internal/strategy"
	"github.com/goaccel/goaccel/data"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/support/exceptions"
)

// EvalStep is an evaluation function compiled for this Job's devices: build it once with
// Job.EvalStep and run it on every global batch, or give it to Job.Evaluate. It keeps its
// own compiled graphs (one per input shape), so two EvalSteps never share a graph.
type EvalStep struct {
	// Pad is the value that fills the positions a row lacks when rows of different shapes are
	// gathered (see Gathered): 0 unless set, e.g. -100 for token labels or math.NaN() for
	// float outputs. A value that the output's dtype cannot hold (a fraction for an integer
	// output) is an error when padding is needed. Every process must set the same value.
	Pad float64

	job     *Job
	fn      EvalFn
	exec    *model.Exec
	layouts int               // the job's layouts when exec was made
	classes int               // see TrainStep.classes
	tracing *data.GlobalBatch // the global batch being traced
	synced  bool              // the variables this graph created were made equal on all replicas
}

// EvalStep returns fn compiled as an evaluation step of this Job. The graph is built with
// training off (no dropout) and changes no variable.
func (j *Job) EvalStep(fn EvalFn) *EvalStep { return &EvalStep{job: j, fn: fn} }

// Run evaluates one global batch and returns the per-example outputs of every device of every
// process (like Accelerate's gather), padding included (GatherForMetrics drops it).
func (e *EvalStep) Run(gb *data.GlobalBatch) (*Gathered, error) {
	g, err := e.run(gb)
	if err != nil {
		err = precision.ExplainGoBackendDense(err, e.job.acc.precision, e.job.acc.info.Backend)
		return nil, wrapOp("EvalStep.Run", err)
	}
	return g, nil
}

func (e *EvalStep) run(gb *data.GlobalBatch) (*Gathered, error) {
	j := e.job
	if e.fn == nil {
		return nil, errors.New("accelerator: EvalStep.Run: the eval function is nil")
	}
	args, err := j.args(gb)
	if err != nil {
		return nil, err
	}
	if err := checkLabels(gb, e.classes); err != nil {
		return nil, err
	}
	if e.exec != nil && e.layouts != j.layouts {
		// Traced before a training step laid the variables out sharded (Config.Sharding): its
		// graphs take them as they were laid out then, and PJRT would refuse their shards.
		e.exec.Finalize()
		e.exec = nil
	}
	if e.exec == nil {
		e.exec, err = j.newExec(e.graphFn, strategy.Eval)
		if err != nil {
			return nil, err
		}
		e.layouts = j.layouts
	}
	outs, err := j.execCreatingVariables(&e.synced, func() ([]*tensors.Tensor, error) { return e.execTracing(gb, args) })
	if err != nil {
		return nil, err
	}
	local, err := gatherOutputs(gb, outs, e.Pad)
	if err != nil {
		return nil, err
	}
	span := j.acc.tl.Start("gather", "collective")
	all, err := j.strategy.gather(local)
	span.End()
	return all, err
}

// execTracing executes the compiled eval graph on args, telling the tracer which batch it traces.
func (e *EvalStep) execTracing(gb *data.GlobalBatch, args []any) ([]*tensors.Tensor, error) {
	e.tracing = gb
	outs, err := execCatching(e.exec, args)
	e.tracing = nil
	if err != nil {
		return nil, fmt.Errorf("accelerator: batch %d: %w", gb.Index+1, err)
	}
	return outs, nil
}

// graphFn wraps the user's eval function into the graph function compiled by model.Exec.
func (e *EvalStep) graphFn(s *model.Scope, inputs []*Node) []*Node {
	g := inputs[0].Graph()
	s.Store().SetTraining(g, false)
	b := e.job.unpack(inputs)
	outs := e.job.traceEval(s, b, e.fn) // e.fn(s, b), cast under mixed precision
	if len(outs) == 0 {
		exceptions.Panicf("the eval function returned no outputs")
	}
	if e.classes = labelClasses(b); e.classes > 0 {
		if err := checkLabels(e.tracing, e.classes); err != nil {
			panic(err)
		}
	}
	bs := inputs[0].Shape().Dimensions[0]
	for i, o := range outs {
		if o == nil || o.Shape().Rank() == 0 || o.Shape().Dimensions[0] != bs {
			exceptions.Panicf("eval output %d must have the batch (%d) on axis 0, got %v", i, bs, o)
		}
	}
	return outs
}

// gatherOutputs puts the devices' outputs of one global batch together, device after device,
// with the shards' labels, masks, indices and positions.
func gatherOutputs(gb *data.GlobalBatch, outs []*tensors.Tensor, pad float64) (*Gathered, error) {
	var err error
	nd := len(gb.Shards)
	perDevice := len(outs) / nd
	res := &Gathered{Pad: pad}
	var refs []rowRef
	for d, sh := range gb.Shards {
		for r := 0; r < sh.Size(); r++ {
			refs = append(refs, rowRef{part: d, row: r})
		}
		res.Real = append(res.Real, sh.Real...)
		res.Indices = append(res.Indices, sh.Indices...)
		res.Positions = append(res.Positions, sh.Positions...)
	}
	parts := make([]*Gathered, nd)
	for d, sh := range gb.Shards {
		parts[d] = &Gathered{Outputs: outs[d*perDevice : (d+1)*perDevice], Labels: sh.Labels}
	}
	err = pickRows(parts, refs, res, "device")
	for _, o := range outs {
		_ = o.FinalizeAll()
	}
	if err != nil {
		return nil, err
	}
	return res, nil
}

// Evaluate runs fn over one full pass of src (split over the same devices) and returns the
// results in global example order with the padding dropped, so each real example counts
// exactly once — what Accelerate's gather_for_metrics does, decided by the loader's mask
// rather than guessed from sizes.
func (j *Job) Evaluate(src data.Source, eval *EvalStep) (*Gathered, error) {
	g, err := j.evaluate(src, eval)
	if err != nil {
		return nil, wrapOp("Evaluate", err)
	}
	return g, nil
}

func (j *Job) evaluate(src data.Source, eval *EvalStep) (*Gathered, error) {
	if src == nil {
		return nil, errors.New("accelerator: no data source")
	}
	if eval == nil || eval.job != j {
		return nil, errors.New("accelerator: the EvalStep was not made by this Job's EvalStep")
	}
	if err := j.acc.distribute(src); err != nil {
		return nil, err
	}
	var parts []*Gathered
	for gb, err := range src.Epoch() {
		if err != nil {
			return nil, fmt.Errorf("accelerator: reading evaluation data: %w", err)
		}
		g, err := eval.run(gb)
		if err != nil {
			return nil, err
		}
		parts = append(parts, g)
	}
	return GatherForMetrics(parts...)
}
