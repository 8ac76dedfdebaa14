package accelerator

import (
	"github.com/goaccel/goaccel/accelerator/internal/strategy"
	"reflect"
	"testing"
	"time"

	"github.com/goaccel/goaccel/data"
	"github.com/goaccel/goaccel/internal/testutil"
	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// tokenBuckets are the sequence lengths the token-level evaluation pads its batches to.
var tokenBuckets = []int{16, 32}

// tokenResult is a token-level evaluation as the tests compare it.
type tokenResult struct {
	Indices      []int
	Dims, IDDims []int
	Logits, IDs  []float64
	Labels       []float64
	LabelDims    []int
	Lengths      [][][]int
	NumProcesses int
}

// tokenEval evaluates per-token logits [B, L, 3] and token ids [B, L] over 8 texts, one per
// batch, each batch padded to the bucket of its text (16 tokens for 5-token texts, 32 for the
// 20-token texts 0, 3 and 6), with EvalStep.Pad -1. Over 2 processes, global batch t holds text
// 2t on rank 0 and 2t+1 on rank 1: the ranks' outputs differ in length in the same batch, and
// the batches differ from each other.
func tokenEval(a *Accelerator) (tokenResult, error) {
	var res tokenResult
	texts := make(data.Slice[[]int32], 8)
	for i := range texts {
		n := 5
		if i%3 == 0 {
			n = 20
		}
		for t := range n {
			texts[i] = append(texts[i], int32(100*i+t+1))
		}
	}
	collate := func(b [][]int32) ([]*tensors.Tensor, *tensors.Tensor, error) {
		longest := 0
		for _, ids := range b {
			longest = max(longest, len(ids))
		}
		l := data.BucketLength(longest, tokenBuckets)
		var ids, labels []int32
		for _, t := range b {
			ids = append(ids, data.PadTo(t, l, 0)...)
		}
		for _, id := range ids {
			labels = append(labels, id%3)
		}
		return []*tensors.Tensor{tensors.FromFlatDataAndDimensions(ids, len(b), l)},
			tensors.FromFlatDataAndDimensions(labels, len(b), l), nil
	}
	loader, err := data.NewLoader[[]int32](texts, data.LoaderConfig[[]int32]{BatchSize: 1, Collate: collate})
	if err != nil {
		return res, err
	}
	job, err := a.Prepare(model.NewStore(), optimizer.Adam().Done(), nil)
	if err != nil {
		return res, err
	}
	eval := job.EvalStep(func(s *model.Scope, b GraphBatch) []*Node {
		ids := b.Inputs[0]
		x := ExpandAxes(ConvertDType(ids, dtypes.Float32), -1)
		logits := Mul(x, Const(ids.Graph(), [][][]float32{{{1, 2, 3}}}))
		return []*Node{logits, ids}
	})
	eval.Pad = -1
	g, err := job.Evaluate(loader, eval)
	if err != nil {
		return res, err
	}
	res.Indices, res.Lengths, res.NumProcesses = g.Indices, g.Lengths, a.NumProcesses()
	res.Dims, res.IDDims = g.Outputs[0].Shape().Dimensions, g.Outputs[1].Shape().Dimensions
	res.LabelDims = g.Labels.Shape().Dimensions
	if res.Logits, err = g.Floats(0); err != nil {
		return res, err
	}
	if res.IDs, err = g.Floats(1); err != nil {
		return res, err
	}
	err = g.Labels.ConstFlatData(func(flat any) { res.Labels, _ = strategy.AsFloat64s(flat) })
	return res, err
}

// TestTokenEvaluationOverProcesses: a token-level evaluation with buckets 16 and 32 gives the
// same outputs, padded with EvalStep.Pad, and the same per-row lengths over 2 processes
// (MPICH) as in 1 process.
func TestTokenEvaluationOverProcesses(t *testing.T) {
	t.Parallel()
	ref, err := tokenEval(newXLA(t, 1))
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{8, 32, 3}; !reflect.DeepEqual(ref.Dims, want) {
		t.Fatalf("1 process: logits %v, want %v", ref.Dims, want)
	}
	for i, l := range ref.Lengths[0] {
		want := []int{16, 3}
		if i%3 == 0 {
			want = []int{32, 3}
		}
		if !reflect.DeepEqual(l, want) {
			t.Errorf("1 process: row %d has real shape %v, want %v", i, l, want)
		}
		for tok := 16; tok < 32 && want[0] == 16; tok++ {
			if v := ref.Logits[(i*32+tok)*3]; v != -1 {
				t.Errorf("1 process: row %d, token %d = %g, want the pad -1", i, tok, v)
				break
			}
		}
	}
	testutil.NeedMPI(t)
	dir := t.TempDir()
	start := time.Now()
	err, out := launchWorkers(t, "tokens", 2, 2, workerOut+"="+dir, "GOACCEL_TIMEOUT=3m")
	if err != nil {
		t.Fatalf("launch: %v\n%s", err, out)
	}
	t.Logf("2 processes ran in %s", time.Since(start).Round(time.Millisecond))
	for r := range 2 {
		var got tokenResult
		readRankResult(t, dir, r, out, &got)
		if got.NumProcesses != 2 {
			t.Fatalf("rank %d ran in %d processes, want 2", r, got.NumProcesses)
		}
		got.NumProcesses = ref.NumProcesses
		if !reflect.DeepEqual(got, ref) {
			t.Errorf("rank %d differs from 1 process:\n got %+v\nwant %+v", r, got, ref)
		}
	}
}
