package precision

import (
	"fmt"
	"strings"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
)

// Autocast: mixed precision for models that know nothing about it (BF16 or FP16 and a model
// without SetComputeDType). GoMLX's layers create their variables in the dtype of their
// input and a variable has no casting hook, so the step function is traced twice:
//
//  1. a dry trace in float32 on a scratch graph that is never compiled (the caller's): it
//     creates the model's variables, in float32 (the master weights), and tells which
//     variables the step function reads;
//  2. the real trace: each float32 variable it reads has, in this graph, the value
//     ConvertDType(its float32 parameter, compute dtype), and the step function gets a
//     scope of a shadow Store whose variables have the compute dtype at the same paths, so a
//     layer asking for a variable in the dtype of its (cast) input finds it. A graph keeps
//     one value per variable path whatever the Store, so reads and writes through the shadow
//     are the master's; the gradients flow back to the float32 parameters through the cast.
//
// Before the update (and after the step function) every master variable gets its float32
// value back (Autocast.Restore), so the optimizer, its state and the saved variables stay
// float32.

// Autocast is one graph's autocast: the variables read as the compute dtype.
type Autocast struct {
	g     *Graph
	vars  []*model.Variable
	param []*Node // the float32 parameter of vars[i]
	cast  []*Node // its value in the compute dtype, as the step function saw it
}

// BeginAutocast prepares the real trace, in graph g, of a step function under autocast to
// dtype dt: it casts the float32 variables of store that the dry trace found read (used, by
// path) and the float32 inputs to dt, and returns the scope of the shadow Store and the inputs
// to trace the step function with, and the Autocast whose Restore undoes the casts.
func BeginAutocast(g *Graph, store *model.Store, dt dtypes.DType, used map[string]bool, inputs []*Node) (*model.Scope, []*Node, *Autocast) {
	shadow := model.NewStore()
	for path, value := range store.RootScope().IterParams() {
		shadow.SetParam(path, value)
	}
	ac := &Autocast{g: g}
	for v := range store.IterVariables() {
		shape := v.Shape()
		if shape.DType == dtypes.Float32 {
			shape = shapes.Make(dt, shape.Dimensions...)
		}
		shadow.VariableWithShape(v.Path(), shape, nil).SetTrainable(v.Trainable)
		if !used[v.Path()] {
			continue
		}
		// The graph's entry for this path is the master variable's: model.Exec feeds it.
		value := v.NodeValue(g)
		if v.DType() == dtypes.Float32 {
			c := ConvertDType(value, dt)
			v.SetNodeValue(c)
			ac.vars, ac.param, ac.cast = append(ac.vars, v), append(ac.param, value), append(ac.cast, c)
		}
	}
	cast := make([]*Node, len(inputs))
	for i, x := range inputs {
		if x.DType() == dtypes.Float32 {
			x = ConvertDType(x, dt)
		}
		cast[i] = x
	}
	return shadow.RootScope(), cast, ac
}

// Restore gives every cast variable its float32 value back: the parameter where the step
// function only read it, its new value converted to float32 where it wrote one. Nil-safe.
func (ac *Autocast) Restore() {
	if ac == nil {
		return
	}
	for i, v := range ac.vars {
		switch cur := v.NodeValue(ac.g); {
		case cur == ac.cast[i]:
			v.SetNodeValue(ac.param[i])
		case cur.DType() != dtypes.Float32:
			v.SetNodeValue(ConvertDType(cur, dtypes.Float32))
		}
	}
	ac.vars = nil
}

// ExplainDTypeMix turns GoMLX's panic r on an op mixing dtypes, during an autocast trace under
// p, into an error that says why the dtypes differ and names the op, and its panic on a model
// that asks for a float32 variable the trace has cast (a model that handles its precision
// itself, handed to Prepare as its Store) into one that says what to pass instead; other
// panics pass unchanged.
func ExplainDTypeMix(r any, p Precision) any {
	msg := fmt.Sprint(r)
	if err, ok := r.(error); ok {
		msg = err.Error()
	}
	dt := p.ComputeDType()
	low := strings.ToLower(msg)
	if strings.Contains(low, "requested to reuse variable") && strings.Contains(msg, "("+dt.String()+")") &&
		strings.Contains(msg, "(Float32)") {
		return fmt.Errorf("accelerator: MixedPrecision %q casts the variables of a model without SetComputeDType to %s "+
			"for the step, but the model asks for one as float32, as a model that handles its own precision does "+
			"(bert.Classifier): pass the model itself to Prepare, not its Store, so that its SetComputeDType is used: %s",
			p, dt, msg)
	}
	if !strings.Contains(low, "dtype") || !strings.Contains(low, strings.ToLower(dt.String())) {
		return r
	}
	return fmt.Errorf("accelerator: MixedPrecision %q computes the model in %s, but an op mixes a %s value with a "+
		"float32 one (a float32 constant or a variable read outside the step's scope?): create constants "+
		"in the dtype of the activations (graph.Scalar(g, x.DType(), v), graph.ConstAs(x, v)): %s",
		p, dt, dt, msg)
}

// ExplainGoBackendDense turns the pure-Go backend's failure to run GoMLX's fused dense layer in
// 16 bits (err, from running a step under p on the backend named backend) into an error that
// says what failed and names the ways out: GoMLX's compute v0.1.3 builds that op
// (layers.Dense, nn.Dense) for any dtype, but its Go executor runs it only in float32 and
// float64, so the failure comes when the step first runs, too late for GoMLX's own fallback
// to the unfused layer. Other errors pass unchanged.
func ExplainGoBackendDense(err error, p Precision, backend string) error {
	if err == nil || backend != "go" || p.ComputeDType() == dtypes.Float32 {
		return err
	}
	msg := err.Error()
	if !strings.Contains(msg, "FusedDense") || !strings.Contains(msg, "not implemented") {
		return err
	}
	return fmt.Errorf("accelerator: MixedPrecision %q on the pure-Go backend: GoMLX's fused dense layer (layers.Dense, "+
		"nn.Dense) is built in %s, but this backend runs it only in float32 or float64: use XLA's CPU plugin (goaccel setup), "+
		"train this model in fp32 on the pure-Go backend, or set GOMLX_FUSION=0 (GoMLX's switch to the unfused "+
		"layer, for the whole process): %w", p, p.ComputeDType(), err)
}
