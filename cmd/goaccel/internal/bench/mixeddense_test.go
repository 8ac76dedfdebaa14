package bench

import (
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/internal/testutil"
	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/dtypes/bfloat16"
	_ "github.com/gomlx/compute/gobackend" // the pure-Go backend
	"github.com/gomlx/go-xla/compute/xla"
	. "github.com/gomlx/gomlx/core/graph" //nolint:staticcheck
	"github.com/gomlx/gomlx/core/tensors"
)

// mlpDumpChildEnv tells a re-executed test binary to run the bf16 MLP worker (the XLA dump is
// in its XLA_FLAGS) and exit.
const mlpDumpChildEnv = "GOACCEL_TEST_MLP_DUMP_CHILD"

// TestMLPBF16ProductsOnBF16Operands compiles the bench MLP's bf16 training step on XLA's CPU
// plugin (in a child process, dumping XLA's optimised modules) and checks that every matrix
// product of the step, forward and backward, multiplies bf16 operands. Through GoMLX's Dot the
// forward products carried a float32 dot algorithm and both backward ones ran on float32
// operands: 9 of the default MLP's 14 products (docs/performance.md, "The MLP's bf16 step").
func TestMLPBF16ProductsOnBF16Operands(t *testing.T) {
	if os.Getenv(mlpDumpChildEnv) != "" {
		spec := Spec{Work: "mlp", Batch: 256, Hidden: 512, Layers: 2, Precision: "bf16", Devices: 1,
			Backend: os.Getenv(mlpDumpChildEnv), Warmup: 0}
		raw, _ := json.Marshal(spec)
		var out strings.Builder
		if err := WorkerMain(string(raw), strings.NewReader("run 1\nquit\n"), &out); err != nil {
			t.Fatal(err, out.String())
		}
		return
	}
	plugin := testutil.CPUPlugin(t)
	dump := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestMLPBF16ProductsOnBF16Operands$", "-test.count=1")
	cmd.Env = append(os.Environ(), mlpDumpChildEnv+"="+plugin, "XLA_FLAGS=--xla_dump_to="+dump+" --xla_dump_hlo_as_text")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	module := trainStepModule(t, dump)
	dots := dotsByOperands(module)
	t.Logf("the bf16 MLP's optimised training step: dots by operand dtypes %v", dots)
	// 2 hidden layers and the head: 3 forward products, 3 weight gradients, 2 input gradients.
	if dots["bf16,bf16"] != 8 || len(dots) != 1 {
		t.Errorf("dots by operand dtypes %v, want all 8 on bf16 operands (a float32 product means XLA converted the operands)", dots)
	}
	if strings.Contains(module, "algorithm=dot_f32_f32_f32") {
		t.Errorf("a product of the step carries the float32 dot algorithm (GoMLX's float32 accumulator)")
	}
}

// trainStepModule is the text of the optimised module with the most dots in an XLA dump folder.
func trainStepModule(t *testing.T, dir string) string {
	t.Helper()
	modules, _ := filepath.Glob(filepath.Join(dir, "*.cpu_after_optimizations.txt"))
	best, most := "", 0
	for _, m := range modules {
		b, err := os.ReadFile(m)
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(b), " dot("); n > most {
			best, most = string(b), n
		}
	}
	if best == "" {
		t.Fatalf("no optimised module with a dot in the XLA dump %s (%d modules)", dir, len(modules))
	}
	return best
}

// dotsByOperands counts an HLO module's dots by their operands' element types ("bf16,bf16"),
// each operand's type read from its definition.
func dotsByOperands(module string) map[string]int {
	defs := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^\s*(?:ROOT )?%(\S+) = (\w+)\[`).FindAllStringSubmatch(module, -1) {
		defs[m[1]] = m[2]
	}
	n := map[string]int{}
	for _, m := range regexp.MustCompile(` dot\(%([^,\s]+), %([^,\s)]+)\)`).FindAllStringSubmatch(module, -1) {
		n[defs[m[1]]+","+defs[m[2]]]++
	}
	return n
}

// TestMixedDense checks mixedDense's result and the gradients of x, w and b against GoMLX's
// float32 dense layer and its autodiff, on values bfloat16 holds exactly (so the differences are
// float32 summation order and x's gradient's rounding to bfloat16), on the pure-Go backend and
// XLA's CPU plugin: w's gradient is float32 and as exact as float32 summation, x's is bfloat16.
func TestMixedDense(t *testing.T) {
	const rows, in, out = 48, 64, 40
	backends := map[string]compute.Backend{}
	gob, err := compute.NewWithConfig("go:ops_sequential")
	if err != nil {
		t.Fatal(err)
	}
	backends["go"] = gob
	if p := testutil.FindCPUPlugin(); p != "" {
		xb, err := xla.New(p)
		if err != nil {
			t.Fatal(err)
		}
		backends["xla-cpu"] = xb
	} else {
		t.Log("NOTE: no XLA CPU plugin: only the pure-Go backend is checked")
	}
	x, w, b, gy := exactValues(rows*in, 1), exactValues(in*out, 2), exactValues(out, 3), exactValues(rows*out, 4)
	for name, backend := range backends {
		t.Run(name, func(t *testing.T) {
			run := func(mixed bool) []*tensors.Tensor {
				return MustNewExec(backend, func(x, w, b, gy *Node) []*Node {
					var y, xv *Node
					if mixed {
						xv = ConvertDType(x, dtypes.BFloat16)
						y = mixedDense(xv, w, b)
					} else {
						xv = x
						y = Add(DotProduct(x, w), InsertAxes(b, 0))
					}
					g := Gradient(ReduceAllSum(Mul(y, gy)), xv, w, b)
					for i, want := range []dtypes.DType{xv.DType(), dtypes.Float32, dtypes.Float32} {
						if g[i].DType() != want {
							t.Errorf("gradient %d is %s, want %s", i, g[i].DType(), want)
						}
					}
					return []*Node{y, ConvertDType(g[0], dtypes.Float32), g[1], g[2]}
				}).MustExec(tensors.FromFlatDataAndDimensions(x, rows, in), tensors.FromFlatDataAndDimensions(w, in, out),
					tensors.FromFlatDataAndDimensions(b, out), tensors.FromFlatDataAndDimensions(gy, rows, out))
			}
			got, want := run(true), run(false)
			for i, what := range []string{"result", "x's gradient", "w's gradient", "b's gradient"} {
				if !got[i].Shape().Equal(want[i].Shape()) {
					t.Fatalf("%s: shape %s, want %s", what, got[i].Shape(), want[i].Shape())
				}
				g, w := tensors.MustCopyFlatData[float32](got[i]), tensors.MustCopyFlatData[float32](want[i])
				scale := 0.0
				for _, v := range w {
					scale = max(scale, math.Abs(float64(v)))
				}
				tol := 1e-5 * scale
				if i == 1 {
					tol = math.Ldexp(scale, -8) // one bfloat16 rounding
				}
				if d := testutil.MaxAbsDiff(t, what, g, w); d > tol {
					t.Errorf("%s: max |difference| %.3g, want at most %.3g", what, d, tol)
				}
			}
		})
	}
}

// exactValues is n values in [-1, 1) that bfloat16 holds exactly (3 significant bits), seeded.
func exactValues(n, seed int) []float32 {
	v := make([]float32, n)
	for i := range v {
		k := (i*7919 + seed*104729) % 16
		v[i] = bfloat16.FromFloat32(float32(k-8) / 8).Float32()
	}
	return v
}
