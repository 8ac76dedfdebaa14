package accelerator

import (
	"strings"
	"testing"

	"github.com/goaccel/goaccel/optim"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
)

// TestPrepareRefusesAnOptimizerWithoutRate: an optimizer built without a learning rate (for
// trainer.Fit, whose Config.LearningRate sets it) would train at rate 0 in a hand-written
// loop: Prepare refuses it unless a schedule gives the rate.
func TestPrepareRefusesAnOptimizerWithoutRate(t *testing.T) {
	t.Parallel()
	a, err := New(Config{Backend: "go", Quiet: true})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	opt, err := optim.Adam(optim.AdamConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Prepare(model.NewStore(), opt, nil); err == nil ||
		!strings.Contains(err.Error(), "the optimizer has no learning rate (optim.AdamConfig.LearningRate = 0)") {
		t.Errorf("Prepare with a rateless optimizer and no schedule: %v, want an error", err)
	}
	schedule := WithLearningRateSchedule(func(u *Node) *Node { return OnePlus(MulScalar(u, 0)) })
	if _, err := a.Prepare(model.NewStore(), opt, nil, schedule); err != nil {
		t.Errorf("Prepare with a rateless optimizer and a schedule: %v", err)
	}
}
