package checkpoint

import (
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/goaccel/goaccel/checkpoint/safetensors"
	"github.com/goaccel/goaccel/internal/fsutil"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
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
		return errors.New("checkpoint: ExportWeights: nil Store; pass the model's Store")
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
			return fmt.Errorf("checkpoint: ExportWeights: variable %q has no value yet; initialize the model (run a step) first", v.Path())
		}
		t, err := v.Value()
		if err != nil {
			return fmt.Errorf("checkpoint: ExportWeights: reading variable %q: %w", v.Path(), err)
		}
		for _, tr := range transforms {
			if t, err = tr(name, t); err != nil {
				return fmt.Errorf("checkpoint: ExportWeights: transforming %q (variable %q): %w", name, v.Path(), err)
			}
		}
		out = append(out, safetensors.Named{Name: name, Tensor: t})
	}
	if len(out) == 0 {
		return fmt.Errorf("checkpoint: ExportWeights: no variable selected for %s; the names function left out every variable", path)
	}
	err := fsutil.WriteAtomic(path, func(w io.Writer) error {
		_, err := safetensors.Write(w, out, map[string]string{metaFormat: "pt"})
		return err
	})
	if err != nil {
		return fmt.Errorf("checkpoint: ExportWeights: %w", err)
	}
	return nil
}

// ImportWeights reads a safetensors file (such as a Hugging Face model's) into Store variables
// and returns the paths of the variables it set, in file order. Only the mapped tensors are
// read, one at a time.
//
// mapping gives the variable path for each tensor name, or ok=false to skip the tensor; nil
// uses the tensor name as the path. The transforms are applied in order to each mapped tensor.
// A variable that exists must have the tensor's shape; if both dtypes are floating point and
// differ (say the file is F16 and the variable F32) the value is converted, any other dtype
// difference is an error. A variable that does not exist is created (trainable) with the
// tensor's value. Nothing is changed unless every mapped tensor fits; errors name the file, the
// tensor and the variable.
func ImportWeights(path string, store *model.Store, mapping func(name string) (varPath string, ok bool), transforms ...Transform) ([]string, error) {
	if store == nil {
		return nil, errors.New("checkpoint: ImportWeights: nil Store; pass the model's Store")
	}
	f, err := safetensors.Open(path)
	if err != nil {
		return nil, err // "safetensors: ... (file path)"
	}
	defer f.Close()
	type pending struct {
		path string
		v    *model.Variable
		t    *tensors.Tensor
	}
	var todo []pending
	fail := func(format string, args ...any) ([]string, error) {
		for _, p := range todo {
			_ = p.t.FinalizeAll()
		}
		return nil, fmt.Errorf("checkpoint: ImportWeights %s: "+format, append([]any{path}, args...)...)
	}
	byPath := map[string]string{}
	for _, info := range f.Header().Tensors {
		name := info.Name
		varPath, ok := name, true
		if mapping != nil {
			varPath, ok = mapping(name)
		}
		if !ok {
			continue
		}
		if varPath == "" {
			return fail("tensor %q maps to an empty variable path; return ok=false from the mapping to skip it", name)
		}
		if varPath[0] != '/' {
			varPath = "/" + varPath
		}
		if prev, dup := byPath[varPath]; dup {
			return fail("tensors %q and %q both map to variable %q", prev, name, varPath)
		}
		byPath[varPath] = name
		t, err := f.Read(name)
		if err != nil {
			return fail("%w", err)
		}
		for _, tr := range transforms {
			if t, err = tr(name, t); err != nil {
				return fail("transforming %q: %w", name, err)
			}
		}
		v := findVariable(store, varPath)
		if v != nil {
			want, got := v.Shape(), t.Shape()
			if !slices.Equal(want.Dimensions, got.Dimensions) {
				return fail("tensor %q has shape %v, variable %q has %v", name, got.Dimensions, varPath, want.Dimensions)
			}
			if want.DType != got.DType {
				if !want.DType.IsFloat() || !got.DType.IsFloat() {
					return fail("tensor %q is %s, variable %q is %s", name, got.DType, varPath, want.DType)
				}
				converted, err := safetensors.ConvertFloat(t, want.DType)
				if err != nil {
					return fail("tensor %q: %w", name, err)
				}
				t = converted
			}
		}
		todo = append(todo, pending{path: varPath, v: v, t: t})
	}
	imported := make([]string, 0, len(todo))
	for _, p := range todo {
		if p.v != nil {
			if err := p.v.SetValue(p.t); err != nil {
				return imported, fmt.Errorf("checkpoint: ImportWeights %s: setting variable %q: %w", path, p.path, err)
			}
		} else if _, err := store.CreateVariable(p.path, p.t); err != nil {
			return imported, fmt.Errorf("checkpoint: ImportWeights %s: creating variable %q: %w", path, p.path, err)
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

// TransposeMatrix returns the transpose of a rank-2 tensor (a new host tensor); other ranks are
// an error. Use it in a Transform for PyTorch Linear weights.
func TransposeMatrix(t *tensors.Tensor) (*tensors.Tensor, error) {
	shape := t.Shape()
	if shape.Rank() != 2 {
		return nil, fmt.Errorf("checkpoint: TransposeMatrix: want a rank-2 tensor, got shape %s", shape)
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
