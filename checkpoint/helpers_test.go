package checkpoint

import (
	"fmt"
	"sync"
	"testing"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/dtypes/bfloat16"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// testVar describes one variable of the test stores.
type testVar struct {
	path      string
	shape     shapes.Shape
	trainable bool
}

// testVars mimics a small model with an Adam optimizer.
var testVars = []testVar{
	{"/dense/weights", shapes.Make(dtypes.Float32, 4, 3), true},
	{"/dense/biases", shapes.Make(dtypes.Float32, 3), true},
	{"/embed/table", shapes.Make(dtypes.BFloat16, 5, 2), true},
	{"/optimizers/adam/dense/weights/m1", shapes.Make(dtypes.Float32, 4, 3), false},
	{"/optimizers/adam/dense/weights/m2", shapes.Make(dtypes.Float64, 4, 3), false},
	{"/global_step", shapes.Make(dtypes.Int64), false},
	{"/#rngState", shapes.Make(dtypes.Uint64, 3), false},
	{"/mask", shapes.Make(dtypes.Bool, 2), false},
	{"/counts", shapes.Make(dtypes.Int32, 2, 2), false},
}

// valueFor returns a tensor of the given shape whose contents depend on seed and the index.
func valueFor(shape shapes.Shape, seed int64) *tensors.Tensor {
	t := tensors.FromShape(shape)
	t.MustMutableFlatData(func(flat any) {
		switch s := flat.(type) {
		case []float32:
			for i := range s {
				s[i] = float32(seed)*1000 + float32(i) + 0.25
			}
		case []float64:
			for i := range s {
				s[i] = float64(seed)*1e6 + float64(i) + 1.0/3
			}
		case []bfloat16.BFloat16:
			for i := range s {
				s[i] = bfloat16.FromFloat32(float32(seed%100) + float32(i)/4)
			}
		case []int64:
			for i := range s {
				s[i] = seed*7 + int64(i)
			}
		case []int32:
			for i := range s {
				s[i] = int32(seed)*3 - int32(i)
			}
		case []uint64:
			for i := range s {
				s[i] = uint64(seed)<<32 | uint64(i)
			}
		case []bool:
			for i := range s {
				s[i] = (int64(i)+seed)%2 == 0
			}
		default:
			panic(fmt.Sprintf("valueFor: unsupported %T", flat))
		}
	})
	return t
}

// newTestStore returns a Store holding testVars with values derived from seed.
func newTestStore(t testing.TB, seed int64) *model.Store {
	t.Helper()
	store := model.NewStore()
	for _, tv := range testVars {
		v, err := store.CreateVariable(tv.path, valueFor(tv.shape, seed))
		if err != nil {
			t.Fatal(err)
		}
		v.SetTrainable(tv.trainable)
	}
	return store
}

// checkStore verifies that store holds exactly testVars with the values for seed.
func checkStore(t testing.TB, store *model.Store, seed int64) {
	t.Helper()
	if store.NumVariables() != len(testVars) {
		t.Errorf("store has %d variables, want %d", store.NumVariables(), len(testVars))
	}
	for _, tv := range testVars {
		v := store.GetVariable(tv.path)
		if v == nil {
			t.Errorf("variable %q missing", tv.path)
			continue
		}
		if v.Trainable != tv.trainable {
			t.Errorf("variable %q: Trainable=%v, want %v", tv.path, v.Trainable, tv.trainable)
		}
		got, err := v.Value()
		if err != nil {
			t.Errorf("variable %q: %v", tv.path, err)
			continue
		}
		if want := valueFor(tv.shape, seed); !got.Equal(want) {
			t.Errorf("variable %q = %v, want %v", tv.path, got, want)
		}
	}
}

// logRecorder collects Logf calls.
type logRecorder struct {
	mu    sync.Mutex
	lines []string
}

func (l *logRecorder) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

func (l *logRecorder) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}
