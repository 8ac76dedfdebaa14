package accelerator

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/data"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// TestBatchPlanLine: Prepare's plan line names the per-device and the global batch, and the
// masked slots of a global batch that the devices do not divide (16 on 3: 6 + 6 + 4).
func TestBatchPlanLine(t *testing.T) {
	x, y := toyData(100)
	for _, c := range []struct {
		devices int
		cfg     data.LoaderConfig[toyPoint]
		want    string
	}{
		{3, data.LoaderConfig[toyPoint]{GlobalBatchSize: 16},
			"goaccel: per-device batch 6 x 3 device(s) x 1 process(es) = 18 slots: global batch 16 + 2 masked; 7 batches/epoch\n"},
		{2, data.LoaderConfig[toyPoint]{GlobalBatchSize: 16},
			"goaccel: per-device batch 8 x 2 device(s) x 1 process(es) = global batch 16; 7 batches/epoch\n"},
		{2, data.LoaderConfig[toyPoint]{BatchSize: 5},
			"goaccel: per-device batch 5 x 2 device(s) x 1 process(es) = global batch 10; 10 batches/epoch\n"},
	} {
		t.Run(fmt.Sprintf("%d devices, batch %d, global batch %d", c.devices, c.cfg.BatchSize, c.cfg.GlobalBatchSize), func(t *testing.T) {
			var out bytes.Buffer
			a, err := New(Config{Backend: cpuPlugin(t), Devices: c.devices, Seed: 7, Output: &out})
			if err != nil {
				t.Fatal(err)
			}
			c.cfg.Collate = collateToyPoints
			l, err := data.NewLoader[toyPoint](toyPoints(x, y), c.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := a.Prepare(model.NewStore(), optimizer.Adam().Done(), l); err != nil {
				t.Fatal(err)
			}
			a.Close()
			plan := lastLineWith(out.String(), "goaccel: per-device batch")
			if plan != c.want {
				t.Errorf("%d devices, %+v: plan line %q, want %q\n(output %q)", c.devices, c.cfg, plan, c.want, out.String())
			}
		})
	}
}

// lastLineWith returns the last line of out (with its newline) that contains part, or "".
func lastLineWith(out, part string) string {
	var found string
	for _, line := range strings.SplitAfter(out, "\n") {
		if strings.Contains(line, part) {
			found = line
		}
	}
	return found
}
