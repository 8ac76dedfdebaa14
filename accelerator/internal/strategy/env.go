// Package strategy is how a job's training steps run over its replicas: the runners of the
// in-graph step (every replica a device of this process) and of the host step (replicas over
// several processes: a gradients graph, a Reduction of the gradients through the process
// group, and the update), the Reducer a host step is given, and what they are built from
// (Env, and Step, the training step they run).
//
// A runner never tests the number of processes, never names a feature of the run, and
// reaches other processes only through its Env's collective.Group: which runner and which
// Reducer or Reduction a job gets is decided once, by the accelerator package's strategy
// choice. Optional capabilities of a runner (compiling ahead for the memory plan, an apply
// graph, state kept outside the Store) are the named interfaces PlanCompiler, ApplyCompiler
// and StateOutsideStore, tested for by the memory plan alone.
package strategy

import (
	"fmt"

	"github.com/goaccel/goaccel/accelerator/internal/collective"
	"github.com/goaccel/goaccel/data"
	"github.com/goaccel/goaccel/internal/timeline"
	"github.com/gomlx/compute"
	"github.com/gomlx/compute/distributed"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// GraphFn is a graph function as model.Exec compiles it: the step's inputs in, its outputs out.
type GraphFn = func(s *model.Scope, inputs []*Node) []*Node

// MeshAxis is the name of the device-mesh axis that batches are sharded along.
const MeshAxis = "data"

// Layout says how a compiled graph's inputs and outputs are laid out over the devices.
type Layout int

// The layouts of a job's graphs.
const (
	Train Layout = iota // batch-sharded inputs; replicated outputs (the loss, gradients)
	Eval                // batch-sharded inputs and per-example outputs
	Apply               // replicated inputs (all-reduced gradients) and outputs
)

// String is the compiled graph's name, as XLA's dumps and profiles show it.
func (l Layout) String() string {
	switch l {
	case Train:
		return "goaccel_train_step"
	case Eval:
		return "goaccel_eval_step"
	default:
		return "goaccel_apply_update"
	}
}

// Env is what a job's runners are built from.
type Env struct {
	Backend compute.Backend
	Store   *model.Store
	// Mesh is the devices the job's graphs run over, or nil for device 0 alone.
	Mesh  *distributed.DeviceMesh
	Group collective.Group
	// TL is the run's timeline (nil: off).
	TL *timeline.Recorder
	// Buffers are the model's buffers that the job's gradients graphs change (Host notes
	// them), made rank 0's after each update.
	Buffers Buffers
}

// Devices is the number of devices the job's graphs run on.
func (e *Env) Devices() int {
	if e.Mesh == nil {
		return 1
	}
	return e.Mesh.NumDevices()
}

// NewExec builds the executor of a graph function, laid out over the devices.
func (e *Env) NewExec(graphFn GraphFn, lay Layout) (*model.Exec, error) {
	x, err := model.NewExec(e.Backend, e.Store, graphFn)
	if err != nil {
		return nil, fmt.Errorf("accelerator: creating the step executor: %w", err)
	}
	// A short, fixed name: XLA names its dumps (XLA_FLAGS=--xla_dump_to) and profiles after
	// it, and the default (the Go closure's full name) is too long for a file name.
	x.WithName(lay.String())
	if mesh := e.Mesh; mesh != nil {
		// Every input, the labels and the mask have the batch on axis 0: shard that axis over
		// the mesh and replicate the rest (a spec shorter than the rank replicates the
		// remaining axes; the last spec is reused for all inputs).
		batchSharded, err := distributed.BuildSpec(mesh).S(MeshAxis).Done()
		if err != nil {
			return nil, fmt.Errorf("accelerator: building the batch sharding spec: %w", err)
		}
		replicated := distributed.NewReplicatedShardingSpec(mesh)
		x.AutoSharding(mesh)
		switch lay {
		case Train:
			x.WithInputShardingSpecs(batchSharded)
			x.WithOutputShardingSpecs(replicated)
		case Eval:
			x.WithInputShardingSpecs(batchSharded)
			x.WithOutputShardingSpecs(batchSharded) // per-example outputs stay on their device
		case Apply:
			x.WithInputShardingSpecs(replicated)
			x.WithOutputShardingSpecs(replicated)
		}
	}
	return x, nil
}

// Place names a global batch for people: "epoch E, batch B", both counted from 1 (data
// counts them from 0).
func Place(gb *data.GlobalBatch) string {
	return fmt.Sprintf("epoch %d, batch %d", gb.Epoch+1, gb.Index+1)
}

// FinalizeAll frees the tensors of ts that are not nil.
func FinalizeAll(ts []*tensors.Tensor) {
	for _, t := range ts {
		if t != nil {
			_ = t.FinalizeAll()
		}
	}
}
