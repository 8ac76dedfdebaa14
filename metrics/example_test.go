package metrics_test

import (
	"fmt"

	"github.com/goaccel/goaccel/metrics"
)

// Two evaluation steps gathered from the devices; the last one is padded.
func ExampleConfusion() {
	clf := metrics.NewConfusion(2)
	loss := &metrics.Mean{}
	steps := []struct {
		preds, labels []int
		losses        []float64
		real          []bool
	}{
		{[]int{1, 0, 1, 1}, []int{1, 0, 0, 1}, []float64{0.1, 0.2, 1.5, 0.3}, []bool{true, true, true, true}},
		{[]int{0, 1, 0, 1}, []int{0, 1, 0, 1}, []float64{0.4, 0.2, 0.4, 0.2}, []bool{true, true, false, false}},
	}
	for _, s := range steps {
		if err := clf.Add(s.preds, s.labels, s.real); err != nil {
			panic(err)
		}
		if err := loss.AddMasked(s.losses, s.real); err != nil {
			panic(err)
		}
	}
	fmt.Println(clf)
	fmt.Println("loss", loss)
	fmt.Println(clf.Matrix())
	// Output:
	// n=6 accuracy=0.8333 precision=0.7500 recall=1.0000 f1=0.8571 macro_f1=0.8286
	// loss 0.4500
	// [[2 1] [0 3]]
}

// A multi-label classifier's gathered logits (3 labels) and gold label sets; the last
// example is padding.
func ExampleMultiLabel() {
	m := metrics.NewMultiLabel(3)
	logits := [][]float64{
		{2.1, -0.3, -1.5}, // predicts {0}
		{0.4, 1.2, -2.0},  // predicts {0 1}
		{-1.0, -0.2, 0.0}, // predicts {}: a logit of 0 is sigmoid 0.5, not above the threshold
		{9, 9, 9},         // padding
	}
	labels := [][]int{{0}, {1}, {2}, {}}
	if err := m.Add(logits, labels, []bool{true, true, true, false}); err != nil {
		panic(err)
	}
	fmt.Println(m)
	fmt.Printf("label 1: %+v\n", m.Label(1))
	// Output:
	// n=3 subset_accuracy=0.3333 micro_precision=0.6667 micro_recall=0.6667 micro_f1=0.6667 macro_f1=0.5556
	// label 1: {Precision:1 Recall:1 F1:1 Support:1}
}

// A regression model's predictions (STS-B-like similarity scores) in two steps; the last
// slot is padding.
func ExampleRegression() {
	var r metrics.Regression
	_ = r.Add([]float64{1.0, 2.5, 3.0}, []float64{1.2, 2.0, 3.0}, nil)
	_ = r.Add([]float64{4.5, 0.0}, []float64{4.0, 5.0}, []bool{true, false})
	fmt.Println(r.String())
	rho, _ := r.Spearman()
	fmt.Printf("spearman %.1f\n", rho)

	var flat metrics.Regression
	_ = flat.Add([]float64{1, 2}, []float64{3, 3}, nil)
	_, err := flat.Pearson()
	fmt.Println(err)
	// Output:
	// n=4 mse=0.1350 mae=0.3000 pearson=0.9787 spearman=1.0000
	// spearman 1.0
	// metrics: Regression.Pearson: correlation undefined: all 2 targets equal 3, a zero variance
}

// A token classifier's gathered outputs: per sentence, the predicted (argmax) and gold tag
// ids, -100 where a position has no tag (special tokens, sub-word pieces, padding); the last
// sentence is padding.
func ExampleEntities() {
	tags := []string{"O", "B-PER", "I-PER", "B-LOC", "I-LOC"} // the model's id2label
	ner := metrics.NewEntities(tags, metrics.Conlleval)
	preds := [][]int{
		{0, 1, 2, 2, 0, 3, 0}, // [CLS] Ada Love ##lace in Paris [SEP]
		{0, 0, 3, 3, 0},       // [CLS] to New York [SEP]: York read as a LOC of its own
		{0, 0, 0},             // padding
	}
	labels := [][]int{
		{-100, 1, 2, -100, 0, 3, -100},
		{-100, 0, 3, 4, -100},
		{-100, -100, -100},
	}
	if err := ner.AddIDs(preds, labels, []bool{true, true, false}); err != nil {
		panic(err)
	}
	fmt.Println(ner)
	fmt.Print(ner.Report())
	// Output:
	// n=2 tokens=7 precision=0.5000 recall=0.6667 f1=0.5714 accuracy=0.8571 macro_f1=0.7000
	//              precision    recall  f1-score   support
	//
	//          LOC    0.3333    0.5000    0.4000         2
	//          PER    1.0000    1.0000    1.0000         1
	//
	//    micro avg    0.5000    0.6667    0.5714         3
	//    macro avg    0.6667    0.7500    0.7000         3
	// weighted avg    0.5556    0.6667    0.6000         3
}

// The two modes part on an I- tag that continues no entity of its type.
func ExampleEntityMode() {
	gold := [][]string{{"B-PER", "I-PER", "O", "B-LOC"}}
	pred := [][]string{{"B-PER", "I-PER", "O", "I-LOC"}}
	for _, mode := range []metrics.EntityMode{metrics.Conlleval, metrics.StrictIOB2} {
		ner := metrics.NewEntities(nil, mode)
		if err := ner.Add(pred, gold, nil); err != nil {
			panic(err)
		}
		fmt.Printf("%s: %v\n", mode, ner)
	}
	// Output:
	// conlleval: n=1 tokens=4 precision=1.0000 recall=1.0000 f1=1.0000 accuracy=0.7500 macro_f1=1.0000
	// strict IOB2: n=1 tokens=4 precision=1.0000 recall=0.5000 f1=0.6667 accuracy=0.7500 macro_f1=0.5000
}
