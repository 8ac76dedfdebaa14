package bert

import (
	"math"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/internal/testutil"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph" //nolint:staticcheck
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

var referenceTexts = []string{
	"The movie was great!",
	"bad",
	"Hello, world: unaffable cafe runs",
	"東京 is fun, don't run",
}

// TestEncoderMatchesHostReference checks the GoMLX graph (fused dense, layer norm, GELU and
// attention where the backend has them) against the plain float64 implementation, on a
// padded batch, on every available backend.
func TestEncoderMatchesHostReference(t *testing.T) {
	for name, backend := range testBackends(t) {
		t.Run(name, func(t *testing.T) {
			clf, tok := newMicroModel(t, backend, 7, 12)
			enc := tok.EncodeBatch(referenceTexts)
			hidden, pooled := encodeOnce(t, backend, clf, enc)
			logits := logitsOnce(t, backend, clf, enc, false)

			ref := &hostBERT{cfg: clf.Config, w: variableValues(t, clf.Store(), clf.Config, true)}
			H, L, labels := clf.Config.HiddenSize, enc.Len, clf.Config.NumLabels
			var wantHidden, wantPooled, wantLogits []float32
			for b := range enc.Batch {
				row := func(s []int32) []int32 { return s[b*L : (b+1)*L] }
				h, p, lg := ref.forward(row(enc.InputIDs), row(enc.AttentionMask), row(enc.TokenTypeIDs))
				for _, r := range h {
					for _, v := range r {
						wantHidden = append(wantHidden, float32(v))
					}
				}
				for _, v := range p {
					wantPooled = append(wantPooled, float32(v))
				}
				for _, v := range lg {
					wantLogits = append(wantLogits, float32(v))
				}
			}
			if len(hidden) != enc.Batch*L*H || len(logits) != enc.Batch*labels {
				t.Fatalf("output sizes: hidden %d (want %d), logits %d (want %d)", len(hidden), enc.Batch*L*H, len(logits), enc.Batch*labels)
			}
			for _, c := range []struct {
				what      string
				got, want []float32
			}{{"hidden", hidden, wantHidden}, {"pooled", pooled, wantPooled}, {"logits", logits, wantLogits}} {
				if d := testutil.MaxAbsDiff(t, c.what, c.got, c.want); d > 2e-5 {
					t.Errorf("%s: max abs diff to the host reference = %g, want <= 2e-5", c.what, d)
				} else {
					t.Logf("%s: max abs diff to the host reference = %.3g", c.what, d)
				}
			}
		})
	}
}

// TestEncoderIgnoresPadding checks that the attention mask works: the same texts padded to 8
// or to 12 positions give the same hidden states on the real tokens and the same pooled
// output.
func TestEncoderIgnoresPadding(t *testing.T) {
	backend := mustGoBackend(t)
	clf, tok := newMicroModel(t, backend, 11, 12)
	short, err := tok.WithBuckets(8)
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{"The movie was great!", "bad", "東京 is fun"}
	encLong, encShort := tok.EncodeBatch(texts), short.EncodeBatch(texts)
	if encLong.Len != 12 || encShort.Len != 8 {
		t.Fatalf("padded lengths = %d and %d, want 12 and 8", encLong.Len, encShort.Len)
	}
	hLong, pLong := encodeOnce(t, backend, clf, encLong)
	hShort, pShort := encodeOnce(t, backend, clf, encShort)
	if d := testutil.MaxAbsDiff(t, "pooled", pLong, pShort); d > 1e-5 {
		t.Errorf("pooled output changes with the padding length: max abs diff %g", d)
	}
	H := clf.Config.HiddenSize
	for b := range texts {
		for pos := range encShort.Len {
			if encShort.AttentionMask[b*encShort.Len+pos] == 0 {
				continue
			}
			long := hLong[(b*encLong.Len+pos)*H : (b*encLong.Len+pos+1)*H]
			shortRow := hShort[(b*encShort.Len+pos)*H : (b*encShort.Len+pos+1)*H]
			if d := testutil.MaxAbsDiff(t, "hidden", long, shortRow); d > 1e-5 {
				t.Errorf("text %d position %d: hidden state changes with padding: max abs diff %g", b, pos, d)
			}
		}
	}
}

// TestDropoutOnlyWhenTraining checks that inference is deterministic, that dropout changes the
// output in training mode, and that the training graph has finite, non-zero gradients for
// every variable.
func TestDropoutOnlyWhenTraining(t *testing.T) {
	backend := mustGoBackend(t)
	clf, tok := newMicroModel(t, backend, 3, 12)
	enc := tok.EncodeBatch(referenceTexts)
	eval1 := logitsOnce(t, backend, clf, enc, false)
	eval2 := logitsOnce(t, backend, clf, enc, false)
	if d := testutil.MaxAbsDiff(t, "eval", eval1, eval2); d != 0 {
		t.Errorf("inference is not deterministic: max abs diff %g", d)
	}
	train := logitsOnce(t, backend, clf, enc, true)
	if d := testutil.MaxAbsDiff(t, "train vs eval", train, eval1); d < 1e-4 {
		t.Errorf("training-mode logits equal inference logits (max abs diff %g): dropout is not applied", d)
	}

	exec, err := model.NewExec(backend, clf.Store(), func(s *model.Scope, ids, mask, types, labels *Node) []*Node {
		g := ids.Graph()
		s.Store().SetTraining(g, true)
		logits := clf.Logits(s, []*Node{ids, mask, types})
		// Cross-entropy written out: logsumexp(logits) - logits[label].
		oneHot := OneHot(labels, clf.Config.NumLabels, dtypes.Float32)
		maxLogit := StopGradient(ReduceAndKeep(logits, ReduceMax, -1))
		lse := Add(Log(ReduceSum(Exp(Sub(logits, maxLogit)), -1)), Squeeze(maxLogit, -1))
		loss := ReduceAllMean(Sub(lse, ReduceSum(Mul(logits, oneHot), -1)))
		grads := s.BuildTrainableVariablesGradientsGraph(loss)
		norms := make([]*Node, len(grads))
		for i, gr := range grads {
			norms[i] = ReduceAllSum(Square(gr))
		}
		return append([]*Node{loss}, Stack(norms, 0))
	})
	if err != nil {
		t.Fatal(err)
	}
	in := enc.Tensors()
	labels := tensors.FromFlatDataAndDimensions([]int32{0, 1, 2, 1}, 4)
	outs, err := exec.Call(in[0], in[1], in[2], labels)
	if err != nil {
		t.Fatalf("training graph: %v", err)
	}
	loss := tensors.MustCopyFlatData[float32](outs[0])[0]
	norms := tensors.MustCopyFlatData[float32](outs[1])
	if math.IsNaN(float64(loss)) || loss <= 0 {
		t.Errorf("loss = %g, want a positive finite value", loss)
	}
	wantVars := len(clf.Config.Tensors())
	if len(norms) != wantVars {
		t.Errorf("got gradients for %d variables, want %d (all of the classifier's)", len(norms), wantVars)
	}
	for i, n := range norms {
		if math.IsNaN(float64(n)) || math.IsInf(float64(n), 0) || n == 0 {
			t.Errorf("gradient %d has squared norm %g, want finite and non-zero", i, n)
		}
	}
}

// TestEncoderRejectsBadInputs checks the messages of graph-building errors.
func TestEncoderRejectsBadInputs(t *testing.T) {
	backend := mustGoBackend(t)
	clf, _ := newMicroModel(t, backend, 1, 12)
	i32 := func(dims ...int) *tensors.Tensor {
		return tensors.FromShape(shapes.Make(dtypes.Int32, dims...))
	}
	cases := []struct {
		name    string
		inputs  []*tensors.Tensor
		wantErr string
	}{
		{"too long for the positions", []*tensors.Tensor{i32(2, 13), i32(2, 13), i32(2, 13)}, "max_position_embeddings"},
		{"rank 1 ids", []*tensors.Tensor{i32(5), i32(5), i32(5)}, "input_ids must be"},
		{"mask of another shape", []*tensors.Tensor{i32(2, 5), i32(2, 6), i32(2, 5)}, "attention_mask must be"},
		{"float token types", []*tensors.Tensor{i32(2, 5), i32(2, 5), tensors.FromShape(shapes.Make(dtypes.Float32, 2, 5))}, "token_type_ids must be"},
		{"one input", []*tensors.Tensor{i32(2, 5)}, "wants [input_ids, attention_mask, token_type_ids]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			exec, err := model.NewExec(backend, clf.Store(), func(s *model.Scope, inputs []*Node) *Node {
				return clf.Logits(s, inputs)
			})
			if err != nil {
				t.Fatal(err)
			}
			args := make([]any, len(c.inputs))
			for i, in := range c.inputs {
				args[i] = in
			}
			_, err = exec.Call(args...)
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("error = %v, want one containing %q", err, c.wantErr)
			}
		})
	}
}

// TestMixedPrecision checks that bfloat16 and float16 compute dtypes give logits close to the
// float32 ones (variables stay float32), on every available backend, and that a bf16
// training graph builds.
func TestMixedPrecision(t *testing.T) {
	for name, backend := range testBackends(t) {
		t.Run(name, func(t *testing.T) {
			clf, tok := newMicroModel(t, backend, 9, 12)
			enc := tok.EncodeBatch(referenceTexts)
			want := logitsOnce(t, backend, clf, enc, false)
			for _, dt := range []dtypes.DType{dtypes.BFloat16, dtypes.Float16} {
				if err := clf.SetComputeDType(dt); err != nil {
					t.Fatal(err)
				}
				got := logitsOnce(t, backend, clf, enc, false)
				d := testutil.MaxAbsDiff(t, dt.String(), got, want)
				t.Logf("%s logits: max abs diff to float32 = %.3g (logits up to %.3g)", dt, d, maxAbs(want))
				if d == 0 || d > 0.05*maxAbs(want) {
					t.Errorf("%s logits differ from float32 by %g: want a small non-zero rounding difference", dt, d)
				}
				if v := clf.Store().GetVariable("/bert/pooler/dense/weight"); v.DType() != dtypes.Float32 {
					t.Errorf("variables must stay float32, got %s", v.DType())
				}
				logitsOnce(t, backend, clf, enc, true)
			}
			if err := clf.SetComputeDType(dtypes.Int32); err == nil {
				t.Error("SetComputeDType(Int32) succeeded, want an error")
			}
		})
	}
}

func maxAbs(values []float32) float64 {
	m := 0.0
	for _, v := range values {
		m = max(m, math.Abs(float64(v)))
	}
	return m
}

// TestHeadInitialisedAsHF checks the statistics of a fresh classification head against
// BertForSequenceClassification's _init_weights: weights drawn from N(0, initializer_range²)
// (a plain normal, not truncated: about 4.6% of the draws lie beyond 2 sigma) and zero biases.
func TestHeadInitialisedAsHF(t *testing.T) {
	cfg := TinyConfig(8)
	cfg.HiddenSize, cfg.NumAttentionHeads, cfg.NumLabels = 1024, 4, 2
	store := model.NewStore()
	if err := store.SetRNGStateFromSeed(11); err != nil {
		t.Fatal(err)
	}
	clf, err := NewClassifier(cfg, store)
	if err != nil {
		t.Fatal(err)
	}
	exec, err := model.NewExec(mustGoBackend(t), store, func(s *model.Scope, g *Graph) *Node {
		return clf.Head(s, Zeros(g, shapes.Make(dtypes.Float32, 1, cfg.HiddenSize)))
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := exec.Call(); err != nil {
		t.Fatalf("running the head: %v", err)
	}
	w := tensors.MustCopyFlatData[float32](store.GetVariable("/classifier/weight").MustValue())
	b := tensors.MustCopyFlatData[float32](store.GetVariable("/classifier/bias").MustValue())
	n := float64(len(w))
	var sum, sumSq float64
	beyond2 := 0
	for _, x := range w {
		sum += float64(x)
		sumSq += float64(x) * float64(x)
		if math.Abs(float64(x)) > 2*cfg.InitializerRange {
			beyond2++
		}
	}
	mean := sum / n
	std := math.Sqrt(sumSq/n - mean*mean)
	sigma := cfg.InitializerRange
	// Bounds of about 5 standard errors for 2048 draws.
	if math.Abs(mean) > 5*sigma/math.Sqrt(n) {
		t.Errorf("head weight mean %.5f, want 0 (within %.5f)", mean, 5*sigma/math.Sqrt(n))
	}
	if math.Abs(std-sigma) > 5*sigma/math.Sqrt(2*n) {
		t.Errorf("head weight std %.5f, want initializer_range %.3f (within %.5f)", std, sigma, 5*sigma/math.Sqrt(2*n))
	}
	if frac := float64(beyond2) / n; frac < 0.02 || frac > 0.075 {
		t.Errorf("%.1f%% of the head weights lie beyond 2 sigma, want about 4.6%% (a plain, untruncated normal)", 100*frac)
	}
	for i, x := range b {
		if x != 0 {
			t.Errorf("head bias[%d] = %g, want 0", i, x)
		}
	}
	t.Logf("head weight: mean %.5f, std %.5f, %.1f%% beyond 2 sigma", mean, std, 100*float64(beyond2)/n)
}

// TestAttentionProbs checks the training path's softmax with an additive mask against
// MaskedSoftmax: the same bits on XLA (1e-7 on the pure-Go backend) for examples with a kept
// key, the same gradient to 1e-6, and finite rows that sum to 1 for an example whose keys are
// all masked.
func TestAttentionProbs(t *testing.T) {
	const b, h, l = 3, 2, 5
	keep := [b][l]bool{{true, true, true, false, false}, {true, true, true, true, true}, {}}
	for name, backend := range testBackends(t) {
		t.Run(name, func(t *testing.T) {
			exec := MustNewExec(backend, func(scores, mask, w *Node) []*Node {
				m := BroadcastToShape(mask, scores.Shape())
				got := attentionProbs(scores, mask)
				want := MaskedSoftmax(scores, m, -1)
				grads := func(p *Node) *Node { return Gradient(ReduceAllSum(Mul(p, w)), scores)[0] }
				return []*Node{got, want, grads(got), grads(want)}
			})
			scores := tensors.FromShape(shapes.Make(dtypes.Float32, b, h, l, l))
			w := tensors.FromShape(shapes.Make(dtypes.Float32, b, h, l, l))
			tensors.MutableFlatData(scores, func(v []float32) {
				for i := range v {
					v[i] = float32(math.Sin(float64(i)*1.7)) * 4
				}
			})
			tensors.MutableFlatData(w, func(v []float32) {
				for i := range v {
					v[i] = float32(math.Cos(float64(i) * 0.9))
				}
			})
			mask := tensors.FromShape(shapes.Make(dtypes.Bool, b, 1, l, l))
			tensors.MutableFlatData(mask, func(v []bool) {
				for i := range v {
					v[i] = keep[i/(l*l)][i%l]
				}
			})
			out := exec.MustExec(scores, mask, w)
			got, want := tensors.MustCopyFlatData[float32](out[0]), tensors.MustCopyFlatData[float32](out[1])
			gotGrad, wantGrad := tensors.MustCopyFlatData[float32](out[2]), tensors.MustCopyFlatData[float32](out[3])
			per := h * l * l
			for i := range 2 * per { // the examples with kept keys
				// On XLA the same bits; the pure-Go backend's fused softmax rounds differently.
				if (name == "xla-cpu" && got[i] != want[i]) || math.Abs(float64(got[i]-want[i])) > 1e-7 {
					t.Fatalf("probability %d: %g, MaskedSoftmax %g", i, got[i], want[i])
				}
				if math.Abs(float64(gotGrad[i]-wantGrad[i])) > 1e-6 {
					t.Fatalf("gradient %d: %g, MaskedSoftmax's %g", i, gotGrad[i], wantGrad[i])
				}
			}
			for row := 2 * per / l; row < 3*per/l; row++ { // every key masked: finite, sums to 1
				sum := 0.0
				for _, p := range got[row*l : (row+1)*l] {
					if math.IsNaN(float64(p)) || p < 0 || p > 1 {
						t.Fatalf("row %d of the all-masked example: probability %g", row, p)
					}
					sum += float64(p)
				}
				if math.Abs(sum-1) > 1e-6 {
					t.Fatalf("row %d of the all-masked example sums to %g", row, sum)
				}
			}
		})
	}
}

// BenchmarkAttentionProbs times the attention softmax of one MiniLM layer in training (B64, 12
// heads, L64, a quarter of the keys masked), forward and gradient, on XLA's CPU plugin, in
// nanoseconds an element: MaskedSoftmax against attentionProbs (the additive mask).
//
//	go test ./models/bert -run '^$' -bench AttentionProbs
func BenchmarkAttentionProbs(b *testing.B) {
	backend, err := xlaBackend()
	if err != nil {
		b.Skipf("SKIPPED: no XLA CPU plugin (make deps installs it): %v", err)
	}
	const batch, heads, l = 64, 12, 64
	for _, c := range []struct {
		name  string
		probs func(scores, mask *Node) *Node
	}{
		{"MaskedSoftmax", func(scores, mask *Node) *Node {
			return MaskedSoftmax(scores, BroadcastToShape(mask, scores.Shape()), -1)
		}},
		{"attentionProbs", attentionProbs},
	} {
		b.Run(c.name, func(b *testing.B) {
			exec := MustNewExec(backend, func(scores, w *Node) []*Node {
				g := scores.Graph()
				keys := Iota(g, shapes.Make(dtypes.Int32, batch, 1, l, l), 3)
				mask := LessThan(keys, Scalar(g, dtypes.Int32, 3*l/4))
				p := c.probs(scores, mask)
				return []*Node{p, Gradient(ReduceAllSum(Mul(p, w)), scores)[0]}
			})
			x := tensors.FromShape(shapes.Make(dtypes.Float32, batch, heads, l, l))
			tensors.MutableFlatData(x, func(v []float32) {
				for i := range v {
					v[i] = float32(i%97)/48 - 1
				}
			})
			run := func() {
				for _, t := range exec.MustExec(x, x) {
					t.MustFinalizeAll()
				}
			}
			run() // compiles
			b.ResetTimer()
			for range b.N {
				run()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(batch*heads*l*l), "ns/elem")
		})
	}
}
