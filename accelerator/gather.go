package accelerator

import (
	"bytes"
	"encoding/gob"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"sort"

	"github.com/goaccel/goaccel/accelerator/internal/collective"
	"github.com/goaccel/goaccel/accelerator/internal/strategy"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/dtypes/bfloat16"
	"github.com/gomlx/compute/dtypes/float16"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/tensors"
)

// wireTensor is a host tensor as it travels between processes.
type wireTensor struct {
	DType int
	Dims  []int
	Data  []byte
}

// wireGathered is a Gathered as it travels between processes.
type wireGathered struct {
	Outputs            []wireTensor
	Lengths            [][][]int
	Labels             *wireTensor
	LabelLengths       [][]int
	Pad                float64
	Real               []bool
	Indices, Positions []int
}

// gatherRanks returns the rows of every process's local results, rank after rank, through
// grp (hostReduced's gather). Every process gets the same result: all of them receive every
// rank's rows, so they all pad them to the same shape, the largest over all ranks.
func gatherRanks(grp collective.Group, local *Gathered) (*Gathered, error) {
	w := wireGathered{Lengths: local.Lengths, LabelLengths: local.labelLengths, Pad: local.Pad,
		Real: local.Real, Indices: local.Indices, Positions: local.Positions}
	for _, t := range local.Outputs {
		wt, err := toWire(t)
		if err != nil {
			return nil, err
		}
		w.Outputs = append(w.Outputs, wt)
	}
	if local.Labels != nil {
		wt, err := toWire(local.Labels)
		if err != nil {
			return nil, err
		}
		w.Labels = &wt
	}
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(&w); err != nil {
		return nil, fmt.Errorf("accelerator: encoding evaluation results: %w", err)
	}
	all, err := grp.Allgather(buf.Bytes())
	if err != nil {
		return nil, fmt.Errorf("accelerator: gathering evaluation results from the processes: %w", err)
	}
	parts := make([]*Gathered, len(all))
	for rank, b := range all {
		var w wireGathered
		if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&w); err != nil {
			return nil, fmt.Errorf("accelerator: decoding the evaluation results of rank %d: %w", rank, err)
		}
		g := &Gathered{Lengths: w.Lengths, labelLengths: w.LabelLengths, Pad: w.Pad,
			Real: w.Real, Indices: w.Indices, Positions: w.Positions}
		for _, wt := range w.Outputs {
			g.Outputs = append(g.Outputs, fromWire(wt))
		}
		if w.Labels != nil {
			g.Labels = fromWire(*w.Labels)
		}
		if len(g.Outputs) != len(local.Outputs) || (g.Labels == nil) != (local.Labels == nil) {
			return nil, fmt.Errorf("accelerator: rank %d returned %d evaluation outputs (labels: %t), this process %d (labels: %t)",
				rank, len(g.Outputs), g.Labels != nil, len(local.Outputs), local.Labels != nil)
		}
		if !samePad(g.Pad, local.Pad) {
			return nil, fmt.Errorf("accelerator: rank %d pads evaluation outputs with %g (EvalStep.Pad), this process with %g",
				rank, g.Pad, local.Pad)
		}
		parts[rank] = g
	}
	return concatGathered(parts, "rank") // its errors name the ranks
}

// concatGathered puts the rows of parts one after the other (what names a part in errors).
func concatGathered(parts []*Gathered, what string) (*Gathered, error) {
	var refs []rowRef
	out := &Gathered{Pad: parts[0].Pad}
	for p, g := range parts {
		for r := range g.Len() {
			refs = append(refs, rowRef{part: p, row: r})
		}
		out.Real = append(out.Real, g.Real...)
		out.Indices = append(out.Indices, g.Indices...)
		out.Positions = append(out.Positions, g.Positions...)
	}
	if err := pickRows(parts, refs, out, what); err != nil {
		return nil, err
	}
	return out, nil
}

// samePad reports whether two pad values are the same value (NaN is NaN).
func samePad(a, b float64) bool { return a == b || (math.IsNaN(a) && math.IsNaN(b)) }

func toWire(t *tensors.Tensor) (wireTensor, error) {
	w := wireTensor{DType: int(t.DType()), Dims: t.Shape().Dimensions}
	err := t.ConstBytes(func(b []byte) { w.Data = append([]byte(nil), b...) })
	return w, err
}

func fromWire(w wireTensor) *tensors.Tensor {
	t := tensors.FromShape(shapes.Make(dtypes.DType(w.DType), w.Dims...))
	_ = t.MutableBytes(func(b []byte) { copy(b, w.Data) })
	return t
}

// rowRef names row `row` of part `part`.
type rowRef struct{ part, row int }

// pickRows sets out's outputs (with their Lengths) and labels to the referenced rows of parts,
// padded with out.Pad where the rows' shapes differ; what names a part in errors ("batch",
// "rank").
func pickRows(parts []*Gathered, refs []rowRef, out *Gathered, what string) error {
	n := len(parts[0].Outputs)
	for p, g := range parts {
		if len(g.Outputs) != n || (g.Labels == nil) != (parts[0].Labels == nil) {
			return fmt.Errorf("accelerator: %s %d has %d outputs (labels: %t), %s 0 has %d (labels: %t)",
				what, p, len(g.Outputs), g.Labels != nil, what, n, parts[0].Labels != nil)
		}
	}
	ts := make([]*tensors.Tensor, len(parts))
	lens := make([][][]int, len(parts))
	for k := range n {
		for p, g := range parts {
			ts[p], lens[p] = g.Outputs[k], nil
			if k < len(g.Lengths) {
				lens[p] = g.Lengths[k]
			}
		}
		t, rowLens, err := gatherRows(ts, lens, refs, out.Pad, what)
		if err != nil {
			return fmt.Errorf("accelerator: gathering output %d: %w", k, err)
		}
		out.Outputs = append(out.Outputs, t)
		out.Lengths = append(out.Lengths, rowLens)
	}
	if parts[0].Labels != nil {
		for p, g := range parts {
			ts[p], lens[p] = g.Labels, g.labelLengths
		}
		t, rowLens, err := gatherRows(ts, lens, refs, out.Pad, what)
		if err != nil {
			return fmt.Errorf("accelerator: gathering the labels: %w", err)
		}
		out.Labels, out.labelLengths = t, rowLens
	}
	return nil
}

// gatherRows builds a tensor whose rows are the referenced rows of parts (tensors of one dtype
// and rank, the rows on axis 0), copying bytes on the host. Rows of different shapes are
// padded with pad to the largest size along each axis among the referenced rows. lengths[p],
// when not nil, holds the real shape of each row of part p (part p was itself padded);
// otherwise a row's real shape is its part's. It returns the real shape of each row gathered.
func gatherRows(parts []*tensors.Tensor, lengths [][][]int, refs []rowRef, pad float64, what string) (*tensors.Tensor, [][]int, error) {
	if len(parts) == 0 {
		return nil, nil, errors.New("no parts to gather")
	}
	s0 := parts[0].Shape()
	if s0.Rank() == 0 {
		return nil, nil, fmt.Errorf("cannot gather rows of a scalar")
	}
	dtype := s0.DType
	partDims := make([][]int, len(parts)) // each part's row shape
	partLens := make([][][]int, len(parts))
	for p, t := range parts {
		s := t.Shape()
		if s.DType != dtype || s.Rank() != s0.Rank() {
			return nil, nil, fmt.Errorf("%s %d has shape %s, %s 0 has %s", what, p, s, what, s0)
		}
		partDims[p] = slices.Clone(s.Dimensions[1:]) // handed out in Lengths: not the shape's own
		if p < len(lengths) && lengths[p] != nil {
			if len(lengths[p]) != s.Dimensions[0] {
				return nil, nil, fmt.Errorf("%s %d has %d rows but %d row lengths", what, p, s.Dimensions[0], len(lengths[p]))
			}
			partLens[p] = lengths[p]
		}
	}
	rowLens := make([][]int, len(refs))
	outDims := slices.Clone(partDims[0])
	for i, r := range refs {
		if r.part < 0 || r.part >= len(parts) || r.row < 0 || r.row >= parts[r.part].Shape().Dimensions[0] {
			return nil, nil, fmt.Errorf("row %d of %s %d is out of range", r.row, what, r.part)
		}
		l := partDims[r.part]
		if partLens[r.part] != nil {
			l = partLens[r.part][r.row]
			if len(l) != len(outDims) {
				return nil, nil, fmt.Errorf("row %d of %s %d has real shape %v, not of rank %d", r.row, what, r.part, l, len(outDims))
			}
		}
		rowLens[i] = l
		for a, d := range l {
			if i == 0 || d > outDims[a] {
				outDims[a] = d
			}
		}
	}
	out := tensors.FromShape(shapes.Make(dtype, append([]int{len(refs)}, outDims...)...))
	padded := false // some row is copied into a shape other than its part's
	for i, r := range refs {
		padded = padded || !slices.Equal(partDims[r.part], outDims) || !slices.Equal(rowLens[i], outDims)
	}
	es := dtype.Size()
	var padValue []byte
	if padded {
		if dtype.IsPacked() || es <= 0 {
			return nil, nil, fmt.Errorf("rows of shapes %v and %v differ, and %s values cannot be padded", rowLens[0], outDims, dtype)
		}
		var err error
		if padValue, err = padBytes(dtype, pad); err != nil {
			return nil, nil, err
		}
	}
	raw := make([][]byte, len(parts))
	for p, t := range parts {
		if err := t.ConstBytes(func(b []byte) { raw[p] = slices.Clone(b) }); err != nil {
			return nil, nil, err
		}
	}
	err := out.MutableBytes(func(dst []byte) {
		if !padded { // every row has the output's row shape: copy rows whole
			rowBytes := 0
			if len(refs) > 0 {
				rowBytes = len(dst) / len(refs)
			}
			for i, r := range refs {
				copy(dst[i*rowBytes:(i+1)*rowBytes], raw[r.part][r.row*rowBytes:])
			}
			return
		}
		outRow := es * prod(outDims)
		for i := 0; i < len(dst); i += es {
			copy(dst[i:i+es], padValue)
		}
		for i, r := range refs {
			srcRow := es * prod(partDims[r.part])
			copyBlock(dst[i*outRow:], outDims, raw[r.part][r.row*srcRow:], partDims[r.part], rowLens[i], es)
		}
	})
	if err != nil {
		return nil, nil, err
	}
	return out, rowLens, nil
}

// copyBlock copies the leading block of shape block from src (row-major, shape srcDims) to dst
// (row-major, shape dstDims); elements are es bytes.
func copyBlock(dst []byte, dstDims []int, src []byte, srcDims []int, block []int, es int) {
	switch len(block) {
	case 0:
		copy(dst[:es], src[:es])
	case 1:
		copy(dst[:block[0]*es], src[:block[0]*es])
	default:
		dStride, sStride := es*prod(dstDims[1:]), es*prod(srcDims[1:])
		for j := range block[0] {
			copyBlock(dst[j*dStride:], dstDims[1:], src[j*sStride:], srcDims[1:], block[1:], es)
		}
	}
}

func prod(dims []int) int {
	n := 1
	for _, d := range dims {
		n *= d
	}
	return n
}

// padBytes is v as one value of dtype, in the host's byte order; v must be a value of dtype
// (an integer for integer dtypes, 0 or 1 for bool).
func padBytes(dtype dtypes.DType, v float64) ([]byte, error) {
	t := tensors.FromShape(shapes.Make(dtype))
	var err error
	bad := func() { err = fmt.Errorf("the pad value %g (EvalStep.Pad) is not a value of dtype %s", v, dtype) }
	whole := v == math.Trunc(v) && math.Abs(v) < 1<<63 // an integer that int64 holds
	mErr := t.MutableFlatData(func(flat any) {
		switch f := flat.(type) {
		case []float32:
			f[0] = float32(v)
		case []float64:
			f[0] = v
		case []bfloat16.BFloat16:
			f[0] = bfloat16.FromFloat64(v)
		case []float16.Float16:
			f[0] = float16.FromFloat64(v)
		case []bool:
			if v != 0 && v != 1 {
				bad()
			}
			f[0] = v == 1
		default:
			x := reflect.ValueOf(flat).Index(0)
			switch {
			case x.CanInt() && whole && !x.OverflowInt(int64(v)):
				x.SetInt(int64(v))
			case x.CanUint() && whole && v >= 0 && !x.OverflowUint(uint64(v)):
				x.SetUint(uint64(v))
			default:
				bad()
			}
		}
	})
	if mErr != nil {
		return nil, mErr
	}
	if err != nil {
		return nil, err
	}
	var b []byte
	if err := t.ConstBytes(func(raw []byte) { b = slices.Clone(raw) }); err != nil {
		return nil, err
	}
	return b, nil
}

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

// IntLabels returns the labels as ints, flattened ([N] for classes, N*K for [N, K] flags).
func (g *Gathered) IntLabels() ([]int, error) {
	vals, err := g.labelValues("IntLabels")
	if err != nil {
		return nil, err
	}
	out := make([]int, len(vals))
	for i, v := range vals {
		out[i] = int(v)
	}
	return out, nil
}

// FloatLabels returns the labels as float64 values, flattened (regression targets [N, 1],
// multi-label flags [N, K]).
func (g *Gathered) FloatLabels() ([]float64, error) { return g.labelValues("FloatLabels") }

// labelValues returns the labels flattened as float64 values; op names the caller.
func (g *Gathered) labelValues(op string) ([]float64, error) {
	if g.Labels == nil {
		return nil, fmt.Errorf("accelerator: Gathered.%s: the gathered results have no labels", op)
	}
	var out []float64
	var ok bool
	if err := g.Labels.ConstFlatData(func(flat any) { out, ok = strategy.AsFloat64s(flat) }); err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("accelerator: Gathered.%s: labels of dtype %s are not numbers", op, g.Labels.DType())
	}
	return out, nil
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
