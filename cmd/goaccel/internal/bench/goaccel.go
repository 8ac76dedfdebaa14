package bench

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/goaccel/goaccel/accelerator"
	"github.com/goaccel/goaccel/data"
	"github.com/goaccel/goaccel/hostmalloc"
	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph" //nolint:staticcheck // GoMLX's graph API reads best dot-imported.
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/layers/activation"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/model/initializer"
	"github.com/gomlx/gomlx/ml/nn"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// goaccelRun is a prepared goaccel training job on a fixed global batch.
type goaccelRun struct {
	acc   *accelerator.Accelerator
	train *accelerator.TrainStep
	batch *data.GlobalBatch
}

// tf32Setting is Config.TF32 for spec: "on" for tf32, "off" for fp32 on a backend named CUDA
// (as PyTorch's allow_tf32=False), else unset (bf16's dots are 16-bit; the CPU refuses TF32).
func tf32Setting(spec Spec) string {
	switch {
	case spec.Precision == "tf32":
		return "on"
	case spec.Precision == "fp32" && strings.Contains(strings.ToLower(spec.Backend), "cuda"):
		return "off"
	}
	return ""
}

// newGoaccelRun opens the backend, builds the spec's model and prepares it with Adam
// (learning rate 1e-4; with weight decay 0.01 for the classifiers, as PyTorch's AdamW) on a fixed,
// synthetic global batch split over spec.Devices devices, under spec.Sharding. The batch's
// tensors are reused by every step, like the PyTorch side's, so neither side measures
// host-to-device copies.
func newGoaccelRun(spec Spec) (*goaccelRun, error) {
	mp := "no"
	if spec.Precision == "bf16" || spec.Precision == "fp16" {
		mp = spec.Precision
	}
	acc, err := accelerator.New(accelerator.Config{Backend: spec.Backend, Devices: spec.Devices, MixedPrecision: mp,
		Sharding: spec.Sharding, Seed: 1, Quiet: true, TF32: tf32Setting(spec)})
	if err != nil {
		return nil, err
	}
	r := &goaccelRun{acc: acc}
	var m model.StoreProvider
	var opt optimizer.Interface
	var fn accelerator.StepFn
	if spec.IsBERT() {
		clf, err := newClassifier(spec)
		if err != nil {
			return nil, err
		}
		if _, ok := clf.StoreProvider.(accelerator.ComputeDTypeSetter); !ok && mp != "no" {
			// goaccel's autocast cannot take them either: they ask for their variables as float32.
			return nil, fmt.Errorf("the %s classifier has no mixed precision (no SetComputeDType): goaccel measures it in fp32 only", spec.Family)
		}
		m = clf.StoreProvider
		opt = optimizer.Adam().LearningRate(1e-4).WeightDecay(0.01).Done()
		fn = func(s *model.Scope, b accelerator.GraphBatch) *Node {
			l := accelerator.CrossEntropy(clf.logits(s, b.Inputs), b.Labels, b.Mask)
			acc.Backward(s, l)
			return l
		}
	} else {
		mlp := &MLP{Hidden: spec.Hidden, Layers: spec.Layers, store: model.NewStore()}
		m = mlp
		opt = optimizer.Adam().LearningRate(1e-4).Done()
		fn = func(s *model.Scope, b accelerator.GraphBatch) *Node {
			l := accelerator.CrossEntropy(mlp.Logits(s, b.Inputs[0]), b.Labels, b.Mask)
			acc.Backward(s, l)
			return l
		}
	}
	job, err := acc.Prepare(m, opt, nil)
	if err != nil {
		return nil, err
	}
	r.train = job.TrainStep(fn)
	r.batch = syntheticBatch(spec)
	return r, nil
}

// syntheticBatch is a fixed random global batch of the spec's shape, split in spec.Devices
// equal shards: MLP inputs uniform in [-0.5, 0.5) with 10 classes; classifier token ids
// uniform in the vocabulary, no padding, 2 classes (inputs: ids, mask, and the token types,
// all 0, for a family whose Logits takes them: auto.Facts.Inputs); an image family's pixels
// uniform in [-1, 1), [B, Seq, Seq, channels] (auto.Facts.Image), 2 classes.
func syntheticBatch(spec Spec) *data.GlobalBatch {
	rng := rand.New(rand.NewPCG(1, 2))
	per := spec.Batch / spec.Devices
	step := &data.GlobalBatch{}
	for range spec.Devices {
		real := make([]bool, per)
		idx := make([]int, per)
		for i := range per {
			real[i], idx[i] = true, i
		}
		var inputs []*tensors.Tensor
		labels := make([]int32, per)
		classes := 10
		if img := spec.image(); img != nil {
			classes = 2
			x := make([]float32, per*spec.Seq*spec.Seq*img.Channels)
			for i := range x {
				x[i] = 2*rng.Float32() - 1
			}
			inputs = []*tensors.Tensor{tensors.FromFlatDataAndDimensions(x, per, spec.Seq, spec.Seq, img.Channels)}
		} else if spec.IsBERT() {
			classes = 2
			n := per * spec.Seq
			ids, mask, types := make([]int32, n), make([]int32, n), make([]int32, n)
			for i := range ids {
				ids[i], mask[i] = int32(rng.IntN(spec.Vocab)), 1
			}
			inputs = []*tensors.Tensor{tensors.FromFlatDataAndDimensions(ids, per, spec.Seq),
				tensors.FromFlatDataAndDimensions(mask, per, spec.Seq)}
			if cfg, err := spec.config(); err == nil && cfg.Facts().Inputs == 3 {
				inputs = append(inputs, tensors.FromFlatDataAndDimensions(types, per, spec.Seq))
			}
		} else {
			x := make([]float32, per*512)
			for i := range x {
				x[i] = rng.Float32() - 0.5
			}
			inputs = []*tensors.Tensor{tensors.FromFlatDataAndDimensions(x, per, 512)}
		}
		for i := range labels {
			labels[i] = int32(rng.IntN(classes))
		}
		step.Shards = append(step.Shards, &data.Batch{Inputs: inputs, Labels: tensors.FromFlatDataAndDimensions(labels, per),
			Mask: tensors.FromValue(real), Real: real, Indices: idx, Positions: idx})
	}
	return step
}

// steps runs n training steps and returns their wall time and the last loss; reading the
// loss waits for the devices to finish.
func (r *goaccelRun) steps(n int) (time.Duration, float64, error) {
	start := time.Now()
	var last accelerator.Loss
	for i := range n {
		l, err := r.train.Run(r.batch)
		if err != nil {
			return 0, 0, fmt.Errorf("step %d: %w", i, err)
		}
		last = l
	}
	v, err := last.Value()
	return time.Since(start), v, err
}

// describe names the backend the run uses.
func (r *goaccelRun) describe() map[string]any {
	info := r.acc.Info()
	return map[string]any{"backend": info.Backend, "plugin": info.Plugin.Path, "devices": info.Devices,
		"available": info.Available, "host_malloc": hostmalloc.Describe()}
}

// close releases the backend.
func (r *goaccelRun) close() { r.acc.Close() }

// MLP is the benchmark's multilayer perceptron: 512 inputs -> Layers x Hidden (ReLU) -> 10
// logits, the model of PyTorch's torch.nn.Sequential of Linear and ReLU layers. Its variables
// are float32; with SetComputeDType(BFloat16) or (Float16) (mixed precision) the products, forward
// and backward, take 16-bit operands (mixedDense), the rest is float32, as PyTorch's autocast.
type MLP struct {
	// Hidden and Layers are the width and the number of hidden layers.
	Hidden, Layers int

	store *model.Store
	dtype dtypes.DType
}

// Store returns the variables' Store, making the MLP a model.StoreProvider.
func (m *MLP) Store() *model.Store { return m.store }

// SetComputeDType selects the activations' dtype (Float32, BFloat16 or Float16).
func (m *MLP) SetComputeDType(dt dtypes.DType) error {
	if dt != dtypes.Float32 && dt != dtypes.BFloat16 && dt != dtypes.Float16 {
		return fmt.Errorf("bench: MLP computes in float32, bfloat16 or float16, not %s", dt)
	}
	m.dtype = dt
	return nil
}

// Logits builds the forward pass of x [B, 512] to float32 logits [B, 10]. Under mixed precision
// each layer's product runs on 16-bit operands with a float32 result (mixedDense), its bias and
// ReLU in float32, and the activation is rounded to the compute dtype once, for the next product.
func (m *MLP) Logits(s *model.Scope, x *Node) *Node {
	dt := m.dtype
	if dt == dtypes.InvalidDType {
		dt = dtypes.Float32
	}
	for i := range m.Layers {
		x = activation.Relu(dense(s.In("hidden_%d", i), ConvertDType(x, dt), m.Hidden))
	}
	return dense(s.In("out"), ConvertDType(x, dt), 10)
}

// dense is a float32-weights linear layer on x, float32 [rows, out]: GoMLX's fused dense for
// float32 x, mixedDense for 16-bit x (torch.nn.Linear's default initialisation is replaced by
// GoMLX's default initializer; timing does not depend on it).
func dense(s *model.Scope, x *Node, out int) *Node {
	g := x.Graph()
	in := x.Shape().Dimensions[1]
	w := s.VariableWithShape("weights", shapes.Make(dtypes.Float32, in, out)).NodeValue(g)
	b := s.WithInitializer(initializer.Zero).VariableWithShape("biases", shapes.Make(dtypes.Float32, out)).NodeValue(g)
	if x.DType() == dtypes.Float32 {
		return nn.Dense(x, w, b, compute.DenseLayoutInputOutputs)
	}
	return mixedDense(x, w, b)
}
