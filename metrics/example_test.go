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
