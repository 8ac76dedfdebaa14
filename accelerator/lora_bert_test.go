package accelerator

import (
	"slices"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/models/bert"
	"github.com/goaccel/goaccel/models/lora"
	"github.com/goaccel/goaccel/optim"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// loraRun trains the tiny BERT (with a LoRA adapter of cfg, or in full when cfg is nil) for
// steps Adam steps through Prepare and Backward and returns the classifier, the model's
// variables after the first step and after the last (by path), the losses, the bytes of
// Adam's moments, and the job's memory plan.
func loraRun(t *testing.T, cfg *lora.Config, steps int) (clf *bert.Classifier, first, last map[string][]float32, losses []float64, stateBytes int64,
	plan MemoryPlan) {
	t.Helper()
	a, loader, clf := tinyBertSetup(t, "no")
	if cfg != nil {
		if _, err := clf.AttachLoRA(*cfg, ""); err != nil {
			t.Fatal(err)
		}
	}
	opt, err := optim.Adam(optim.AdamConfig{LearningRate: 1e-2, WeightDecay: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	job, err := a.Prepare(clf, opt, loader)
	if err != nil {
		t.Fatal(err)
	}
	train := job.TrainStep(func(s *model.Scope, b GraphBatch) *Node {
		lv := CrossEntropy(clf.Logits(s, b.Inputs), b.Labels, b.Mask)
		a.Backward(s, lv)
		return lv
	})
	snapshot := func() map[string][]float32 {
		out := map[string][]float32{}
		for _, spec := range clf.Config.Tensors() {
			path, _ := bert.VarPath(spec.Name)
			out[path] = tensors.MustCopyFlatData[float32](clf.Store().GetVariable(path).MustValue())
		}
		for v := range clf.Store().IterVariables() {
			if p := v.Path(); strings.Contains(p, "/lora_") && !strings.HasSuffix(p, "_moment") {
				out[p] = tensors.MustCopyFlatData[float32](v.MustValue())
			}
		}
		return out
	}
	runBatches(t, job, train, steps, func(l float64) {
		if losses = append(losses, l); len(losses) == 1 {
			first = snapshot()
		}
	})
	for v := range clf.Store().IterVariables() {
		if strings.HasSuffix(v.Path(), "_moment") {
			stateBytes += int64(v.Shape().ByteSize())
		}
	}
	plan, err = job.MemoryPlan()
	if err != nil {
		t.Fatal(err)
	}
	return clf, first, snapshot(), losses, stateBytes, plan
}

// TestLoRAPrepare: the tiny BERT with a LoRA adapter, trained through Prepare and Backward,
// learns; its encoder's weights stay bit for bit what they were after the first step (when
// they were created) while A, B and the head change; and Adam's state is that of the trainable
// weights only (two float32 moments each), a fraction of full fine-tuning's. The memory plan
// counts the encoder as frozen weights, not as optimizer state (issue 46).
func TestLoRAPrepare(t *testing.T) {
	t.Parallel()
	const steps = 12
	clf, first, last, losses, state, plan := loraRun(t, &lora.Config{R: 4, Alpha: 8}, steps)
	if !(losses[steps-1] < losses[0]) {
		t.Errorf("LoRA loss went from %.4f to %.4f in %d steps", losses[0], losses[steps-1], steps)
	}
	for path, before := range first {
		trains, _ := clf.Adapter().Trainable(path)
		changed := !slices.Equal(before, last[path])
		if changed != trains {
			t.Errorf("%s changed=%v after the first step, want %v (trainable %v)", path, changed, trains, trains)
		}
	}
	trainable := clf.Adapter().NumTrainable()
	if want := int64(2 * 4 * trainable); state != want {
		t.Errorf("Adam's state is %d bytes, want %d (two float32 moments of the %d trainable weights)", state, want, trainable)
	}
	var frozen int64
	for path, v := range first {
		if trains, _ := clf.Adapter().Trainable(path); !trains {
			frozen += 4 * int64(len(v))
		}
	}
	t.Logf("LoRA's memory plan: %s", plan)
	if plan.Frozen != frozen || plan.Weights != 4*int64(trainable) || plan.Gradients != plan.Weights {
		t.Errorf("LoRA's plan: weights %d, frozen weights %d, gradients %d; want %d, %d (the encoder) and %d",
			plan.Weights, plan.Frozen, plan.Gradients, 4*trainable, frozen, 4*trainable)
	}
	if lo := state; plan.OptimizerState < lo || plan.OptimizerState > lo+64 {
		t.Errorf("LoRA's plan: optimizer state %d bytes, want Adam's moments (%d) and its few scalars", plan.OptimizerState, state)
	}
	full, _, _, fullLosses, fullState, fullPlan := loraRun(t, nil, steps)
	if fullPlan.Frozen != 0 {
		t.Errorf("full fine-tuning's plan counts %d bytes of frozen weights, want 0: %s", fullPlan.Frozen, fullPlan)
	}
	t.Logf("tiny BERT, %d steps: LoRA r=4 trains %d of %d weights, Adam state %d bytes, loss %.4f -> %.4f; full fine-tuning: Adam state %d bytes, loss %.4f -> %.4f",
		steps, trainable, full.NumParameters(), state, losses[0], losses[steps-1], fullState, fullLosses[0], fullLosses[steps-1])
	if want := int64(2 * 4 * full.NumParameters()); fullState != want {
		t.Errorf("full fine-tuning's Adam state is %d bytes, want %d", fullState, want)
	}
}
