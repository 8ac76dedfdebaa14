package checkpoint

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/checkpoint/safetensors"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/dtypes/bfloat16"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

func TestExportImportRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.safetensors")
	src := newTestStore(t, 8)
	if err := ExportWeights(path, src, nil); err != nil {
		t.Fatal(err)
	}
	named, _, err := safetensors.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(named) != 3 { // The trainable variables only.
		t.Errorf("exported %d tensors, want 3", len(named))
	}
	dst := model.NewStore()
	imported, err := ImportWeights(path, dst, nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(imported, ",") != "/dense/weights,/dense/biases,/embed/table" {
		t.Errorf("imported %v", imported)
	}
	for _, p := range imported {
		if !dst.GetVariable(p).MustValue().Equal(src.GetVariable(p).MustValue()) {
			t.Errorf("%s differs", p)
		}
	}
}

func TestExportNamesAndTransform(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.safetensors")
	src := newTestStore(t, 2)
	names := func(p string) (string, bool) {
		if p == "/dense/weights" {
			return "classifier.weight", true
		}
		return "", p == "/global_step" // Non-trainable variables can be chosen too.
	}
	if err := ExportWeights(path, src, names, func(name string, t *tensors.Tensor) (*tensors.Tensor, error) {
		if name == "classifier.weight" {
			return TransposeMatrix(t)
		}
		return t, nil
	}); err != nil {
		t.Fatal(err)
	}
	named, meta, err := safetensors.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if meta["format"] != "pt" || len(named) != 2 || named[0].Name != "classifier.weight" || named[1].Name != "/global_step" {
		t.Fatalf("exported %v (metadata %v)", named, meta)
	}
	if got := named[0].Tensor.Shape(); !got.Equal(shapes.Make(dtypes.Float32, 3, 4)) {
		t.Errorf("transposed shape %s", got)
	}
	back, err := TransposeMatrix(named[0].Tensor)
	if err != nil {
		t.Fatal(err)
	}
	if !back.Equal(src.GetVariable("/dense/weights").MustValue()) {
		t.Error("transpose twice is not the identity")
	}
	if err := ExportWeights(path, src, func(string) (string, bool) { return "", false }); err == nil ||
		!strings.Contains(err.Error(), "no variable selected") {
		t.Errorf("empty export: %v", err)
	}
}

func TestImportErrors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.safetensors")
	if err := safetensors.WriteFile(path, []safetensors.Named{
		{Name: "a", Tensor: tensors.FromValue([]float32{1, 2})},
		{Name: "b", Tensor: tensors.FromValue([]int32{1, 2})},
		{Name: "c", Tensor: tensors.FromValue([]bfloat16.BFloat16{bfloat16.FromFloat32(0.5)})},
	}, nil); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		existing map[string]*tensors.Tensor
		mapping  func(string) (string, bool)
		want     string
	}{
		{"shape", map[string]*tensors.Tensor{"/a": tensors.FromValue([]float32{1, 2, 3})}, nil,
			`tensor "a" has shape [2], variable "/a" has [3]`},
		{"int dtype", map[string]*tensors.Tensor{"/b": tensors.FromValue([]int64{1, 2})}, nil,
			`tensor "b" is Int32, variable "/b" is Int64`},
		{"duplicate target", nil, func(string) (string, bool) { return "/x", true },
			`both map to variable "/x"`},
		{"empty path", nil, func(string) (string, bool) { return "", true }, "empty variable path"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			store := model.NewStore()
			for p, v := range tc.existing {
				if _, err := store.CreateVariable(p, v); err != nil {
					t.Fatal(err)
				}
			}
			n := store.NumVariables()
			_, err := ImportWeights(path, store, tc.mapping)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want %q", err, tc.want)
			}
			if store.NumVariables() != n {
				t.Error("a failed import created variables")
			}
		})
	}
	// BF16 into an existing F64 variable converts.
	store := model.NewStore()
	if _, err := store.CreateVariable("/c", tensors.FromValue([]float64{0})); err != nil {
		t.Fatal(err)
	}
	if _, err := ImportWeights(path, store, func(n string) (string, bool) { return n, n == "c" }); err != nil {
		t.Fatal(err)
	}
	if got := store.GetVariable("/c").MustValue(); !got.Equal(tensors.FromValue([]float64{0.5})) {
		t.Errorf("/c = %v", got)
	}
	if _, err := TransposeMatrix(tensors.FromValue([]float32{1})); err == nil {
		t.Error("TransposeMatrix of a vector should fail")
	}
}
