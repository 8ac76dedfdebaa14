package main

import (
	"io"
	"math"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/internal/testutil"
	"github.com/goaccel/goaccel/trainer"
	"github.com/goaccel/goaccel/trainer/args"
)

// TestGlobalBatchSizeFlag: --global_batch_size replaces --batch_size; both given, a zero or a
// negative one are refused naming the flags and values.
func TestGlobalBatchSizeFlag(t *testing.T) {
	parse := func(argv ...string) (options, error) {
		o := defaultOptions()
		return o, args.Parse(newFlagSet(&o), &o.Training, argv)
	}
	o, err := parse("--global-batch-size", "16")
	if err != nil || o.GlobalBatchSize != 16 || o.BatchSize != 0 {
		t.Errorf("--global_batch_size 16: %+v, %v", o, err)
	}
	if o, err := parse("--batch_size", "4"); err != nil || o.GlobalBatchSize != 0 || o.BatchSize != 4 {
		t.Errorf("--batch_size 4: %+v, %v", o, err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--global_batch_size", "16", "--batch_size", "4"}, "--batch_size 4 and --global_batch_size 16 are both given"},
		{[]string{"--global_batch_size", "0"}, "--global_batch_size 0: must be at least 1"},
		{[]string{"--global_batch_size", "-3"}, "--global_batch_size -3: must be at least 1"},
	} {
		if _, err := parse(c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
}

// TestGlobalBatchSameRunOn1To4Devices: with --global_batch_size 64 and dropout off, the tiny
// BERT computes the same step losses and reaches the same best test accuracy on 1, 3 and 4
// XLA CPU devices (on 3, the shares are 22+22+20 with 2 masked slots).
func TestGlobalBatchSameRunOn1To4Devices(t *testing.T) {
	testutil.Long(t, "the program on 1, 3 and 4 devices at one global batch (tier 1: TestTinyModelSameLossesOn1And4Devices runs the program on 1 and 4 devices; accelerator TestSameRunOnEveryTopology runs 3 devices with masked shares)")
	plugin := cpuPlugin(t)
	var ref *trainer.Result
	var refLosses []float64
	for _, devices := range []int{1, 3, 4} {
		o := defaultOptions()
		o.Backend, o.Devices, o.BatchSize, o.GlobalBatchSize = plugin, devices, 0, 64
		o.Epochs, o.Workers, o.Dropout, o.LoggingSteps = 2, 0, 0, 1
		o.OutputDir = t.TempDir()
		res, _, err := run(o, io.Discard)
		if err != nil {
			t.Fatalf("%d devices: %v", devices, err)
		}
		losses := stepLosses(t, o.OutputDir)
		if devices == 1 {
			ref, refLosses = res, losses
			continue
		}
		if len(losses) != len(refLosses) || res.Best != ref.Best || res.BestStep != ref.BestStep {
			t.Errorf("%d devices: %d steps, best accuracy %.4f (step %d); 1 device: %d steps, %.4f (step %d)",
				devices, len(losses), res.Best, res.BestStep, len(refLosses), ref.Best, ref.BestStep)
			continue
		}
		for i, l := range losses {
			if math.Abs(l-refLosses[i]) > 1e-4 {
				t.Errorf("%d devices, step %d: loss %.6f, %.6f on 1 device", devices, i+1, l, refLosses[i])
			}
		}
		t.Logf("%d devices: %d steps, best accuracy %.4f as on 1 device", devices, len(losses), res.Best)
	}
}
