package memplan

import (
	"fmt"
	"strings"
	"testing"
)

// TestMemoryPlanSharding: the per-device bytes of each sharding kind over 4 and 3 shards, for
// a [8, 4] weight (axis 0 divides by 4 and 2, no axis by 3), a [3] bias (divides by 3 only) and Adam's
// state (two moments each and a scalar step count).
func TestMemoryPlanSharding(t *testing.T) {
	w := Var{Bytes: 8 * 4 * 4, Dims: []int{8, 4}, Trainable: true}
	b := Var{Bytes: 3 * 4, Dims: []int{3}, Trainable: true}
	mw, mb := Var{Bytes: w.Bytes, Dims: []int{8, 4}}, Var{Bytes: b.Bytes, Dims: []int{3}}
	step := Var{Bytes: 8}
	vars := []Var{w, b, mw, mw, mb, mb, step}
	type parts struct{ weights, grads, state int64 }
	for _, tc := range []struct {
		kind string
		n    int
		want parts
	}{
		{"no", 4, parts{128 + 12, 128 + 12, 2*128 + 2*12 + 8}},
		{"", 4, parts{128 + 12, 128 + 12, 2*128 + 2*12 + 8}},
		{"zero1", 4, parts{128 + 12, 128 + 12, 2*32 + 2*12 + 8}},
		{"zero2", 4, parts{128 + 12, 32 + 12, 2*32 + 2*12 + 8}},
		{"zero3", 4, parts{32 + 12, 32 + 12, 2*32 + 2*12 + 8}},
		{"zero3", 3, parts{128 + 4, 128 + 4, 2*128 + 2*4 + 8}}, // only the bias divides by 3
		{"zero3", 2, parts{64 + 12, 64 + 12, 2*64 + 2*12 + 8}},
	} {
		t.Run(fmt.Sprintf("%q over %d", tc.kind, tc.n), func(t *testing.T) {
			p, err := Make(vars, nil, tc.kind, tc.n, 16, 0)
			if err != nil {
				t.Fatalf("%s/%d: %v", tc.kind, tc.n, err)
			}
			got := parts{p.Weights, p.Gradients, p.OptimizerState}
			if got != tc.want {
				t.Errorf("%q over %d: weights, gradients, state = %v, want %v", tc.kind, tc.n, got, tc.want)
			}
		})
	}
	// As Config.Sharding does, a variable whose axis 0 the shards do not divide is split on
	// the first axis they do (BERT's word embeddings, 30522 rows, on 4 devices).
	emb := Var{Bytes: 6 * 8 * 4, Dims: []int{6, 8}, Trainable: true}
	if p, err := Make([]Var{emb}, nil, "zero3", 4, 16, 0); err != nil || p.Weights != 6*8*4/4 {
		t.Errorf("zero3 over 4 of a [6, 8] weight: %d bytes (%v), want %d", p.Weights, err, 6*8*4/4)
	}
	if _, err := Make(vars, nil, "zero4", 2, 16, 0); err == nil || !strings.Contains(err.Error(), `"zero3"`) {
		t.Errorf("unknown kind: err = %v, want one naming the valid kinds", err)
	}
	// Temporaries: what the program needs beyond the variables it takes and the gradients.
	vars[0].InGraph, vars[1].InGraph = true, true
	p, _ := Make(vars, &Stats{Inputs: 140 + 1000, Outputs: 140 + 4, Temporary: 140 + 500}, "no", 1, 16, 0)
	if p.Temporaries != 1000+144+500 || p.Source != "XLA compiled memory statistics" {
		t.Errorf("temporaries %d (%s), want %d from XLA", p.Temporaries, p.Source, 1000+144+500)
	}
}

// TestMemoryPlanFrozen: a frozen [8, 4] weight beside a trainable [3] bias and its Adam
// moments is frozen weights, split only by zero3 (as the weights), with no gradient and no
// optimizer state; the line names it when there is one, and Largest can name it.
func TestMemoryPlanFrozen(t *testing.T) {
	frozen := Var{Bytes: 8 * 4 * 4, Dims: []int{8, 4}, Frozen: true}
	b := Var{Bytes: 3 * 4, Dims: []int{3}, Trainable: true}
	mb := Var{Bytes: b.Bytes, Dims: []int{3}}
	vars := []Var{frozen, b, mb, mb}
	type parts struct{ weights, frozen, grads, state int64 }
	for kind, want := range map[string]parts{
		"no":    {12, 128, 12, 24},
		"zero1": {12, 128, 12, 24},
		"zero2": {12, 128, 12, 24},
		"zero3": {12, 32, 12, 24},
	} {
		p, err := Make(vars, nil, kind, 4, 16, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := (parts{p.Weights, p.Frozen, p.Gradients, p.OptimizerState}); got != want {
			t.Errorf("%s over 4: weights, frozen, gradients, state = %v, want %v", kind, got, want)
		}
		if p.Total() != want.weights+want.frozen+want.grads+want.state {
			t.Errorf("%s over 4: total %d, want the sum of the parts %d", kind, p.Total(), want.weights+want.frozen+want.grads+want.state)
		}
		if name, n := p.Largest(); name != "frozen weights" || n != want.frozen {
			t.Errorf("%s over 4: largest part %s (%d), want the frozen weights (%d)", kind, name, n, want.frozen)
		}
		if s := p.String(); !strings.Contains(s, fmt.Sprintf("weights 12 B + frozen weights %d B + gradients 12 B", want.frozen)) {
			t.Errorf("%s over 4: line %q does not name the frozen weights after the weights", kind, s)
		}
	}
	if p, _ := Make([]Var{b, mb, mb}, nil, "no", 1, 16, 0); strings.Contains(p.String(), "frozen") {
		t.Errorf("a plan without frozen weights names them: %q", p.String())
	}
}
