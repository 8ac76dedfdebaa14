package metrics

import (
	"fmt"
	"math"
)

// Mean accumulates a weighted mean, such as the mean loss over an evaluation set. The zero value
// is an empty mean, ready to use.
type Mean struct {
	sum, weight float64
}

// Add adds one value with weight 1.
func (m *Mean) Add(value float64) { m.sum += value; m.weight++ }

// AddWeighted adds a value with a weight: the mean loss of a batch with its number of real
// examples, for instance. Weights must be >= 0 and values finite; otherwise nothing is added.
func (m *Mean) AddWeighted(value, weight float64) error {
	if weight < 0 || math.IsNaN(weight) || math.IsInf(weight, 0) {
		return fmt.Errorf("metrics: Mean.AddWeighted: invalid weight %g; want a finite weight >= 0", weight)
	}
	if math.IsNaN(value) || math.IsInf(value, 0) {
		return fmt.Errorf("metrics: Mean.AddWeighted: non-finite value %g (did the loss diverge?)", value)
	}
	m.sum += value * weight
	m.weight += weight
	return nil
}

// AddMasked adds the values of the real examples (real[i] true); real may be nil (all real).
// Nothing is added if the lengths differ or a real value is not finite; the error names the position.
func (m *Mean) AddMasked(values []float64, real []bool) error {
	if real != nil && len(real) != len(values) {
		return fmt.Errorf("metrics: Mean.AddMasked: %d values but %d mask values; pass one mask value per value, or "+
			"nil when all are real", len(values), len(real))
	}
	sum, n := 0.0, 0
	for i, v := range values {
		if real != nil && !real[i] {
			continue
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("metrics: Mean.AddMasked: example %d: non-finite value %g (did the loss diverge?)", i, v)
		}
		sum += v
		n++
	}
	m.sum += sum
	m.weight += float64(n)
	return nil
}

// Merge adds the values accumulated by other.
func (m *Mean) Merge(other Mean) { m.sum += other.sum; m.weight += other.weight }

// Reset empties the mean.
func (m *Mean) Reset() { *m = Mean{} }

// Value returns the mean, or 0 if nothing was added.
func (m *Mean) Value() float64 {
	if m.weight == 0 {
		return 0
	}
	return m.sum / m.weight
}

// Weight returns the total weight added (the number of values, with unit weights).
func (m *Mean) Weight() float64 { return m.weight }

// String returns the mean with 4 decimals.
func (m *Mean) String() string { return fmt.Sprintf("%.4f", m.Value()) }
