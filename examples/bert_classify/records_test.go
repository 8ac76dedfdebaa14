package main

import (
	"io"
	"math"
	"path/filepath"
	"testing"

	"github.com/goaccel/goaccel/trainer"
)

// TestRecordsAreFits: what the program writes to metrics.jsonl is what trainer.Fit writes:
// every record has the run's elapsed time, every training record its throughput and the
// learning rate of its step.
func TestRecordsAreFits(t *testing.T) {
	o := defaultOptions()
	o.Backend, o.Devices, o.BatchSize, o.Epochs, o.MaxSteps, o.Workers = cpuPlugin(t), 1, 32, 1, 3, 0
	o.LoggingSteps, o.OutputDir = 1, t.TempDir()
	if _, _, err := run(o, io.Discard); err != nil {
		t.Fatal(err)
	}
	recs, err := trainer.ReadMetrics(filepath.Join(o.OutputDir, trainer.MetricsFile))
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, r := range recs {
		kinds[r.Kind]++
		if !(r.Elapsed > 0) {
			t.Errorf("%s record of step %d: elapsed_s %g, want the run's wall time so far", r.Kind, r.Step, r.Elapsed)
		}
		if r.Kind != trainer.KindTrain {
			continue
		}
		if !(r.ExamplesPerSec > 0) || math.IsInf(r.ExamplesPerSec, 0) {
			t.Errorf("training record of step %d: examples_per_s %g, want the throughput", r.Step, r.ExamplesPerSec)
		}
		if math.Abs(r.LR-1e-3) > 1e-9 {
			t.Errorf("training record of step %d: lr %g, want 1e-3 (the tiny model's default)", r.Step, r.LR)
		}
	}
	if kinds[trainer.KindTrain] != 3 || kinds[trainer.KindEval] != 1 {
		t.Errorf("records: %v, want 3 training records (--logging_steps 1) and 1 evaluation", kinds)
	}
}
