package main

import (
	"fmt"
	"regexp"
	"strconv"
	"testing"

	"github.com/goaccel/goaccel/examples/internal/exampletest"
)

// TestMain: see exampletest.Main.
func TestMain(m *testing.M) { exampletest.Main(m, main) }

// TestFitsTheBudget: without a budget the step runs the whole per-device batch of 32; with a
// budget one byte below its plan it runs smaller micro-batches and still trains.
func TestFitsTheBudget(t *testing.T) {
	step := regexp.MustCompile(`per-device batch (\d+) of 32, memory plan (\d+) bytes`)
	run := func(env ...string) (batch, bytes int64) {
		out := exampletest.Run(t, append(env, "GOACCEL_DEVICES=1"), "--steps", "2")
		m := step.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("%v: no plan line:\n%s", env, out)
		}
		batch, _ = strconv.ParseInt(m[1], 10, 64)
		bytes, _ = strconv.ParseInt(m[2], 10, 64)
		return batch, bytes
	}
	whole, need := run()
	if whole != 32 {
		t.Fatalf("without a budget the per-device batch is %d, want 32", whole)
	}
	if got, _ := run(fmt.Sprintf("GOACCEL_DEVICE_MEMORY=%d", need-1)); got >= 32 {
		t.Errorf("with a budget of %d bytes the per-device batch is %d, want less than 32", need-1, got)
	}
}
