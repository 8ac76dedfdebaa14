package accelerator

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/goaccel/goaccel/accelerator/internal/strategy"
	"github.com/goaccel/goaccel/data"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// Config.Verify: the distributed update checked against one device. Every process keeps the
// update's batches (its shards, encoded on the host) while the update accumulates; on the
// update's batch they are all-gathered, rank 0 copies the variables and the optimizer state,
// the distributed step runs, and rank 0 recomputes the update from the copy on its device 0
// alone (a second Job over a second Store, whose graphs are compiled without the device mesh)
// and compares. The verdict is all-gathered so that every process returns the same error.
//
// The tolerance is per variable, verifyAbsTol + verifyRelTol x the largest magnitude of the
// one-device value: far above the rounding of a different reduction order (about 1e-7 of the
// values after one update of the equivalence tests' model) and far below what a wrong
// reduction makes (a missing process, a sum instead of a mean, a bucket left out).
const (
	verifyAbsTol = 1e-5
	verifyRelTol = 1e-3
)

// verifier is a TrainStep's state for Config.Verify.
type verifier struct {
	window  []byte // this process's batches of the update being checked, encoded
	ref     *Job   // rank 0: the one-device job the reference update runs in
	refStep *TrainStep
}

// verifyCheck is one update being checked, between the distributed step and the comparison.
type verifyCheck struct {
	v        *verifier // the step's Verify state
	update   int64
	snapshot map[string]*tensors.Tensor // rank 0: the variables before the update, on the host
	windows  [][]byte                   // rank 0: every process's batches of the update
}

// verifyBefore runs before a batch of a checked update: it keeps this process's batch and, on
// the update's batch, gathers every process's and (rank 0) copies the variables. It returns
// nil on the batches before the update.
func (t *TrainStep) verifyBefore(v *verifier, gb *data.GlobalBatch, accumulate bool, update int64) (*verifyCheck, error) {
	j := t.job
	var err error
	if v.window, err = appendBatch(v.window, gb); err != nil {
		return nil, fmt.Errorf("accelerator: Verify: %s: %w", batchPlace(gb), err)
	}
	if accumulate {
		return nil, nil
	}
	windows, err := j.acc.grp.Allgather(v.window)
	v.window = nil
	if err != nil {
		return nil, fmt.Errorf("accelerator: Verify: gathering the global batch (%s): %w", batchPlace(gb), err)
	}
	c := &verifyCheck{v: v, update: update}
	if j.acc.grp.Rank() != 0 {
		return c, nil
	}
	c.windows = windows
	c.snapshot = map[string]*tensors.Tensor{}
	for v := range j.store.IterVariables() {
		if isAccumulator(v.Path()) || !v.HasValue() {
			continue
		}
		val, err := v.Value()
		if err == nil {
			c.snapshot[v.Path()], err = hostCopy(val)
		}
		if err != nil {
			return nil, fmt.Errorf("accelerator: Verify: copying %s: %w", v.Path(), err)
		}
	}
	return c, nil
}

// verifyAfter runs after the distributed update: rank 0 recomputes and compares; every process
// gets rank 0's verdict.
func (t *TrainStep) verifyAfter(c *verifyCheck) error {
	grp := t.job.acc.grp
	var verdict []byte
	if grp.Rank() == 0 {
		if err := t.verifyReference(c); err != nil {
			verdict = []byte(err.Error())
		}
	}
	all, err := grp.Allgather(verdict)
	if err != nil {
		return fmt.Errorf("accelerator: Verify: step %d: sharing the verdict: %w", c.update, err)
	}
	if len(all[0]) > 0 {
		return errors.New(string(all[0]))
	}
	return nil
}

// verifyReference (rank 0) runs the update from the snapshot on one device and compares.
func (t *TrainStep) verifyReference(c *verifyCheck) error {
	j, v := t.job, c.v
	batches, err := mergeWindows(c.windows)
	if err != nil {
		return fmt.Errorf("accelerator: Verify: step %d: decoding the gathered batches: %w", c.update, err)
	}
	if v.ref == nil {
		v.ref = &Job{acc: j.acc, store: model.NewStore(), opt: j.opt, opts: j.opts, strategy: inGraph{}} // no mesh: device 0

		for path, val := range j.store.IterParams() {
			v.ref.store.SetParam(path, val)
		}
		v.refStep = v.ref.bareTrainStep(t.fn)
	}
	ref := v.ref.store
	for path, val := range c.snapshot {
		orig := j.store.GetVariable(path)
		if rv := ref.GetVariable(path); rv != nil {
			err = rv.SetValue(val)
		} else if rv, err = ref.CreateVariable(path, val); err == nil {
			rv.SetTrainable(orig.Trainable)
		}
		if err != nil {
			return fmt.Errorf("accelerator: Verify: step %d: copying %s: %w", c.update, path, err)
		}
	}
	v.ref.batchesRun = 0
	for _, gb := range batches {
		if _, err := v.refStep.run(gb); err != nil {
			return fmt.Errorf("accelerator: Verify: step %d: the one-device update: %w", c.update, err)
		}
	}
	var bad []string
	var first error
	for dv := range j.store.IterVariables() {
		path := dv.Path()
		if isAccumulator(path) || path == model.JoinPath("/", model.RNGStateVariableName) {
			continue
		}
		rv := ref.GetVariable(path)
		if rv == nil {
			continue // created by the distributed graphs only (none today)
		}
		diff, at, got, want, scale, err := compareVariables(dv, rv)
		if err != nil {
			return fmt.Errorf("accelerator: Verify: step %d: comparing %s: %w", c.update, path, err)
		}
		if tol := verifyAbsTol + verifyRelTol*scale; diff > tol || math.IsNaN(diff) {
			if first == nil {
				first = fmt.Errorf("accelerator: Verify: step %d: variable %s after the update differs from the one-device "+
					"update by %.3g (element %d: %.7g distributed, %.7g on one device; tolerance %.3g)",
					c.update, path, diff, at, got, want, tol)
			}
			bad = append(bad, path)
		}
	}
	if first != nil && len(bad) > 1 {
		n, more := len(bad), ""
		if n > 5 {
			bad, more = bad[:5], " ..."
		}
		first = fmt.Errorf("%w; %d variables differ: %s%s", first, n, strings.Join(bad, " "), more)
	}
	return first
}

// compareVariables returns the largest |a - b| over the elements of two variables, where it
// is, both values there, and the largest |b|.
func compareVariables(a, b *model.Variable) (diff float64, at int, got, want, scale float64, err error) {
	av, err := flatValues(a)
	if err != nil {
		return 0, 0, 0, 0, 0, err
	}
	bv, err := flatValues(b)
	if err != nil {
		return 0, 0, 0, 0, 0, err
	}
	if len(av) != len(bv) {
		return 0, 0, 0, 0, 0, fmt.Errorf("%d elements distributed, %d on one device", len(av), len(bv))
	}
	for i := range av {
		scale = math.Max(scale, math.Abs(bv[i]))
		if d := math.Abs(av[i] - bv[i]); d > diff || (math.IsNaN(d) && !math.IsNaN(diff)) {
			diff, at, got, want = d, i, av[i], bv[i]
		}
	}
	return diff, at, got, want, scale, nil
}

func flatValues(v *model.Variable) ([]float64, error) {
	val, err := v.Value()
	if err != nil {
		return nil, err
	}
	var out []float64
	ok := true
	if err := val.ConstFlatData(func(flat any) { out, ok = strategy.AsFloat64s(flat) }); err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("a %s variable cannot be compared", val.DType())
	}
	return out, nil
}

// hostCopy copies t into a new host tensor.
func hostCopy(t *tensors.Tensor) (*tensors.Tensor, error) {
	out := tensors.FromShape(t.Shape())
	var inner error
	err := t.ConstBytes(func(src []byte) {
		inner = out.MutableBytes(func(dst []byte) { copy(dst, src) })
	})
	return out, errors.Join(err, inner)
}

// appendBatch appends gb's shards to buf: per batch, the epoch, the index and the number of
// shards; per shard, its tensors (inputs, labels when present, mask), each as its dtype, rank,
// dimensions and bytes.
func appendBatch(buf []byte, gb *data.GlobalBatch) ([]byte, error) {
	buf = binary.AppendUvarint(buf, uint64(gb.Epoch))
	buf = binary.AppendUvarint(buf, uint64(gb.Index))
	buf = binary.AppendUvarint(buf, uint64(len(gb.Shards)))
	for _, sh := range gb.Shards {
		ts := slices.Clone(sh.Inputs)
		buf = binary.AppendUvarint(buf, uint64(len(ts)))
		if sh.Labels != nil {
			ts = append(ts, sh.Labels)
			buf = append(buf, 1)
		} else {
			buf = append(buf, 0)
		}
		ts = append(ts, sh.Mask)
		for _, t := range ts {
			buf = binary.AppendUvarint(buf, uint64(t.DType()))
			buf = binary.AppendUvarint(buf, uint64(t.Shape().Rank()))
			for _, d := range t.Shape().Dimensions {
				buf = binary.AppendUvarint(buf, uint64(d))
			}
			if err := t.ConstBytes(func(b []byte) { buf = append(buf, b...) }); err != nil {
				return nil, err
			}
		}
	}
	return buf, nil
}

// decoder reads what appendBatch wrote.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) uint() int {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errors.New("truncated batch")
		d.b = nil
		return 0
	}
	d.b = d.b[n:]
	return int(v)
}

func (d *decoder) tensor() *tensors.Tensor {
	dt := dtypes.DType(d.uint())
	dims := make([]int, d.uint())
	for i := range dims {
		dims[i] = d.uint()
	}
	if d.err != nil {
		return nil
	}
	t := tensors.FromShape(shapes.Make(dt, dims...))
	n := int(t.Shape().ByteSize())
	if n > len(d.b) {
		d.err = errors.New("truncated batch")
		return nil
	}
	if err := t.MutableBytes(func(b []byte) { copy(b, d.b[:n]) }); err != nil {
		d.err = err
	}
	d.b = d.b[n:]
	return t
}

// mergeWindows decodes every process's batches of an update and joins, batch by batch, the
// shards of all processes and devices into one (rank after rank, device after device): the
// global batches as one device sees them.
func mergeWindows(windows [][]byte) ([]*data.GlobalBatch, error) {
	var perRank [][]*data.GlobalBatch
	for _, w := range windows {
		d := &decoder{b: w}
		var batches []*data.GlobalBatch
		for len(d.b) > 0 && d.err == nil {
			gb := &data.GlobalBatch{Epoch: d.uint(), Index: d.uint()}
			for range d.uint() {
				sh := &data.Batch{Inputs: make([]*tensors.Tensor, d.uint())}
				hasLabels := len(d.b) > 0 && d.b[0] == 1
				if len(d.b) > 0 {
					d.b = d.b[1:]
				}
				for i := range sh.Inputs {
					sh.Inputs[i] = d.tensor()
				}
				if hasLabels {
					sh.Labels = d.tensor()
				}
				sh.Mask = d.tensor()
				gb.Shards = append(gb.Shards, sh)
			}
			batches = append(batches, gb)
		}
		if d.err != nil {
			return nil, d.err
		}
		perRank = append(perRank, batches)
	}
	out := make([]*data.GlobalBatch, len(perRank[0]))
	for b := range out {
		var shards []*data.Batch
		for r, batches := range perRank {
			if len(batches) != len(out) {
				return nil, fmt.Errorf("rank %d kept %d batches for the update, rank 0 %d", r, len(batches), len(out))
			}
			shards = append(shards, batches[b].Shards...)
		}
		merged, err := concatShards(shards)
		if err != nil {
			return nil, err
		}
		out[b] = &data.GlobalBatch{Epoch: perRank[0][b].Epoch, Index: perRank[0][b].Index, Shards: []*data.Batch{merged}}
	}
	return out, nil
}

// concatShards joins shards along the batch axis.
func concatShards(shards []*data.Batch) (*data.Batch, error) {
	cat := func(get func(*data.Batch) *tensors.Tensor) (*tensors.Tensor, error) {
		first := get(shards[0])
		rows := 0
		for _, sh := range shards {
			rows += get(sh).Shape().Dimensions[0]
		}
		dims := slices.Clone(first.Shape().Dimensions)
		dims[0] = rows
		out := tensors.FromShape(shapes.Make(first.DType(), dims...))
		var inner error
		err := out.MutableBytes(func(dst []byte) {
			off := 0
			for _, sh := range shards {
				inner = errors.Join(inner, get(sh).ConstBytes(func(src []byte) { off += copy(dst[off:], src) }))
			}
		})
		return out, errors.Join(err, inner)
	}
	m := &data.Batch{}
	var err error
	for i := range shards[0].Inputs {
		var t *tensors.Tensor
		if t, err = cat(func(b *data.Batch) *tensors.Tensor { return b.Inputs[i] }); err != nil {
			return nil, err
		}
		m.Inputs = append(m.Inputs, t)
	}
	if shards[0].Labels != nil {
		if m.Labels, err = cat(func(b *data.Batch) *tensors.Tensor { return b.Labels }); err != nil {
			return nil, err
		}
	}
	if m.Mask, err = cat(func(b *data.Batch) *tensors.Tensor { return b.Mask }); err != nil {
		return nil, err
	}
	real, ok := m.Mask.Value().([]bool)
	if !ok {
		return nil, fmt.Errorf("the mask is %s, want bool", m.Mask.DType())
	}
	m.Real = real
	m.Indices = make([]int, len(real))
	m.Positions = make([]int, len(real))
	return m, nil
}

// verified wraps next with Config.Verify's check of the first update and every verify-th; the
// wrapper holds the step's Verify state.
func (t *TrainStep) verified(next batchStage) batchStage {
	every := int64(t.job.acc.verify)
	v := &verifier{} // the step's Verify state
	return func(gb *data.GlobalBatch, args []any, accumulate bool) (Loss, error) {
		j := t.job
		update := j.batchesRun/int64(j.opts.accumulate) + 1
		if update != 1 && update%every != 0 {
			return next(gb, args, accumulate)
		}
		check, err := t.verifyBefore(v, gb, accumulate, update)
		if err != nil {
			return Loss{}, err
		}
		loss, err := next(gb, args, accumulate)
		if err == nil && check != nil {
			err = t.verifyAfter(check)
		}
		return loss, err
	}
}
