package main

import (
	"strings"
	"testing"

	"github.com/goaccel/goaccel/examples/internal/exampletest"
)

// TestMain: see exampletest.Main.
func TestMain(m *testing.M) { exampletest.Main(m, main) }

// TestRuns trains 3 steps with the optimizer state sharded over 2 devices.
func TestRuns(t *testing.T) {
	out := exampletest.Run(t, []string{"GOACCEL_DEVICES=2"}, "--steps", "3")
	if !strings.Contains(out, "epoch 1  loss") || !strings.Contains(out, "optimizer state per device: ") {
		t.Errorf("want an epoch line and the optimizer state's bytes:\n%s", out)
	}
}
