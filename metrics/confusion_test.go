package metrics

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

const eps = 1e-12

func near(a, b float64) bool { return math.Abs(a-b) < eps }

// TestHandComputed checks every score against values worked out by hand (and matching
// scikit-learn's with zero_division=0).
func TestHandComputed(t *testing.T) {
	type classScores struct{ p, r, f1 float64 }
	tests := []struct {
		name                string
		numClasses          int
		labels, preds       []int
		real                []bool
		count, correct      int
		accuracy            float64
		perClass            []classScores
		macroP, macroR, mF1 float64
		confusion           [][]int
	}{
		{
			name: "binary", numClasses: 2,
			labels: []int{1, 1, 1, 1, 0, 0}, preds: []int{1, 1, 0, 0, 1, 0},
			count: 6, correct: 3, accuracy: 0.5,
			// Class 1: TP=2 FP=1 FN=2. Class 0: TP=1 FP=2 FN=1.
			perClass: []classScores{{1.0 / 3, 0.5, 0.4}, {2.0 / 3, 0.5, 4.0 / 7}},
			macroP:   0.5, macroR: 0.5, mF1: (0.4 + 4.0/7) / 2,
			confusion: [][]int{{1, 1}, {2, 2}},
		},
		{
			name: "class 2 never appears", numClasses: 3,
			labels: []int{0, 0, 1, 1}, preds: []int{0, 1, 1, 1},
			count: 4, correct: 3, accuracy: 0.75,
			perClass: []classScores{{1, 0.5, 2.0 / 3}, {2.0 / 3, 1, 0.8}, {0, 0, 0}},
			// The macro averages skip class 2, which is neither a label nor a prediction.
			macroP: (1 + 2.0/3) / 2, macroR: 0.75, mF1: (2.0/3 + 0.8) / 2,
			confusion: [][]int{{1, 1, 0}, {0, 2, 0}, {0, 0, 0}},
		},
		{
			name: "class 2 predicted but never true", numClasses: 3,
			labels: []int{0, 1, 0, 1}, preds: []int{0, 1, 2, 1},
			count: 4, correct: 3, accuracy: 0.75,
			perClass: []classScores{{1, 0.5, 2.0 / 3}, {1, 1, 1}, {0, 0, 0}},
			// Class 2 is present (predicted), so it counts, with F1 = 0.
			macroP: 2.0 / 3, macroR: 0.5, mF1: (2.0/3 + 1) / 3,
			confusion: [][]int{{1, 0, 1}, {0, 2, 0}, {0, 0, 0}},
		},
		{
			name: "padding is ignored, whatever it holds", numClasses: 2,
			labels: []int{1, 0, -7, 1, 5}, preds: []int{1, 1, 0, 9, 0},
			real:  []bool{true, true, false, false, false},
			count: 2, correct: 1, accuracy: 0.5,
			perClass: []classScores{{0, 0, 0}, {0.5, 1, 2.0 / 3}},
			macroP:   0.25, macroR: 0.5, mF1: 1.0 / 3,
			confusion: [][]int{{0, 1}, {0, 1}},
		},
		{
			name: "empty", numClasses: 2, labels: []int{}, preds: []int{},
			perClass: []classScores{{0, 0, 0}, {0, 0, 0}}, confusion: [][]int{{0, 0}, {0, 0}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := NewConfusion(tc.numClasses)
			if err := c.Add(tc.preds, tc.labels, tc.real); err != nil {
				t.Fatal(err)
			}
			if c.Count() != tc.count || c.Correct() != tc.correct || !near(c.Accuracy(), tc.accuracy) {
				t.Errorf("count=%d correct=%d accuracy=%g, want %d %d %g", c.Count(), c.Correct(), c.Accuracy(),
					tc.count, tc.correct, tc.accuracy)
			}
			for k, want := range tc.perClass {
				if p, r, f := c.Precision(k), c.Recall(k), c.F1(k); !near(p, want.p) || !near(r, want.r) || !near(f, want.f1) {
					t.Errorf("class %d: P=%g R=%g F1=%g, want %g %g %g", k, p, r, f, want.p, want.r, want.f1)
				}
			}
			if p, r, f := c.MacroPrecision(), c.MacroRecall(), c.MacroF1(); !near(p, tc.macroP) || !near(r, tc.macroR) || !near(f, tc.mF1) {
				t.Errorf("macro P=%g R=%g F1=%g, want %g %g %g", p, r, f, tc.macroP, tc.macroR, tc.mF1)
			}
			got := c.Matrix()
			if !slices.EqualFunc(got, tc.confusion, slices.Equal[[]int]) {
				t.Errorf("confusion %v, want %v", got, tc.confusion)
			}
			got[0][0] = 1000 // A copy: changing it changes nothing.
			if c.Matrix()[0][0] == 1000 {
				t.Error("Matrix returned the internal matrix")
			}
			sum := 0
			for k := range tc.numClasses {
				sum += c.Support(k)
			}
			if sum != tc.count {
				t.Errorf("supports sum to %d, want %d", sum, tc.count)
			}
		})
	}
}

func TestAddErrors(t *testing.T) {
	tests := []struct {
		name          string
		preds, labels []int
		real          []bool
		want          string
	}{
		{"lengths", []int{1}, []int{1, 0}, nil, "1 predictions but 2 labels"},
		{"mask length", []int{1}, []int{1}, []bool{true, true}, "2 mask values"},
		{"label range", []int{0, 1}, []int{0, 2}, nil, "example 1: label 2 out of range [0, 2)"},
		{"prediction range", []int{-1}, []int{0}, nil, "example 0: prediction -1 out of range"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := NewConfusion(2)
			err := c.Add(tc.preds, tc.labels, tc.real)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			if c.Count() != 0 {
				t.Error("a failed Add added examples")
			}
		})
	}
	if !math.IsNaN(NewConfusion(2).F1(2)) {
		t.Error("F1 of a class out of range should be NaN")
	}
}

func TestValuesStringMergeReset(t *testing.T) {
	c := NewConfusion(2)
	if err := c.Add([]int{1, 1, 0, 0, 1, 0}, []int{1, 1, 1, 1, 0, 0}, nil); err != nil {
		t.Fatal(err)
	}
	v := c.Values()
	for key, want := range map[string]float64{"count": 6, "accuracy": 0.5, "precision": 2.0 / 3, "recall": 0.5,
		"f1": 4.0 / 7, "macro_f1": (0.4 + 4.0/7) / 2, "macro_precision": 0.5, "macro_recall": 0.5} {
		if !near(v[key], want) {
			t.Errorf("Values()[%q] = %g, want %g", key, v[key], want)
		}
	}
	if s := c.String(); s != "n=6 accuracy=0.5000 precision=0.6667 recall=0.5000 f1=0.5714 macro_f1=0.4857" {
		t.Errorf("String() = %q", s)
	}
	if _, ok := NewConfusion(3).Values()["f1"]; ok {
		t.Error("a 3-class Values has no binary f1")
	}
	other := NewConfusion(2)
	_ = other.Add([]int{1}, []int{1}, nil)
	if err := c.Merge(other); err != nil || c.Count() != 7 || c.Correct() != 4 {
		t.Errorf("Merge: %v, count %d correct %d", err, c.Count(), c.Correct())
	}
	if err := c.Merge(NewConfusion(3)); err == nil {
		t.Error("merging different class counts should fail")
	}
	c.Reset()
	if c.Count() != 0 || c.Accuracy() != 0 || c.Matrix()[1][1] != 0 {
		t.Error("Reset left counts")
	}
}

// shardedEval simulates an evaluation over N examples on `replicas` devices with a per-device
// batch of `batch`, as the data package lays it out: DistributedSampler pads the epoch by
// wrapping to a multiple of the replica count (duplicates are not real), replica r reads
// positions r, r+R, ..., and each replica's short last batch is completed with fillers (not
// real). It returns, for each global step, the gathered positions and mask of all replicas.
func shardedEval(n, replicas, batch int, perm []int) (steps [][]int, real [][]bool) {
	total := (n + replicas - 1) / replicas * replicas
	padded := make([]int, total)
	for i := range padded {
		padded[i] = perm[i%n]
	}
	perReplica := total / replicas
	numSteps := (perReplica + batch - 1) / batch
	for s := range numSteps {
		var ids []int
		var mask []bool
		for r := range replicas {
			for b := range batch {
				k := s*batch + b // k-th example of replica r.
				pos := r + k*replicas
				switch {
				case k >= perReplica: // Filler completing the last batch: repeat the replica's first example.
					ids = append(ids, padded[r])
					mask = append(mask, false)
				default:
					ids = append(ids, padded[pos])
					mask = append(mask, pos < n) // Positions >= n are sampler duplicates.
				}
			}
		}
		steps = append(steps, ids)
		real = append(real, mask)
	}
	return steps, real
}

// TestUnevenLastBatchCountsEachExampleOnce evaluates N examples, for several N, on 4 devices:
// the padded slots are skipped so exactly N examples count, and the scores equal those of a
// single pass over the N examples.
func TestUnevenLastBatchCountsEachExampleOnce(t *testing.T) {
	const replicas, batch, classes = 4, 4, 3
	for _, n := range []int{37, 16, 1, 5, 61} {
		rng := rand.New(rand.NewPCG(uint64(n), 7))
		labels := make([]int, n)
		preds := make([]int, n)
		losses := make([]float64, n)
		for i := range n {
			labels[i] = rng.IntN(classes)
			preds[i] = labels[i]
			if rng.IntN(3) == 0 {
				preds[i] = rng.IntN(classes)
			}
			losses[i] = rng.Float64()
		}
		want := NewConfusion(classes)
		if err := want.Add(preds, labels, nil); err != nil {
			t.Fatal(err)
		}
		wantLoss := Mean{}
		_ = wantLoss.AddMasked(losses, nil)

		got := NewConfusion(classes)
		gotLoss := Mean{}
		steps, real := shardedEval(n, replicas, batch, rng.Perm(n))
		slots := 0
		for s, ids := range steps {
			p, l, ls := make([]int, len(ids)), make([]int, len(ids)), make([]float64, len(ids))
			for i, id := range ids {
				p[i], l[i], ls[i] = preds[id], labels[id], losses[id]
			}
			if err := got.Add(p, l, real[s]); err != nil {
				t.Fatal(err)
			}
			if err := gotLoss.AddMasked(ls, real[s]); err != nil {
				t.Fatal(err)
			}
			slots += len(ids)
		}
		if got.Count() != n || gotLoss.Weight() != float64(n) {
			t.Errorf("N=%d: counted %d examples (loss weight %g) in %d slots, want %d", n, got.Count(), gotLoss.Weight(), slots, n)
		}
		if !slices.EqualFunc(got.Matrix(), want.Matrix(), slices.Equal[[]int]) {
			t.Errorf("N=%d: confusion %v, want %v", n, got.Matrix(), want.Matrix())
		}
		if !near(got.Accuracy(), want.Accuracy()) || !near(got.MacroF1(), want.MacroF1()) ||
			math.Abs(gotLoss.Value()-wantLoss.Value()) > 1e-12 {
			t.Errorf("N=%d: accuracy %g macro-F1 %g loss %g, want %g %g %g", n, got.Accuracy(), got.MacroF1(),
				gotLoss.Value(), want.Accuracy(), want.MacroF1(), wantLoss.Value())
		}
		if slots == n && n%(replicas*batch) != 0 {
			t.Errorf("N=%d: the simulation produced no padding", n)
		}
	}
}

func TestAccuracyFunc(t *testing.T) {
	acc, err := Accuracy([]int{1, 0, 1, 1}, []int{1, 1, 1, 0}, []bool{true, true, true, false})
	if err != nil || !near(acc, 2.0/3) {
		t.Errorf("Accuracy = %g, %v; want 2/3", acc, err)
	}
	if _, err := Accuracy([]int{1}, nil, nil); err == nil {
		t.Error("length mismatch should fail")
	}
	if acc, _ := Accuracy(nil, nil, nil); acc != 0 {
		t.Errorf("empty accuracy %g", acc)
	}
}

// TestErrorsNameOperationAndFix: each error says which function refused what, and how to
// give it what it wants.
func TestErrorsNameOperationAndFix(t *testing.T) {
	c := NewConfusion(2)
	var m Mean
	_, accErr := Accuracy([]int{1}, []int{1}, []bool{true, false})
	for _, tc := range []struct {
		err  error
		want []string
	}{
		{c.Add([]int{1}, []int{1, 0}, nil), []string{"metrics: Confusion.Add: 1 predictions but 2 labels", "one label per prediction"}},
		{c.Add([]int{0}, []int{2}, nil), []string{"Confusion.Add: example 0: label 2 out of range [0, 2)", "numClasses"}},
		{c.Merge(NewConfusion(3)), []string{"Confusion.Merge", "same NewConfusion(numClasses)"}},
		{accErr, []string{"metrics: Accuracy: 1 predictions but 2 mask values", "or nil"}},
		{m.AddWeighted(1, -1), []string{"Mean.AddWeighted: invalid weight -1", "finite weight >= 0"}},
		{m.AddMasked([]float64{1}, []bool{true, true}), []string{"Mean.AddMasked", "one mask value per value"}},
	} {
		for _, w := range tc.want {
			if tc.err == nil || !strings.Contains(tc.err.Error(), w) {
				t.Errorf("error %v, want it to contain %q", tc.err, w)
			}
		}
	}
}
