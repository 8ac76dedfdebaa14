package trainer

import (
	"errors"
	"strings"
	"testing"
)

// TestErrorConvention: a wrapped error of another package reads `trainer: operation: detail`,
// the detail being the inner error whole (its package prefix included), and still unwraps to
// the original; a trainer error wrapped again says "trainer: " once.
func TestErrorConvention(t *testing.T) {
	inner := errors.New("accelerator: the loss is not a scalar")
	err := wrapf(inner, "training step %d", 3)
	if got := err.Error(); got != "trainer: training step 3: accelerator: the loss is not a scalar" {
		t.Errorf("got %q", got)
	}
	if !errors.Is(err, inner) {
		t.Error("the wrapped error does not unwrap")
	}
	if strings.Count(wrapf(wrapf(inner, "a"), "b").Error(), "trainer:") != 1 {
		t.Errorf("repeated prefix: %q", wrapf(wrapf(inner, "a"), "b"))
	}
	if wrapf(nil, "x") != nil {
		t.Error("wrapf(nil) is not nil")
	}
}
