package accelerator

import (
	"strings"
	"testing"

	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// TestErrorsNameTheOperation: the errors of the exported operations read
// "accelerator: Op: detail", with the package and the operation once each.
func TestErrorsNameTheOperation(t *testing.T) {
	t.Parallel()
	_, newErr := New(Config{Backend: "go", Quiet: true, MixedPrecision: "fp8"})
	a, err := New(Config{Backend: "go", Quiet: true})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	_, prepErr := a.Prepare(model.NewStore(), nil, nil)
	job, err := a.Prepare(model.NewStore(), optimizer.Adam().Done(), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, runErr := job.TrainStep(nil).Run(nil)
	_, stepErr := job.TrainStep(func(*model.Scope, GraphBatch) *Node { return nil }).Run(nil)
	_, evalErr := job.EvalStep(func(*model.Scope, GraphBatch) []*Node { return nil }).Run(nil)
	_, evaluateErr := job.Evaluate(nil, nil)
	_, argmaxErr := (&Gathered{}).Argmax(0)
	_, stepNumErr := job.GlobalStep()
	for _, c := range []struct {
		op  string
		err error
	}{
		{"New", newErr}, {"Prepare", prepErr}, {"TrainStep.Run", runErr}, {"TrainStep.Run", stepErr},
		{"EvalStep.Run", evalErr}, {"Evaluate", evaluateErr}, {"Gathered.Argmax", argmaxErr},
	} {
		if c.err == nil {
			t.Errorf("%s: no error", c.op)
			continue
		}
		msg := c.err.Error()
		if !strings.HasPrefix(msg, "accelerator: "+c.op+": ") || strings.Count(msg, "accelerator: ") != 1 || strings.Count(msg, c.op+": ") != 1 {
			t.Errorf("%s: error %q, want \"accelerator: %s: detail\"", c.op, msg, c.op)
		}
	}
	if stepNumErr != nil {
		t.Errorf("GlobalStep before any update: %v, want 0 and no error", stepNumErr)
	}
}
