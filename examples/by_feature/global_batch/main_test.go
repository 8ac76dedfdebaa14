package main

import (
	"math"
	"regexp"
	"strconv"
	"testing"

	"github.com/goaccel/goaccel/examples/internal/exampletest"
)

// TestMain: see exampletest.Main.
func TestMain(m *testing.M) { exampletest.Main(m, main) }

// TestSameLossesOnAnyTopology: 4 updates of the global batch of 64 on one device and on four
// end at the same loss.
func TestSameLossesOnAnyTopology(t *testing.T) {
	lossOf := func(devices string) float64 {
		out := exampletest.Run(t, []string{"GOACCEL_DEVICES=" + devices}, "--steps", "4")
		m := regexp.MustCompile(`epoch 1  loss ([0-9.]+)`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("%s devices: no epoch line:\n%s", devices, out)
		}
		v, _ := strconv.ParseFloat(m[1], 64)
		return v
	}
	one, four := lossOf("1"), lossOf("4")
	if math.Abs(one-four) > 1e-4 {
		t.Errorf("loss after 4 updates: %g on 1 device, %g on 4", one, four)
	}
}
