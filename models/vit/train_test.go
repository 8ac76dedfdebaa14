package vit

import (
	"math"
	"testing"

	"github.com/goaccel/goaccel/accelerator"
	"github.com/goaccel/goaccel/data"
	"github.com/goaccel/goaccel/internal/testutil"
	"github.com/goaccel/goaccel/models/internal/familytest"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// example is one labelled image of the training record.
type example struct {
	pixels []float32
	dims   []int
	label  int32
}

// examples are the record's batches, in order, as one list.
func (r *trainRun) examples(t testing.TB) data.Slice[example] {
	var out data.Slice[example]
	for _, b := range r.Batches {
		all := testutil.DecodeF32(t, "pixels", b.PixelsB64, b.PixelsShape)
		per := len(all) / len(b.Labels)
		for i, l := range b.Labels {
			out = append(out, example{all[i*per : (i+1)*per], b.PixelsShape[1:], l})
		}
	}
	return out
}

// collate stacks images of one size into [pixel_values] and labels.
func collate(batch []example) ([]*tensors.Tensor, *tensors.Tensor, error) {
	var flat []float32
	labels := make([]int32, len(batch))
	for i, e := range batch {
		flat, labels[i] = append(flat, e.pixels...), e.label
	}
	dims := append([]int{len(batch)}, batch[0].dims...)
	return []*tensors.Tensor{tensors.FromFlatDataAndDimensions(flat, dims...)}, tensors.FromValue(labels), nil
}

// trainLosses runs steps SGD steps of the record (its batches in turn, its learning rate) on
// clf the way users train: accelerator.New with devices XLA CPU devices (the batch split
// among them: the loader's batch is per device) and mixed precision
// precision, Prepare, TrainStep, CrossEntropy, Backward. It returns each step's loss.
func trainLosses(t testing.TB, r *trainRun, clf *Classifier, devices, steps int, precision string) []float64 {
	t.Helper()
	acc, err := accelerator.New(accelerator.Config{Backend: testutil.CPUPlugin(t), Devices: devices, Quiet: true, Seed: 1, MixedPrecision: precision})
	if err != nil {
		t.Fatal(err)
	}
	defer acc.Close()
	loader, err := data.NewLoader(r.examples(t), data.LoaderConfig[example]{BatchSize: len(r.Batches[0].Labels) / devices, Collate: collate})
	if err != nil {
		t.Fatal(err)
	}
	sgd := optimizer.StochasticGradientDescent().WithLearningRate(r.LearningRate).WithDecay(false).Done()
	job, err := acc.Prepare(clf, sgd, loader)
	if err != nil {
		t.Fatal(err)
	}
	step := job.TrainStep(func(s *model.Scope, b accelerator.GraphBatch) *graph.Node {
		l := accelerator.CrossEntropy(clf.Logits(s, b.Inputs), b.Labels, b.Mask)
		acc.Backward(s, l)
		return l
	})
	var losses []float64
	for len(losses) < steps {
		for gb, err := range job.Batches() {
			if err != nil {
				t.Fatal(err)
			}
			l, err := step.Run(gb)
			if err != nil {
				t.Fatal(err)
			}
			v, err := l.Value()
			if err != nil {
				t.Fatal(err)
			}
			if losses = append(losses, v); len(losses) == steps {
				break
			}
		}
	}
	return losses
}

// maxLossDiff is the largest |a[i] - b[i]|.
func maxLossDiff(a, b []float64) float64 {
	worst := 0.0
	for i := range a {
		worst = max(worst, math.Abs(a[i]-b[i]))
	}
	return worst
}

// TestTrainingParity: 20 SGD steps (lr 0.1, dropout 0) from tiny/ (ViT) and dinov2_swiglu/
// give PyTorch's losses within 1e-4 on one XLA CPU device, the same losses within 1e-5 on two
// devices (the global batch split in two), and the same again with gradient checkpointing.
func TestTrainingParity(t *testing.T) {
	f := loadFixtures(t)
	for _, name := range []string{"tiny", "dinov2_swiglu"} {
		t.Run(name, func(t *testing.T) {
			r := f.Models[name].Train
			steps := len(r.Losses)
			if testing.Short() {
				steps = 6
			}
			load := func() *Classifier { return loadTiny(t, name) }
			one := trainLosses(t, r, load(), 1, steps, "no")
			d := maxLossDiff(one, r.Losses[:steps])
			t.Logf("%d SGD steps: losses %.4f -> %.4f, max abs diff from PyTorch (transformers %s) %.3g", steps, one[0], one[steps-1], f.Transformers, d)
			if d > 1e-4 {
				t.Errorf("losses %v, PyTorch's %v (max diff %.3g)", one, r.Losses[:steps], d)
			}
			two := trainLosses(t, r, load(), 2, steps, "no")
			d2 := maxLossDiff(one, two)
			ckpt := load()
			ckpt.Config.GradientCheckpointing = true
			remat := trainLosses(t, r, ckpt, 1, steps, "no")
			d3 := maxLossDiff(one, remat)
			t.Logf("2 devices: max abs diff from 1 device %.3g; gradient checkpointing: %.3g", d2, d3)
			if d2 > 1e-5 || d3 > 1e-5 {
				t.Errorf("2 devices %v, gradient checkpointing %v; 1 device %v", two, remat, one)
			}
		})
	}
}

// TestMixedPrecision: under bf16 the logits move (the products ran in bfloat16) but stay near
// float32's, and the SGD steps' losses stay near PyTorch's float32 ones.
func TestMixedPrecision(t *testing.T) {
	f := loadFixtures(t)
	backend := familytest.XLA(t)
	r := f.Models["tiny"].Runs["native"]
	clf := loadTiny(t, "tiny")
	_, want := hiddenAndLogits(t, backend, clf, r.pixels(t))
	half := loadTiny(t, "tiny")
	if err := half.SetComputeDType(dtypes.BFloat16); err != nil {
		t.Fatal(err)
	}
	_, got := hiddenAndLogits(t, backend, half, r.pixels(t))
	d := maxAbsDiff(t, "bf16 logits", got, want)
	scale := 0.0
	for _, v := range want {
		scale = max(scale, math.Abs(float64(v)))
	}
	t.Logf("bf16 logits: max abs diff from float32 %.3g (of %.3g)", d, scale)
	if d == 0 || d > 0.05*scale {
		t.Errorf("bf16 logits differ from float32's by %.3g (largest logit %.3g): want > 0 and within 5%%", d, scale)
	}
	tr := f.Models["tiny"].Train
	steps := 6
	losses := trainLosses(t, tr, loadTiny(t, "tiny"), 1, steps, "bf16")
	worst := 0.0
	for i := range steps {
		worst = max(worst, math.Abs(losses[i]-tr.Losses[i])/max(math.Abs(tr.Losses[i]), 0.1))
	}
	t.Logf("%d SGD steps in bf16: relative diff from PyTorch's float32 losses %.3g", steps, worst)
	if worst > 0.05 {
		t.Errorf("bf16 losses %v, PyTorch's float32 %v", losses, tr.Losses[:steps])
	}
}

// TestDropoutTrains: with dropout in every place (ViT: hidden 0.1, attention 0.1; DINOv2:
// stochastic depth 0.5 alone) the training graph's logits differ from inference's, and
// inference's are the fixture's.
func TestDropoutTrains(t *testing.T) {
	f := loadFixtures(t)
	backend := familytest.XLA(t)
	for _, name := range []string{"tiny", "dinov2"} {
		r := f.Models[name].Runs["native"]
		clf := loadTiny(t, name)
		if name == "dinov2" {
			clf.Config.DropPathRate = 0.5
		} else {
			clf.Config.HiddenDropoutProb, clf.Config.AttentionProbsDropoutProb = 0.1, 0.1
		}
		run := func(train bool) []float32 {
			exec, err := model.NewExec(backend, clf.Store(), func(s *model.Scope, x *graph.Node) *graph.Node {
				s.Store().SetTraining(x.Graph(), train)
				return clf.Logits(s, []*graph.Node{x})
			})
			if err != nil {
				t.Fatal(err)
			}
			outs, err := exec.Call(r.pixels(t))
			if err != nil {
				t.Fatal(err)
			}
			return tensors.MustCopyFlatData[float32](outs[0])
		}
		eval, train := run(false), run(true)
		want := testutil.DecodeF32(t, "logits", r.LogitsB64, r.LogitsShape)
		if d := maxAbsDiff(t, "eval", eval, want); d > tolerance {
			t.Errorf("%s: inference with dropout rates set differs from transformers' by %.3g", name, d)
		}
		if d := maxAbsDiff(t, "train", train, eval); d < 1e-3 {
			t.Errorf("%s: training logits differ from inference's by %.3g only: dropout did not run", name, d)
		}
	}
}

// TestGradientCheckpointingWithDropout: with dropout 0.1 in every place, 6 SGD steps with
// gradient checkpointing give the plain graph's losses within 1e-5 (the recompute draws the
// same dropout bits), and the losses differ from dropout-free training (dropout ran).
func TestGradientCheckpointingWithDropout(t *testing.T) {
	f := loadFixtures(t)
	r := f.Models["tiny"].Train
	load := func(checkpoint bool) *Classifier {
		c := loadTiny(t, "tiny")
		c.Config.HiddenDropoutProb, c.Config.AttentionProbsDropoutProb = 0.1, 0.1
		c.Config.GradientCheckpointing = checkpoint
		return c
	}
	const steps = 6
	plain, remat := trainLosses(t, r, load(false), 1, steps, "no"), trainLosses(t, r, load(true), 1, steps, "no")
	d, moved := maxLossDiff(plain, remat), maxLossDiff(plain, r.Losses[:steps])
	t.Logf("dropout 0.1: gradient checkpointing's losses within %.3g of the plain graph's; dropout moves them by %.3g", d, moved)
	if d > 1e-5 || moved < 1e-3 {
		t.Errorf("plain %v, checkpointed %v, without dropout %v", plain, remat, r.Losses[:steps])
	}
}
