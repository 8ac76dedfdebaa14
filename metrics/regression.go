package metrics

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
)

// ErrUndefinedCorrelation is wrapped by the error of a correlation that has no value: with
// fewer than 2 examples, or when the predictions or the targets are all equal (a zero
// variance). Test for it with errors.Is.
var ErrUndefinedCorrelation = errors.New("correlation undefined")

// Regression accumulates the predictions and targets of a regression model with one output
// per example (Hugging Face's problem_type "regression", as for STS-B), and derives the mean
// squared error, the mean absolute error, and Pearson's and Spearman's correlations between
// predictions and targets. The zero value is empty and ready to use.
//
// It keeps every real example's pair (16 bytes each), since Spearman's correlation ranks the
// whole set; the figures are exact over the gathered set, whatever the batches:
//   - MSE = Σ(pred−target)²/n and MAE = Σ|pred−target|/n (scikit-learn's mean_squared_error and
//     mean_absolute_error), NaN with no example, since 0 would read as a perfect fit;
//   - Pearson's r as scipy.stats.pearsonr's statistic;
//   - Spearman's ρ as scipy.stats.spearmanr's: Pearson's r of the ranks, tied values sharing
//     the average of their ranks.
//
// A correlation needs at least 2 examples and predictions and targets that are not constant.
// Where it has no value, Pearson and Spearman return NaN with an error that says why (wrapping
// ErrUndefinedCorrelation), and Values logs NaN; never 0, which would read as "no
// correlation". scipy gives NaN with a warning for constant input and raises for fewer than
// 2 examples.
//
// Example: predictions [1 2 3 4] and targets [1 3 2 4]: MSE = 0.5, MAE = 0.5, r = ρ = 0.8.
// With targets [1 2 2 4], the tied targets both get rank 2.5.
type Regression struct {
	preds, targets []float64
}

// Add accumulates a batch of predictions and their targets. real marks the real examples
// (true) and the padding (false); nil means every example is real. Nothing is added if a real
// prediction or target is NaN or infinite, or if the lengths differ; the error names the
// example.
func (r *Regression) Add(preds, targets []float64, real []bool) error {
	if len(preds) != len(targets) {
		return fmt.Errorf("metrics: Regression.Add: %d predictions but %d targets; pass one target per prediction",
			len(preds), len(targets))
	}
	if real != nil && len(real) != len(preds) {
		return fmt.Errorf("metrics: Regression.Add: %d predictions but %d mask values; pass one mask value per "+
			"prediction, or nil when all are real", len(preds), len(real))
	}
	for i := range preds {
		if real != nil && !real[i] {
			continue
		}
		if math.IsNaN(preds[i]) || math.IsInf(preds[i], 0) {
			return fmt.Errorf("metrics: Regression.Add: example %d: prediction %g is not finite (did the model "+
				"diverge?)", i, preds[i])
		}
		if math.IsNaN(targets[i]) || math.IsInf(targets[i], 0) {
			return fmt.Errorf("metrics: Regression.Add: example %d: target %g is not finite; check the dataset's "+
				"labels", i, targets[i])
		}
	}
	for i := range preds {
		if real == nil || real[i] {
			r.preds = append(r.preds, preds[i])
			r.targets = append(r.targets, targets[i])
		}
	}
	return nil
}

// Merge adds the examples of other (for example, gathered by another process) to r.
func (r *Regression) Merge(other *Regression) {
	r.preds = append(r.preds, other.preds...)
	r.targets = append(r.targets, other.targets...)
}

// Reset forgets every example added.
func (r *Regression) Reset() { r.preds, r.targets = r.preds[:0], r.targets[:0] }

// Count returns the number of (real) examples added.
func (r *Regression) Count() int { return len(r.preds) }

// MSE returns the mean squared error, or NaN with no example.
func (r *Regression) MSE() float64 {
	var s sum
	for i, p := range r.preds {
		d := p - r.targets[i]
		s.add(d * d)
	}
	return s.value() / float64(len(r.preds))
}

// MAE returns the mean absolute error, or NaN with no example.
func (r *Regression) MAE() float64 {
	var s sum
	for i, p := range r.preds {
		s.add(math.Abs(p - r.targets[i]))
	}
	return s.value() / float64(len(r.preds))
}

// Pearson returns Pearson's correlation coefficient between the predictions and the targets,
// or NaN and an error wrapping ErrUndefinedCorrelation when it has no value.
func (r *Regression) Pearson() (float64, error) {
	if err := r.correlatable("Pearson"); err != nil {
		return math.NaN(), err
	}
	return pearson(r.preds, r.targets), nil
}

// Spearman returns Spearman's rank correlation coefficient between the predictions and the
// targets (ties get the average of their ranks), or NaN and an error wrapping
// ErrUndefinedCorrelation when it has no value.
func (r *Regression) Spearman() (float64, error) {
	if err := r.correlatable("Spearman"); err != nil {
		return math.NaN(), err
	}
	return pearson(ranks(r.preds), ranks(r.targets)), nil
}

// correlatable says why a correlation of the examples has no value, or nil.
func (r *Regression) correlatable(op string) error {
	n := len(r.preds)
	if n < 2 {
		return fmt.Errorf("metrics: Regression.%s: %w: %d example(s), need at least 2", op, ErrUndefinedCorrelation, n)
	}
	for _, v := range []struct {
		name   string
		values []float64
	}{{"predictions", r.preds}, {"targets", r.targets}} {
		if constant(v.values) {
			return fmt.Errorf("metrics: Regression.%s: %w: all %d %s equal %g, a zero variance", op,
				ErrUndefinedCorrelation, n, v.name, v.values[0])
		}
	}
	return nil
}

// Values returns the figures by name, for logging: "count", "mse", "mae", "pearson" and
// "spearman", the correlations NaN where they have no value (Pearson and Spearman say why).
func (r *Regression) Values() map[string]float64 {
	p, _ := r.Pearson()
	s, _ := r.Spearman()
	return map[string]float64{"count": float64(r.Count()), "mse": r.MSE(), "mae": r.MAE(), "pearson": p, "spearman": s}
}

// String returns a one-line summary, such as
// "n=1500 mse=0.5120 mae=0.5533 pearson=0.8812 spearman=0.8790"; an undefined correlation
// shows as NaN with its reason in parentheses.
func (r *Regression) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "n=%d mse=%.4f mae=%.4f", r.Count(), r.MSE(), r.MAE())
	for _, c := range []struct {
		name string
		f    func() (float64, error)
	}{{"pearson", r.Pearson}, {"spearman", r.Spearman}} {
		v, err := c.f()
		fmt.Fprintf(&b, " %s=%.4f", c.name, v)
		if err != nil {
			_, reason, _ := strings.Cut(err.Error(), ErrUndefinedCorrelation.Error()+": ")
			fmt.Fprintf(&b, " (%s)", reason)
		}
	}
	return b.String()
}

// constant reports whether every value equals the first.
func constant(x []float64) bool {
	for _, v := range x {
		if v != x[0] {
			return false
		}
	}
	return true
}

// pearson returns Pearson's r of x and y, which have at least 2 values each and are not
// constant. The deviations from the means are scaled by their largest magnitude first, so
// that their squares neither overflow nor underflow, and the result is kept within [-1, 1].
func pearson(x, y []float64) float64 {
	dx, dy := deviations(x), deviations(y)
	var sxy, sxx, syy sum
	for i := range dx {
		sxy.add(dx[i] * dy[i])
		sxx.add(dx[i] * dx[i])
		syy.add(dy[i] * dy[i])
	}
	return max(-1, min(1, sxy.value()/math.Sqrt(sxx.value()*syy.value())))
}

// deviations returns x minus its mean, divided by the largest magnitude of the result.
func deviations(x []float64) []float64 {
	var s sum
	for _, v := range x {
		s.add(v)
	}
	mean := s.value() / float64(len(x))
	d := make([]float64, len(x))
	scale := 0.0
	for i, v := range x {
		d[i] = v - mean
		scale = max(scale, math.Abs(d[i]))
	}
	if scale > 0 {
		for i := range d {
			d[i] /= scale
		}
	}
	return d
}

// ranks returns the rank of each value of x, from 1, tied values sharing the mean of the
// ranks they span: ranks([10 20 20 5]) = [2 3.5 3.5 1].
func ranks(x []float64) []float64 {
	order := make([]int, len(x))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(x[a], x[b]) })
	out := make([]float64, len(x))
	for lo := 0; lo < len(order); {
		hi := lo + 1
		for hi < len(order) && x[order[hi]] == x[order[lo]] {
			hi++
		}
		// Positions lo..hi-1 hold ranks lo+1..hi; their mean is (lo+1+hi)/2.
		r := float64(lo+1+hi) / 2
		for _, i := range order[lo:hi] {
			out[i] = r
		}
		lo = hi
	}
	return out
}

// sum is a compensated (Neumaier) sum: its error does not grow with the number of terms, so
// that the figures of a large evaluation set keep their last digits.
type sum struct{ s, c float64 }

func (s *sum) add(v float64) {
	t := s.s + v
	if math.Abs(s.s) >= math.Abs(v) {
		s.c += (s.s - t) + v
	} else {
		s.c += (v - t) + s.s
	}
	s.s = t
}

func (s *sum) value() float64 { return s.s + s.c }
