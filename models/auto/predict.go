package auto

import (
	"fmt"
	"math"
	"slices"

	"github.com/goaccel/goaccel/data/text"
	"github.com/gomlx/compute"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// Prediction is what a Predictor says of one text, as transformers' text-classification
// pipeline says it: the top class and its score, and every class's score.
type Prediction struct {
	// Label is the top class's name (id2label; LABEL_<id> when unnamed); for regression,
	// the output's name.
	Label string
	// ID is the top class's id (0 for regression).
	ID int
	// Score is the top class's score: its softmax probability (single-label), its sigmoid
	// (multi-label, or one output that is not regression), or the predicted value
	// (regression), as the pipeline's function_to_apply chooses.
	Score float64
	// Scores are every class's scores, by id, the same function applied.
	Scores []float64
}

// Predictor classifies texts with a Model on a backend, in batches of a fixed size (one
// compiled program; a short last batch is filled with copies of its first text, whose
// results are dropped). It is not safe for concurrent use: give each goroutine its own.
type Predictor struct {
	runner
	apply func([]float64) []float64
}

// runner runs a model's forward pass on batches of texts of a fixed size.
type runner struct {
	m     *Model
	exec  *model.Exec
	batch int
}

// newRunner compiles m's forward pass on backend; what names the caller in errors.
func newRunner(what string, m *Model, backend compute.Backend, batchSize int) (runner, error) {
	switch {
	case m == nil || backend == nil:
		return runner{}, fmt.Errorf("auto: %s: nil model or backend", what)
	case batchSize < 0:
		return runner{}, fmt.Errorf("auto: %s: batch size %d: want at least 1 (0: 32)", what, batchSize)
	case batchSize == 0:
		batchSize = 32
	}
	exec, err := model.NewExec(backend, m.Classifier.Store(), func(s *model.Scope, inputs []*Node) *Node {
		return m.Logits(s, inputs)
	})
	if err != nil {
		return runner{}, fmt.Errorf("auto: %s: %w", what, err)
	}
	return runner{m: m, exec: exec, batch: batchSize}, nil
}

// run returns the logits of chunk (at most a batch of texts; a short one is filled with
// copies of its first text): flat float32 data of the given dimensions, batch first, and
// the input ids ([batch, length]).
func (r *runner) run(chunk []string) (logits []float32, dims []int, ids []int32, err error) {
	examples := make([]text.Labeled, r.batch)
	for i := range examples {
		examples[i].Text = chunk[0] // the filler of a short last batch
		if i < len(chunk) {
			examples[i].Text = chunk[i]
		}
	}
	inputs, _, err := r.m.Tokenizer.Collate(examples)
	if err != nil {
		return nil, nil, nil, err
	}
	args := make([]any, len(inputs))
	for i, x := range inputs {
		args[i] = x
	}
	outs, err := r.exec.Call(args...)
	if err != nil {
		return nil, nil, nil, err
	}
	return tensors.MustCopyFlatData[float32](outs[0]), outs[0].Shape().Dimensions, tensors.MustCopyFlatData[int32](inputs[0]), nil
}

// NewPredictor returns a Predictor of a loaded model (Load, or a fine-tuned best/ folder
// loaded with Options.LoadHead) on backend (an accelerator's Backend(), or GoMLX's
// compute.New()), batchSize texts a batch (0: 32). The model's sequence-classification head
// is used; the token-classification head is refused.
func NewPredictor(m *Model, backend compute.Backend, batchSize int) (*Predictor, error) {
	r, err := newRunner("NewPredictor", m, backend, batchSize)
	if err != nil {
		return nil, err
	}
	p := &Predictor{runner: r}
	switch {
	case m.ProblemType() == "regression":
		p.apply = slices.Clone[[]float64]
	case m.ProblemType() == "multi_label_classification" || m.NumLabels() == 1:
		p.apply = sigmoid
	default:
		p.apply = softmax
	}
	return p, nil
}

// Predict returns a Prediction per text, in order.
func (p *Predictor) Predict(texts []string) ([]Prediction, error) {
	out := make([]Prediction, 0, len(texts))
	for start := 0; start < len(texts); start += p.batch {
		chunk := texts[start:min(start+p.batch, len(texts))]
		flat, dims, _, err := p.run(chunk)
		if err != nil {
			return nil, fmt.Errorf("auto: Predict: %w", err)
		}
		if len(dims) != 2 {
			return nil, fmt.Errorf("auto: Predict: the model's logits have shape %v: want [batch, classes] (a sequence-classification head; NewTokenPredictor is for a token-classification one)", dims)
		}
		k := dims[1]
		for i := range chunk {
			row := make([]float64, k)
			for j := range k {
				row[j] = float64(flat[i*k+j])
			}
			out = append(out, p.prediction(row))
		}
	}
	return out, nil
}

// prediction turns one row of logits into a Prediction.
func (p *Predictor) prediction(logits []float64) Prediction {
	scores := p.apply(logits)
	top := 0
	for j, v := range scores {
		if v > scores[top] {
			top = j
		}
	}
	names := p.m.Labels()
	label := fmt.Sprintf("LABEL_%d", top)
	if names != nil {
		label = names[top]
	}
	return Prediction{Label: label, ID: top, Score: scores[top], Scores: scores}
}

// softmax is the probabilities of logits, computed in float64 from the largest.
func softmax(logits []float64) []float64 {
	m := slices.Max(logits)
	out := make([]float64, len(logits))
	var sum float64
	for i, v := range logits {
		out[i] = math.Exp(v - m)
		sum += out[i]
	}
	for i := range out {
		out[i] /= sum
	}
	return out
}

// sigmoid is 1/(1+exp(-x)) of each logit.
func sigmoid(logits []float64) []float64 {
	out := make([]float64, len(logits))
	for i, v := range logits {
		out[i] = 1 / (1 + math.Exp(-v))
	}
	return out
}
