package accelerator

import (
	"fmt"
	"github.com/goaccel/goaccel/accelerator/internal/strategy"
	"github.com/goaccel/goaccel/data"
	. "github.com/gomlx/gomlx/core/graph"
)

// Labels outside [0, C) would make a one-hot row of zeros: a classification loss would train
// on them without a word (a 2-class head fed labels 0..2 still reaches 69% accuracy). PyTorch
// raises "Target 2 is out of bounds"; goaccel checks the batch's labels on the host before each
// step whose graph uses them as class indices, and names the offending example.

// labelRangeKey attaches to a graph the class counts its batch labels are checked against.
type labelRangeKey struct{}

// requireLabelRange records that the labels node holds class indices in [0, numClasses).
func requireLabelRange(labels *Node, numClasses int) {
	g := labels.Graph()
	ranges, _ := g.State(labelRangeKey{}).(map[*Node]int)
	if ranges == nil {
		ranges = map[*Node]int{}
		g.AttachState(labelRangeKey{}, ranges)
	}
	if c, ok := ranges[labels]; !ok || numClasses < c {
		ranges[labels] = numClasses
	}
}

// labelClasses returns the class count that the graph's losses require of the batch labels
// node, or 0 when nothing uses them as class indices.
func labelClasses(b GraphBatch) int {
	if b.Labels == nil {
		return 0
	}
	ranges, _ := b.Labels.Graph().State(labelRangeKey{}).(map[*Node]int)
	return ranges[b.Labels]
}

// checkLabels returns an error naming the first example of gb whose label is not in
// [0, numClasses). numClasses <= 0 checks nothing.
func checkLabels(gb *data.GlobalBatch, numClasses int) error {
	if numClasses <= 0 || gb == nil {
		return nil
	}
	for d, sh := range gb.Shards {
		if sh.Labels == nil {
			continue
		}
		var vals []float64
		var ok bool
		if err := sh.Labels.ConstFlatData(func(flat any) { vals, ok = strategy.AsFloat64s(flat) }); err != nil {
			return fmt.Errorf("accelerator: reading the labels: %w", err)
		}
		if !ok {
			return fmt.Errorf("accelerator: labels of dtype %s cannot be class indices", sh.Labels.DType())
		}
		for i, v := range vals {
			if v < 0 || v >= float64(numClasses) || v != float64(int64(v)) {
				idx := -1
				if i < len(sh.Indices) {
					idx = sh.Indices[i]
				}
				return fmt.Errorf("accelerator: label %v of example %d (dataset index; batch %d of epoch %d, "+
					"device %d, row %d) is out of bounds: the loss has %d classes, so labels must be in [0, %d)",
					v, idx, gb.Index+1, gb.Epoch+1, d, i, numClasses, numClasses)
			}
		}
	}
	return nil
}
