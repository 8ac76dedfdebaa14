package main

import (
	"regexp"
	"testing"

	"github.com/goaccel/goaccel/examples/internal/exampletest"
)

// TestMain: see exampletest.Main.
func TestMain(m *testing.M) { exampletest.Main(m, main) }

// TestRuns trains 3 steps in fp16 and reads the loss scale back.
func TestRuns(t *testing.T) {
	out := exampletest.Run(t, nil, "--steps", "3")
	if !regexp.MustCompile(`epoch 1  loss [0-9.]+ .*\n.*loss scale [0-9.e+]+, [0-3] updates skipped`).MatchString(out) {
		t.Errorf("want an epoch line and the loss scale:\n%s", out)
	}
}
