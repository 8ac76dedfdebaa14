package metrics

import "math"

// Scores are the precision, recall and F1 of one label, one entity type, or an average of
// them, with their support: the number of true (gold) instances they cover. MultiLabel and
// Entities return them.
type Scores struct {
	Precision, Recall, F1 float64
	Support               int
}

// undefinedScores are the scores of a label or type out of range.
var undefinedScores = Scores{Precision: math.NaN(), Recall: math.NaN(), F1: math.NaN()}

// prCounts are the counts behind precision and recall: true positives, predicted positives
// and gold positives.
type prCounts struct{ tp, pred, gold int }

func (c *prCounts) add(o prCounts) { c.tp += o.tp; c.pred += o.pred; c.gold += o.gold }

// meanScores returns the unweighted mean of s (zero Scores when s is empty), with the sum of
// the supports.
func meanScores(s []Scores) Scores {
	var out Scores
	if len(s) == 0 {
		return out
	}
	for _, x := range s {
		out.Precision += x.Precision
		out.Recall += x.Recall
		out.F1 += x.F1
		out.Support += x.Support
	}
	n := float64(len(s))
	out.Precision, out.Recall, out.F1 = out.Precision/n, out.Recall/n, out.F1/n
	return out
}
