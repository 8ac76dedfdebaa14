package accelerator

import (
	"errors"
	"fmt"

	"github.com/goaccel/goaccel/data"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// planCompiler is a step runner that can compile its step for a batch without running it, so
// that the memory plan is made before the first execution.
type planCompiler interface {
	// compile compiles (or finds compiled) the graph that runs gb (args are its executor
	// arguments); accumulate picks the graph of a batch before the update.
	compile(gb *data.GlobalBatch, args []any, accumulate bool) (*Graph, error)
}

func (s *inGraphStep) compile(gb *data.GlobalBatch, args []any, accumulate bool) (*Graph, error) {
	slot := &s.apply
	if accumulate {
		slot = &s.accum
	}
	return s.t.compileSlot(slot, s.t.graphFn(accumulate), gb, args)
}

func (p *hostReducedStep) compile(gb *data.GlobalBatch, args []any, accumulate bool) (*Graph, error) {
	slot := &p.grads
	if accumulate {
		slot = &p.accum
	}
	return p.t.compileSlot(slot, p.gradsGraphFn(accumulate), gb, args)
}

// compileSlot creates the executor in *slot if needed (as the runners do) and compiles it for
// args' shapes.
func (t *TrainStep) compileSlot(slot **model.Exec, fn func(s *model.Scope, inputs []*Node) []*Node, gb *data.GlobalBatch, args []any) (*Graph, error) {
	if *slot == nil {
		var err error
		if *slot, err = t.job.newExec(fn, layoutTrain); err != nil {
			return nil, err
		}
	}
	argShapes := make([]shapes.Shape, len(args))
	for i, a := range args {
		argShapes[i] = a.(*tensors.Tensor).Shape()
	}
	t.tracing = gb
	span := t.job.acc.tl.Start("compile", "execute")
	g, err := (*slot).Compile(argShapes...)
	span.End()
	t.tracing = nil
	if err != nil {
		return nil, fmt.Errorf("accelerator: compiling the step for its memory plan (%s): %w", batchPlace(gb), err)
	}
	return g, nil
}

// planSharding is the sharding kind and shard count the memory plan assumes for this job.
// Merge hook for Config.Sharding: return the job's kind and its shard count here.
func (j *Job) planSharding() (kind string, shards int) { return "no", 1 }

// MemoryPlan returns the largest memory plan made so far for the job's training steps: when a
// step first runs, when it first runs a batch of new shapes (another sequence length), or by
// TrainStep.MemoryPlan. Before any there is none, which is an error.
func (j *Job) MemoryPlan() (MemoryPlan, error) {
	if j.memPlan == nil {
		return MemoryPlan{}, errors.New("accelerator: Job.MemoryPlan: no plan yet: it is made when a TrainStep first runs " +
			"(or call TrainStep.MemoryPlan with a global batch)")
	}
	return *j.memPlan, nil
}

// MemoryPlan compiles the step for gb's shapes without running it and returns its memory plan
// (see MemoryPlan). It creates the model's variables if the step is the first to use them,
// but neither initialises nor changes their values.
func (t *TrainStep) MemoryPlan(gb *data.GlobalBatch) (MemoryPlan, error) {
	args, err := t.job.args(gb)
	if err != nil {
		return MemoryPlan{}, wrapOp("TrainStep.MemoryPlan", err)
	}
	p, err := t.planAt(gb, args, t.job.accumulating())
	if err != nil {
		return MemoryPlan{}, wrapOp("TrainStep.MemoryPlan", err)
	}
	t.job.keepPlan(p)
	return p, nil
}

// accumulating reports whether the job's steps accumulate gradients over several batches
// (WithGradientAccumulation) or micro-batches (WithAutoBatch).
func (j *Job) accumulating() bool { return j.opts.accumulate > 1 || j.micro > 1 }

// planAt compiles the step for gb (the update's graph, after the accumulation graph when
// there is one, the order the runs trace them in) and makes its plan.
func (t *TrainStep) planAt(gb *data.GlobalBatch, args []any, accumulating bool) (MemoryPlan, error) {
	j := t.job
	c, ok := t.runner.(planCompiler)
	if !ok {
		return MemoryPlan{}, fmt.Errorf("accelerator: the %T strategy cannot compile a step ahead for its memory plan", j.strategy)
	}
	if accumulating {
		if _, err := c.compile(gb, args, true); err != nil {
			return MemoryPlan{}, err
		}
	}
	g, err := c.compile(gb, args, false)
	if err != nil {
		return MemoryPlan{}, err
	}
	kind, n := j.planSharding()
	return makePlan(planVars(j.store, g), xlaStats(g), kind, n, gb.Shards[0].Size(), j.acc.budget)
}

// checkPlan runs before a batch executes. The first time, it makes the memory plan and prints it
// on the main process; with WithAutoBatch it picks the micro-batches (t.micro) whose plan fits.
// A batch of argument shapes not seen before (another sequence length) is planned and checked
// again, silently. A plan over the budget is an error, and the next Run tries again.
func (t *TrainStep) checkPlan(gb *data.GlobalBatch, args []any, accumulate bool) error {
	j := t.job
	if _, ok := t.runner.(planCompiler); !ok {
		if j.opts.autoBatch {
			return fmt.Errorf("accelerator: WithAutoBatch: the %T strategy cannot compile a step ahead for its memory plan", j.strategy)
		}
		t.micro = 1 // no plan
		return nil
	}
	for _, seen := range t.planned {
		if sameShapes(args, seen) {
			return nil
		}
	}
	first := t.micro == 0
	if first && j.opts.autoBatch {
		if err := t.chooseMicro(gb); err != nil {
			return err
		}
	} else {
		var p MemoryPlan
		var err error
		if t.micro > 1 { // a new shape under WithAutoBatch: the plan of its micro-batches
			var micro *data.GlobalBatch
			var margs []any
			if micro, err = microBatch(gb, 0, gb.Shards[0].Size()/t.micro); err == nil {
				if margs, err = j.args(micro); err == nil {
					p, err = t.planAt(micro, margs, true)
				}
			}
		} else {
			p, err = t.planAt(gb, args, accumulate || j.accumulating())
		}
		if err != nil {
			return err
		}
		j.keepPlan(p)
		if first {
			j.acc.plan("goaccel: %s", p)
		}
		if !p.Fits() {
			return budgetError(p)
		}
		if first {
			t.micro = 1
		}
	}
	shs := make([]shapes.Shape, len(args))
	for i, a := range args {
		shs[i] = a.(*tensors.Tensor).Shape()
	}
	t.planned = append(t.planned, shs)
	return nil
}

// keepPlan keeps the largest plan made so far as the job's.
func (j *Job) keepPlan(p MemoryPlan) {
	if j.memPlan == nil || p.Total() > j.memPlan.Total() {
		j.memPlan = &p
	}
}

// sameShapes reports whether args have the shapes shs (without allocating: it runs every step).
func sameShapes(args []any, shs []shapes.Shape) bool {
	if len(args) != len(shs) {
		return false
	}
	for i, a := range args {
		if !a.(*tensors.Tensor).Shape().Equal(shs[i]) {
			return false
		}
	}
	return true
}

// chooseMicro is WithAutoBatch's choice: the largest per-device batch b dividing the
// global batch's per-device slots S whose plan fits the budget, the rest made up by
// accumulating S/b micro-batches. Every process computes it from the same shapes and
// statistics; with several, they check they agree.
func (t *TrainStep) chooseMicro(gb *data.GlobalBatch) error {
	j := t.job
	slots := gb.Shards[0].Size()
	var first *MemoryPlan
	var chosen *MemoryPlan
	k := 0
	for cand := 1; cand <= slots; cand++ {
		if slots%cand != 0 {
			continue
		}
		b := slots / cand
		if first != nil && first.Budget > 0 && b > 1 {
			// The activations scale with the batch: skip a candidate whose prediction,
			// an underestimate, already exceeds the budget.
			fixed := first.Total() - first.Temporaries
			if fixed+first.Temporaries*int64(b)/int64(slots) > first.Budget {
				continue
			}
		}
		micro, err := microBatch(gb, 0, b)
		if err != nil {
			return err
		}
		args, err := j.args(micro)
		if err != nil {
			return err
		}
		j.micro = cand // traces the accumulating graphs when cand > 1
		p, err := t.planAt(micro, args, j.accumulating())
		j.micro = 0
		if err != nil {
			return err
		}
		if first == nil {
			first = &p
		}
		if p.Fits() {
			chosen, k = &p, cand
			break
		}
		if b == 1 {
			j.keepPlan(p)
			return budgetError(p)
		}
	}
	if err := j.agreeOn("the auto batch's micro-batch count", k); err != nil {
		return err
	}
	j.keepPlan(*chosen)
	t.micro, j.micro = k, k
	j.acc.plan("goaccel: auto batch: per-device batch %d x %d micro-batch(es) = %d slots per device, global batch kept; %s",
		slots/k, k, slots, chosen)
	return nil
}

// agreeOn checks that every process computed the same value (one small all-gather).
func (j *Job) agreeOn(what string, v int) error {
	if j.acc.grp.Size() == 1 {
		return nil
	}
	all, err := j.acc.grp.Allgather([]byte(fmt.Sprint(v)))
	if err != nil {
		return fmt.Errorf("accelerator: checking %s on all processes: %w", what, err)
	}
	for r, b := range all {
		if string(b) != fmt.Sprint(v) {
			return fmt.Errorf("accelerator: the processes disagree on %s: rank %d has %s, rank %d has %d",
				what, r, b, j.acc.grp.Rank(), v)
		}
	}
	return nil
}

// runBatch runs one global batch: whole, or with WithAutoBatch as t.micro micro-batches whose
// gradients accumulate into one update. The loss is the global batch's, the mean of the
// micro-batches' losses weighted by their real examples.
func (t *TrainStep) runBatch(gb *data.GlobalBatch, args []any, accumulate bool) (Loss, error) {
	if t.micro <= 1 {
		return t.runner.run(gb, args, accumulate)
	}
	j := t.job
	b := gb.Shards[0].Size() / t.micro
	micros := make([]*data.GlobalBatch, t.micro)
	counts := make([]float64, t.micro)
	for i := range micros {
		var err error
		if micros[i], err = microBatch(gb, i, b); err != nil {
			return Loss{}, err
		}
		counts[i] = float64(micros[i].NumReal())
	}
	if j.acc.grp.Size() > 1 {
		if err := j.acc.grp.AllreduceFloat64(counts, OpSum); err != nil {
			return Loss{}, fmt.Errorf("accelerator: counting the real examples of the micro-batches (%s): %w", batchPlace(gb), err)
		}
	}
	last := -1 // the update runs on the last micro-batch with a real example
	for i, c := range counts {
		if c > 0 {
			last = i
		}
	}
	if last < 0 {
		return t.runner.run(gb, args, accumulate) // no real example at all: as without micro-batches
	}
	var sum, total float64
	for i := 0; i <= last; i++ {
		if counts[i] == 0 {
			continue
		}
		margs, err := j.args(micros[i])
		if err != nil {
			return Loss{}, err
		}
		l, err := t.runner.run(micros[i], margs, accumulate || i < last)
		if err != nil {
			return Loss{}, err
		}
		v, err := l.Value()
		_ = l.t.FinalizeAll()
		if err != nil {
			return Loss{}, fmt.Errorf("accelerator: reading micro-batch %d's loss (%s): %w", i+1, batchPlace(gb), err)
		}
		sum, total = sum+v*counts[i], total+counts[i]
	}
	return Loss{t: tensors.FromScalar(sum / total)}, nil
}

// microBatch is micro-batch i of gb: slots [i*b, (i+1)*b) of every device's batch.
func microBatch(gb *data.GlobalBatch, i, b int) (*data.GlobalBatch, error) {
	m := &data.GlobalBatch{Epoch: gb.Epoch, Index: gb.Index, Shards: make([]*data.Batch, len(gb.Shards))}
	lo, hi := i*b, (i+1)*b
	var err error
	for d, sh := range gb.Shards {
		ms := &data.Batch{Real: rows(sh.Real, lo, hi), Indices: rows(sh.Indices, lo, hi), Positions: rows(sh.Positions, lo, hi)}
		for _, in := range sh.Inputs {
			var t *tensors.Tensor
			if t, err = sliceRows(in, lo, hi); err != nil {
				return nil, err
			}
			ms.Inputs = append(ms.Inputs, t)
		}
		if sh.Labels != nil {
			if ms.Labels, err = sliceRows(sh.Labels, lo, hi); err != nil {
				return nil, err
			}
		}
		if ms.Mask, err = sliceRows(sh.Mask, lo, hi); err != nil {
			return nil, err
		}
		m.Shards[d] = ms
	}
	return m, nil
}

// rows is s[lo:hi], or nil when s does not have those rows (a source that fills no Positions).
func rows[T any](s []T, lo, hi int) []T {
	if len(s) < hi {
		return nil
	}
	return s[lo:hi]
}

// sliceRows copies rows [lo, hi) of axis 0 of a host tensor.
func sliceRows(t *tensors.Tensor, lo, hi int) (*tensors.Tensor, error) {
	sh := t.Shape()
	if sh.Rank() == 0 || sh.Dimensions[0] < hi {
		return nil, fmt.Errorf("accelerator: micro-batch rows [%d, %d) of a tensor of shape %s", lo, hi, sh)
	}
	dims := append([]int(nil), sh.Dimensions...)
	rowBytes := int(sh.ByteSize()) / dims[0]
	dims[0] = hi - lo
	out := tensors.FromShape(shapes.Make(sh.DType, dims...))
	var inner error
	err := t.ConstBytes(func(src []byte) {
		inner = out.MutableBytes(func(dst []byte) { copy(dst, src[lo*rowBytes:hi*rowBytes]) })
	})
	if err == nil {
		err = inner
	}
	if err != nil {
		return nil, fmt.Errorf("accelerator: copying a micro-batch of a %s tensor: %w", sh, err)
	}
	return out, nil
}

// WithAutoBatch keeps the global batch and fits the per-device batch to the device memory
// budget (Config.DeviceMemory): before the first execution, the first TrainStep.Run picks
// the largest per-device batch b that divides the global batch's per-device slots S and
// whose memory plan fits, and from then on runs every global batch as S/b micro-batches of
// b per device whose gradients accumulate, weighted by their real examples, into the one
// update of the global batch (the same update as the whole batch, up to rounding). Batches,
// steps and the learning-rate schedule are unchanged; only the memory and the time of a
// step are. Every process makes the same choice from the same shapes, and they check it.
// Without a budget, or when the whole batch fits, nothing changes. It combines with
// WithGradientAccumulation (micro-batches inside each of its batches); Config.Verify does
// not check the updates of micro-batched steps.
func WithAutoBatch() PrepareOption {
	return func(o *prepareOptions) { o.autoBatch = true }
}
