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
		bad, v, ok := -1, 0.0, false
		if err := sh.Labels.ConstFlatData(func(flat any) { bad, v, ok = firstBadLabel(flat, numClasses) }); err != nil {
			return fmt.Errorf("accelerator: reading the labels: %w", err)
		}
		if !ok {
			return fmt.Errorf("accelerator: labels of dtype %s cannot be class indices", sh.Labels.DType())
		}
		if bad >= 0 {
			idx := -1
			if bad < len(sh.Indices) {
				idx = sh.Indices[bad]
			}
			return fmt.Errorf("accelerator: label %v of example %d (dataset index; batch %d of epoch %d, "+
				"device %d, row %d) is out of bounds: the loss has %d classes, so labels must be in [0, %d)",
				v, idx, gb.Index+1, gb.Epoch+1, d, bad, numClasses, numClasses)
		}
	}
	return nil
}

// firstBadLabel scans a labels tensor's flat data, without copying it, for the first value that
// is not a class index in [0, numClasses): its row and value (row -1: none). ok is false for
// a dtype that cannot hold class indices. It runs before every step, so it reads the labels'
// own dtype rather than a float64 copy of them.
func firstBadLabel(flat any, numClasses int) (row int, v float64, ok bool) {
	switch f := flat.(type) {
	case []int32:
		row, v = firstBadInt(f, numClasses)
	case []int64:
		row, v = firstBadInt(f, numClasses)
	case []int:
		row, v = firstBadInt(f, numClasses)
	case []uint8:
		row, v = firstBadInt(f, numClasses)
	default:
		vals, isNum := strategy.AsFloat64s(flat) // float labels: also checked to be whole numbers
		if !isNum {
			return -1, 0, false
		}
		for i, x := range vals {
			if x < 0 || x >= float64(numClasses) || x != float64(int64(x)) {
				return i, x, true
			}
		}
		return -1, 0, true
	}
	return row, v, true
}

// firstBadInt is firstBadLabel's scan of integer labels.
func firstBadInt[T int32 | int64 | int | uint8](vals []T, numClasses int) (int, float64) {
	n := int64(numClasses)
	for i, x := range vals {
		if int64(x) < 0 || int64(x) >= n {
			return i, float64(x)
		}
	}
	return -1, 0
}
