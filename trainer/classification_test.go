package trainer

import (
	"bytes"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

func toyLogits(_ int) func(s *model.Scope, inputs []*Node) *Node {
	return func(s *model.Scope, inputs []*Node) *Node { return mlp(8)(s, inputs[0]) }
}

// TestSingleLabelClassificationTask fits with the SingleLabelClassification task on 4
// devices, with an evaluation set that does not divide evenly (21 examples, 4 devices, batch
// 2), and checks its metrics against the same numbers computed here from a fresh gathered
// evaluation.
func TestSingleLabelClassificationTask(t *testing.T) {
	acc := accOn(t, 4)
	task := SingleLabelClassification(3, toyLogits(3))
	tr, err := New(acc, model.NewStore(), optimizer.Adam().Done(), task)
	if err != nil {
		t.Fatal(err)
	}
	res, err := tr.Fit(toyLoader(t, 48, 0, 2, true), toyLoader(t, 21, 700, 2, false), Config{
		OutputDir: filepath.Join(t.TempDir(), "run"), Epochs: 2, LearningRate: 0.05, BestMetric: "macro_f1",
		Output: &bytes.Buffer{}, DisableCheckpoints: true})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for k := range res.LastEval {
		names = append(names, k)
	}
	slices.Sort(names)
	want := slices.Clone(task.MetricNames)
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("metrics %v, the task declares %v", names, want)
	}
	g, err := tr.Job().Evaluate(toyLoader(t, 21, 700, 2, false), tr.Job().EvalStep(task.Eval))
	if err != nil {
		t.Fatal(err)
	}
	if g.Len() != 21 {
		t.Fatalf("gathered %d examples, want 21", g.Len())
	}
	preds, _ := g.Argmax(0)
	labels, _ := g.IntLabels()
	nll, _ := g.Floats(1)
	right, sum := 0, 0.0
	for i := range preds {
		if preds[i] == labels[i] {
			right++
		}
		sum += nll[i]
	}
	if acc := float64(right) / 21; math.Abs(res.LastEval["accuracy"]-acc) > 1e-12 {
		t.Errorf("accuracy %g, computed here %g", res.LastEval["accuracy"], acc)
	}
	if loss := sum / 21; math.Abs(res.LastEval["loss"]-loss) > 1e-6 {
		t.Errorf("loss %g, computed here %g", res.LastEval["loss"], loss)
	}
	if binary := SingleLabelClassification(2, toyLogits(2)); !slices.Contains(binary.MetricNames, "f1") {
		t.Errorf("binary classification does not offer f1: %v", binary.MetricNames)
	}
}

func TestClassificationErrors(t *testing.T) {
	acc := accOn(t, 1)
	cases := []struct {
		name string
		task Task
		best string
		want string
	}{
		{"f1 is binary only", SingleLabelClassification(3, toyLogits(3)), "f1", `"f1" is not a metric of this task; its evaluation produces: accuracy, macro_precision`},
		{"logits of the wrong width", SingleLabelClassification(4, toyLogits(3)), "", "the logits function returned shape (Float32)[4, 3], want [batch, 4]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr, err := New(acc, model.NewStore(), optimizer.Adam().Done(), c.task)
			if err != nil {
				t.Fatal(err)
			}
			_, err = tr.Fit(toyLoader(t, 16, 0, 4, true), toyLoader(t, 8, 100, 4, false), Config{
				OutputDir: filepath.Join(t.TempDir(), "run"), Epochs: 1, LearningRate: 0.05, BestMetric: c.best,
				Output: &bytes.Buffer{}})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: %v\nwant it to contain %q", c.name, err, c.want)
			}
		})
	}
}
