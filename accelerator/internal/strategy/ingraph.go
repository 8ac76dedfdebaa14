package strategy

import (
	"github.com/goaccel/goaccel/data"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// InGraph runs a step whose replicas are all devices of this process: the step function,
// Backward's gradients, their mean over the devices (XLA's sharding inserts the all-reduce),
// accumulation, clipping and the optimizer update are one compiled graph.
type InGraph struct {
	env   *Env
	step  Step
	apply *model.Exec // forward, backward, gradient mean and optimizer update
	accum *model.Exec // with gradient accumulation: adds the gradients, no update
	// applyCheck, accumCheck: the check of each graph's first outputs (NewStepExec's).
	applyCheck, accumCheck func() error
}

// NewInGraph returns the in-graph runner of step.
func NewInGraph(env *Env, step Step) *InGraph { return &InGraph{env: env, step: step} }

// slots are the executor and output check of the update's graph or, with accumulate, of the
// accumulation's.
func (s *InGraph) slots(accumulate bool) (**model.Exec, *func() error) {
	if accumulate {
		return &s.accum, &s.accumCheck
	}
	return &s.apply, &s.applyCheck
}

// Run runs one global batch: one execution of the step's graph.
func (s *InGraph) Run(gb *data.GlobalBatch, args []any, accumulate bool) (*tensors.Tensor, error) {
	slot, check := s.slots(accumulate)
	name := "execute"
	if *slot == nil {
		name = "compile+execute"
		var err error
		if *slot, *check, err = s.step.NewStepExec(s.step.Graph(accumulate), gb, args); err != nil {
			return nil, err
		}
	}
	span := s.env.TL.Start(name, "execute")
	outs, err := s.step.Exec(*slot, gb, args, nil)
	span.End()
	if err != nil {
		return nil, err
	}
	if c := *check; c != nil {
		*check = nil // once
		if err := c(); err != nil {
			FinalizeAll(outs)
			return nil, err
		}
	}
	FinalizeAll(outs[1:])
	return outs[0], nil
}

// Compile compiles the graph that runs gb, creating it as Run does.
func (s *InGraph) Compile(gb *data.GlobalBatch, args []any, accumulate bool) (*Graph, error) {
	slot, check := s.slots(accumulate)
	if *slot == nil {
		var err error
		if *slot, *check, err = s.step.NewStepExec(s.step.Graph(accumulate), gb, args); err != nil {
			return nil, err
		}
	}
	return compileSlot(s.env, s.step, slot, s.step.Graph(accumulate), gb, args)
}
