package precision

import (
	"fmt"

	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/support/exceptions"
)

// Dynamic loss scaling, for FP16. The defaults are PyTorch GradScaler's: the loss is
// multiplied by the scale before the backward pass; at the update the gradients are divided
// by it before clipping and the optimizer; if any of them is not finite the update is skipped
// (variables and optimizer state unchanged) and the scale halved, and after the growth
// interval's finite updates in a row it is doubled.
const (
	// InitScale is the loss scale before the first update (2^16).
	InitScale = 65536.0
	// BackoffFactor multiplies the scale after an update with a non-finite gradient.
	BackoffFactor = 0.5
	// GrowthFactor multiplies the scale after the growth interval's finite updates in a row.
	GrowthFactor = 2.0
	// GrowthInterval is the default growth interval: finite updates in a row that grow the
	// scale.
	GrowthInterval = 2000
)

// The scaler's variables, in its scope: in the Store, so checkpoints carry them.
const (
	scaleName   = "loss_scale"        // float32: the scale
	growthName  = "loss_scale_growth" // int64: finite updates in a row since the scale last changed
	skippedName = "skipped_updates"   // int64: updates skipped for a non-finite gradient
)

// Scaler is fp16's dynamic loss scaling, both halves of it: the graph half, which an update
// graph builds in (ScaleLoss, Unscale, Update.Finish), and the host half, for an update made
// on the host (Read, State.Next, Put), which follows the same rule (TestLossScaleRulesAgree
// holds them equal). Its state is three variables in the Store. Get one from
// Precision.Scaler; a nil *Scaler scales nothing.
type Scaler struct {
	scope    string // the scope, under the Store's root, of the variables
	interval int64  // finite updates in a row that grow the scale
}

// path is the path in the Store of the scaler's variable name.
func (s *Scaler) path(name string) string { return "/" + s.scope + "/" + name }

// ScalePath is the path in the Store of the variable holding the scale.
func (s *Scaler) ScalePath() string { return s.path(scaleName) }

// Holds reports whether path is one of the scaler's variables in the Store.
func (s *Scaler) Holds(path string) bool {
	switch path {
	case s.path(scaleName), s.path(growthName), s.path(skippedName):
		return true
	}
	return false
}

// scaleVar is the variable holding the loss scale.
func (s *Scaler) scaleVar(root *model.Scope) *model.Variable {
	return root.At("%s", s.scope).VariableWithValue(scaleName, float32(InitScale)).SetTrainable(false)
}

func (s *Scaler) counterVar(root *model.Scope, name string) *model.Variable {
	return root.At("%s", s.scope).VariableWithValue(name, int64(0)).SetTrainable(false)
}

// ScaleLoss returns the loss to differentiate: loss (converted to float32) times the loss
// scale, or, on a nil Scaler, loss itself. op names the caller for the panic on a loss that is
// not a float scalar.
func (s *Scaler) ScaleLoss(op string, root *model.Scope, loss *Node) *Node {
	if s == nil {
		return loss
	}
	if !loss.DType().IsFloat() {
		exceptions.Panicf("accelerator: %s: MixedPrecision \"fp16\" scales the loss, which must be a float scalar; got dtype %s",
			op, loss.DType())
	}
	return Mul(ConvertDType(loss, dtypes.Float32), s.scaleVar(root).NodeValue(loss.Graph()))
}

// Update is one update graph under loss scaling, between Unscale and Finish.
type Update struct {
	scaler *Scaler
	root   *model.Scope
	g      *Graph
	finite *Node            // bool scalar: every gradient is finite
	before map[string]*Node // the value of each variable in use before the update
}

// Unscale divides the (scaled) gradients of an update, in graph g, by the loss scale and
// tells whether they are all finite; Finish, after the update is built, then makes it
// conditional on that. On a nil Scaler it returns grads unchanged and a nil Update.
func (s *Scaler) Unscale(root *model.Scope, g *Graph, grads []*Node) ([]*Node, *Update) {
	if s == nil {
		return grads, nil
	}
	inv := Inverse(s.scaleVar(root).NodeValue(g))
	out := make([]*Node, len(grads))
	var sum *Node
	for i, gr := range grads {
		out[i] = Mul(gr, ConvertDType(inv, gr.DType()))
		// One sum of every gradient: Inf or NaN anywhere makes it non-finite (finite values
		// that overflow float32 when summed are no gradient to apply either).
		sum1 := ReduceAllSum(ConvertDType(gr, dtypes.Float32))
		if sum == nil {
			sum = sum1
		} else {
			sum = Add(sum, sum1)
		}
	}
	u := &Update{scaler: s, root: root, g: g, finite: IsFinite(sum), before: make(map[string]*Node)}
	for v := range root.Store().IterVariables() {
		if v.InUseByGraph(g) {
			u.before[v.Path()] = v.NodeValue(g)
		}
	}
	return out, u
}

// Finish keeps what the update changed only where its gradients were finite (else every
// variable it changed, the optimizer's state included, keeps its value), and updates the
// scale and the counters. Nil-safe.
func (u *Update) Finish() {
	if u == nil {
		return
	}
	g, finite := u.g, u.finite
	for v := range u.root.Store().IterVariables() {
		if !v.InUseByGraph(g) {
			continue
		}
		now := v.NodeValue(g)
		old, ok := u.before[v.Path()]
		if !ok { // created by the update (the optimizer's state, on the first trace)
			if old = g.GetParameterByName(v.Path()); old == nil {
				continue
			}
		}
		if now != old {
			v.SetNodeValue(Where(finite, now, old))
		}
	}
	scaleVar := u.scaler.scaleVar(u.root)
	growthVar := u.scaler.counterVar(u.root, growthName)
	skippedVar := u.scaler.counterVar(u.root, skippedName)
	scale, growth, skipped := scaleVar.NodeValue(g), growthVar.NodeValue(g), skippedVar.NodeValue(g)
	grown := AddScalar(growth, 1)
	full := GreaterOrEqual(grown, Scalar(g, dtypes.Int64, u.scaler.interval))
	scaleVar.SetNodeValue(Where(finite,
		Where(full, MulScalar(scale, GrowthFactor), scale),
		MulScalar(scale, BackoffFactor)))
	growthVar.SetNodeValue(Where(finite, Where(full, ZerosLike(grown), grown), ZerosLike(grown)))
	skippedVar.SetNodeValue(Add(skipped, ConvertDType(LogicalNot(finite), dtypes.Int64)))
}

// State is the scaler's state read on the host: for an update made there (zero1 across
// processes, whose finite check needs every rank's slice) and for reading the scale.
type State struct {
	Scale    float32 // the loss scale the next update uses
	Growth   int64   // finite updates in a row since the scale last changed
	Skipped  int64   // updates skipped so far for a non-finite gradient
	interval int64   // finite updates in a row that grow the scale
}

// Read reads the scaler's variables from store; one without a value yet (no update made)
// reads as its initial value.
func (s *Scaler) Read(store *model.Store) (State, error) {
	st := State{Scale: InitScale, interval: s.interval}
	for _, x := range []struct {
		name string
		set  func(float64)
	}{
		{scaleName, func(f float64) { st.Scale = float32(f) }},
		{growthName, func(f float64) { st.Growth = int64(f) }},
		{skippedName, func(f float64) { st.Skipped = int64(f) }},
	} {
		v := store.GetVariable(s.path(x.name))
		if v == nil || !v.HasValue() {
			continue
		}
		t, err := v.Value()
		var f float64
		if err == nil {
			f, err = scalar(t)
		}
		if err != nil {
			return st, fmt.Errorf("reading %s: %w", v.Path(), err)
		}
		x.set(f)
	}
	return st, nil
}

// scalar reads a one-element tensor of a dtype the scaler's variables can have as a float64.
func scalar(t *tensors.Tensor) (float64, error) {
	if t.Shape().Size() != 1 {
		return 0, fmt.Errorf("want a scalar, got shape %s", t.Shape())
	}
	var out float64
	ok := true
	err := t.ConstFlatData(func(flat any) {
		switch v := flat.(type) {
		case []float32:
			out = float64(v[0])
		case []float64:
			out = v[0]
		case []int32:
			out = float64(v[0])
		case []int64:
			out = float64(v[0])
		default:
			ok = false
		}
	})
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, fmt.Errorf("a %s value cannot be read as a number", t.DType())
	}
	return out, nil
}

// Next is the state after an update whose gradients were finite or not, the rule Finish
// builds into the graph: a non-finite one is skipped, halves the scale and restarts the
// growth count; the growth interval's finite ones in a row double the scale.
func (st State) Next(finite bool) State {
	if !finite {
		return State{Scale: st.Scale * BackoffFactor, Skipped: st.Skipped + 1, interval: st.interval}
	}
	if st.Growth+1 >= st.interval {
		return State{Scale: st.Scale * GrowthFactor, Skipped: st.Skipped, interval: st.interval}
	}
	return State{Scale: st.Scale, Growth: st.Growth + 1, Skipped: st.Skipped, interval: st.interval}
}

// Put sets the scaler's variables to st with put, which sets the variable at a path of the
// Store to a tensor (the job's Store for an update made on the host).
func (s *Scaler) Put(st State, put func(path string, t *tensors.Tensor) error) error {
	for _, x := range []struct {
		name string
		t    *tensors.Tensor
	}{
		{scaleName, tensors.FromScalar(st.Scale)},
		{growthName, tensors.FromScalar(st.Growth)},
		{skippedName, tensors.FromScalar(st.Skipped)},
	} {
		if err := put(s.path(x.name), x.t); err != nil {
			return err
		}
	}
	return nil
}
