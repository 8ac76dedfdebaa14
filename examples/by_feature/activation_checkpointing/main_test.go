package main

import (
	"strings"
	"testing"

	"github.com/goaccel/goaccel/examples/internal/exampletest"
)

// TestMain: see exampletest.Main.
func TestMain(m *testing.M) { exampletest.Main(m, main) }

// TestRuns trains the BERT classifier 2 steps with activation checkpointing.
func TestRuns(t *testing.T) {
	if out := exampletest.Run(t, []string{"GOACCEL_DEVICES=2"}, "--steps", "2"); !strings.Contains(out, "epoch 1  loss") {
		t.Errorf("want an epoch line:\n%s", out)
	}
}
