package accelerator

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/goaccel/goaccel/data"
	"github.com/goaccel/goaccel/internal/envvar"
	"github.com/goaccel/goaccel/internal/testutil"
	"github.com/goaccel/goaccel/models/bert"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// bertRun trains bert.TinyConfig (vocabulary 64, no dropout) for 30 Adam updates on 2 x 8
// sequences of 16 tokens per global batch (4 batches in turn; the label is the first token's
// parity) and returns the losses and the final trainable variables.
func bertRun(a *Accelerator) (toyResult, error) {
	cfg := bert.TinyConfig(64)
	cfg.HiddenDropoutProb, cfg.AttentionProbsDropoutProb = 0, 0
	clf, err := bert.NewClassifier(cfg, nil)
	if err != nil {
		return toyResult{}, err
	}
	job, err := a.Prepare(clf, optimizer.Adam().LearningRate(1e-3).Done(), nil)
	if err != nil {
		return toyResult{}, err
	}
	train := job.TrainStep(func(s *model.Scope, b GraphBatch) *Node {
		l := CrossEntropy(clf.Logits(s, b.Inputs), b.Labels, b.Mask)
		a.Backward(s, l)
		return l
	})
	const per, seq = 8, 16
	batch := func(i int) *data.GlobalBatch {
		rng := rand.New(rand.NewPCG(uint64(a.ProcessIndex()), uint64(i%4)))
		ids, mask, types := make([]int32, per*seq), make([]int32, per*seq), make([]int32, per*seq)
		labels := make([]int32, per)
		for k := range ids {
			ids[k], mask[k] = int32(rng.IntN(64)), 1
		}
		for k := range labels {
			labels[k] = ids[k*seq] % 2
		}
		real, idx := make([]bool, per), make([]int, per)
		for k := range real {
			real[k], idx[k] = true, k
		}
		return &data.GlobalBatch{Index: i, Shards: []*data.Batch{{Inputs: []*tensors.Tensor{
			tensors.FromFlatDataAndDimensions(ids, per, seq), tensors.FromFlatDataAndDimensions(mask, per, seq),
			tensors.FromFlatDataAndDimensions(types, per, seq)},
			Labels: tensors.FromFlatDataAndDimensions(labels, per), Mask: tensors.FromValue(real), Real: real, Indices: idx, Positions: idx}}}
	}
	var res toyResult
	for i := range 30 {
		l, err := train.Run(batch(i))
		if err != nil {
			return toyResult{}, err
		}
		v, err := l.Value()
		if err != nil {
			return toyResult{}, err
		}
		res.losses = append(res.losses, v)
	}
	res.params = map[string][]float32{}
	for v := range clf.Store().IterVariables() {
		if v.Trainable {
			val, err := v.Value()
			if err != nil {
				return toyResult{}, err
			}
			res.params[v.Path()] = tensors.MustCopyFlatData[float32](val)
		}
	}
	return res, nil
}

// TestCompressedTinyBERT: the tiny BERT over 2 loopback processes, 30 Adam updates under bf16
// and fp16 compression: losses within 1e-3 of the exact run's, every rank's variables
// bit-identical.
func TestCompressedTinyBERT(t *testing.T) {
	testutil.Long(t, "the tiny BERT over 2 processes, 30 updates, 3 codecs (TestCompressedAllreduce checks both codecs on the toy model in tier 1)")
	run := func(codec string) []toyResult {
		t.Setenv(envvar.GradientCompression.Name, codec)
		return runProcesses(t, 2, 1, bertRun)
	}
	exact := run("no")
	for _, codec := range []string{"bf16", "fp16"} {
		ranks := run(codec)
		worstLoss, worstParam := 0.0, 0.0
		for r, got := range ranks {
			for i := range got.losses {
				worstLoss = math.Max(worstLoss, math.Abs(got.losses[i]-exact[0].losses[i]))
			}
			for name, p := range got.params {
				worstParam = math.Max(worstParam, maxDiff(p, exact[0].params[name]))
				if d := maxDiff(p, ranks[0].params[name]); d != 0 {
					t.Errorf("%s: rank %d's %s differs from rank 0's by %g", codec, r, name, d)
				}
			}
		}
		if worstLoss > compressTol {
			t.Errorf("%s: max |loss diff| %g from the exact run, want at most %g", codec, worstLoss, compressTol)
		}
		t.Logf("%s: tiny BERT, 30 updates: loss %.4f -> %.4f (exact %.4f); max |loss diff| %.2g, max |param diff| %.2g from the exact run",
			codec, ranks[0].losses[0], ranks[0].losses[29], exact[0].losses[29], worstLoss, worstParam)
	}
}
