package checkpoint

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/checkpoint/safetensors"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/dtypes/bfloat16"
	"github.com/gomlx/compute/dtypes/float16"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// requirePython returns the python3 executable that can import safetensors and numpy. Without
// them the test is skipped, loudly; when the CI environment variable is set it fails instead.
func requirePython(t *testing.T) string {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err == nil {
		out, err2 := exec.Command(py, "-c", "import safetensors, numpy").CombinedOutput()
		if err2 == nil {
			return py
		}
		err = fmt.Errorf("%s cannot import them: %s", py, strings.TrimSpace(string(out)))
	}
	msg := "the Python interop test needs python3 with safetensors and numpy " +
		"(pip install safetensors numpy): " + err.Error()
	if os.Getenv("CI") != "" {
		t.Fatal("FAILED (CI is set): " + msg)
	}
	t.Skip("SKIPPED: " + msg)
	return ""
}

// runPython runs a Python script with arguments and fails the test on a non-zero exit.
func runPython(t *testing.T, py, script string, args ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "script.py")
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(py, append([]string{path}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("python failed: %v\n%s", err, out)
	}
	return string(out)
}

// flatValues returns the tensor's values as a flat list of float64 (bool as 0/1).
func flatValues(t *tensors.Tensor) []float64 {
	var out []float64
	t.MustConstFlatData(func(flat any) {
		switch s := flat.(type) {
		case []float32:
			for _, x := range s {
				out = append(out, float64(x))
			}
		case []float64:
			out = append(out, s...)
		case []float16.Float16:
			for _, x := range s {
				out = append(out, float64(x.Float32()))
			}
		case []bfloat16.BFloat16:
			for _, x := range s {
				out = append(out, x.Float64())
			}
		case []int32:
			for _, x := range s {
				out = append(out, float64(x))
			}
		case []int64:
			for _, x := range s {
				out = append(out, float64(x))
			}
		case []uint8:
			for _, x := range s {
				out = append(out, float64(x))
			}
		case []uint64:
			for _, x := range s {
				out = append(out, float64(x))
			}
		case []bool:
			for _, x := range s {
				if x {
					out = append(out, 1)
				} else {
					out = append(out, 0)
				}
			}
		}
	})
	return out
}

// pyReadScript reads every tensor of the given files with safetensors' numpy API (BF16, which
// numpy lacks, through safe_open's raw bytes) and compares them with expected.json:
// {file: {name: {"dtype": ..., "shape": [...], "values": [...]}}}.
const pyReadScript = `
import json, sys, struct
import numpy as np
from safetensors import safe_open
from safetensors.numpy import load_file

expected = json.load(open(sys.argv[1]))
checked = 0
for path, tensors in expected.items():
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    meta = header.pop("__metadata__", {})
    assert meta.get("format") == "pt", ("metadata", path, meta)
    assert set(header) == set(tensors), ("names", path, sorted(header), sorted(tensors))
    plain = {k for k, v in header.items() if v["dtype"] != "BF16"}
    with safe_open(path, framework="numpy") as sf:
        assert set(sf.keys()) == set(tensors)
        for name in plain:
            arr = sf.get_tensor(name)
            want = tensors[name]
            assert list(arr.shape) == want["shape"], (name, arr.shape, want["shape"])
            assert str(arr.dtype) == want["numpy"], (name, arr.dtype, want["numpy"])
            got = arr.astype(np.float64).ravel().tolist()
            assert got == want["values"], (name, got, want["values"])
            checked += 1
    for name in set(header) - plain:
        b, e = header[name]["data_offsets"]
        bits = np.frombuffer(data[b:e], dtype="<u2").astype(np.uint32) << 16
        got = bits.view(np.float32).astype(np.float64).ravel().tolist()
        assert got == tensors[name]["values"], (name, got)
        checked += 1
    # The whole file must load at once too (checks layout: contiguous, aligned header).
    if not set(header) - plain:
        load_file(path)
print("checked", checked)
`

var numpyNames = map[dtypes.DType]string{
	dtypes.Float32: "float32", dtypes.Float64: "float64", dtypes.Float16: "float16", dtypes.Int32: "int32",
	dtypes.Int64: "int64", dtypes.Uint8: "uint8", dtypes.Bool: "bool", dtypes.Uint64: "uint64", dtypes.BFloat16: "bfloat16",
}

// TestPythonReadsOurFiles: the files of a checkpoint, and an exported weights file, are read by
// Python's safetensors with the same values.
func TestPythonReadsOurFiles(t *testing.T) {
	py := requirePython(t)
	dir := t.TempDir()
	m, _ := newTestManager(t, dir, Options{})
	store := newTestStore(t, 3)
	extra := []struct {
		path  string
		value *tensors.Tensor
	}{
		{"/cube", tensors.FromValue([][][]float16.Float16{{{float16.FromFloat32(0.5), float16.FromFloat32(-2)}}, {{float16.FromFloat32(3), float16.FromFloat32(1e-3)}}})},
		{"/bytes", tensors.FromValue([]uint8{0, 7, 255})},
		{"/scalar", tensors.FromScalar(float32(-1.25))},
		{"/ids", tensors.FromValue([][]int32{{1, -2}, {3, 1 << 20}})},
	}
	for _, e := range extra {
		if _, err := store.CreateVariable(e.path, e.value); err != nil {
			t.Fatal(err)
		}
	}
	ckpt, err := m.Save(&State{Store: store, Progress: Progress{Step: 1}})
	if err != nil {
		t.Fatal(err)
	}
	export := filepath.Join(dir, "model.safetensors")
	if err := ExportWeights(export, store, nil); err != nil {
		t.Fatal(err)
	}
	expected := map[string]map[string]any{}
	for _, file := range []string{filepath.Join(ckpt, WeightsFile), filepath.Join(ckpt, OptimizerFile), export} {
		expected[file] = map[string]any{}
		named, _, err := safetensors.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, nt := range named {
			// The expected values come from the Store, not from our reader.
			v := store.GetVariable(nt.Name)
			if v == nil {
				t.Fatalf("%s: tensor %q is not a variable", file, nt.Name)
			}
			shape := v.Shape()
			dims := shape.Dimensions
			if dims == nil {
				dims = []int{}
			}
			expected[file][nt.Name] = map[string]any{"shape": dims, "numpy": numpyNames[shape.DType], "values": flatValues(v.MustValue())}
		}
	}
	raw, _ := json.Marshal(expected)
	expPath := filepath.Join(t.TempDir(), "expected.json")
	if err := os.WriteFile(expPath, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	out := runPython(t, py, pyReadScript, expPath)
	t.Log(strings.TrimSpace(out))
	// 9 test variables + 4 extra = 13 tensors in the two checkpoint files; the export holds the
	// 7 trainable ones (3 test weights + 4 extra, created trainable).
	if !strings.Contains(out, "checked 20") {
		t.Errorf("python checked an unexpected number of tensors: %s", out)
	}
}

// pyWriteScript writes a file with numpy through safetensors, with values the Go side recomputes.
const pyWriteScript = `
import sys
import numpy as np
from safetensors.numpy import save_file
save_file({
    "bert.embeddings.word_embeddings.weight": (np.arange(12, dtype=np.float32).reshape(4, 3) / 8),
    "bert.pooler.dense.bias": np.array([1.5, -2.5], dtype=np.float64),
    "half": np.array([[0.5, -4.0]], dtype=np.float16),
    "ids": np.array([3, -1, 7], dtype=np.int64),
    "i32": np.array(5, dtype=np.int32),
    "flags": np.array([True, False], dtype=bool),
    "bytes": np.array([9, 0], dtype=np.uint8),
    "skipped": np.zeros((2, 2), dtype=np.float32),
}, sys.argv[1], metadata={"format": "pt", "source": "numpy"})
`

// TestGoReadsPythonFiles: a file written by Python's safetensors loads here, through
// ImportWeights with a name mapping, a transform and a dtype conversion.
func TestGoReadsPythonFiles(t *testing.T) {
	py := requirePython(t)
	path := filepath.Join(t.TempDir(), "py.safetensors")
	runPython(t, py, pyWriteScript, path)

	_, meta, err := safetensors.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if meta["source"] != "numpy" {
		t.Errorf("metadata = %v", meta)
	}

	store := model.NewStore()
	// An existing F32 variable receives the F16 tensor, converted.
	if _, err := store.CreateVariable("/half", tensors.FromShape(shapes.Make(dtypes.Float32, 1, 2))); err != nil {
		t.Fatal(err)
	}
	mapping := func(name string) (string, bool) {
		switch name {
		case "skipped":
			return "", false
		case "half":
			return "/half", true
		}
		return "/imported/" + strings.ReplaceAll(name, ".", "/"), true
	}
	transposeEmbeddings := func(name string, t *tensors.Tensor) (*tensors.Tensor, error) {
		if strings.HasSuffix(name, "word_embeddings.weight") {
			return TransposeMatrix(t)
		}
		return t, nil
	}
	imported, err := ImportWeights(path, store, mapping, transposeEmbeddings)
	if err != nil {
		t.Fatal(err)
	}
	if len(imported) != 7 {
		t.Errorf("imported %v, want 7 variables", imported)
	}
	emb := make([][]float32, 3)
	for c := range 3 {
		for r := range 4 {
			emb[c] = append(emb[c], float32(r*3+c)/8)
		}
	}
	want := map[string]*tensors.Tensor{
		"/imported/bert/embeddings/word_embeddings/weight": tensors.FromValue(emb),
		"/imported/bert/pooler/dense/bias":                 tensors.FromValue([]float64{1.5, -2.5}),
		"/half":                                            tensors.FromValue([][]float32{{0.5, -4}}),
		"/imported/ids":                                    tensors.FromValue([]int64{3, -1, 7}),
		"/imported/i32":                                    tensors.FromScalar(int32(5)),
		"/imported/flags":                                  tensors.FromValue([]bool{true, false}),
		"/imported/bytes":                                  tensors.FromValue([]uint8{9, 0}),
	}
	for path, w := range want {
		v := store.GetVariable(path)
		if v == nil {
			t.Errorf("variable %q not imported", path)
			continue
		}
		if got := v.MustValue(); !got.Equal(w) {
			t.Errorf("%s = %v, want %v", path, got, w)
		}
	}
	if store.GetVariable("/imported/skipped") != nil {
		t.Error("a skipped tensor was imported")
	}
}
