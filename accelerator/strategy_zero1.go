package accelerator

import (
	"errors"
	"fmt"
	"github.com/goaccel/goaccel/accelerator/internal/collective"
	"github.com/goaccel/goaccel/accelerator/internal/strategy"
	"math"
	"slices"
	"strings"

	"github.com/goaccel/goaccel/data"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/model/initializer"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// zero1 is hostReduced with the optimizer state sharded over the processes (ZeRO stage 1,
// Config.Sharding over several processes). The gradients graph, the accumulation and the
// loss and weight bookkeeping are hostReduced's (the same strategy.Host runs them); only
// the update's reduction differs (zero1Sync, a strategy.Reduction):
//
//  1. each variable's weighted gradient sum, flattened and padded, is cut into P contiguous
//     slices, slice r for rank r; one reduce-scatter sums them, leaving rank r the sum of its
//     slices (and, in every block, the {w x loss, w} of the global batch);
//  2. with clipping or fp16's loss scaling, one all-reduce of a scalar (the sum of squares of
//     every rank's slices, divided by the loss scale under fp16) gives the global norm and
//     whether every slice is finite, the same on every rank (a non-finite update is skipped
//     on every rank: zero1_lossscale.go);
//  3. the apply graph runs the job's optimizer on a Store of this rank's slices (same paths
//     as the model's variables, so per-variable choices by path still hold), whose optimizer
//     state is therefore 1/P of the whole, with the learning-rate schedule at the same global
//     step and the clipping factor of the global norm;
//  4. one all-gather of the updated slices rebuilds every variable whole, identical on every
//     process, in the job's Store.
//
// The bytes crossing processes are those of hostReduced's all-reduce (a reduce-scatter and an
// all-gather are its two halves). The job's Store keeps the whole weights (on every device, for
// the gradients graph), the counters and the learning rate; the sharded optimizer state stays
// in the slices' Store, and the Accelerator's CompleteStore gives it whole to a checkpoint.
type zero1 struct{ hostReduced }

func (z zero1) newStep(t *TrainStep) strategy.Runner {
	return strategy.NewHost(t.job.env(), runnerStep{t}, func(h *strategy.Host) strategy.Reduction {
		return &zero1Sync{h: h, t: t, grp: z.grp}
	})
}

// planSharding: the optimizer state over the processes, whatever the stage.
func (z zero1) planSharding(*Job) (string, int) { return shardZero1.String(), z.grp.Size() }

// zero1Sync is a TrainStep's part of zero1: it hands the update's gradients to the job's
// zero1State and runs the update's collectives and apply graph.
type zero1Sync struct {
	h   *strategy.Host
	t   *TrainStep
	grp collective.Group
	st  *zero1State
}

// begin starts an update's gradients: the batch's {w x loss, w}, then place for each variable.
func (z *zero1Sync) Begin(lossSum64, weight64 float64) error {
	lossSum, weight := float32(lossSum64), float32(weight64)
	if z.st == nil {
		st, err := z.t.job.zero1For(z.h.Vars(), z.h.LossDType(), z.grp)
		if err != nil {
			return err
		}
		z.st = st
		z.t.stats.SyncBytes = int64(4 * len(st.send))
	}
	stride := z.st.block + 2
	for r := range z.st.size {
		z.st.send[r*stride+z.st.block], z.st.send[r*stride+z.st.block+1] = lossSum, weight
	}
	return nil
}

// place puts variable i's weighted gradient sum (flat) into the reduce-scatter's blocks.
func (z *zero1Sync) Place(i int, flat []float32) {
	st, l := z.st, z.st.layout[i]
	stride := st.block + 2
	for r := range st.size {
		lo, hi := min(r*l.c, l.n), min((r+1)*l.c, l.n)
		copy(st.send[r*stride+l.off:r*stride+l.off+l.c], flat[lo:hi]) // the padding stays 0
	}
}

// reduce is the update's reduce-scatter: it returns the global batch's w x loss and weight.
func (z *zero1Sync) Reduce(gb *data.GlobalBatch, _ float64) (lossSum, weight float64, err error) {
	st := z.st
	err = z.t.timed().Do("reduce-scatter gradients", int64(4*len(st.send)), len(st.vars), func() error {
		return st.grp.ReduceScatterSum(st.send, st.recv)
	})
	if err != nil {
		return 0, 0, fmt.Errorf("accelerator: reduce-scattering the gradients (%s): %w", batchPlace(gb), err)
	}
	return float64(st.recv[st.block]), float64(st.recv[st.block+1]), nil
}

// apply updates this rank's slices with their mean gradient (the reduced sums times inv) and
// all-gathers the updated variables into the job's Store. Under fp16 the slices are also
// divided by the loss scale, and an update whose gradients are not all finite, on any rank, is
// skipped on every rank (zero1_lossscale.go).
func (z *zero1Sync) Apply(gb *data.GlobalBatch, total float64) error {
	st, t := z.st, z.t
	inv := float32(1 / total)
	scaler, err := st.lossScaler()
	if err != nil {
		return err
	}
	if scaler != nil {
		inv /= scaler.Scale // a power of 2: the same rounding as dividing after
	}
	grads := st.recv[:st.block]
	for k := range grads {
		grads[k] *= inv
	}
	var norm float32
	finite := true
	if t.job.opts.clipNorm > 0 || scaler != nil {
		var sq float64
		for _, x := range grads {
			sq += float64(x) * float64(x)
		}
		buf := []float64{sq}
		if err := t.timed().Do("", 8, 0, func() error { return st.grp.AllreduceFloat64(buf, collective.Sum) }); err != nil {
			return fmt.Errorf("accelerator: all-reducing the gradient norm (%s): %w", batchPlace(gb), err)
		}
		finite = !math.IsInf(buf[0], 0) && !math.IsNaN(buf[0]) // the same on every rank
		norm = float32(math.Sqrt(buf[0]))
		if t.job.opts.clipNorm > 0 && finite {
			if err := st.putMain(gradNormPath, tensors.FromScalar(norm)); err != nil {
				return err
			}
		}
	}
	if !finite { // fp16: skipped on every rank
		return st.putLossScaler(scaler.Next(false))
	}
	updated, err := st.update(grads, norm)
	if err != nil {
		return fmt.Errorf("accelerator: applying the gradients to this rank's slices (%s): %w", batchPlace(gb), err)
	}
	err = t.timed().Do("all-gather weights", int64(4*len(st.all)), len(st.vars), func() error { return st.grp.AllgatherFloat32(updated, st.all) })
	if err != nil {
		return fmt.Errorf("accelerator: all-gathering the updated weights (%s): %w", batchPlace(gb), err)
	}
	if err := st.unshard(); err != nil {
		return err
	}
	if scaler != nil {
		return st.putLossScaler(scaler.Next(true))
	}
	return nil
}

// sliceLayout is where one variable's slices lie: n elements, c per rank (the last rank's
// slice padded with zeros), at offset off of every rank's block.
type sliceLayout struct{ n, c, off int }

// zero1State is a job's sharded optimizer state over the processes, shared by its TrainSteps:
// the Store of this rank's slices (sliceStore) and the apply graph that updates them.
type zero1State struct {
	job        *Job
	grp        collective.Group
	size, rank int
	lossDType  dtypes.DType
	vars       []*model.Variable // the job Store's trainable variables, in its order
	layout     []sliceLayout
	block      int          // elements of one rank's slices, all variables together
	sliceStore *model.Store // this rank's slices (the variables' paths, shape [c]) and their optimizer state
	slices     []*model.Variable
	apply      *model.Exec
	// state are the shard's optimizer-state variables sliced like a variable (stateOf: its
	// index in vars), sorted by path; mirrored the others (step counters, learning rate),
	// copied whole into the job's Store after each update.
	state    []*model.Variable
	stateOf  map[*model.Variable]int
	mirrored []*model.Variable
	// put is the value this state last set in the job's Store, by path: a different value
	// there was set by someone else (a checkpoint's Load) and is taken in before the update.
	put  map[string]*tensors.Tensor
	send []float32 // size blocks of block+2: rank r's slices of every variable, then {w x loss, w}
	recv []float32 // block+2: this rank's reduced slices, then the global {w x loss, w}
	mine []float32 // block: this rank's updated slices
	all  []float32 // size x block: every rank's updated slices
}

// zero1For returns the job's sharded state for the trainable variables vars, making it on the
// first update.
func (j *Job) zero1For(vars []*model.Variable, lossDType dtypes.DType, grp collective.Group) (*zero1State, error) {
	if st := j.acc.shardedState[j.store]; st != nil {
		if !slices.Equal(st.vars, vars) {
			return nil, errors.New("accelerator: with Config.Sharding over several processes every TrainStep of a job " +
				"must train the same variables (its optimizer state is sharded once)")
		}
		return st, nil
	}
	st := &zero1State{job: j, grp: grp, size: grp.Size(), rank: grp.Rank(), lossDType: lossDType, vars: vars,
		sliceStore: model.NewStore(), put: map[string]*tensors.Tensor{}, stateOf: map[*model.Variable]int{}}
	for path, val := range j.store.IterParams() { // the optimizer's hyperparameters, if set there
		st.sliceStore.SetParam(path, val)
	}
	used := map[int]bool{}
	for _, v := range vars {
		if v.DType() != dtypes.Float32 {
			return nil, fmt.Errorf("accelerator: variable %s is %s; Config.Sharding over several processes needs float32 variables",
				v.Path(), v.DType())
		}
		// Every variable gets a slice length of its own, so that the optimizer state of each
		// (shape [c]) names its variable.
		n := v.Shape().Size()
		c := (n + st.size - 1) / st.size
		for used[c] {
			c++
		}
		used[c] = true
		st.layout = append(st.layout, sliceLayout{n: n, c: c, off: st.block})
		st.block += c
		st.slices = append(st.slices, st.sliceStore.VariableWithShape(v.Path(), shapes.Make(dtypes.Float32, c), initializer.Zero))
	}
	st.send = make([]float32, st.size*(st.block+2))
	st.recv = make([]float32, st.block+2)
	st.mine = make([]float32, st.block)
	st.all = make([]float32, st.size*st.block)
	return st, nil
}

// update runs the apply graph on this rank's mean gradient slices (grads, laid out as a
// block) and returns the updated slices, laid out the same way.
func (st *zero1State) update(grads []float32, norm float32) ([]float32, error) {
	clip := st.job.opts.clipNorm > 0
	name := "apply"
	if st.apply == nil {
		name = "compile+apply"
		span := st.job.acc.tl.Start(name, "execute")
		err := st.compile(clip)
		span.End()
		if err != nil {
			return nil, err
		}
	}
	if err := st.pull(); err != nil {
		return nil, err
	}
	// The weights' slices are set from the job's Store for the update only: between updates
	// the whole weights there are the only copy.
	for i, v := range st.slices {
		w, err := st.vars[i].Value()
		if err == nil {
			err = st.setSlice(v, i, w)
		}
		if err != nil {
			return nil, fmt.Errorf("accelerator: slicing %s: %w", v.Path(), err)
		}
	}
	args := make([]any, 0, len(st.slices)+1)
	for _, l := range st.layout {
		args = append(args, tensors.FromFlatDataAndDimensions(grads[l.off:l.off+l.c], l.c))
	}
	if clip {
		args = append(args, tensors.FromScalar(norm))
	}
	span := st.job.acc.tl.Start(name, "execute")
	outs, err := st.apply.Exec(args...)
	span.End()
	if err != nil {
		return nil, err
	}
	finalizeAll(outs) // the global step: the slices are read from their variables
	for i, l := range st.layout {
		dst := st.mine[l.off : l.off+l.c]
		t, err := st.slices[i].Value()
		if err == nil {
			err = tensors.ConstFlatData(t, func(flat []float32) { copy(dst, flat) })
		}
		if err == nil {
			err = st.slices[i].Reset()
		}
		if err != nil {
			return nil, fmt.Errorf("accelerator: reading the updated slice of %s: %w", st.vars[i].Path(), err)
		}
	}
	for _, m := range st.mirrored {
		t, err := m.Value()
		if err == nil {
			t, err = t.LocalClone()
		}
		if err == nil {
			err = st.putMain(m.Path(), t)
		}
		if err != nil {
			return nil, fmt.Errorf("accelerator: copying %s to the job's Store: %w", m.Path(), err)
		}
	}
	return st.mine, nil
}

// compile builds the apply graph, which creates the optimizer's variables in the shard
// Store, and sorts them into sliced state and mirrored values; then it registers the state
// with the Accelerator for checkpoints.
func (st *zero1State) compile(clip bool) error {
	e, err := model.NewExec(st.job.acc.backend, st.sliceStore, st.applyGraphFn)
	if err != nil {
		return fmt.Errorf("accelerator: creating the sharded apply executor: %w", err)
	}
	e.WithName(strategy.Apply.String())
	in := make([]shapes.Shape, 0, len(st.slices)+1)
	for _, v := range st.slices {
		in = append(in, v.Shape())
	}
	if clip {
		in = append(in, shapes.Make(dtypes.Float32))
	}
	if _, err := e.Compile(in...); err != nil {
		return fmt.Errorf("accelerator: compiling the sharded apply graph: %w", err)
	}
	byLen := map[int]int{}
	for i, l := range st.layout {
		byLen[l.c] = i
	}
	isSlice := map[*model.Variable]bool{}
	for _, v := range st.slices {
		isSlice[v] = true
	}
	for v := range st.sliceStore.IterVariables() {
		if isSlice[v] {
			continue
		}
		if i, ok := byLen[v.Shape().Size()]; ok && v.Shape().Rank() == 1 {
			if v.DType() != dtypes.Float32 {
				return fmt.Errorf("accelerator: the optimizer's %s is %s; Config.Sharding over several processes needs float32 state",
					v.Path(), v.DType())
			}
			st.state = append(st.state, v)
			st.stateOf[v] = i
		} else {
			st.mirrored = append(st.mirrored, v)
		}
	}
	slices.SortFunc(st.state, func(a, b *model.Variable) int { return strings.Compare(a.Path(), b.Path()) })
	st.apply = e
	if st.job.acc.shardedState == nil {
		st.job.acc.shardedState = map[*model.Store]*zero1State{}
	}
	st.job.acc.shardedState[st.job.store] = st
	return nil
}

// applyGraphFn is the apply graph over the slices' Store: the mean gradient slices (inputs, one
// per variable, then the global norm with clipping) applied as applyGradients does, with the
// clipping factor of the global norm. It returns the global step (the updated slices are the
// variables' new values).
func (st *zero1State) applyGraphFn(s *model.Scope, inputs []*Node) []*Node {
	j := st.job
	g := inputs[0].Graph()
	for _, v := range st.slices {
		_ = v.NodeValue(g) // the optimizer updates the variables the graph uses, in Store order
	}
	grads := inputs[:len(st.slices)]
	if j.opts.clipNorm > 0 {
		grads = clipToNorm(g, grads, inputs[len(st.slices)], j.opts.clipNorm)
	}
	root := s.Store().RootScope()
	j.updateWithGradients(root, g, grads, st.lossDType)
	return []*Node{optimizer.GetGlobalStepVar(root).NodeValue(g)}
}

// pull takes into the slices' Store what was set in the job's Store since this state last wrote
// there (a checkpoint loaded): a whole optimizer-state tensor is sliced and removed from the
// job's Store, a mirrored value copied. (The weights are sliced at every update.)
func (st *zero1State) pull() error {
	slot := map[string]func(*tensors.Tensor) error{}
	for _, v := range st.state {
		slot[v.Path()] = func(t *tensors.Tensor) error { return st.setSlice(v, st.stateOf[v], t) }
	}
	for _, v := range st.mirrored {
		slot[v.Path()] = func(t *tensors.Tensor) error {
			c, err := t.LocalClone()
			if err == nil {
				err = v.SetValue(c)
			}
			return err
		}
	}
	var moved []string
	for v := range st.job.store.IterVariables() {
		set := slot[v.Path()]
		if set == nil || !v.HasValue() {
			continue
		}
		t, err := v.Value()
		if err != nil {
			return fmt.Errorf("accelerator: reading %s: %w", v.Path(), err)
		}
		if t == st.put[v.Path()] {
			continue
		}
		if err := set(t); err != nil {
			return fmt.Errorf("accelerator: taking %s into this rank's slices: %w", v.Path(), err)
		}
		st.put[v.Path()] = t
		if st.isState(v.Path()) {
			moved = append(moved, v.Path())
		}
	}
	for _, path := range moved { // whole optimizer state lives only in slices
		delete(st.put, path)
		if err := st.job.store.DeleteVariable(path); err != nil {
			return fmt.Errorf("accelerator: removing the whole %s from the job's Store: %w", path, err)
		}
	}
	return nil
}

func (st *zero1State) isState(path string) bool {
	for _, v := range st.state {
		if v.Path() == path {
			return true
		}
	}
	return false
}

// setSlice sets dst (in the slices' Store) to this rank's slice of whole, a value of variable
// i's shape.
func (st *zero1State) setSlice(dst *model.Variable, i int, whole *tensors.Tensor) error {
	l := st.layout[i]
	if whole.DType() != dtypes.Float32 || whole.Shape().Size() != l.n {
		return fmt.Errorf("it is %s, want %d float32 values (the shape of %s)", whole.Shape(), l.n, st.vars[i].Path())
	}
	part := make([]float32, l.c)
	lo, hi := min(st.rank*l.c, l.n), min((st.rank+1)*l.c, l.n)
	if err := whole.ConstFlatData(func(flat any) { copy(part, flat.([]float32)[lo:hi]) }); err != nil {
		return err
	}
	return dst.SetValue(tensors.FromFlatDataAndDimensions(part, l.c))
}

// unshard rebuilds every variable whole from the all-gathered slices and sets it in the job's
// Store: the same values on every process.
func (st *zero1State) unshard() error {
	for i, v := range st.vars {
		t := tensors.FromShape(v.Shape())
		st.whole(t, i, st.all, st.block, st.layout[i].off)
		if err := st.putMain(v.Path(), t); err != nil {
			return err
		}
	}
	return nil
}

// whole writes into t (variable i's shape) the slices of all ranks, found at offset off of
// each rank's block of length block in all.
func (st *zero1State) whole(t *tensors.Tensor, i int, all []float32, block, off int) {
	l := st.layout[i]
	t.MustMutableFlatData(func(flat any) {
		dst := flat.([]float32)
		for r := range st.size {
			lo, hi := min(r*l.c, l.n), min((r+1)*l.c, l.n)
			copy(dst[lo:hi], all[r*block+off:])
		}
	})
}

// putMain sets path in the job's Store to t (creating a non-trainable variable if needed) and
// remembers that this state set it.
func (st *zero1State) putMain(path string, t *tensors.Tensor) error {
	v := st.job.store.GetVariable(path)
	var err error
	if v == nil {
		if v, err = st.job.store.CreateVariable(path, t); err == nil {
			v.SetTrainable(false)
		}
	} else {
		err = v.SetValue(t)
	}
	if err != nil {
		return fmt.Errorf("accelerator: setting %s in the job's Store: %w", path, err)
	}
	st.put[path] = t
	return nil
}
