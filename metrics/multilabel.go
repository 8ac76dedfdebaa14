package metrics

import (
	"fmt"
	"math"
	"strings"
)

// MultiLabel accumulates the results of a multi-label classifier with a fixed number K of
// labels (Hugging Face's problem_type "multi_label_classification": each example has any
// number of the K labels, none included), and derives precision, recall and F1 per label,
// their micro and macro averages, and the subset accuracy. The zero value is not usable;
// create one with NewMultiLabel.
//
// Add takes the model's logits, one per label, as a model trained with a sigmoid and binary
// cross-entropy outputs them: label k is predicted when sigmoid(logit) > the threshold, 0.5
// unless SetThreshold says otherwise. The comparison is made on the logit, logit > ln(t/(1-t)),
// so at 0.5 it is exactly logit > 0, the decision of transformers' run_classification.py.
// Probabilities p convert with logit = ln(p/(1-p)); decisions already made pass as +1 and -1.
// The gold labels of an example are the set of its label indices.
//
// Conventions (those of scikit-learn's precision_recall_fscore_support on a label indicator
// matrix, with its default zero_division="warn", which scores as 0):
//   - Per label k: Precision = TP/(TP+FP), Recall = TP/(TP+FN), F1 = 2·TP/(2·TP+FP+FN), each 0
//     when its denominator is 0.
//   - Micro: the same formulas on TP, FP and FN summed over the labels.
//   - Macro: the unweighted mean over all K labels. A label with no gold and no predicted
//     example has no defined score; it counts as 0 (scikit-learn takes every column of an
//     indicator matrix when labels=None, and zero_division="warn" gives it 0). This differs
//     from Confusion's macro averages, which leave out the absent classes as scikit-learn
//     does for single-label input.
//   - Subset accuracy (scikit-learn's accuracy_score on multi-label input): the fraction of
//     examples whose predicted set equals the gold set; no gold label and no prediction is a
//     match.
//   - With no example, every score is 0.
//
// Example with K = 3, gold sets {0}, {0 1}, {} and predicted sets {0}, {1}, {2}: label 0 has
// TP=1 FN=1 (P=1, R=0.5, F1=2/3), label 1 TP=1 (P=R=F1=1), label 2 FP=1 (all 0); micro
// P = 2/3, R = 2/3, F1 = 2/3; macro F1 = (2/3+1+0)/3 = 5/9; subset accuracy = 1/3.
type MultiLabel struct {
	numLabels   int
	threshold   float64 // on the probability
	logitCutoff float64 // ln(threshold/(1-threshold))
	counts      []prCounts
	exact       int // examples whose predicted set equals the gold set
	count       int
}

// NewMultiLabel returns an empty MultiLabel for labels 0 .. numLabels-1, with the threshold
// 0.5. numLabels below 1 is treated as 1.
func NewMultiLabel(numLabels int) *MultiLabel {
	numLabels = max(numLabels, 1)
	return &MultiLabel{numLabels: numLabels, threshold: 0.5, counts: make([]prCounts, numLabels)}
}

// SetThreshold sets the probability above which a label is predicted, for the examples added
// from now on: label k is predicted when sigmoid(logit) > p. p must lie strictly between 0
// and 1; otherwise the threshold is left as it was.
func (m *MultiLabel) SetThreshold(p float64) error {
	if !(p > 0 && p < 1) {
		return fmt.Errorf("metrics: MultiLabel.SetThreshold: threshold %g is not a probability strictly between 0 "+
			"and 1 (it applies to sigmoid(logit))", p)
	}
	m.threshold, m.logitCutoff = p, math.Log(p/(1-p)) // 0 exactly for 0.5.
	return nil
}

// Threshold returns the probability above which a label is predicted.
func (m *MultiLabel) Threshold() float64 { return m.threshold }

// Add accumulates a batch: logits[i] holds example i's K logits and labels[i] the indices of
// its gold labels (in any order; empty when it has none). real marks the real examples (true)
// and the padding (false); nil means every example is real. Rows of padding are not looked
// at. Nothing is added if a real example has a row of another length than K, a NaN logit, a
// label out of range or listed twice, or if the lengths differ; the error names the example.
func (m *MultiLabel) Add(logits [][]float64, labels [][]int, real []bool) error {
	if len(logits) != len(labels) {
		return fmt.Errorf("metrics: MultiLabel.Add: %d rows of logits but %d label sets; pass one label set per "+
			"example", len(logits), len(labels))
	}
	if real != nil && len(real) != len(logits) {
		return fmt.Errorf("metrics: MultiLabel.Add: %d examples but %d mask values; pass one mask value per example, "+
			"or nil when all are real", len(logits), len(real))
	}
	gold := make([]bool, m.numLabels)
	for i, row := range logits {
		if real != nil && !real[i] {
			continue
		}
		if len(row) != m.numLabels {
			return fmt.Errorf("metrics: MultiLabel.Add: example %d: %d logits, want %d (one per label, as "+
				"NewMultiLabel(%d) was told)", i, len(row), m.numLabels, m.numLabels)
		}
		for k, v := range row {
			if math.IsNaN(v) {
				return fmt.Errorf("metrics: MultiLabel.Add: example %d: the logit of label %d is NaN (did the model "+
					"diverge?)", i, k)
			}
		}
		clear(gold)
		for _, k := range labels[i] {
			if k < 0 || k >= m.numLabels {
				return fmt.Errorf("metrics: MultiLabel.Add: example %d: label %d out of range [0, %d); labels are "+
					"indices below NewMultiLabel's numLabels", i, k, m.numLabels)
			}
			if gold[k] {
				return fmt.Errorf("metrics: MultiLabel.Add: example %d: label %d is listed twice in %v; a label set "+
					"holds each label once", i, k, labels[i])
			}
			gold[k] = true
		}
	}
	for i, row := range logits {
		if real != nil && !real[i] {
			continue
		}
		clear(gold)
		for _, k := range labels[i] {
			gold[k] = true
		}
		match := true
		for k, v := range row {
			pred := v > m.logitCutoff
			c := &m.counts[k]
			if pred {
				c.pred++
			}
			if gold[k] {
				c.gold++
			}
			if pred && gold[k] {
				c.tp++
			}
			match = match && pred == gold[k]
		}
		if match {
			m.exact++
		}
		m.count++
	}
	return nil
}

// Merge adds the counts of other (for example, computed by another process) to m. Both must
// have the same number of labels; each keeps the decisions made at its own threshold.
func (m *MultiLabel) Merge(other *MultiLabel) error {
	if other.numLabels != m.numLabels {
		return fmt.Errorf("metrics: MultiLabel.Merge: cannot merge %d-label and %d-label results; make both with "+
			"the same NewMultiLabel(numLabels)", other.numLabels, m.numLabels)
	}
	for k := range m.counts {
		m.counts[k].add(other.counts[k])
	}
	m.exact += other.exact
	m.count += other.count
	return nil
}

// Reset forgets every example added (the threshold stays).
func (m *MultiLabel) Reset() {
	clear(m.counts)
	m.exact, m.count = 0, 0
}

// NumLabels returns the number of labels K.
func (m *MultiLabel) NumLabels() int { return m.numLabels }

// Count returns the number of (real) examples added.
func (m *MultiLabel) Count() int { return m.count }

// SubsetAccuracy returns the fraction of examples whose predicted label set equals the gold
// set exactly, or 0 with no example.
func (m *MultiLabel) SubsetAccuracy() float64 { return ratio(m.exact, m.count) }

// Label returns the scores of label k (see MultiLabel); its Support is the number of examples
// that have it. For a label out of range the scores are NaN.
func (m *MultiLabel) Label(k int) Scores {
	if k < 0 || k >= m.numLabels {
		return undefinedScores
	}
	return binaryScores(m.counts[k])
}

// Micro returns the precision, recall and F1 of the counts summed over the labels; Support
// is the number of gold labels of all examples.
func (m *MultiLabel) Micro() Scores {
	var sum prCounts
	for _, c := range m.counts {
		sum.add(c)
	}
	return binaryScores(sum)
}

// Macro returns the unweighted means over all K labels of their precision, recall and F1,
// a label with no gold and no predicted example counting as 0; Support is the number of gold
// labels of all examples.
func (m *MultiLabel) Macro() Scores {
	s := make([]Scores, m.numLabels)
	for k := range s {
		s[k] = m.Label(k)
	}
	return meanScores(s)
}

// Values returns the scores by name, for logging: "count", "subset_accuracy",
// "micro_precision", "micro_recall", "micro_f1", "macro_precision", "macro_recall" and
// "macro_f1".
func (m *MultiLabel) Values() map[string]float64 {
	mi, ma := m.Micro(), m.Macro()
	return map[string]float64{
		"count":           float64(m.count),
		"subset_accuracy": m.SubsetAccuracy(),
		"micro_precision": mi.Precision,
		"micro_recall":    mi.Recall,
		"micro_f1":        mi.F1,
		"macro_precision": ma.Precision,
		"macro_recall":    ma.Recall,
		"macro_f1":        ma.F1,
	}
}

// String returns a one-line summary, such as
// "n=500 subset_accuracy=0.4120 micro_precision=0.7010 micro_recall=0.6633 micro_f1=0.6816 macro_f1=0.5527".
func (m *MultiLabel) String() string {
	var b strings.Builder
	mi := m.Micro()
	fmt.Fprintf(&b, "n=%d subset_accuracy=%.4f micro_precision=%.4f micro_recall=%.4f micro_f1=%.4f macro_f1=%.4f",
		m.count, m.SubsetAccuracy(), mi.Precision, mi.Recall, mi.F1, m.Macro().F1)
	return b.String()
}

// binaryScores returns scikit-learn's scores of one label from its counts: F1 is
// 2·TP/(gold+predicted), each score 0 when its denominator is 0.
func binaryScores(c prCounts) Scores {
	return Scores{
		Precision: ratio(c.tp, c.pred),
		Recall:    ratio(c.tp, c.gold),
		F1:        ratio(2*c.tp, c.gold+c.pred),
		Support:   c.gold,
	}
}
