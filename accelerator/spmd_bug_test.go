package accelerator

import (
	"strings"
	"testing"

	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
)

// TestGoMLXSPMDVariablesBug pins why goaccel distributes with AutoSharding rather than
// GoMLX's explicit SPMD strategy: in GoMLX v0.28.3 with go-xla v0.4.1, a model.Exec set to
// SPMD gives every variable the store's replicated sharding spec, but the XLA builder of an
// SPMD computation registers no device mesh, so building the first parameter fails with
// "mesh ... not found". If this starts failing because it was fixed, SPMD with an explicit
// gradient all-reduce becomes an option again.
func TestGoMLXSPMDVariablesBug(t *testing.T) {
	t.Parallel()
	a := newXLA(t, 2)
	e, err := model.NewExec(a.Backend(), model.NewStore(), func(s *model.Scope, x *Node) *Node {
		return ReduceAllSum(mlpLogits(s, x))
	})
	if err != nil {
		t.Fatal(err)
	}
	e.SPMD(a.mesh)
	x, _ := toyData(4)
	_, err = e.Exec(x[:2], x[2:])
	if err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("expected GoMLX's SPMD 'mesh not found' failure, got %v", err)
	}
}
