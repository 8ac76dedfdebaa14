package main

import (
	"strings"
	"testing"

	"github.com/goaccel/goaccel/examples/internal/exampletest"
)

// TestMain: see exampletest.Main.
func TestMain(m *testing.M) { exampletest.Main(m, main) }

// TestRuns trains 3 steps on 2 devices, the first update checked against one device (a
// difference would fail the program).
func TestRuns(t *testing.T) {
	if out := exampletest.Run(t, []string{"GOACCEL_DEVICES=2"}, "--steps", "3"); !strings.Contains(out, "epoch 1  loss") {
		t.Errorf("want an epoch line:\n%s", out)
	}
}
