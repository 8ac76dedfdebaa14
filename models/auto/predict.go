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

// Prediction is what a Predictor says of one input, as transformers' text- and
// image-classification pipelines say it: the top class and its score, and every class's
// score.
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

// PredictorOf classifies inputs of type X (texts, images, vectors...) with a Model on a
// backend, at most a batch of inputs at a time, as transformers' classification pipelines
// do: a BatchProcessor[X] makes each batch's inputs, the model's sequence-classification
// head gives one row of logits an input, and the scores are the softmax of the row for a
// single-label head, its sigmoid for a multi-label head or one output that is not
// regression, the logits themselves for regression (the pipelines' function_to_apply as
// problem_type and num_labels choose it).
//
// A batch of n inputs runs at the smallest power of two that holds n (at most the batch
// size; the rows past n are copies of the first input's, whose results are dropped): one
// input costs a forward pass of one row, not a whole batch. Each shape of the processor's
// output is one program, compiled on its first use (a processor of fixed-size outputs, as an
// image processor that resizes, makes at most ⌊log₂ B⌋+2 programs at batch size B).
//
// A PredictorOf is safe for concurrent use: goroutines process and score their inputs in
// parallel and take turns for the forward pass, one at a time per model Store (the Store's
// variables, made and drawn on the first call for a fresh head, are not safe to share). The
// Store must not change under it: train it, or Load into it, and the answers change.
type PredictorOf[X any] struct {
	*runner[X]
	apply func([]float64) []float64
}

// Predictor classifies texts: the PredictorOf[string] of NewPredictor, over the model's
// Tokenizer.
//
// Its batches are also cut in length: a batch is padded to the smallest power of two, at
// least 16, that holds its longest text (at most the tokenizer's MaxLen), as transformers'
// text-classification pipeline pads a batch to its longest text. With B the batch size and L
// the MaxLen a Predictor compiles at most (⌊log₂ B⌋+1)·(⌊log₂(L/16)⌋+1) programs, one more of a
// factor when B or L is not a power of two: 24 at batch 32 and MaxLen 128, 6 at batch 4 and
// MaxLen 32. Padding changes no answer: the padded positions are masked out of attention.
type Predictor = PredictorOf[string]

// leastLen is the shortest length a batch of texts is padded to.
const leastLen = 16

// runner runs a model's forward pass on batches of at most batch inputs of type X, made by
// proc and filled to the batch buckets.
type runner[X any] struct {
	m       *Model
	proc    BatchProcessor[X]
	backend compute.Backend
	exec    *model.Exec
	batch   int
	sizes   []int       // the batch sizes a batch runs at: powers of two, then batch
	lock    *sync.Mutex // the model Store's (storeLock), held while the Exec runs
	// cut, when not nil, shortens the processor's inputs of a batch of n before the rows
	// are filled (texts: to the length bucket of the longest; see textRunner).
	cut func(inputs []*tensors.Tensor, n int) ([]*tensors.Tensor, error)
}

// newRunner compiles m's forward pass on backend for the inputs proc makes (nil: the
// model's Processor, which must then be a BatchProcessor[X]); what names the caller in
// errors.
func newRunner[X any](what string, m *Model, proc BatchProcessor[X], backend compute.Backend, batchSize int) (*runner[X], error) {
	switch {
	case m == nil || backend == nil:
		return nil, fmt.Errorf("auto: %s: nil model or backend", what)
	case batchSize < 0:
		return nil, fmt.Errorf("auto: %s: batch size %d: want at least 1 (0: 32)", what, batchSize)
	case batchSize == 0:
		batchSize = 32
	}
	if proc == nil {
		p, ok := m.Processor.(BatchProcessor[X])
		if !ok {
			var x X
			return nil, fmt.Errorf("auto: %s: the model's processor (%s, %T) does not process inputs of type %T", what, kindOf(m.Processor), m.Processor, x)
		}
		proc = p
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
	return &runner[X]{m: m, proc: proc, backend: backend, exec: exec, batch: batchSize, sizes: buckets(1, batchSize), lock: storeLock(store)}, nil
}

// kindOf is p's Kind, or "none" for a nil processor.
func kindOf(p Processor) string {
	if p == nil {
		return "none"
	}
	return p.Kind()
}

// textRunner is newRunner for texts through a Tokenizer (nil: the model's), with batches cut
// to the length bucket of their longest text.
func textRunner(what string, m *Model, tok Tokenizer, backend compute.Backend, batchSize int) (*runner[string], error) {
	if tok == nil && m != nil {
		if tok = m.Tokenizer(); tok == nil {
			return nil, fmt.Errorf("auto: %s: the model's processor (%s) takes no text", what, kindOf(m.Processor))
		}
	}
	r, err := newRunner[string](what, m, tok, backend, batchSize)
	if err != nil {
		return nil, err
	}
	lengths := buckets(min(leastLen, tok.MaxLen()), tok.MaxLen())
	r.exec.SetMaxCache(len(r.sizes) * len(lengths))
	r.cut = cutLength
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

// run returns the logits of chunk (1 to batch inputs, each processed once), run at the
// bucket of its count (and, for texts, of its longest text): flat float32 data of the given
// dimensions, rows first (the rows past len(chunk) are copies of the first), and the inputs
// as they were run.
func (r *runner[X]) run(chunk []X) (logits []float32, dims []int, inputs []*tensors.Tensor, err error) {
	if r.backend.IsFinalized() {
		return nil, nil, nil, errClosed
	}
	inputs, err = r.proc.Process(chunk)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := checkRows(inputs, len(chunk)); err != nil {
		return nil, nil, nil, fmt.Errorf("the processor (%s): %w", r.proc.Kind(), err)
	}
	if r.cut != nil {
		if inputs, err = r.cut(inputs, len(chunk)); err != nil {
			return nil, nil, nil, err
		}
	}
	if inputs, err = fillRows(inputs, len(chunk), bucket(len(chunk), r.sizes)); err != nil {
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
	return tensors.MustCopyFlatData[float32](outs[0]), outs[0].Shape().Dimensions, inputs, nil
}

// checkRows refuses a processor's output that is not one row an input: at least one tensor,
// each of rank 1 or more with n rows.
func checkRows(inputs []*tensors.Tensor, n int) error {
	if len(inputs) == 0 {
		return fmt.Errorf("it made no inputs")
	}
	for i, x := range inputs {
		if d := x.Shape().Dimensions; len(d) == 0 || d[0] != n {
			return fmt.Errorf("its input %d is %s: want %d rows, one an input", i, x.Shape(), n)
		}
	}
	return nil
}

// fillRows returns inputs of n rows filled to rows rows with copies of the first row (any
// dtype of whole bytes, any rank); inputs already of rows rows are returned as they are.
func fillRows(inputs []*tensors.Tensor, n, rows int) ([]*tensors.Tensor, error) {
	if rows == n {
		return inputs, nil
	}
	out := make([]*tensors.Tensor, len(inputs))
	for i, x := range inputs {
		shape := x.Shape().Clone()
		shape.Dimensions[0] = rows
		size := int(x.Shape().ByteSize()) / n
		if size*n != int(x.Shape().ByteSize()) {
			return nil, fmt.Errorf("the processor's input %d is %s: its rows are not whole bytes", i, x.Shape())
		}
		filled := tensors.FromShape(shape)
		var err error
		if e := x.ConstBytes(func(src []byte) {
			err = filled.MutableBytes(func(dst []byte) {
				copy(dst, src[:n*size])
				for row := n; row < rows; row++ {
					copy(dst[row*size:(row+1)*size], src[:size])
				}
			})
		}); e != nil {
			return nil, e
		} else if err != nil {
			return nil, err
		}
		out[i] = filled
	}
	return out, nil
}

// cutLength returns the n texts' inputs (int32 [n, L], the attention mask second) cut to the
// length bucket of the longest text (the last column whose mask is not 0).
func cutLength(inputs []*tensors.Tensor, n int) ([]*tensors.Tensor, error) {
	if len(inputs) < 2 {
		return nil, fmt.Errorf("the tokenizer made %d inputs: want input ids and an attention mask", len(inputs))
	}
	length := inputs[0].Shape().Dimensions[len(inputs[0].Shape().Dimensions)-1]
	for i, x := range inputs {
		if d := x.Shape().Dimensions; x.DType() != dtypes.Int32 || len(d) != 2 || d[0] != n || d[1] != length {
			return nil, fmt.Errorf("the tokenizer's input %d is %s: want int32 [%d, length] as its others", i, x.Shape(), n)
		}
	}
	mask := tensors.MustCopyFlatData[int32](inputs[1])
	longest := 0
	for i, m := range mask {
		if m != 0 {
			longest = max(longest, i%length+1)
		}
	}
	cols := bucket(longest, buckets(min(leastLen, length), length))
	if cols == length {
		return inputs, nil
	}
	out := make([]*tensors.Tensor, len(inputs))
	for i, x := range inputs {
		data := tensors.MustCopyFlatData[int32](x)
		cut := make([]int32, n*cols)
		for row := range n {
			copy(cut[row*cols:(row+1)*cols], data[row*length:row*length+cols])
		}
		out[i] = tensors.FromFlatDataAndDimensions(cut, n, cols)
	}
	return out, nil
}

// NewPredictor returns a Predictor of a loaded model (Load, or a fine-tuned best/ folder
// loaded with Options.LoadHead) on backend (an accelerator's Backend(), or GoMLX's
// compute.New()), at most batchSize texts a batch (0: 32; see Predictor for the batch and
// length buckets a batch runs at), through the model's Tokenizer. The model's
// sequence-classification head is used; the token-classification head is refused.
func NewPredictor(m *Model, backend compute.Backend, batchSize int) (*Predictor, error) {
	r, err := textRunner("NewPredictor", m, nil, backend, batchSize)
	if err != nil {
		return nil, err
	}
	return &Predictor{runner: r, apply: scoreFunction(m)}, nil
}

// NewPredictorOf returns a PredictorOf[X] of a loaded model on backend, at most batchSize
// inputs a batch (0: 32), whose batches proc makes; proc nil is the model's Processor, which
// must then be a BatchProcessor[X] (an image family's image processor, for images). The
// inputs proc makes are those of Model.Logits, each with one row an input. The model's
// sequence-classification head is used.
func NewPredictorOf[X any](m *Model, proc BatchProcessor[X], backend compute.Backend, batchSize int) (*PredictorOf[X], error) {
	r, err := newRunner("NewPredictorOf", m, proc, backend, batchSize)
	if err != nil {
		return nil, err
	}
	return &PredictorOf[X]{runner: r, apply: scoreFunction(m)}, nil
}

// scoreFunction is what turns m's logits into scores, as the pipelines' function_to_apply
// defaults to it: the logits for regression, sigmoid for a multi-label head or a single
// output, else softmax.
func scoreFunction(m *Model) func([]float64) []float64 {
	switch {
	case m.ProblemType() == "regression":
		return slices.Clone[[]float64]
	case m.ProblemType() == "multi_label_classification" || m.NumLabels() == 1:
		return sigmoid
	}
	return softmax
}

// Predict returns a Prediction per input, in order.
func (p *PredictorOf[X]) Predict(inputs []X) ([]Prediction, error) {
	out := make([]Prediction, 0, len(inputs))
	for start := 0; start < len(inputs); start += p.batch {
		chunk := inputs[start:min(start+p.batch, len(inputs))]
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
func (p *PredictorOf[X]) prediction(logits []float64) Prediction {
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
