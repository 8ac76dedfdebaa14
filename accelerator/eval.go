package accelerator

import (
	"errors"
	"fmt"
	"github.com/goaccel/goaccel/accelerator/internal/strategy"
	"sort"

	"github.com/goaccel/goaccel/data"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/support/exceptions"
)

// Gathered holds per-example results collected from every device. Row i of every output
// and of Labels belongs to the same example, whose dataset index is Indices[i].
//
// Rows whose outputs differ in shape beyond axis 0 — per-token logits [B, L, C] of batches
// padded to different lengths (data.BucketLength), in different batches or processes — are
// gathered into one tensor padded with Pad to the largest size along each axis, and Lengths
// says which part of each row is real:
//
//	res, err := job.Evaluate(testLoader, eval) // output 0: logits [B, L, C], L = 16 or 32
//	// res.Outputs[0] is [N, 32, C]; a row of a 16-token batch has res.Lengths[0][i] = [16 C]
//	// and holds eval.Pad at tokens 16..31.
type Gathered struct {
	// Outputs are the eval function's outputs, each [N, ...].
	Outputs []*tensors.Tensor
	// Lengths[k][i] is the real shape of row i of output k: its dimensions after axis 0 as the
	// eval function returned them. Where it is smaller than Outputs[k]'s, the rest of the row
	// holds Pad. Rows may share these slices.
	Lengths [][][]int
	// Pad is the value of the positions that gathering added to rows shorter than others:
	// EvalStep.Pad (0 unless set). Labels of different shapes are padded with it too.
	Pad float64
	// Labels are the examples' labels [N], or nil when the data has none.
	Labels *tensors.Tensor
	// Real flags real examples (false: padding added by the sampler or the loader).
	Real []bool
	// Indices are the examples' dataset indices; Positions their positions in the epoch order
	// (-1 for padding).
	Indices, Positions []int

	labelLengths [][]int // the labels' real shapes, as Lengths (nil: the shape of Labels)
}

// Len is the number of rows.
func (g *Gathered) Len() int { return len(g.Indices) }

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
	if e.exec == nil {
		e.exec, err = j.newExec(e.graphFn, strategy.Eval)
		if err != nil {
			return nil, err
		}
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
	outs, err := e.exec.Exec(args...)
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

// GatherForMetrics concatenates gathered results, drops padding rows and sorts the rest by
// their position in the epoch order (dataset order for an unshuffled loader). Outputs of
// different shapes beyond axis 0 are padded to the largest among the rows kept, with the
// parts' Pad, which must be the same in all; Lengths keeps each row's real shape.
func GatherForMetrics(parts ...*Gathered) (*Gathered, error) {
	for p, g := range parts {
		if !samePad(g.Pad, parts[0].Pad) {
			return nil, fmt.Errorf("accelerator: GatherForMetrics: part %d pads with %g, part 0 with %g", p, g.Pad, parts[0].Pad)
		}
	}
	type keyed struct {
		pos int
		ref rowRef
	}
	var rows []keyed
	for p, g := range parts {
		for i := range g.Indices {
			if g.Real[i] {
				rows = append(rows, keyed{pos: g.Positions[i], ref: rowRef{part: p, row: i}})
			}
		}
	}
	sort.SliceStable(rows, func(a, b int) bool { return rows[a].pos < rows[b].pos })
	refs := make([]rowRef, len(rows))
	out := &Gathered{}
	if len(parts) > 0 {
		out.Pad = parts[0].Pad
	}
	for i, r := range rows {
		refs[i] = r.ref
		g := parts[r.ref.part]
		out.Real = append(out.Real, true)
		out.Indices = append(out.Indices, g.Indices[r.ref.row])
		out.Positions = append(out.Positions, g.Positions[r.ref.row])
	}
	if len(parts) == 0 {
		return out, nil
	}
	if err := pickRows(parts, refs, out, "part"); err != nil {
		return nil, err
	}
	return out, nil
}

// Argmax returns, for output k of shape [N, C], the index of the largest value of each row:
// the predicted class for logits.
func (g *Gathered) Argmax(k int) ([]int, error) {
	if k < 0 || k >= len(g.Outputs) {
		return nil, fmt.Errorf("accelerator: Gathered.Argmax: output %d requested, but there are %d outputs", k, len(g.Outputs))
	}
	t := g.Outputs[k]
	if t.Shape().Rank() != 2 {
		return nil, fmt.Errorf("accelerator: Gathered.Argmax: needs a [N, C] output, output %d is %s", k, t.Shape())
	}
	n, c := t.Shape().Dimensions[0], t.Shape().Dimensions[1]
	preds := make([]int, n)
	var err error
	cerr := t.ConstFlatData(func(flat any) {
		vals, ok := strategy.AsFloat64s(flat)
		if !ok {
			err = fmt.Errorf("accelerator: Gathered.Argmax: a %s output is not supported", t.DType())
			return
		}
		for i := range n {
			best := 0
			for j := 1; j < c; j++ {
				if vals[i*c+j] > vals[i*c+best] {
					best = j
				}
			}
			preds[i] = best
		}
	})
	if cerr != nil {
		return nil, cerr
	}
	return preds, err
}

// IntLabels returns the labels as ints.
func (g *Gathered) IntLabels() ([]int, error) {
	if g.Labels == nil {
		return nil, errors.New("accelerator: Gathered.IntLabels: the gathered results have no labels")
	}
	var out []int
	var err error
	cerr := g.Labels.ConstFlatData(func(flat any) {
		vals, ok := strategy.AsFloat64s(flat)
		if !ok {
			err = fmt.Errorf("accelerator: Gathered.IntLabels: labels of dtype %s are not numbers", g.Labels.DType())
			return
		}
		out = make([]int, len(vals))
		for i, v := range vals {
			out[i] = int(v)
		}
	})
	if cerr != nil {
		return nil, cerr
	}
	return out, err
}

// Floats returns output k flattened as float64 values (for per-example losses or scores).
func (g *Gathered) Floats(k int) ([]float64, error) {
	if k < 0 || k >= len(g.Outputs) {
		return nil, fmt.Errorf("accelerator: Gathered.Floats: output %d requested, but there are %d outputs", k, len(g.Outputs))
	}
	var out []float64
	var ok bool
	if err := g.Outputs[k].ConstFlatData(func(flat any) { out, ok = strategy.AsFloat64s(flat) }); err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("accelerator: Gathered.Floats: output %d of dtype %s is not numeric", k, g.Outputs[k].DType())
	}
	return out, nil
}
