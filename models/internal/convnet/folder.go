package convnet

import (
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/goaccel/goaccel/checkpoint/safetensors"
	"github.com/goaccel/goaccel/internal/fsutil"
	"github.com/goaccel/goaccel/models/internal/hf"
	"github.com/goaccel/goaccel/models/nn"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// The tensors of a convolutional family, as its Tensors lists them (hf.TensorSpec, PyTorch's
// layout): a kernel (the family's Kernel says which tensors are) is OIHW in the file and HWIO
// in the Store; a
// name ending in TrackedSuffix is BatchNorm's num_batches_tracked, an int64 scalar (the
// family lists it with no dims); BatchNorm's running statistics are not trainable.

// TrackedSuffix ends the name of a BatchNorm's num_batches_tracked.
const TrackedSuffix = "." + nn.BatchNormTracked

// isTracked reports whether name is a num_batches_tracked.
func isTracked(name string) bool { return strings.HasSuffix(name, TrackedSuffix) }

// isRunning reports whether name is a BatchNorm buffer (not trainable).
func isRunning(name string) bool {
	return isTracked(name) || strings.HasSuffix(name, "."+nn.BatchNormRunningMean) ||
		strings.HasSuffix(name, "."+nn.BatchNormRunningVar)
}

// Floats is specs without the num_batches_tracked scalars: what hf's weight plans check.
func Floats(specs []hf.TensorSpec) []hf.TensorSpec {
	return slices.DeleteFunc(slices.Clone(specs), func(s hf.TensorSpec) bool { return isTracked(s.Name) })
}

// LoadWeights reads a folder's safetensors files (hf.WeightFiles) into store, the way
// hf.LoadWeights does (plan says which tensors; every error stops the load before store is
// written and names the files, their config.json and the tensors), with the kernels (the
// tensors kernel says, by HF name) transposed from OIHW to HWIO and BatchNorm's buffers kept out of training. The plan holds
// float tensors only (Floats); the num_batches_tracked of a loaded BatchNorm is read when the
// file has it (int64 or int32 scalar; absent, it starts at 0 as PyTorch's).
func LoadWeights(family string, files []string, store *model.Store, plan hf.WeightPlan, kernel func(name string) bool) error {
	ignore := plan.Ignore
	plan.Ignore = func(name string) bool { return isTracked(name) || (ignore != nil && ignore(name)) }
	scratch := model.NewStore()
	if err := hf.LoadWeights(files, scratch, plan, hf.VarPath); err != nil {
		return fmt.Errorf("%s: %w", family, err)
	}
	loaded := map[string]*tensors.Tensor{}
	for v := range scratch.IterVariables() {
		t, err := v.Value()
		if err != nil {
			return checked(family, "reading %s: %w", v.Path(), err)
		}
		if name, _ := hf.HFName(v.Path()); kernel(name) {
			t = permute(t, 2, 3, 1, 0) // OIHW -> HWIO
		}
		loaded[v.Path()] = t
	}
	tracked, err := readTracked(family, files, plan, loaded)
	if err != nil {
		return err
	}
	for path, t := range tracked {
		loaded[path] = t
	}
	for _, path := range slices.Sorted(maps.Keys(loaded)) {
		t := loaded[path]
		v := store.GetVariable(path)
		if v == nil {
			if v, err = store.CreateVariable(path, t); err != nil {
				return checked(family, "creating variable %s: %w", path, err)
			}
		} else if err := v.SetValue(t); err != nil {
			return checked(family, "setting variable %s: %w", path, err)
		}
		name, _ := hf.HFName(path)
		v.SetTrainable(!isRunning(name))
	}
	return nil
}

// readTracked reads the num_batches_tracked of each BatchNorm whose running_mean was loaded.
func readTracked(family string, files []string, plan hf.WeightPlan, loaded map[string]*tensors.Tensor) (map[string]*tensors.Tensor, error) {
	out := map[string]*tensors.Tensor{}
	for _, path := range files {
		f, err := safetensors.Open(path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", family, err)
		}
		for _, info := range f.Header().Tensors {
			name := info.Name
			if plan.Canonical != nil {
				name = plan.Canonical(name)
			}
			if !isTracked(name) {
				continue
			}
			bn := strings.TrimSuffix(name, TrackedSuffix)
			if loaded[hf.VarPath(bn+"."+nn.BatchNormRunningMean)] == nil {
				continue // a BatchNorm not loaded (ignored by the plan)
			}
			if len(info.Dims) != 0 || (info.DType != dtypes.Int64 && info.DType != dtypes.Int32) {
				_ = f.Close()
				return nil, checked(family, "%s: tensor %s is %s %v, want an int64 scalar", path, info.Name, info.DType, info.Dims)
			}
			t, err := f.Read(info.Name)
			if err != nil {
				_ = f.Close()
				return nil, fmt.Errorf("%s: %w", family, err)
			}
			var n int64
			if info.DType == dtypes.Int32 {
				n = int64(tensors.MustCopyFlatData[int32](t)[0])
			} else {
				n = tensors.MustCopyFlatData[int64](t)[0]
			}
			out[hf.VarPath(name)] = tensors.FromScalar(n)
		}
		_ = f.Close()
	}
	return out, nil
}

// WriteFolder writes a Hugging Face folder of a convolutional family into dir: config.json
// (configJSON) and model.safetensors with the tensors specs lists (PyTorch's layout), read
// from store at hf.VarPath of each name, sorted by name, with the metadata {"format": "pt"}:
// float32, the kernels (kernel says which) transposed from HWIO to OIHW, and num_batches_tracked int64 (0 for a
// BatchNorm that never trained). Every other variable must have a value of the spec's shape.
// Each file is written atomically.
func WriteFolder(dir string, store *model.Store, specs []hf.TensorSpec, kernel func(name string) bool, configJSON []byte) error {
	var list []safetensors.Named
	for _, spec := range specs {
		path := hf.VarPath(spec.Name)
		v := store.GetVariable(path)
		if isTracked(spec.Name) {
			n := int64(0)
			if v != nil && v.HasValue() {
				t, err := v.Value()
				if err != nil {
					return fmt.Errorf("reading variable %s: %w", path, err)
				}
				n = tensors.MustCopyFlatData[int64](t)[0]
			}
			list = append(list, safetensors.Named{Name: spec.Name, Tensor: tensors.FromScalar(n)})
			continue
		}
		if v == nil || !v.HasValue() {
			return fmt.Errorf("variable %s (%s) has no value yet", path, spec.Name)
		}
		value, err := v.Value()
		if err != nil {
			return fmt.Errorf("reading variable %s: %w", path, err)
		}
		if kernel(spec.Name) {
			value = permute(value, 3, 2, 0, 1) // HWIO -> OIHW
		}
		if !slices.Equal(value.Shape().Dimensions, spec.Dims) || value.DType() != dtypes.Float32 {
			return fmt.Errorf("variable %s is %s, config wants float32 %v", path, v.Shape(), spec.Dims)
		}
		list = append(list, safetensors.Named{Name: spec.Name, Tensor: value})
	}
	slices.SortFunc(list, func(a, b safetensors.Named) int { return strings.Compare(a.Name, b.Name) })
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := fsutil.WriteFileAtomic(filepath.Join(dir, "config.json"), append(slices.Clone(configJSON), '\n')); err != nil {
		return err
	}
	return fsutil.WriteAtomic(filepath.Join(dir, "model.safetensors"), func(w io.Writer) error {
		_, err := safetensors.Write(w, list, map[string]string{"format": "pt"})
		return err
	})
}

// permute returns a new host tensor with t's axes in the order perm (out axis i is t's axis
// perm[i]).
func permute(t *tensors.Tensor, perm ...int) *tensors.Tensor {
	in := t.Shape().Dimensions
	rank := len(in)
	outDims := make([]int, rank)
	for i, p := range perm {
		outDims[i] = in[p]
	}
	inStrides := make([]int, rank)
	stride := 1
	for i := rank - 1; i >= 0; i-- {
		inStrides[i] = stride
		stride *= in[i]
	}
	out := tensors.FromShape(shapes.Make(t.DType(), outDims...))
	size := t.DType().Size()
	idx := make([]int, rank)
	_ = t.ConstBytes(func(src []byte) {
		_ = out.MutableBytes(func(dst []byte) {
			for o := 0; o < len(dst)/size; o++ {
				off := 0
				for i := range rank {
					off += idx[i] * inStrides[perm[i]]
				}
				copy(dst[o*size:(o+1)*size], src[off*size:(off+1)*size])
				for i := rank - 1; i >= 0; i-- { // the next output index, row-major
					if idx[i]++; idx[i] < outDims[i] {
						break
					}
					idx[i] = 0
				}
			}
		})
	})
	return out
}

// StoreLayout is specs (float tensors, PyTorch's layout) with the kernels' dims as the Store
// holds them, HWIO: what a lora.Base lists, since the adapter reads and merges the Store's
// values by those dims.
func StoreLayout(specs []hf.TensorSpec, kernel func(name string) bool) []hf.TensorSpec {
	out := slices.Clone(Floats(specs))
	for i, s := range out {
		if kernel(s.Name) && len(s.Dims) == 4 {
			d := s.Dims
			out[i].Dims = []int{d[2], d[3], d[1], d[0]}
		}
	}
	return out
}
