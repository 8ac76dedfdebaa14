package strategy

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/goaccel/goaccel/accelerator/internal/collective"
	"github.com/goaccel/goaccel/accelerator/internal/memplan"
	"github.com/goaccel/goaccel/data"
	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/model/initializer"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// Zero1Reduction is the Reduction of a step whose job keeps its optimizer state sharded over
// the processes (ZeRO stage 1): the update's gradients go to the job's Zero1 (made or found
// by state for the step's trainable variables and loss dtype), one reduce-scatter sums them,
// this rank updates its slices, and one all-gather rebuilds the weights whole:
//
//  1. each variable's weighted gradient sum, flattened and padded, is cut into P contiguous
//     slices, slice r for rank r; one reduce-scatter sums them, leaving rank r the sum of its
//     slices (and, in every block, the {w x loss, w} of the global batch);
//  2. with clipping or a guard, one all-reduce of a scalar (the sum of squares of every
//     rank's slices, divided by the guard's scale) gives the global norm and whether every
//     slice is finite, the same on every rank (a non-finite update is skipped on every rank
//     under a guard);
//  3. the apply graph runs the job's optimizer on a Store of this rank's slices (same paths
//     as the model's variables, so per-variable choices by path still hold), whose optimizer
//     state is therefore 1/P of the whole, with the learning-rate schedule at the same global
//     step and the clipping factor of the global norm;
//  4. one all-gather of the updated slices rebuilds every variable whole, identical on every
//     process, in the job's Store.
func Zero1Reduction(state func(vars []*model.Variable, lossDType dtypes.DType) (*Zero1, error)) func(h *Host) Reduction {
	return func(h *Host) Reduction { return &zero1Reduction{h: h, state: state} }
}

// zero1Reduction is a step's part of Zero1Reduction.
type zero1Reduction struct {
	h     *Host
	state func(vars []*model.Variable, lossDType dtypes.DType) (*Zero1, error)
	st    *Zero1
}

// Begin starts an update's gradients: the batch's {w x loss, w}, then place for each variable.
func (z *zero1Reduction) Begin(lossSum64, weight64 float64) error {
	lossSum, weight := float32(lossSum64), float32(weight64)
	if z.st == nil {
		st, err := z.state(z.h.Vars(), z.h.LossDType())
		if err != nil {
			return err
		}
		z.st = st
		z.h.step.SetSyncBytes(int64(4 * len(st.send)))
	}
	stride := z.st.block + 2
	for r := range z.st.size {
		z.st.send[r*stride+z.st.block], z.st.send[r*stride+z.st.block+1] = lossSum, weight
	}
	return nil
}

// Place puts variable i's weighted gradient sum (flat) into the reduce-scatter's blocks.
func (z *zero1Reduction) Place(i int, flat []float32) {
	st, l := z.st, z.st.layout[i]
	stride := st.block + 2
	for r := range st.size {
		lo, hi := min(r*l.c, l.n), min((r+1)*l.c, l.n)
		copy(st.send[r*stride+l.off:r*stride+l.off+l.c], flat[lo:hi]) // the padding stays 0
	}
}

// Reduce is the update's reduce-scatter: it returns the global batch's w x loss and weight.
func (z *zero1Reduction) Reduce(gb *data.GlobalBatch, _ float64) (lossSum, weight float64, err error) {
	st := z.st
	err = z.h.step.Timed().Do("reduce-scatter gradients", int64(4*len(st.send)), len(st.vars), func() error {
		return st.grp.ReduceScatterSum(st.send, st.recv)
	})
	if err != nil {
		return 0, 0, errorAt("reduce-scattering the gradients", gb, err)
	}
	return float64(st.recv[st.block]), float64(st.recv[st.block+1]), nil
}

// Apply updates this rank's slices with their mean gradient (the reduced sums times inv) and
// all-gathers the updated variables into the job's Store. Under a guard the slices are also
// divided by its scale, and an update whose gradients are not all finite, on any rank, is
// skipped on every rank.
func (z *zero1Reduction) Apply(gb *data.GlobalBatch, total float64) error {
	st, timed := z.st, z.h.step.Timed()
	inv := float32(1 / total)
	var scale float32
	var done func(finite bool) error
	if st.guard != nil {
		var err error
		if scale, done, err = st.guard(st); err != nil {
			return err
		}
		inv /= scale // a power of 2: the same rounding as dividing after
	}
	clip := st.upd.ClipNorm > 0
	grads, err := st.meanInputs(inv)
	if err != nil {
		return errorAt("writing the mean gradients into the apply graph's inputs", gb, err)
	}
	var norm float32
	finite := true
	if clip || done != nil {
		var sq float64
		for _, g := range grads { // the slices in layout order: the block's order
			for _, x := range g {
				sq += float64(x) * float64(x)
			}
		}
		buf := []float64{sq}
		if err := timed.Do("", 8, 0, func() error { return st.grp.AllreduceFloat64(buf, collective.Sum) }); err != nil {
			return errorAt("all-reducing the gradient norm", gb, err)
		}
		finite = !math.IsInf(buf[0], 0) && !math.IsNaN(buf[0]) // the same on every rank
		norm = float32(math.Sqrt(buf[0]))
		if clip && finite {
			if err := st.PutMain(NormPath, tensors.FromScalar(norm)); err != nil {
				return err
			}
		}
	}
	if !finite { // under a guard: skipped on every rank
		return done(false)
	}
	updated, err := st.update(norm)
	if err != nil {
		return errorAt("applying the gradients to this rank's slices", gb, err)
	}
	err = timed.Do("all-gather weights", int64(4*len(st.all)), len(st.vars), func() error { return st.grp.AllgatherFloat32(updated, st.all) })
	if err != nil {
		return errorAt("all-gathering the updated weights", gb, err)
	}
	if err := st.unshard(); err != nil {
		return err
	}
	if done != nil {
		return done(true)
	}
	return nil
}

// sliceLayout is where one variable's slices lie: n elements, c per rank (the last rank's
// slice padded with zeros), at offset off of every rank's block.
type sliceLayout struct{ n, c, off int }

// Zero1 is a job's optimizer state sharded over the processes, shared by its training steps:
// the Store of this rank's slices (sliceStore) and the apply graph that updates them. The job's
// Store keeps the whole weights (on every device, for the gradients graph), the counters and
// the learning rate; the optimizer state stays in the slices' Store, and Complete gives it
// whole to a checkpoint.
type Zero1 struct {
	env        *Env
	upd        *Update
	guard      Guard
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
	send []float32         // size blocks of block+2: rank r's slices of every variable, then {w x loss, w}
	recv []float32         // block+2: this rank's reduced slices, then the global {w x loss, w}
	gin  []*tensors.Tensor // the apply graph's gradient inputs, one per variable: the mean of recv's slices
	mine []float32         // block: this rank's updated slices
	pad  []float32         // a slice running past its variable's end, zero-padded (setSlice)
	all  []float32         // size x block: every rank's updated slices
}

// Guard is the host half of a guard that may skip an update (nil: none): given the state, it
// returns the scale the update's gradients were multiplied by, to divide them by, and done,
// to call with whether the update's gradients were all finite (the update made or skipped).
type Guard func(st *Zero1) (scale float32, done func(finite bool) error, err error)

// NewZero1 returns the sharded state of the trainable variables vars of env's Store, whose
// update (clipping, schedule, optimizer) is update, with the host guard guard (nil: none).
func NewZero1(env *Env, update *Update, guard Guard, vars []*model.Variable, lossDType dtypes.DType) (*Zero1, error) {
	grp := env.Group
	st := &Zero1{env: env, upd: update, guard: guard, grp: grp, size: grp.Size(), rank: grp.Rank(), lossDType: lossDType, vars: vars,
		sliceStore: model.NewStore(), put: map[string]*tensors.Tensor{}, stateOf: map[*model.Variable]int{}}
	for path, val := range env.Store.IterParams() { // the optimizer's hyperparameters, if set there
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

// meanInputs writes this rank's mean gradient slices, the reduced sums (recv) times inv, into
// the apply graph's inputs (gin, one tensor per variable, made on the first update and
// rewritten in place, as mean's are: see mean.Begin) and returns their flat data.
func (st *Zero1) meanInputs(inv float32) ([][]float32, error) {
	if st.gin == nil {
		for _, l := range st.layout {
			st.gin = append(st.gin, tensors.FromShape(shapes.Make(dtypes.Float32, l.c)))
		}
	}
	flats := make([][]float32, len(st.layout))
	for i, l := range st.layout {
		err := tensors.MutableFlatData(st.gin[i], func(flat []float32) {
			collective.ScaleTo(flat, st.recv[l.off:l.off+l.c], inv)
			flats[i] = flat
		})
		if err != nil {
			return nil, err
		}
	}
	return flats, nil
}

// update runs the apply graph on this rank's mean gradient slices (gin, written by
// meanInputs) and returns the updated slices, laid out as a block.
func (st *Zero1) update(norm float32) ([]float32, error) {
	clip := st.upd.ClipNorm > 0
	name := "apply"
	if st.apply == nil {
		name = "compile+apply"
		span := st.env.TL.Start(name, "execute")
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
	for _, t := range st.gin {
		args = append(args, t)
	}
	if clip {
		args = append(args, tensors.FromScalar(norm))
	}
	span := st.env.TL.Start(name, "execute")
	outs, err := st.apply.Exec(args...)
	span.End()
	if err != nil {
		return nil, err
	}
	for _, t := range st.gin { // a device's own copy is not held until the next update (mean.Apply)
		if err := t.InvalidateOnDevice(); err != nil {
			return nil, err
		}
	}
	FinalizeAll(outs) // the global step: the slices are read from their variables
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
			err = st.PutMain(m.Path(), t)
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
func (st *Zero1) compile(clip bool) error {
	e, err := model.NewExec(st.env.Backend, st.sliceStore, st.applyGraphFn)
	if err != nil {
		return fmt.Errorf("accelerator: creating the sharded apply executor: %w", err)
	}
	e.WithName(Apply.String())
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
	return nil
}

// applyGraphFn is the apply graph over the slices' Store: the mean gradient slices (inputs, one
// per variable, then the global norm with clipping) applied as the job's update (strategy.Update) does, with the
// clipping factor of the global norm. It returns the global step (the updated slices are the
// variables' new values).
func (st *Zero1) applyGraphFn(s *model.Scope, inputs []*Node) []*Node {
	g := inputs[0].Graph()
	for _, v := range st.slices {
		_ = v.NodeValue(g) // the optimizer updates the variables the graph uses, in Store order
	}
	grads := inputs[:len(st.slices)]
	if st.upd.ClipNorm > 0 {
		grads = ClipToNorm(g, grads, inputs[len(st.slices)], st.upd.ClipNorm)
	}
	root := s.Store().RootScope()
	st.upd.WithGradients(root, g, grads, st.lossDType)
	return []*Node{optimizer.GetGlobalStepVar(root).NodeValue(g)}
}

// pull takes into the slices' Store what was set in the job's Store since this state last wrote
// there (a checkpoint loaded): a whole optimizer-state tensor is sliced and removed from the
// job's Store, a mirrored value copied. (The weights are sliced at every update.)
func (st *Zero1) pull() error {
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
	for v := range st.env.Store.IterVariables() {
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
		if err := st.env.Store.DeleteVariable(path); err != nil {
			return fmt.Errorf("accelerator: removing the whole %s from the job's Store: %w", path, err)
		}
	}
	return nil
}

func (st *Zero1) isState(path string) bool {
	for _, v := range st.state {
		if v.Path() == path {
			return true
		}
	}
	return false
}

// setSlice sets dst (in the slices' Store) to this rank's slice of whole, a value of variable
// i's shape: a buffer on the apply graph's device made straight from whole's data (through
// pad, zero-padded, where the slice runs past the variable's end).
//
// It cannot be one tensor kept from update to update and rewritten in place, as gin is: the
// apply Exec donates the buffer of every slice variable (the optimizer updates them all, and
// their state) and then finalizes its tensor (model.Exec resets the variable), so every update
// needs a new value. What this saves is the host copies: a host tensor set here was copied
// into a backend buffer by Exec's donation, with this same BufferFromFlatData call; now that
// buffer is made here from whole's data, and Exec donates it as it is. The buffer is thus the
// same kind as before on every backend: the backend's own, never a shared one (shared buffers,
// the CPU plugin's, are host memory and cannot be donated), on a GPU's device. The call
// copies during the call (PJRT's immutable-only-during-call; the pure-Go backend copies too),
// so whole and pad are free again on return.
func (st *Zero1) setSlice(dst *model.Variable, i int, whole *tensors.Tensor) error {
	l := st.layout[i]
	if whole.DType() != dtypes.Float32 || whole.Shape().Size() != l.n {
		return fmt.Errorf("it is %s, want %d float32 values (the shape of %s)", whole.Shape(), l.n, st.vars[i].Path())
	}
	dev := compute.DeviceNum(0) // the device the apply Exec donates its variables' buffers on
	if d := st.apply.DeviceAssignment(); len(d) > 0 {
		dev = d[0]
	}
	lo, hi := min(st.rank*l.c, l.n), min((st.rank+1)*l.c, l.n)
	var buf compute.Buffer
	var err error
	if cerr := whole.ConstFlatData(func(flat any) {
		src := flat.([]float32)[lo:hi]
		if len(src) < l.c {
			if len(st.pad) < l.c {
				st.pad = make([]float32, l.c)
			}
			copy(st.pad, src)
			clear(st.pad[len(src):l.c])
			src = st.pad[:l.c]
		}
		buf, err = st.env.Backend.BufferFromFlatData(dev, src, shapes.Make(dtypes.Float32, l.c))
	}); cerr != nil {
		return cerr
	}
	if err != nil {
		return err
	}
	t, err := tensors.FromBuffer(buf)
	if err != nil {
		_ = buf.Finalize()
		return err
	}
	return dst.SetValue(t)
}

// unshard rebuilds every variable whole from the all-gathered slices and sets it in the job's
// Store: the same values on every process.
func (st *Zero1) unshard() error {
	for i, v := range st.vars {
		t := tensors.FromShape(v.Shape())
		st.whole(t, i, st.all, st.block, st.layout[i].off)
		if err := st.PutMain(v.Path(), t); err != nil {
			return err
		}
	}
	return nil
}

// whole writes into t (variable i's shape) the slices of all ranks, found at offset off of
// each rank's block of length block in all.
func (st *Zero1) whole(t *tensors.Tensor, i int, all []float32, block, off int) {
	l := st.layout[i]
	t.MustMutableFlatData(func(flat any) {
		dst := flat.([]float32)
		for r := range st.size {
			lo, hi := min(r*l.c, l.n), min((r+1)*l.c, l.n)
			copy(dst[lo:hi], all[r*block+off:])
		}
	})
}

// PutMain sets path in the job's Store to t (creating a non-trainable variable if needed) and
// remembers that this state set it.
func (st *Zero1) PutMain(path string, t *tensors.Tensor) error {
	v := st.env.Store.GetVariable(path)
	var err error
	if v == nil {
		if v, err = st.env.Store.CreateVariable(path, t); err == nil {
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

// AddResident adds to out the on-device buffers of the state a job sharded over processes
// keeps outside its Store, on
// the device each lives on: this rank's slices of the optimizer state and the values
// mirrored from the job's Store (step counters, learning rate) as OptimizerState, and the
// weights' slices, which hold a value during an update only, as Weights.
func (st *Zero1) AddResident(out []memplan.Resident, backend compute.Backend) error {
	if st.apply == nil { // before the first update (or plan) the slices hold nothing
		return nil
	}
	weight := map[string]bool{}
	for _, v := range st.slices {
		weight[v.Path()] = true
	}
	for v := range st.sliceStore.IterVariables() {
		held, err := memplan.HeldTensors(v)
		if err != nil {
			return err
		}
		k := memplan.KindOptimizer
		if weight[v.Path()] {
			k = memplan.KindWeights
		}
		for _, t := range held {
			if err := memplan.AddOnDevice(out, backend, t, k); err != nil {
				return fmt.Errorf("accelerator: the sharded optimizer state's %s: %w", v.Path(), err)
			}
		}
	}
	return nil
}

// PlanState gives the memory plan, before the first update, the optimizer state that zero1
// keeps outside the job's Store: it makes this job's Zero1 and compiles its apply graph
// ahead (which creates the optimizer's variables of the slices; the first update then reuses
// both) and returns that state as the plan counts it: whole, split over the processes.
func (z *zero1Reduction) PlanState() ([]memplan.Var, error) {
	st, err := z.state(z.h.Vars(), z.h.LossDType())
	if err != nil {
		return nil, err
	}
	if st.apply == nil {
		if err := st.compile(st.upd.ClipNorm > 0); err != nil {
			return nil, err
		}
	}
	out := make([]memplan.Var, 0, len(st.state))
	for _, v := range st.state {
		n := v.Shape().Size() * st.size
		out = append(out, memplan.Var{Bytes: int64(n) * int64(v.DType().Size()), Dims: []int{n}})
	}
	return out, nil
}

// Complete gives a checkpoint the whole optimizer state: every process calls it (a
// collective), the slices are all-gathered, and on the main process the whole tensors are
// added to store under their usual paths; release removes them again after the write. Before
// the first update (no apply graph compiled, so no optimizer state yet) it adds nothing.
func (st *Zero1) Complete(store *model.Store) (release func(), err error) {
	if st.apply == nil {
		return func() {}, nil
	}
	if err := st.pull(); err != nil { // a Load since the last update
		return nil, err
	}
	var n int
	offs := make([]int, len(st.state))
	for k, v := range st.state {
		offs[k] = n
		n += st.layout[st.stateOf[v]].c
	}
	mine, all := make([]float32, n), make([]float32, st.size*n)
	for k, v := range st.state {
		t, err := v.Value()
		if err == nil {
			err = t.ConstFlatData(func(flat any) { copy(mine[offs[k]:], flat.([]float32)) })
		}
		if err != nil {
			return nil, fmt.Errorf("accelerator: reading this rank's slice of %s: %w", v.Path(), err)
		}
	}
	if err := st.grp.AllgatherFloat32(mine, all); err != nil {
		return nil, fmt.Errorf("accelerator: gathering the sharded optimizer state for a checkpoint: %w", err)
	}
	if st.rank != 0 {
		return func() {}, nil
	}
	var added []string
	release = func() {
		for _, path := range added {
			_ = store.DeleteVariable(path)
			delete(st.put, path)
		}
	}
	for k, v := range st.state {
		i := st.stateOf[v]
		t := tensors.FromShape(shapes.Make(dtypes.Float32, st.vars[i].Shape().Dimensions...))
		st.whole(t, i, all, n, offs[k])
		nv, err := store.CreateVariable(v.Path(), t)
		if err != nil {
			release()
			return nil, fmt.Errorf("accelerator: adding the whole %s for a checkpoint: %w", v.Path(), err)
		}
		nv.SetTrainable(false)
		added = append(added, v.Path())
		st.put[v.Path()] = t // not to be pulled back in
	}
	return release, nil
}

// Slices is the Store of this rank's slices of the weights and their optimizer state.
func (st *Zero1) Slices() *model.Store { return st.sliceStore }

// Vars are the trainable variables whose optimizer state is sharded, in the Store's order.
func (st *Zero1) Vars() []*model.Variable { return st.vars }
