package bert

import (
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/internal/testutil"
	"github.com/gomlx/compute/dtypes"
	"golang.org/x/sys/cpu"

	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// rematChildEnv tells a re-executed test binary to compile one training step and exit.
const rematChildEnv = "GOACCEL_TEST_REMAT_CHILD"

// TestGradientCheckpointingSurvivesXLA checks that XLA's optimisation passes keep the
// recompute and that it lowers XLA's own memory plan: a training step of a small BERT (3
// layers, batch 16 x 64 tokens) is compiled in child processes, without and with
// GradientCheckpointing, in float32 and in bfloat16 (where half.Product's backward products must
// read the recomputed activations, not keep the forward pass's), each dumping its optimised
// HLO and buffer assignment (XLA_FLAGS=--xla_dump_to). With checkpointing the optimised module
// must still hold more matrix products and random draws (CSE did not merge the copies with
// the forward pass: the dropout bits are recomputed, not kept) and its temporary buffer must
// be smaller. In bfloat16 the optimised modules must also multiply bf16 operands in every
// product but the head's (XLA's CPU plugin converts any product YNNPACK cannot take to
// float32: half.Product's forms are what keep them in 16 bits).
func TestGradientCheckpointingSurvivesXLA(t *testing.T) {
	testutil.Long(t, "compiles and dumps the step four times to read XLA's optimised modules (tier 1: TestGradientCheckpointingSameTraining checks that training with checkpointing is the same)")
	if mode := os.Getenv(rematChildEnv); mode != "" {
		compileSmallStep(t, strings.HasPrefix(mode, "remat"), childDType(mode))
		return
	}
	testutil.CPUPlugin(t) // skips loudly without the plugin, fails under CI
	for _, suffix := range []string{"", "-bf16"} {
		checkRematInXLA(t, "plain"+suffix, "remat"+suffix)
	}
}

// checkRematInXLA compiles the training step in the child modes plain and remat and compares
// their optimised modules (see TestGradientCheckpointingSurvivesXLA).
func checkRematInXLA(t *testing.T, plain, remat string) {
	t.Helper()
	dots, draws, temp := map[string]int{}, map[string]int{}, map[string]int64{}
	operands := map[string]map[string]int{}
	for _, mode := range []string{plain, remat} {
		var module string
		dots[mode], draws[mode], temp[mode], module = compileInChild(t, mode)
		operands[mode] = dotOperandDTypes(module)
	}
	t.Logf("%s: optimised training step: %d matrix products, %d random draws and %d bytes of temporaries without "+
		"checkpointing, %d, %d and %d with", remat, dots[plain], draws[plain], temp[plain], dots[remat], draws[remat], temp[remat])
	if dots[remat] <= dots[plain] {
		t.Errorf("%s: XLA's optimised module has %d matrix products with checkpointing, %d without: the recompute was merged away",
			remat, dots[remat], dots[plain])
	}
	if draws[remat] <= draws[plain] {
		t.Errorf("%s: XLA's optimised module has %d random draws with checkpointing, %d without: dropout's bits are kept, not recomputed",
			remat, draws[remat], draws[plain])
	}
	if temp[remat] >= temp[plain] {
		t.Errorf("%s: XLA's temporaries: %d bytes with checkpointing, %d without: no memory saved", remat, temp[remat], temp[plain])
	}
	if !strings.HasSuffix(plain, "-bf16") {
		return
	}
	// Under bf16 every product but the 2-label head's (too small for YNNPACK) keeps bf16
	// operands through XLA's optimisation: half.Product's canonical, row-major forms. Checked on
	// CPUs with bfloat16 dot instructions, the ones this is for (measured there).
	for _, mode := range []string{plain, remat} {
		t.Logf("%s: dots by operand dtypes %v", mode, operands[mode])
		if !cpu.X86.HasAVX512BF16 && !cpu.X86.HasAMXBF16 {
			t.Logf("NOTE: this CPU has no bfloat16 dot instructions: the bf16 operands are not checked")
			continue
		}
		if f32 := dots[mode] - operands[mode]["bf16,bf16"]; f32 > 2 {
			t.Errorf("%s: %d of %d dots in XLA's optimised module do not multiply bf16 operands (%v): XLA converted them to float32",
				mode, f32, dots[mode], operands[mode])
		}
	}
}

// TestXLACPUUpcastsFP16Products pins the behaviour of XLA's CPU plugin that the plan line's
// fp16 caveat (precision.Caveat) rests on: the small BERT's training step computed in float16
// compiles to matrix products that all multiply float32 operands (the plugin converts float16
// operands to float32 for every product, YNNPACK having no float16 one). Should a new plugin
// multiply float16 operands, this fails: fp16 on CPU must then be measured again (`goaccel
// bench --precision fp32,fp16`) and the caveat revised.
func TestXLACPUUpcastsFP16Products(t *testing.T) {
	testutil.Long(t, "compiles and dumps an fp16 step to pin a plugin behaviour (tier 1: precision.TestCaveat checks the plan line that rests on it)")
	testutil.CPUPlugin(t) // skips loudly without the plugin, fails under CI
	dots, _, _, module := compileInChild(t, "plain-fp16")
	operands := dotOperandDTypes(module)
	t.Logf("fp16 training step: %d dots, by operand dtypes %v", dots, operands)
	if operands["f32,f32"] != dots {
		t.Errorf("XLA's CPU plugin kept 16-bit operands in %d of %d products under fp16 (%v): precision.Caveat's fp16 "+
			"note says it converts them all to float32; measure fp16 again and revise it", dots-operands["f32,f32"], dots, operands)
	}
}

// compileInChild compiles the small training step (compileSmallStep) in a child process in the
// given mode ("plain" or "remat", with "-bf16" or "-fp16" for 16-bit compute), dumping XLA's
// optimised modules, and returns what readXLADump reads from the dump.
func compileInChild(t *testing.T, mode string) (dots, draws int, temp int64, module string) {
	t.Helper()
	dump := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestGradientCheckpointingSurvivesXLA$", "-test.count=1")
	cmd.Env = append(os.Environ(), rematChildEnv+"="+mode, "XLA_FLAGS=--xla_dump_to="+dump)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s child: %v\n%s", mode, err, out)
	}
	return readXLADump(t, dump)
}

// childDType is the compute dtype of a child mode: BFloat16 for "-bf16", Float16 for "-fp16",
// else Float32.
func childDType(mode string) dtypes.DType {
	switch {
	case strings.HasSuffix(mode, "-bf16"):
		return dtypes.BFloat16
	case strings.HasSuffix(mode, "-fp16"):
		return dtypes.Float16
	}
	return dtypes.Float32
}

// compileSmallStep builds, compiles and runs once the SGD training step of a 3-layer BERT
// (hidden 64, 4 heads, feed-forward 256) on 16 random sequences of 64 tokens, computed in dt.
func compileSmallStep(t *testing.T, remat bool, dt dtypes.DType) {
	backend, err := xlaBackend()
	if err != nil {
		t.Fatal(err)
	}
	cfg := TinyConfig(100)
	cfg.NumHiddenLayers, cfg.NumAttentionHeads, cfg.IntermediateSize = 3, 4, 256
	cfg.GradientCheckpointing = remat
	store := model.NewStore()
	if err := store.SetRNGStateFromSeed(1); err != nil {
		t.Fatal(err)
	}
	clf, err := NewClassifier(cfg, store)
	if err != nil {
		t.Fatal(err)
	}
	if dt != dtypes.Float32 {
		if err := clf.SetComputeDType(dt); err != nil {
			t.Fatal(err)
		}
	}
	const batch, seq = 16, 64
	rng := rand.New(rand.NewPCG(1, 2))
	ids, mask, types, labels := make([]int32, batch*seq), make([]int32, batch*seq), make([]int32, batch*seq), make([]int32, batch)
	for i := range ids {
		ids[i], mask[i] = int32(rng.IntN(cfg.VocabSize)), 1
	}
	step := trainExec(t, backend, clf, optimizer.StochasticGradientDescent().Done(), nil)
	if _, err := step.Call(tensors.FromFlatDataAndDimensions(ids, batch, seq), tensors.FromFlatDataAndDimensions(mask, batch, seq),
		tensors.FromFlatDataAndDimensions(types, batch, seq), tensors.FromFlatDataAndDimensions(labels, batch)); err != nil {
		t.Fatal(err)
	}
}

// readXLADump finds the training step in an XLA dump folder (the optimised module with the
// most dot instructions) and returns its number of dots, of calls of a random bit generator,
// the size of its preallocated temporary buffer and its text.
func readXLADump(t *testing.T, dir string) (dots, draws int, temp int64, module string) {
	t.Helper()
	modules, _ := filepath.Glob(filepath.Join(dir, "*.cpu_after_optimizations.txt"))
	best := ""
	for _, m := range modules {
		b, err := os.ReadFile(m)
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(b), " dot("); n > dots {
			dots, best, module = n, m, string(b)
		}
	}
	if best == "" {
		t.Fatalf("no optimised module with a dot in the XLA dump %s (%d modules)", dir, len(modules))
	}
	draws = strings.Count(module, "to_apply=%rng")
	b, err := os.ReadFile(strings.TrimSuffix(best, ".txt") + "-buffer-assignment.txt")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^allocation \d+: size (\d+), .*preallocated-temp`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("no preallocated-temp allocation in the buffer assignment of %s", best)
	}
	temp, _ = strconv.ParseInt(string(m[1]), 10, 64)
	return dots, draws, temp, module
}

// dotOperandDTypes counts the dots of an XLA HLO module's text by their operands' element
// types ("bf16,bf16"), each operand's type read from its definition.
func dotOperandDTypes(module string) map[string]int {
	defs := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^\s*(?:ROOT )?%(\S+) = (\w+)\[`).FindAllStringSubmatch(module, -1) {
		defs[m[1]] = m[2]
	}
	n := map[string]int{}
	for _, m := range regexp.MustCompile(`(?m) dot\(%([^,\s]+), %([^,\s)]+)\)`).FindAllStringSubmatch(module, -1) {
		n[defs[m[1]]+","+defs[m[2]]]++
	}
	return n
}
