package metrics

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
)

// The fixtures in testdata are written by scripts/make_metrics_fixtures.py: the figures of
// seqeval, scikit-learn and scipy on random cases. Each figure must match to 1e-12, each count
// exactly.

// fixtureVersions are the reference versions the fixtures were written with.
var fixtureVersions = map[string]string{"seqeval": "1.2.2", "scikit-learn": "1.9.1", "scipy": "1.17.1", "numpy": "2.4.6"}

// readFixture decodes testdata/name into v, whose Versions must be fixtureVersions.
func readFixture(t *testing.T, name string, v any) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatalf("%v (run scripts/make_metrics_fixtures.py)", err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("testdata/%s: %v", name, err)
	}
	var head struct{ Versions map[string]string }
	_ = json.Unmarshal(data, &head)
	for k, want := range fixtureVersions {
		if head.Versions[k] != want {
			t.Errorf("testdata/%s was written with %s %s, this test expects %s", name, k, head.Versions[k], want)
		}
	}
}

// figures is a reference's [precision, recall, F1, support]; a nil figure is a NaN.
type figures [4]*float64

// checkScores compares s with the reference figures want.
func checkScores(t *testing.T, what string, s Scores, want figures) {
	t.Helper()
	got := []float64{s.Precision, s.Recall, s.F1}
	for i, name := range []string{"precision", "recall", "f1"} {
		if want[i] == nil || math.Abs(got[i]-*want[i]) > 1e-12 {
			t.Errorf("%s %s = %.17g, reference %v", what, name, got[i], fmtFigure(want[i]))
		}
	}
	if want[3] != nil && float64(s.Support) != *want[3] {
		t.Errorf("%s support = %d, reference %g", what, s.Support, *want[3])
	}
}

func fmtFigure(f *float64) string {
	if f == nil {
		return "NaN"
	}
	return fmt.Sprintf("%.17g", *f)
}

type seqevalFigures struct {
	Types                  map[string]figures
	Micro, Macro, Weighted figures
	Accuracy               float64
}

type entityCase struct {
	Name              string
	Gold, Pred        []string // sentences, tags separated by spaces
	Conlleval, Strict seqevalFigures
}

// checkEntities compares e with seqeval's figures.
func checkEntities(t *testing.T, name string, e *Entities, want seqevalFigures) {
	t.Helper()
	types := e.Types()
	wantTypes := make([]string, 0, len(want.Types))
	for typ := range want.Types {
		wantTypes = append(wantTypes, typ)
	}
	slices.Sort(wantTypes)
	if !slices.Equal(types, wantTypes) {
		t.Errorf("%s: types %v, seqeval %v", name, types, wantTypes)
	}
	for typ, w := range want.Types {
		checkScores(t, name+" "+typ, e.Type(typ), w)
	}
	checkScores(t, name+" micro", e.Micro(), want.Micro)
	if want.Macro[0] == nil {
		// No entity at all: seqeval's macro average is the mean of no scores, NaN; Macro gives
		// 0, as Micro does (see Entities).
		zero := 0.0
		want.Macro = figures{&zero, &zero, &zero, want.Macro[3]}
	}
	checkScores(t, name+" macro", e.Macro(), want.Macro)
	checkScores(t, name+" weighted", e.Weighted(), want.Weighted)
	if math.Abs(e.TokenAccuracy()-want.Accuracy) > 1e-12 {
		t.Errorf("%s: token accuracy %.17g, seqeval %.17g", name, e.TokenAccuracy(), want.Accuracy)
	}
}

// TestEntitiesParity: Entities gives seqeval's figures in both modes, with Add (tag strings)
// and with AddIDs (ids, with ignored positions and padding sentences thrown in). The modes
// differ on most cases (a stray I- is an entity in one and not in the other), so reading the
// tags in the wrong mode fails here: for "stray I after O", conlleval's micro F1 is 1 (gold
// O I-PER I-PER and predicted O B-PER I-PER both hold PER[1,2]) and strict IOB2's is 0.
func TestEntitiesParity(t *testing.T) {
	var fx struct{ Cases []entityCase }
	readFixture(t, "entities.json", &fx)
	if len(fx.Cases) < 40 {
		t.Fatalf("%d cases in testdata/entities.json, want at least 40", len(fx.Cases))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	differ, sentences := 0, 0
	for _, c := range fx.Cases {
		gold, pred := splitTags(c.Gold), splitTags(c.Pred)
		sentences += len(gold)
		if !reflect.DeepEqual(c.Conlleval, c.Strict) {
			differ++
		}
		for _, mode := range []EntityMode{Conlleval, StrictIOB2} {
			want := c.Conlleval
			if mode == StrictIOB2 {
				want = c.Strict
			}
			e := NewEntities(nil, mode)
			if err := e.Add(pred, gold, nil); err != nil {
				t.Fatalf("%s: %v", c.Name, err)
			}
			if e.Count() != len(gold) {
				t.Errorf("%s: %d sentences counted, want %d", c.Name, e.Count(), len(gold))
			}
			checkEntities(t, fmt.Sprintf("%s (%s)", c.Name, mode), e, want)

			tags, predIDs, goldIDs, real := toIDs(rng, pred, gold)
			e = NewEntities(tags, mode)
			if err := e.AddIDs(predIDs, goldIDs, real); err != nil {
				t.Fatalf("%s: AddIDs: %v", c.Name, err)
			}
			checkEntities(t, fmt.Sprintf("%s (%s, AddIDs)", c.Name, mode), e, want)
		}
	}
	if differ < len(fx.Cases)/2 {
		t.Errorf("the modes differ on only %d of %d cases: the fixture does not tell them apart", differ, len(fx.Cases))
	}
	t.Logf("%d cases (%d sentences) match seqeval in both modes; the modes differ on %d", len(fx.Cases), sentences, differ)
}

// toIDs turns tag sentences into the rows a token classifier's evaluation gathers: ids of a
// shuffled tag list, IgnoreIndex at random extra positions (sub-word pieces, padding; the
// prediction there is anything, even out of range), and padding sentences marked not real.
func toIDs(rng *rand.Rand, pred, gold [][]string) (tags []string, predIDs, goldIDs [][]int, real []bool) {
	ids := map[string]int{}
	for _, s := range slices.Concat(pred, gold) {
		for _, tag := range s {
			if _, ok := ids[tag]; !ok {
				ids[tag] = len(ids)
				tags = append(tags, tag)
			}
		}
	}
	rng.Shuffle(len(tags), func(i, j int) { tags[i], tags[j] = tags[j], tags[i] })
	for i, tag := range tags {
		ids[tag] = i
	}
	for i := range gold {
		if rng.IntN(4) == 0 { // a padding sentence before this one: garbage ids
			predIDs = append(predIDs, []int{len(tags) + 5, -3})
			goldIDs = append(goldIDs, []int{-7, len(tags)})
			real = append(real, false)
		}
		var p, g []int
		for t := range gold[i] {
			for rng.IntN(3) == 0 {
				p, g = append(p, rng.IntN(len(tags)+10)-5), append(g, IgnoreIndex)
			}
			p, g = append(p, ids[pred[i][t]]), append(g, ids[gold[i][t]])
		}
		predIDs, goldIDs, real = append(predIDs, p), append(goldIDs, g), append(real, true)
	}
	return tags, predIDs, goldIDs, real
}

type multiLabelCase struct {
	K              int
	Threshold      float64
	Logits         [][]float64
	Labels         [][]int
	Real           []bool
	PerLabel       []figures `json:"per_label"`
	Micro, Macro   figures
	SubsetAccuracy float64 `json:"subset_accuracy"`
	Count          int
}

// TestMultiLabelParity: MultiLabel gives scikit-learn's per-label, micro and macro scores and
// subset accuracy, the predictions being sigmoid(logit) > threshold, padding rows skipped.
func TestMultiLabelParity(t *testing.T) {
	var fx struct{ Cases []multiLabelCase }
	readFixture(t, "multilabel.json", &fx)
	if len(fx.Cases) < 30 {
		t.Fatalf("%d cases in testdata/multilabel.json, want at least 30", len(fx.Cases))
	}
	for i, c := range fx.Cases {
		name := fmt.Sprintf("case %d (K=%d, threshold %g)", i, c.K, c.Threshold)
		m := NewMultiLabel(c.K)
		if err := m.SetThreshold(c.Threshold); err != nil {
			t.Fatal(err)
		}
		// Two batches, to check accumulation.
		half := len(c.Logits) / 2
		var r1, r2 []bool
		if c.Real != nil {
			r1, r2 = c.Real[:half], c.Real[half:]
		}
		if err := m.Add(c.Logits[:half], c.Labels[:half], r1); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := m.Add(c.Logits[half:], c.Labels[half:], r2); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if m.Count() != c.Count {
			t.Errorf("%s: count %d, want %d", name, m.Count(), c.Count)
		}
		for k, w := range c.PerLabel {
			checkScores(t, fmt.Sprintf("%s label %d", name, k), m.Label(k), w)
		}
		c.Micro[3], c.Macro[3] = nil, nil // scikit-learn gives no support for averages
		checkScores(t, name+" micro", m.Micro(), c.Micro)
		checkScores(t, name+" macro", m.Macro(), c.Macro)
		if math.Abs(m.SubsetAccuracy()-c.SubsetAccuracy) > 1e-12 {
			t.Errorf("%s: subset accuracy %.17g, scikit-learn %.17g", name, m.SubsetAccuracy(), c.SubsetAccuracy)
		}
	}
	t.Logf("%d cases match scikit-learn", len(fx.Cases))
}

type regressionCase struct {
	Preds, Targets    []float64
	Real              []bool
	MSE, MAE          float64
	Pearson, Spearman *float64 // nil: scipy's NaN
}

// TestRegressionParity: Regression gives scikit-learn's MSE and MAE and scipy's Pearson and
// Spearman correlations; where scipy gives NaN (constant input), the correlation is an error.
func TestRegressionParity(t *testing.T) {
	var fx struct{ Cases []regressionCase }
	readFixture(t, "regression.json", &fx)
	if len(fx.Cases) < 30 {
		t.Fatalf("%d cases in testdata/regression.json, want at least 30", len(fx.Cases))
	}
	undefined := 0
	for i, c := range fx.Cases {
		var r Regression
		if err := r.Add(c.Preds, c.Targets, c.Real); err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		for _, f := range []struct {
			name      string
			got, want float64
		}{{"mse", r.MSE(), c.MSE}, {"mae", r.MAE(), c.MAE}} {
			if math.Abs(f.got-f.want) > 1e-12 {
				t.Errorf("case %d: %s %.17g, scikit-learn %.17g", i, f.name, f.got, f.want)
			}
		}
		for _, f := range []struct {
			name string
			get  func() (float64, error)
			want *float64
		}{{"pearson", r.Pearson, c.Pearson}, {"spearman", r.Spearman, c.Spearman}} {
			got, err := f.get()
			switch {
			case f.want == nil:
				undefined++
				if !errors.Is(err, ErrUndefinedCorrelation) || !math.IsNaN(got) {
					t.Errorf("case %d: %s = %g, %v; scipy gives NaN, want NaN and ErrUndefinedCorrelation", i, f.name, got, err)
				}
			case err != nil:
				t.Errorf("case %d: %s: %v; scipy gives %.17g", i, f.name, err, *f.want)
			case math.Abs(got-*f.want) > 1e-12:
				t.Errorf("case %d: %s %.17g, scipy %.17g", i, f.name, got, *f.want)
			}
		}
	}
	if undefined == 0 {
		t.Error("no case has an undefined correlation")
	}
	t.Logf("%d cases match scikit-learn and scipy (%d undefined correlations)", len(fx.Cases), undefined)
}
