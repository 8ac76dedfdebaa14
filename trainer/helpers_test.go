package trainer

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/goaccel/goaccel/accelerator"
	"github.com/goaccel/goaccel/accelerator/acceltest"
	"github.com/goaccel/goaccel/data"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/layers"
	"github.com/gomlx/gomlx/ml/model"
)

// cpuPlugin finds the XLA CPU PJRT plugin. Without one the test is skipped loudly, except
// under CI (CI set), where its absence fails the test.
func cpuPlugin(t testing.TB) string {
	t.Helper()
	return acceltest.CPUPlugin(t)
}

var (
	accMu sync.Mutex
	accs  = map[int]*accelerator.Accelerator{}
)

// accOn returns an Accelerator on n XLA CPU devices, shared by the tests of the package
// (creating a PJRT client is the slow part); TestMain closes them.
func accOn(t testing.TB, n int) *accelerator.Accelerator {
	t.Helper()
	plugin := cpuPlugin(t)
	accMu.Lock()
	defer accMu.Unlock()
	if a, ok := accs[n]; ok {
		return a
	}
	a, err := accelerator.New(accelerator.Config{Backend: plugin, Devices: n, Quiet: true, Seed: 7})
	if err != nil {
		t.Fatalf("accelerator.New(%d devices): %v", n, err)
	}
	accs[n] = a
	return a
}

func TestMain(m *testing.M) {
	if dir := os.Getenv(fitWorkerEnv); dir != "" {
		code := 0
		if err := fitWorker(dir); err != nil {
			fmt.Println("worker error:", err)
			code = 3
		}
		accelerator.Exit(code)
	}
	code := m.Run()
	for _, a := range accs {
		a.Close()
	}
	os.Exit(code)
}

// example is one row of the toy classification problem.
type example struct {
	x []float32
	y int32
}

// toyExamples makes n examples of a 3-class problem over 8 features, deterministic, with a
// learnable signal.
func toyExamples(n, offset int) data.Slice[example] {
	out := make(data.Slice[example], n)
	for k := range n {
		i := k + offset
		row := make([]float32, 8)
		for j := range row {
			row[j] = float32((i*7+j*13)%17)/17 - 0.5
		}
		y := int32((i * 5) % 3)
		row[y] += 1
		out[k] = example{x: row, y: y}
	}
	return out
}

func collateToy(ex []example) ([]*tensors.Tensor, *tensors.Tensor, error) {
	xs := make([][]float32, len(ex))
	ys := make([]int32, len(ex))
	for i, e := range ex {
		xs[i], ys[i] = e.x, e.y
	}
	return []*tensors.Tensor{tensors.FromValue(xs)}, tensors.FromValue(ys), nil
}

// toyLoader returns a loader over n toy examples (offset shifts them, for a test split).
func toyLoader(t testing.TB, n, offset, batch int, shuffle bool) *data.Loader[example] {
	t.Helper()
	l, err := data.NewLoader(toyExamples(n, offset), data.LoaderConfig[example]{
		BatchSize: batch, Shuffle: shuffle, Seed: 3, Collate: collateToy})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// mlp is the toy model: 8 -> hidden (tanh) -> 3 logits.
func mlp(hidden int) func(s *model.Scope, x *Node) *Node { return mlpDropout(hidden, 0) }

// mlpDropout is mlp with dropout at the given rate on the hidden layer, active in training
// only (0: none).
func mlpDropout(hidden int, rate float64) func(s *model.Scope, x *Node) *Node {
	return func(s *model.Scope, x *Node) *Node {
		h := Tanh(layers.Dense(s.In("hidden"), x, true, hidden))
		h = layers.DropoutStatic(s, h, rate)
		return layers.Dense(s.In("out"), h, true, 3)
	}
}

// toyTask trains the toy MLP as a SingleLabelClassification task (3 classes): cross-entropy,
// and accuracy, loss and the other classification metrics from the gathered outputs.
func toyTask(hidden int) Task { return toyDropoutTask(hidden, 0) }

// toyDropoutTask is toyTask with dropout at the given rate on the hidden layer.
func toyDropoutTask(hidden int, dropout float64) Task {
	logits := mlpDropout(hidden, dropout)
	return SingleLabelClassification(3, func(s *model.Scope, inputs []*Node) *Node { return logits(s, inputs[0]) })
}

// weights returns the trainable variables of a store as flat float32 slices.
func weights(t testing.TB, s *model.Store) map[string][]float32 {
	t.Helper()
	out := map[string][]float32{}
	for v := range s.IterVariables() {
		if !v.Trainable {
			continue
		}
		val, err := v.Value()
		if err != nil {
			t.Fatal(err)
		}
		var flat []float32
		if err := val.ConstFlatData(func(a any) { flat = append(flat, a.([]float32)...) }); err != nil {
			t.Fatal(err)
		}
		out[v.Path()] = flat
	}
	return out
}

func maxAbsDiff(a, b map[string][]float32) (float64, string) {
	worst, where := 0.0, ""
	for name, x := range a {
		y, ok := b[name]
		if !ok || len(y) != len(x) {
			return math.Inf(1), name + " (missing or other size)"
		}
		for i := range x {
			if d := math.Abs(float64(x[i] - y[i])); d > worst {
				worst, where = d, fmt.Sprintf("%s[%d]", name, i)
			}
		}
	}
	if len(a) != len(b) {
		return math.Inf(1), "variable sets differ"
	}
	return worst, where
}

// snapshot maps every file under dir to its SHA-256, to check that nothing was changed.
func snapshot(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(raw)
		rel, _ := filepath.Rel(dir, path)
		out[rel] = hex.EncodeToString(sum[:])
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return out
}

func readRecords(t testing.TB, dir string) []Record {
	t.Helper()
	recs, err := ReadMetrics(filepath.Join(dir, MetricsFile))
	if err != nil {
		t.Fatal(err)
	}
	return recs
}
