package accelerator

import (
	"errors"
	"fmt"

	"github.com/goaccel/goaccel/data"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/model/initializer"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// Where the facade puts a job together, once: Prepare chooses the strategy from the process
// group and the settings, hands the precision to the model and checks the table of refused
// combinations; Job.TrainStep composes the wrappers a global batch passes through around the
// strategy's runner. Each plug lives in its own file (strategy.go, precision.go, memcheck.go,
// autobatch.go, verify.go) and none of them refers back here.

// TrainStep returns fn compiled as a training step of this Job, the way GoMLX's
// model.NewExec compiles a graph function: build it once, outside the training loop, then
// call Run for every global batch.
//
//	train := job.TrainStep(func(s *model.Scope, b accelerator.GraphBatch) *graph.Node {
//	    l := accelerator.CrossEntropy(logits(s, b.Inputs[0]), b.Labels, b.Mask)
//	    acc.Backward(s, l)
//	    return l
//	})
//	for gb, err := range job.Batches() {
//	    loss, err := train.Run(gb)
//	}
func (j *Job) TrainStep(fn StepFn) *TrainStep {
	t := j.bareTrainStep(fn)
	t.stage = t.microBatched(t.stage)
	if j.acc.verify > 0 {
		t.stage = t.verified(t.stage)
	}
	t.stage = t.planChecked(t.stage)
	return t
}

// Prepare binds a model's variables (anything with a model.Store, such as a *model.Store or
// a model object exposing Store()), an optimizer and a data source for data-parallel
// training: the source is split over all replicas (devices x processes), the variables are
// replicated on every device, and each step's batch is sharded along its batch axis.
// On the main process it prints the batch plan:
//
//	goaccel: per-device batch 64 x 4 device(s) x 1 process(es) = global batch 256; 150 batches/epoch
//
// and, for a data.LoaderConfig.GlobalBatchSize of 16 on 3 devices (shares 6 + 6 + 4):
//
//	goaccel: per-device batch 6 x 3 device(s) x 1 process(es) = 18 slots: global batch 16 + 2 masked; 7 batches/epoch
func (a *Accelerator) Prepare(m model.StoreProvider, opt optimizer.Interface, src data.Source, opts ...PrepareOption) (*Job, error) {
	j, err := a.prepare(m, opt, src, opts)
	if err != nil {
		return nil, wrapOp("Prepare", err)
	}
	return j, nil
}

func (a *Accelerator) prepare(m model.StoreProvider, opt optimizer.Interface, src data.Source, opts []PrepareOption) (*Job, error) {
	if m == nil || m.Store() == nil {
		return nil, errors.New("accelerator: Prepare: the model has no model.Store")
	}
	if opt == nil {
		return nil, errors.New("accelerator: Prepare: the optimizer is nil (e.g. optimizer.Adam().LearningRate(2e-5).Done())")
	}
	j := &Job{acc: a, store: m.Store(), opt: opt, src: src, mesh: a.mesh}
	j.opts.accumulate = 1
	for _, o := range opts {
		o(&j.opts)
	}
	if j.opts.accumulate < 1 {
		return nil, fmt.Errorf("accelerator: Prepare: gradient accumulation must be over >= 1 batch, got %d", j.opts.accumulate)
	}
	if j.opts.clipNorm < 0 {
		return nil, fmt.Errorf("accelerator: Prepare: clip norm must be >= 0, got %g", j.opts.clipNorm)
	}
	if r, ok := opt.(interface{ LearningRate() float64 }); ok && r.LearningRate() == 0 && j.opts.schedule == nil {
		return nil, errors.New("accelerator: Prepare: the optimizer has no learning rate (optim.AdamConfig.LearningRate = 0) " +
			"and no WithLearningRateSchedule gives one: it would not train; set the rate (trainer.Fit sets it from " +
			"its Config.LearningRate)")
	}
	var err error
	if j.autocast, err = a.applyPrecision(m); err != nil {
		return nil, err
	}
	j.strategy = chooseStrategy(a.grp, &a.settings)
	if err := checkCombination(combination{settings: &a.settings, strategy: j.strategy}); err != nil {
		return nil, err
	}
	if _, err := j.strategy.syncVariables(j); err != nil { // e.g. pretrained weights loaded before Prepare
		return nil, err
	}
	root := j.store.RootScope()
	if _, found := j.store.GetParam(initializer.ParamInitialSeed); !found {
		root.SetParam(initializer.ParamInitialSeed, a.seed)
	}
	if err := seedRNG(j.store, a.seed+int64(a.ProcessIndex())); err != nil { // dropout differs per process, as in DDP
		return nil, fmt.Errorf("accelerator: Prepare: seeding the model's random state: %w", err)
	}
	if src != nil {
		if err := a.distribute(src); err != nil {
			return nil, err
		}
		a.plan("%s", a.batchPlan(src, j.opts.accumulate))
	}
	return j, nil
}
