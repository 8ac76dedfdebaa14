package main

import (
	"io"
	"math"
	"testing"

	"github.com/goaccel/goaccel/internal/testutil"
	"github.com/goaccel/goaccel/models/bert"
)

// TestGradientCheckpointingFlag: --gradient_checkpointing reaches the model's configuration,
// and 4 steps of the tiny BERT with the model's own dropout give the same losses with it as
// without (1e-6 relative), data-parallel on two XLA CPU devices.
func TestGradientCheckpointingFlag(t *testing.T) {
	testutil.Long(t, "the program twice with and without --gradient_checkpointing (tier 1: models/bert TestGradientCheckpointingSameTraining checks the same training with it, TestFlags that the flag parses)")
	plugin := cpuPlugin(t)
	o := defaultOptions()
	if err := newFlagSet(&o).Parse([]string{"--gradient-checkpointing"}); err != nil {
		t.Fatal(err)
	}
	m, err := loadModel(o)
	if err != nil {
		t.Fatal(err)
	}
	if clf, ok := m.Classifier.(*bert.Classifier); !ok || !clf.Config.GradientCheckpointing {
		t.Fatalf("--gradient_checkpointing: the model (%T) does not have GradientCheckpointing on", m.Classifier)
	}
	var losses [2][]float64
	for i, on := range []bool{false, true} {
		o := defaultOptions()
		o.Backend, o.Devices, o.BatchSize, o.Epochs, o.MaxSteps, o.Workers = plugin, 2, 8, 1, 4, 0
		o.GradientCheckpointing, o.OutputDir, o.LoggingSteps = on, t.TempDir(), 1
		if _, _, err := run(o, io.Discard); err != nil {
			t.Fatalf("gradient_checkpointing=%v: %v", on, err)
		}
		losses[i] = stepLosses(t, o.OutputDir)
	}
	t.Logf("step losses: %v without, %v with --gradient_checkpointing", losses[0], losses[1])
	if len(losses[0]) != 4 || len(losses[1]) != 4 {
		t.Fatalf("want 4 step losses each, got %d and %d", len(losses[0]), len(losses[1]))
	}
	for i := range losses[0] {
		if rel := math.Abs(losses[1][i]-losses[0][i]) / losses[0][i]; !(rel <= 1e-6) {
			t.Errorf("step %d: loss %.9g with --gradient_checkpointing, %.9g without", i+1, losses[1][i], losses[0][i])
		}
	}
}
