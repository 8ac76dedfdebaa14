package auto

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"weak"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
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

// Predictor classifies texts with a Model on a backend, at most a batch of texts at a time.
//
// A batch of n texts runs at the smallest power of two that holds n (at most the batch size;
// the rows past n are copies of the first text's, whose results are dropped) and is padded to
// the smallest power of two, at least 16, that holds its longest text (at most the tokenizer's
// MaxLen), as transformers' pipeline pads a batch to its longest text: one text costs a
// forward pass of one short row, not a whole batch at MaxLen. Each such shape is one program,
// compiled on its first use; with B the batch size and L the MaxLen a Predictor compiles at most
// (⌊log₂ B⌋+1)·(⌊log₂(L/16)⌋+1) programs, one more of a factor when B or L is not a power of
// two: 24 at batch 32 and MaxLen 128, 6 at batch 4 and MaxLen 32. Padding changes no answer:
// the padded positions are masked out of attention.
//
// A Predictor is safe for concurrent use: goroutines tokenize and score their texts in
// parallel and take turns for the forward pass, one at a time per model Store (the Store's
// variables, made and drawn on the first call for a fresh head, are not safe to share). The
// Store must not change under it: train it, or Load into it, and the answers change.
type Predictor struct {
	*runner
	apply func([]float64) []float64
}

// leastLen is the shortest length a batch is padded to.
const leastLen = 16

// runner runs a model's forward pass on batches of at most batch texts, padded to buckets.
type runner struct {
	m       *Model
	backend compute.Backend
	exec    *model.Exec
	batch   int
	sizes   []int       // the batch sizes a batch runs at: powers of two, then batch
	lock    *sync.Mutex // the model Store's (storeLock), held while the Exec runs
}

// newRunner compiles m's forward pass on backend; what names the caller in errors.
func newRunner(what string, m *Model, backend compute.Backend, batchSize int) (*runner, error) {
	switch {
	case m == nil || backend == nil:
		return nil, fmt.Errorf("auto: %s: nil model or backend", what)
	case batchSize < 0:
		return nil, fmt.Errorf("auto: %s: batch size %d: want at least 1 (0: 32)", what, batchSize)
	case batchSize == 0:
		batchSize = 32
	}
	if backend.IsFinalized() {
		return nil, fmt.Errorf("auto: %s: %w", what, errClosed)
	}
	store := m.Classifier.Store()
	exec, err := model.NewExec(backend, store, func(s *model.Scope, inputs []*Node) *Node {
		return m.Logits(s, inputs)
	})
	if err != nil {
		return nil, fmt.Errorf("auto: %s: %w", what, err)
	}
	r := &runner{m: m, backend: backend, exec: exec, batch: batchSize, sizes: buckets(1, batchSize), lock: storeLock(store)}
	if t, ok := m.Processor.(interface{ MaxLen() int }); ok {
		exec.SetMaxCache(len(r.sizes) * len(buckets(leastLen, t.MaxLen())))
	}
	return r, nil
}

// errClosed is the error of a Predictor whose backend was finalized.
var errClosed = errors.New("the backend is closed (Accelerator.Close finalizes it): make the predictor on an open one")

// buckets are the powers of two from least (or limit, when it is smaller) up to limit, and
// limit.
func buckets(least, limit int) []int {
	var out []int
	for b := least; b < limit; b *= 2 {
		out = append(out, b)
	}
	return append(out, limit)
}

// bucket is the first of buckets that holds n (the last when none does).
func bucket(n int, buckets []int) int {
	for _, b := range buckets {
		if b >= n {
			return b
		}
	}
	return buckets[len(buckets)-1]
}

// storeLocks holds a mutex per model Store that a predictor runs on, keyed weakly so that a
// Store no longer used is collected (its entry with it).
var storeLocks sync.Map // weak.Pointer[model.Store] -> *sync.Mutex

// storeLock is store's mutex: every predictor on store takes it to run the forward pass.
func storeLock(store *model.Store) *sync.Mutex {
	key := weak.Make(store)
	l, loaded := storeLocks.LoadOrStore(key, &sync.Mutex{})
	if !loaded {
		runtime.AddCleanup(store, func(k weak.Pointer[model.Store]) { storeLocks.Delete(k) }, key)
	}
	return l.(*sync.Mutex)
}

// run returns the logits of chunk (1 to batch texts, each tokenized once), run at the buckets
// of its count and of its longest text: flat float32 data of the given dimensions, rows first
// (the rows past len(chunk) are copies of the first), and the input ids ([rows, length]).
func (r *runner) run(chunk []string) (logits []float32, dims []int, ids []int32, err error) {
	if r.backend.IsFinalized() {
		return nil, nil, nil, errClosed
	}
	tok := r.m.Tokenizer()
	if tok == nil {
		return nil, nil, nil, fmt.Errorf("the model's processor (%s) takes no text", r.m.Processor.Kind())
	}
	inputs, err := tok.Process(chunk)
	if err != nil {
		return nil, nil, nil, err
	}
	inputs, idsData, err := r.pad(inputs, len(chunk))
	if err != nil {
		return nil, nil, nil, err
	}
	args := make([]any, len(inputs))
	for i, x := range inputs {
		args[i] = x
	}
	r.lock.Lock()
	outs, err := r.exec.Call(args...)
	r.lock.Unlock()
	if err != nil {
		if r.backend.IsFinalized() {
			return nil, nil, nil, errClosed
		}
		return nil, nil, nil, err
	}
	return tensors.MustCopyFlatData[float32](outs[0]), outs[0].Shape().Dimensions, idsData, nil
}

// pad returns the n texts' inputs (int32 [n, L], the attention mask second) cut to the
// length bucket of the longest text (the last column whose mask is not 0) and filled to the
// batch bucket of n with copies of the first row, and the input ids as they are run.
func (r *runner) pad(inputs []*tensors.Tensor, n int) ([]*tensors.Tensor, []int32, error) {
	if len(inputs) < 2 {
		return nil, nil, fmt.Errorf("the tokenizer made %d inputs: want input ids and an attention mask", len(inputs))
	}
	flat := make([][]int32, len(inputs))
	for i, x := range inputs {
		if d := x.Shape().Dimensions; x.DType() != dtypes.Int32 || len(d) != 2 || d[0] != n || d[1] != inputs[0].Shape().Dimensions[1] {
			return nil, nil, fmt.Errorf("the tokenizer's input %d is %s: want int32 [%d, length] as its others", i, x.Shape(), n)
		}
		flat[i] = tensors.MustCopyFlatData[int32](x)
	}
	length := inputs[0].Shape().Dimensions[1]
	longest := 0
	for i, m := range flat[1] {
		if m != 0 {
			longest = max(longest, i%length+1)
		}
	}
	rows, cols := bucket(n, r.sizes), bucket(longest, buckets(min(leastLen, length), length))
	if rows == n && cols == length {
		return inputs, flat[0], nil
	}
	out := make([]*tensors.Tensor, len(inputs))
	for i, data := range flat {
		cut := make([]int32, rows*cols)
		for row := range rows {
			from := 0 // the filler rows repeat the first
			if row < n {
				from = row
			}
			copy(cut[row*cols:(row+1)*cols], data[from*length:from*length+cols])
		}
		out[i], flat[i] = tensors.FromFlatDataAndDimensions(cut, rows, cols), cut
	}
	return out, flat[0], nil
}

// NewPredictor returns a Predictor of a loaded model (Load, or a fine-tuned best/ folder
// loaded with Options.LoadHead) on backend (an accelerator's Backend(), or GoMLX's
// compute.New()), at most batchSize texts a batch (0: 32; see Predictor for the batch and
// length buckets a batch runs at). The model's sequence-classification head
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
