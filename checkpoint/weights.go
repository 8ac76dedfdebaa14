package checkpoint

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/goaccel/goaccel/checkpoint/safetensors"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/dtypes/bfloat16"
	"github.com/gomlx/compute/dtypes/float16"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/pkg/errors"
)

// Transform rewrites one tensor on its way into or out of a weights file, for layouts that
// differ from the model's: for example PyTorch stores a Linear weight as [out, in] where a GoMLX
// Dense layer uses [in, out] (see TransposeMatrix). name is the tensor's name in the file. It
// returns t itself to leave the tensor unchanged.
type Transform func(name string, t *tensors.Tensor) (*tensors.Tensor, error)

// ExportWeights writes variables of the Store to a standalone safetensors file, for inference
// elsewhere (PyTorch, Hugging Face, ...). names gives the tensor name for a variable path ("" for
// the path itself), or ok=false to leave the variable out; nil exports every trainable variable
// under its path. The
// transforms are applied in order to each exported tensor. The file is written atomically
// (temporary file, fsync, rename) with the metadata {"format": "pt"}.
func ExportWeights(path string, store *model.Store, names func(varPath string) (name string, ok bool), transforms ...Transform) error {
	if store == nil {
		return errors.New("checkpoint: ExportWeights needs a Store")
	}
	var out []safetensors.Named
	for v := range store.IterVariables() {
		name, ok := v.Path(), v.Trainable
		if names != nil {
			name, ok = names(v.Path())
			if name == "" {
				name = v.Path()
			}
		}
		if !ok {
			continue
		}
		if !v.HasValue() {
			return errors.Errorf("checkpoint: ExportWeights: variable %q has no value yet", v.Path())
		}
		t, err := v.Value()
		if err != nil {
			return errors.WithMessagef(err, "checkpoint: ExportWeights: reading variable %q", v.Path())
		}
		for _, tr := range transforms {
			if t, err = tr(name, t); err != nil {
				return errors.WithMessagef(err, "checkpoint: ExportWeights: transforming %q (variable %q)", name, v.Path())
			}
		}
		out = append(out, safetensors.Named{Name: name, Tensor: t})
	}
	if len(out) == 0 {
		return errors.Errorf("checkpoint: ExportWeights: no variable selected for %s", path)
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, ".tmp-"+filepath.Base(path)+"-")
	if err != nil {
		return errors.Wrap(err, "checkpoint: ExportWeights")
	}
	tmp := f.Name()
	_, err = safetensors.Write(f, out, map[string]string{metaFormat: "pt"})
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return errors.WithMessagef(err, "checkpoint: ExportWeights: writing %s", path)
	}
	return syncDir(dir)
}

// ImportWeights reads a safetensors file (such as a Hugging Face model's) into Store variables
// and returns the paths of the variables it set, in file order.
//
// mapping gives the variable path for each tensor name, or ok=false to skip the tensor; nil
// uses the tensor name as the path. The transforms are applied in order to each mapped tensor.
// A variable that exists must have the tensor's shape; if both dtypes are floating point and
// differ (say the file is F16 and the variable F32) the value is converted, any other dtype
// difference is an error. A variable that does not exist is created (trainable) with the
// tensor's value. Nothing is changed unless every mapped tensor fits; errors name the tensor
// and the variable.
func ImportWeights(path string, store *model.Store, mapping func(name string) (varPath string, ok bool), transforms ...Transform) ([]string, error) {
	if store == nil {
		return nil, errors.New("checkpoint: ImportWeights needs a Store")
	}
	all, _, err := safetensors.ReadFile(path)
	if err != nil {
		return nil, errors.WithMessage(err, "checkpoint: ImportWeights")
	}
	type pending struct {
		name, path string
		v          *model.Variable
		t          *tensors.Tensor
	}
	var todo []pending
	free := func() {
		for _, nt := range all {
			_ = nt.Tensor.FinalizeAll()
		}
	}
	fail := func(format string, args ...any) ([]string, error) {
		free()
		return nil, errors.Errorf("checkpoint: ImportWeights %s: "+format, append([]any{path}, args...)...)
	}
	byPath := map[string]string{}
	for _, nt := range all {
		varPath, ok := nt.Name, true
		if mapping != nil {
			varPath, ok = mapping(nt.Name)
		}
		if !ok {
			continue
		}
		if varPath == "" {
			return fail("tensor %q maps to an empty variable path", nt.Name)
		}
		if varPath[0] != '/' {
			varPath = "/" + varPath
		}
		if prev, dup := byPath[varPath]; dup {
			return fail("tensors %q and %q both map to variable %q", prev, nt.Name, varPath)
		}
		byPath[varPath] = nt.Name
		t := nt.Tensor
		for _, tr := range transforms {
			var err error
			if t, err = tr(nt.Name, t); err != nil {
				free()
				return nil, errors.WithMessagef(err, "checkpoint: ImportWeights %s: transforming %q", path, nt.Name)
			}
		}
		v := findVariable(store, varPath)
		if v != nil {
			want, got := v.Shape(), t.Shape()
			if !slicesEqual(want.Dimensions, got.Dimensions) {
				return fail("tensor %q has shape %v, variable %q has %v", nt.Name, got.Dimensions, varPath, want.Dimensions)
			}
			if want.DType != got.DType {
				if !want.DType.IsFloat() || !got.DType.IsFloat() {
					return fail("tensor %q is %s, variable %q is %s", nt.Name, got.DType, varPath, want.DType)
				}
				converted, err := convertFloat(t, want.DType)
				if err != nil {
					return fail("tensor %q: %v", nt.Name, err)
				}
				t = converted
			}
		}
		todo = append(todo, pending{name: nt.Name, path: varPath, v: v, t: t})
	}
	imported := make([]string, 0, len(todo))
	for _, p := range todo {
		if p.v != nil {
			if err := p.v.SetValue(p.t); err != nil {
				return imported, errors.WithMessagef(err, "checkpoint: ImportWeights: setting %q", p.path)
			}
		} else if _, err := store.CreateVariable(p.path, p.t); err != nil {
			return imported, errors.WithMessagef(err, "checkpoint: ImportWeights: creating %q", p.path)
		}
		imported = append(imported, p.path)
	}
	return imported, nil
}

// findVariable returns the variable at path without triggering a Store loader.
func findVariable(store *model.Store, path string) *model.Variable {
	for v := range store.IterVariables() {
		if v.Path() == path {
			return v
		}
	}
	return nil
}

func slicesEqual(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TransposeMatrix returns the transpose of a rank-2 tensor (a new host tensor); other ranks are
// an error. Use it in a Transform for PyTorch Linear weights.
func TransposeMatrix(t *tensors.Tensor) (*tensors.Tensor, error) {
	shape := t.Shape()
	if shape.Rank() != 2 {
		return nil, errors.Errorf("TransposeMatrix: want a rank-2 tensor, got shape %s", shape)
	}
	rows, cols := shape.Dimensions[0], shape.Dimensions[1]
	out := tensors.FromShape(shapes.Make(shape.DType, cols, rows))
	size := shape.DType.Size()
	var err error
	cerr := t.ConstBytes(func(src []byte) {
		err = out.MutableBytes(func(dst []byte) {
			for r := range rows {
				for c := range cols {
					copy(dst[(c*rows+r)*size:(c*rows+r+1)*size], src[(r*cols+c)*size:(r*cols+c+1)*size])
				}
			}
		})
	})
	if cerr != nil {
		return nil, cerr
	}
	return out, err
}

// convertFloat converts a floating-point tensor to another floating-point dtype on the host.
func convertFloat(t *tensors.Tensor, to dtypes.DType) (*tensors.Tensor, error) {
	var vals []float64
	err := t.ConstFlatData(func(flat any) {
		switch s := flat.(type) {
		case []float32:
			vals = make([]float64, len(s))
			for i, x := range s {
				vals[i] = float64(x)
			}
		case []float64:
			vals = append([]float64(nil), s...)
		case []float16.Float16:
			vals = make([]float64, len(s))
			for i, x := range s {
				vals[i] = float64(x.Float32())
			}
		case []bfloat16.BFloat16:
			vals = make([]float64, len(s))
			for i, x := range s {
				vals[i] = x.Float64()
			}
		}
	})
	if err != nil {
		return nil, err
	}
	if vals == nil && t.Shape().Size() > 0 {
		return nil, fmt.Errorf("cannot convert %s to %s", t.Shape().DType, to)
	}
	out := tensors.FromShape(shapes.Make(to, t.Shape().Dimensions...))
	err = out.MutableFlatData(func(flat any) {
		switch d := flat.(type) {
		case []float32:
			for i := range d {
				d[i] = float32(vals[i])
			}
		case []float64:
			copy(d, vals)
		case []float16.Float16:
			for i := range d {
				d[i] = float16.FromFloat32(float32(vals[i]))
			}
		case []bfloat16.BFloat16:
			for i := range d {
				d[i] = bfloat16.FromFloat64(vals[i])
			}
		}
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
