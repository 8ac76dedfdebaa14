package strategy

import (
	"fmt"

	"github.com/goaccel/goaccel/accelerator/internal/collective"
	"github.com/goaccel/goaccel/accelerator/internal/memplan"
	"github.com/goaccel/goaccel/data"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// Step is what a runner needs from the training step it runs (the accelerator's TrainStep):
// the user's step function traced three ways, execution with its bookkeeping, and the step's
// account of its collectives.
type Step interface {
	// Graph is the user's step function with Backward making the update in the graph (with
	// accumulate, only adding the batch's gradients to the accumulators).
	Graph(accumulate bool) GraphFn
	// GradientsGraph is the user's step function with Backward computing the gradients only.
	// Its outputs are the loss and the batch's weight and, without accumulate, each trainable
	// variable's gradient weighted by the weight (with accumulation, the sums of the update's
	// batches, the accumulators reset); with accumulate they go to the accumulators. When it
	// is traced it calls traced with the trainable variables and the loss's dtype.
	GradientsGraph(accumulate bool, traced func(vars []*model.Variable, lossDType dtypes.DType)) GraphFn
	// ApplyGraph applies the mean gradients (its inputs, one per variable of vars) as
	// Backward applies them in a single process.
	ApplyGraph(vars []*model.Variable, lossDType dtypes.DType) GraphFn
	// NewStepExec is the in-graph step's executor of graphFn for gb, laid out over the
	// devices (with variables sharded over them when the job shards them), and the check of
	// its first execution's outputs (nil: none).
	NewStepExec(graphFn GraphFn, gb *data.GlobalBatch, args []any) (*model.Exec, func() error, error)
	// Exec executes e on gb's executor arguments. With synced not nil, the first execution of
	// the graph has the variables made equal on all replicas (*synced records it), running
	// the graph again when that changed them.
	Exec(e *model.Exec, gb *data.GlobalBatch, args []any, synced *bool) ([]*tensors.Tensor, error)
	// Compile compiles e for the shapes of gb's executor arguments, without running it.
	Compile(e *model.Exec, gb *data.GlobalBatch, args []any) (*Graph, error)
	// Timed is the step's account of its collectives.
	Timed() collective.Timed
	// SetSyncBytes records the bytes each process sends per update (StepStats.SyncBytes).
	SetSyncBytes(n int64)
}

// Runner runs the batches of one training step under a strategy.
type Runner interface {
	// Run runs one global batch, whose executor arguments are args, and returns its loss.
	// With accumulate, the batch only adds its gradients to the accumulators (no update).
	Run(gb *data.GlobalBatch, args []any, accumulate bool) (*tensors.Tensor, error)
}

// PlanCompiler is a runner that can compile its step for a batch without running it, so that
// the memory plan is made before the first execution.
type PlanCompiler interface {
	// Compile compiles (or finds compiled) the graph that runs gb (args are its executor
	// arguments); accumulate picks the graph of a batch before the update.
	Compile(gb *data.GlobalBatch, args []any, accumulate bool) (*Graph, error)
}

// ApplyCompiler is a runner that can compile its update's apply graph ahead, so that the
// memory plan counts the optimizer's state that graph creates, and its temporaries.
type ApplyCompiler interface {
	// CompileApply compiles it (nil: the runner has no apply graph on the job's Store).
	CompileApply() (*Graph, error)
}

// StateOutsideStore is a runner whose update keeps state outside the job's Store (the
// optimizer state sharded over the processes), which the memory plan counts too.
type StateOutsideStore interface {
	// PlanState returns that state as the plan counts it (nil: none).
	PlanState() ([]memplan.Var, error)
}

// compileSlot creates the executor in *slot if needed (as the runners do) and compiles it for
// args' shapes.
func compileSlot(env *Env, s Step, slot **model.Exec, fn GraphFn, gb *data.GlobalBatch, args []any) (*Graph, error) {
	if *slot == nil {
		var err error
		if *slot, err = env.NewExec(fn, Train); err != nil {
			return nil, err
		}
	}
	return s.Compile(*slot, gb, args)
}

// ArgShapes are the shapes of executor arguments (tensors).
func ArgShapes(args []any) []shapes.Shape {
	out := make([]shapes.Shape, len(args))
	for i, a := range args {
		out[i] = a.(*tensors.Tensor).Shape()
	}
	return out
}

// errorAt wraps err with the batch it happened on, as "accelerator: what (epoch E, batch B)".
func errorAt(what string, gb *data.GlobalBatch, err error) error {
	return fmt.Errorf("accelerator: %s (%s): %w", what, Place(gb), err)
}
