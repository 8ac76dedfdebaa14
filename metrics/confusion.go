package metrics

import (
	"fmt"
	"math"
	"strings"
)

// Confusion accumulates the confusion matrix of a single-label classifier with a fixed
// number of classes, and derives accuracy, precision, recall and F1 from it. The zero value is
// not usable; create one with NewConfusion.
//
// Conventions (those of scikit-learn with zero_division=0):
//   - Precision(k) = TP/(TP+FP), and 0 when class k is never predicted (TP+FP = 0).
//   - Recall(k) = TP/(TP+FN), and 0 when class k never occurs in the labels (TP+FN = 0).
//   - F1(k) = 2·P·R/(P+R), and 0 when P+R = 0 (in particular for a class that never appears).
//   - The macro averages (MacroPrecision, MacroRecall, MacroF1) are unweighted means over the
//     classes that occur at least once among the labels or the predictions, like scikit-learn's
//     default (labels=None); a class that appears in neither has no defined score and is left
//     out. A class that is predicted but never true (or true but never predicted) is included
//     with F1 = 0.
//   - With 2 classes, the binary scores are those of class 1 (the positive class, pos_label=1).
//   - With no example, every score is 0.
//
// Example with 3 classes, labels [0 0 1 1] and predictions [0 1 1 1]: class 0 has P=1, R=0.5,
// F1=2/3; class 1 has P=2/3, R=1, F1=0.8; class 2 never appears, so F1(2)=0 and
// MacroF1 = (2/3+0.8)/2 ≈ 0.7333; accuracy = 3/4.
type Confusion struct {
	numClasses int
	confusion  [][]int // confusion[label][prediction]
	count      int
}

// NewConfusion returns an empty Confusion for classes 0 .. numClasses-1.
// numClasses must be at least 2; NewConfusion(1) and below are treated as 2.
func NewConfusion(numClasses int) *Confusion {
	numClasses = max(numClasses, 2)
	c := &Confusion{numClasses: numClasses, confusion: make([][]int, numClasses)}
	for i := range c.confusion {
		c.confusion[i] = make([]int, numClasses)
	}
	return c
}

// Add accumulates a batch of predictions and labels. real marks the real examples (true) and
// the padding (false); nil means every example is real. Nothing is added if any real example
// has a class out of range, or if the lengths differ; the error names the position.
func (c *Confusion) Add(preds, labels []int, real []bool) error {
	if err := checkLengths("Confusion.Add", preds, labels, real); err != nil {
		return err
	}
	for i := range preds {
		if real != nil && !real[i] {
			continue
		}
		if labels[i] < 0 || labels[i] >= c.numClasses {
			return fmt.Errorf("metrics: Confusion.Add: example %d: label %d out of range [0, %d); labels are class "+
				"indices below NewConfusion's numClasses", i, labels[i], c.numClasses)
		}
		if preds[i] < 0 || preds[i] >= c.numClasses {
			return fmt.Errorf("metrics: Confusion.Add: example %d: prediction %d out of range [0, %d); predictions are "+
				"class indices below NewConfusion's numClasses (is the model's head that wide?)", i, preds[i], c.numClasses)
		}
	}
	for i := range preds {
		if real != nil && !real[i] {
			continue
		}
		c.confusion[labels[i]][preds[i]]++
		c.count++
	}
	return nil
}

// Merge adds the counts of other (for example, computed by another process) to c.
func (c *Confusion) Merge(other *Confusion) error {
	if other.numClasses != c.numClasses {
		return fmt.Errorf("metrics: Confusion.Merge: cannot merge %d-class and %d-class results; make both with "+
			"the same NewConfusion(numClasses)", other.numClasses, c.numClasses)
	}
	for i := range c.confusion {
		for j := range c.confusion[i] {
			c.confusion[i][j] += other.confusion[i][j]
		}
	}
	c.count += other.count
	return nil
}

// Reset forgets every example added.
func (c *Confusion) Reset() {
	for _, row := range c.confusion {
		clear(row)
	}
	c.count = 0
}

// NumClasses returns the number of classes.
func (c *Confusion) NumClasses() int { return c.numClasses }

// Count returns the number of (real) examples added.
func (c *Confusion) Count() int { return c.count }

// Correct returns the number of examples whose prediction equals the label.
func (c *Confusion) Correct() int {
	n := 0
	for k := range c.numClasses {
		n += c.confusion[k][k]
	}
	return n
}

// Accuracy returns Correct()/Count(), or 0 with no example.
func (c *Confusion) Accuracy() float64 {
	return ratio(c.Correct(), c.count)
}

// Matrix returns a copy of the confusion matrix: Matrix()[label][prediction] counts the
// examples of that label given that prediction.
func (c *Confusion) Matrix() [][]int {
	out := make([][]int, c.numClasses)
	for i, row := range c.confusion {
		out[i] = append([]int(nil), row...)
	}
	return out
}

// Support returns the number of examples whose label is class (0 for a class out of range).
func (c *Confusion) Support(class int) int {
	if class < 0 || class >= c.numClasses {
		return 0
	}
	n := 0
	for _, v := range c.confusion[class] {
		n += v
	}
	return n
}

// predicted returns how many examples were predicted as class.
func (c *Confusion) predicted(class int) int {
	n := 0
	for _, row := range c.confusion {
		n += row[class]
	}
	return n
}

// Precision returns the precision of class (0 if never predicted; NaN for a class out of range).
func (c *Confusion) Precision(class int) float64 {
	if class < 0 || class >= c.numClasses {
		return math.NaN()
	}
	return ratio(c.confusion[class][class], c.predicted(class))
}

// Recall returns the recall of class (0 if it never occurs; NaN for a class out of range).
func (c *Confusion) Recall(class int) float64 {
	if class < 0 || class >= c.numClasses {
		return math.NaN()
	}
	return ratio(c.confusion[class][class], c.Support(class))
}

// F1 returns the F1 score of class: the harmonic mean of its precision and recall, 0 when both
// are 0 (NaN for a class out of range).
func (c *Confusion) F1(class int) float64 {
	p, r := c.Precision(class), c.Recall(class)
	if math.IsNaN(p) {
		return p
	}
	if p+r == 0 {
		return 0
	}
	return 2 * p * r / (p + r)
}

// present returns the classes that occur among the labels or the predictions.
func (c *Confusion) present() []int {
	var out []int
	for k := range c.numClasses {
		if c.Support(k) > 0 || c.predicted(k) > 0 {
			out = append(out, k)
		}
	}
	return out
}

// macro averages score over the classes present.
func (c *Confusion) macro(score func(int) float64) float64 {
	classes := c.present()
	if len(classes) == 0 {
		return 0
	}
	sum := 0.0
	for _, k := range classes {
		sum += score(k)
	}
	return sum / float64(len(classes))
}

// MacroPrecision returns the unweighted mean of the precision of the classes present.
func (c *Confusion) MacroPrecision() float64 { return c.macro(c.Precision) }

// MacroRecall returns the unweighted mean of the recall of the classes present.
func (c *Confusion) MacroRecall() float64 { return c.macro(c.Recall) }

// MacroF1 returns the unweighted mean of the F1 of the classes present (see Confusion).
func (c *Confusion) MacroF1() float64 { return c.macro(c.F1) }

// Values returns the scores by name, for logging: "count", "accuracy", "macro_precision",
// "macro_recall", "macro_f1", and with 2 classes also "precision", "recall" and "f1" of the
// positive class 1.
func (c *Confusion) Values() map[string]float64 {
	v := map[string]float64{
		"count":           float64(c.count),
		"accuracy":        c.Accuracy(),
		"macro_precision": c.MacroPrecision(),
		"macro_recall":    c.MacroRecall(),
		"macro_f1":        c.MacroF1(),
	}
	if c.numClasses == 2 {
		v["precision"], v["recall"], v["f1"] = c.Precision(1), c.Recall(1), c.F1(1)
	}
	return v
}

// String returns a one-line summary, such as
// "n=1066 accuracy=0.8124 precision=0.8051 recall=0.8217 f1=0.8133 macro_f1=0.8124".
func (c *Confusion) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "n=%d accuracy=%.4f", c.count, c.Accuracy())
	if c.numClasses == 2 {
		fmt.Fprintf(&b, " precision=%.4f recall=%.4f f1=%.4f", c.Precision(1), c.Recall(1), c.F1(1))
	}
	fmt.Fprintf(&b, " macro_f1=%.4f", c.MacroF1())
	return b.String()
}

// ratio returns a/b, or 0 when b is 0.
func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// Accuracy returns the fraction of real examples whose prediction equals the label; real may be
// nil (all real). It returns 0 with no real example.
func Accuracy(preds, labels []int, real []bool) (float64, error) {
	if err := checkLengths("Accuracy", preds, labels, real); err != nil {
		return 0, err
	}
	correct, n := 0, 0
	for i := range preds {
		if real != nil && !real[i] {
			continue
		}
		n++
		if preds[i] == labels[i] {
			correct++
		}
	}
	return ratio(correct, n), nil
}

// checkLengths checks that preds, labels and real (unless nil) have one entry per example.
func checkLengths(op string, preds, labels []int, real []bool) error {
	if len(preds) != len(labels) {
		return fmt.Errorf("metrics: %s: %d predictions but %d labels; pass one label per prediction", op, len(preds), len(labels))
	}
	if real != nil && len(real) != len(preds) {
		return fmt.Errorf("metrics: %s: %d predictions but %d mask values; pass one mask value per prediction, or nil "+
			"when all are real", op, len(preds), len(real))
	}
	return nil
}
