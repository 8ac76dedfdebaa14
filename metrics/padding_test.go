package metrics

import (
	"math/rand/v2"
	"testing"
)

// TestTaskShapesCountEachExampleOnce evaluates N examples on 4 devices, as shardedEval lays
// them out (sampler duplicates and batch fillers marked not real), with MultiLabel,
// Regression and Entities: the figures equal those of one pass over the N examples.
func TestTaskShapesCountEachExampleOnce(t *testing.T) {
	const replicas, batch = 4, 3
	tags := []string{"O", "B-PER", "I-PER", "B-LOC", "I-LOC"}
	for _, n := range []int{37, 12, 1, 5} {
		rng := rand.New(rand.NewPCG(uint64(n), 11))
		logits, labelSets := make([][]float64, n), make([][]int, n)
		preds, targets := make([]float64, n), make([]float64, n)
		predIDs, goldIDs := make([][]int, n), make([][]int, n)
		for i := range n {
			logits[i] = []float64{rng.NormFloat64(), rng.NormFloat64()}
			if rng.IntN(2) == 0 {
				labelSets[i] = []int{rng.IntN(2)}
			}
			targets[i] = float64(rng.IntN(5)) // ties
			preds[i] = targets[i] + rng.NormFloat64()
			for range rng.IntN(6) {
				predIDs[i] = append(predIDs[i], rng.IntN(len(tags)))
				goldIDs[i] = append(goldIDs[i], rng.IntN(len(tags)))
			}
		}
		wantML, wantReg, wantNER := NewMultiLabel(2), &Regression{}, NewEntities(tags, StrictIOB2)
		if err := wantML.Add(logits, labelSets, nil); err != nil {
			t.Fatal(err)
		}
		if err := wantReg.Add(preds, targets, nil); err != nil {
			t.Fatal(err)
		}
		if err := wantNER.AddIDs(predIDs, goldIDs, nil); err != nil {
			t.Fatal(err)
		}

		gotML, gotReg, gotNER := NewMultiLabel(2), &Regression{}, NewEntities(tags, StrictIOB2)
		steps, real := shardedEval(n, replicas, batch, rng.Perm(n))
		for s, ids := range steps {
			var l [][]float64
			var ls, pi, gi [][]int
			var p, tg []float64
			for _, id := range ids {
				l, ls = append(l, logits[id]), append(ls, labelSets[id])
				p, tg = append(p, preds[id]), append(tg, targets[id])
				pi, gi = append(pi, predIDs[id]), append(gi, goldIDs[id])
			}
			if err := gotML.Add(l, ls, real[s]); err != nil {
				t.Fatal(err)
			}
			if err := gotReg.Add(p, tg, real[s]); err != nil {
				t.Fatal(err)
			}
			if err := gotNER.AddIDs(pi, gi, real[s]); err != nil {
				t.Fatal(err)
			}
		}
		if gotML.Count() != n || gotReg.Count() != n || gotNER.Count() != n {
			t.Errorf("N=%d: counted %d, %d and %d examples", n, gotML.Count(), gotReg.Count(), gotNER.Count())
		}
		if gotML.String() != wantML.String() || gotNER.Report() != wantNER.Report() || gotNER.String() != wantNER.String() {
			t.Errorf("N=%d: sharded\n%v\n%v\n%s\nwant\n%v\n%v\n%s", n, gotML, gotNER, gotNER.Report(), wantML, wantNER,
				wantNER.Report())
		}
		// The examples arrive in another order: the sums may differ in the last bits.
		for _, f := range []struct {
			name      string
			got, want float64
		}{{"mse", gotReg.MSE(), wantReg.MSE()}, {"mae", gotReg.MAE(), wantReg.MAE()}} {
			if !near(f.got, f.want) {
				t.Errorf("N=%d: %s %.17g, want %.17g", n, f.name, f.got, f.want)
			}
		}
		if n >= 2 {
			g, err1 := gotReg.Spearman()
			w, err2 := wantReg.Spearman()
			if err1 != nil || err2 != nil || !near(g, w) {
				t.Errorf("N=%d: spearman %.17g (%v), want %.17g (%v)", n, g, err1, w, err2)
			}
		}
	}
}
