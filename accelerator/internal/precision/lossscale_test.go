package precision

import (
	"testing"

	"github.com/gomlx/compute"
	_ "github.com/gomlx/compute/gobackend"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// TestLossScaleRulesAgree holds the two halves of fp16's loss scaling equal: the rule the
// update graph builds (Update.Finish, every run but zero1 over processes) and the rule
// applied on the host (State.Next, zero1 over processes), over a sequence of finite and
// non-finite updates that backs off, grows and restarts the growth count (interval 3).
func TestLossScaleRulesAgree(t *testing.T) {
	backend, err := compute.NewWithConfig("go:ops_sequential")
	if err != nil {
		t.Fatal(err)
	}
	defer backend.Finalize()
	const interval = 3
	s := FP16.Scaler("goaccel", interval)
	store := model.NewStore()
	e, err := model.NewExec(backend, store, func(sc *model.Scope, inputs []*Node) []*Node {
		root := sc.Store().RootScope()
		u := &Update{scaler: s, root: root, g: inputs[0].Graph(), finite: inputs[0], before: map[string]*Node{}}
		u.Finish()
		return []*Node{s.scaleVar(root).NodeValue(inputs[0].Graph())}
	})
	if err != nil {
		t.Fatal(err)
	}
	host, err := s.Read(store)
	if err != nil {
		t.Fatal(err)
	}
	for i, finite := range []bool{true, true, true, false, true, true, false, true, true, true, true} {
		outs, err := e.Exec(finite)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range outs {
			_ = o.FinalizeAll()
		}
		host = host.Next(finite)
		graph, err := s.Read(store)
		if err != nil {
			t.Fatal(err)
		}
		if graph != host {
			t.Fatalf("update %d (finite %v): the graph's rule gives %+v, the host's %+v", i+1, finite, graph, host)
		}
	}
	if host.Scale != InitScale*GrowthFactor*BackoffFactor*BackoffFactor*GrowthFactor || host.Skipped != 2 {
		t.Errorf("after the sequence: %+v", host)
	}
}

// TestScalerPutReadsBack: the state Put writes reads back equal through Read, at the paths the
// variables have had since checkpoints first carried them.
func TestScalerPutReadsBack(t *testing.T) {
	s := FP16.Scaler("goaccel", 5)
	store := model.NewStore()
	want := State{Scale: 1024, Growth: 3, Skipped: 7, interval: 5}
	paths := map[string]bool{}
	err := s.Put(want, func(path string, t *tensors.Tensor) error {
		paths[path] = true
		_, err := store.CreateVariable(path, t)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/goaccel/loss_scale", "/goaccel/loss_scale_growth", "/goaccel/skipped_updates"} {
		if !paths[p] || !s.Holds(p) {
			t.Errorf("%s: put %v, held %v; want both", p, paths[p], s.Holds(p))
		}
	}
	if s.Holds("/goaccel/grad_norm") || s.ScalePath() != "/goaccel/loss_scale" {
		t.Errorf("Holds(/goaccel/grad_norm) %v, ScalePath %q", s.Holds("/goaccel/grad_norm"), s.ScalePath())
	}
	got, err := s.Read(store)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("read back %+v, put %+v", got, want)
	}
}

// TestNoScalerScalesNothing: precisions without loss scaling have no Scaler, and a nil Scaler
// leaves the loss and the gradients as they are.
func TestNoScalerScalesNothing(t *testing.T) {
	for _, p := range []Precision{FP32, BF16} {
		if s := p.Scaler("goaccel", GrowthInterval); s != nil {
			t.Errorf("%s: Scaler %+v, want nil", p, s)
		}
	}
	var s *Scaler
	if got, u := s.Unscale(nil, nil, nil); got != nil || u != nil {
		t.Errorf("nil Scaler: Unscale gave %v, %v", got, u)
	}
	u := (*Update)(nil)
	u.Finish() // nil-safe
}
