package accelerator

import (
	"fmt"

	"github.com/goaccel/goaccel/accelerator/internal/collective"
	"github.com/goaccel/goaccel/accelerator/internal/strategy"
	"github.com/goaccel/goaccel/data"
	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
	"github.com/gomlx/gomlx/support/exceptions"
)

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

// NewStepExec is the in-graph step's executor, with Config.Sharding's layout (sharding.go)
// and the check of its pinned outputs.
func (r runnerStep) NewStepExec(graphFn strategy.GraphFn, gb *data.GlobalBatch, args []any) (*model.Exec, func() error, error) {
	t := r.t
	e, pin, err := t.newStepExec(graphFn, gb, args)
	if err != nil || pin == nil {
		return e, nil, err
	}
	return e, pin.check, nil
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
