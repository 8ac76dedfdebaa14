package bert

import (
	"encoding/json"
	"fmt"
	"github.com/goaccel/goaccel/internal/testutil"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/checkpoint/safetensors"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/dtypes/float16"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// savedMicroModel writes a randomly initialised micro classifier as a HF folder and returns
// the folder, the classifier and its tokenizer.
func savedMicroModel(t *testing.T) (string, *Classifier, *Tokenizer) {
	t.Helper()
	clf, tok := newMicroModel(t, mustGoBackend(t), 5, 12)
	dir := filepath.Join(t.TempDir(), "micro-bert")
	if err := SavePretrained(dir, clf, tok); err != nil {
		t.Fatalf("SavePretrained: %v", err)
	}
	return dir, clf, tok
}

func TestSaveAndLoadPretrained(t *testing.T) {
	dir, clf, tok := savedMicroModel(t)
	for _, f := range []string{"config.json", "vocab.txt", "tokenizer_config.json", "model.safetensors"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("SavePretrained did not write %s: %v", f, err)
		}
	}
	// model.safetensors is what transformers reads: {"format": "pt"} metadata, float32 tensors
	// under their HF names, every tensor of the config.
	st, err := safetensors.Open(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	if format := st.Header().Metadata["format"]; format != "pt" {
		t.Errorf(`model.safetensors metadata "format" = %q, want "pt"`, format)
	}
	for _, spec := range clf.Config.Tensors() {
		if info, ok := st.Lookup(spec.Name); !ok || info.DType != dtypes.Float32 || !slices.Equal(info.Dims, spec.Dims) {
			t.Errorf("model.safetensors: %s is %v (present: %v), want Float32 %v", spec.Name, info, ok, spec.Dims)
		}
	}
	if got, want := len(st.Header().Tensors), len(clf.Config.Tensors()); got != want {
		t.Errorf("model.safetensors has %d tensors, want %d", got, want)
	}
	_ = st.Close()

	store := model.NewStore()
	loaded, loadedTok, err := LoadPretrained(dir, store, LoadOptions{MaxLen: 12})
	if err != nil {
		t.Fatalf("LoadPretrained: %v", err)
	}
	if loaded.Store() != store || loaded.Config.NumLabels != 3 || loadedTok.VocabSize() != tok.VocabSize() {
		t.Errorf("loaded classifier: store %p (want %p), labels %d, vocab %d", loaded.Store(), store,
			loaded.Config.NumLabels, loadedTok.VocabSize())
	}
	for _, head := range []string{"/classifier/weight", "/classifier/bias"} {
		if store.GetVariable(head) != nil {
			t.Errorf("%s was loaded: the classification head must start fresh", head)
		}
	}
	want := variableValues(t, clf.Store(), clf.Config, false)
	got := variableValues(t, store, loaded.Config, false)
	for name, w := range want {
		if d := testutil.MaxAbsDiff(t, name, got[name], w); d != 0 {
			t.Errorf("%s differs after save and load: max abs diff %g", name, d)
		}
	}
	enc := tok.EncodeBatch(referenceTexts)
	h1, p1 := encodeOnce(t, mustGoBackend(t), clf, enc)
	h2, p2 := encodeOnce(t, mustGoBackend(t), loaded, loadedTok.EncodeBatch(referenceTexts))
	if testutil.MaxAbsDiff(t, "hidden", h1, h2) != 0 || testutil.MaxAbsDiff(t, "pooled", p1, p2) != 0 {
		t.Error("the reloaded encoder computes different outputs")
	}
	// The fresh head gets created on first use.
	logitsOnce(t, mustGoBackend(t), loaded, enc, false)
	if v := store.GetVariable("/classifier/weight"); v == nil || !v.HasValue() {
		t.Error("the classification head was not initialised on first use")
	}

	// NumLabels overrides the config for the fresh head.
	relabeled, _, err := LoadPretrained(dir, nil, LoadOptions{NumLabels: 7})
	if err != nil {
		t.Fatal(err)
	}
	if relabeled.Config.NumLabels != 7 {
		t.Errorf("NumLabels override: got %d labels, want 7", relabeled.Config.NumLabels)
	}
}

// TestLoadHalfPrecisionWithoutPrefix loads a checkpoint laid out like a sentence-transformers
// folder (no "bert." prefix, an int64 position_ids buffer is not needed) whose tensors are
// stored in F16 and BF16, with pre-training and classifier tensors that must be ignored.
func TestLoadHalfPrecisionWithoutPrefix(t *testing.T) {
	dir, clf, _ := savedMicroModel(t)
	values := variableValues(t, clf.Store(), clf.Config, false)
	var list []safetensors.Named
	dtypeOf := map[string]string{}
	for i, spec := range clf.Config.EncoderTensors() {
		dtype := []dtypes.DType{dtypes.Float16, dtypes.BFloat16, dtypes.Float32}[i%3]
		dtypeOf[spec.Name], _ = safetensors.DTypeName(dtype)
		list = append(list, fixtureTensor(t, strings.TrimPrefix(spec.Name, "bert."), dtype, spec.Dims, values[spec.Name]))
	}
	list = append(list,
		fixtureTensor(t, "cls.predictions.bias", dtypes.Float32, []int{3}, []float32{1, 2, 3}),
		fixtureTensor(t, "classifier.weight", dtypes.Float32, []int{1, 2}, []float32{1, 2}),
	)
	if err := safetensors.WriteFile(filepath.Join(dir, "model.safetensors"), list, nil); err != nil {
		t.Fatal(err)
	}
	store := model.NewStore()
	loaded, _, err := LoadPretrained(dir, store, LoadOptions{})
	if err != nil {
		t.Fatalf("LoadPretrained: %v", err)
	}
	got := variableValues(t, store, loaded.Config, false)
	for name, orig := range values {
		for j, v := range orig {
			g := got[name][j]
			var ok bool
			switch dtypeOf[name] {
			case "F32":
				ok = g == v
			case "F16":
				ok = g == float16.FromFloat32(v).Float32()
			case "BF16":
				// bfloat16 keeps 8 significant bits: the low 16 bits of the float32 are zero
				// and round-to-nearest is within half a unit in the last place (2^-8 relative).
				ok = math.Float32bits(g)&0xFFFF == 0 && math.Abs(float64(g-v)) <= math.Abs(float64(v))/256
			}
			if !ok {
				t.Errorf("%s[%d] stored as %s: loaded %g from %g", name, j, dtypeOf[name], g, v)
				break
			}
		}
	}
}

// TestLoadSharded loads weights split over two files listed by model.safetensors.index.json,
// as transformers writes large models, and rejects a tensor present in two shards.
func TestLoadSharded(t *testing.T) {
	base, clf, _ := savedMicroModel(t)
	values := variableValues(t, clf.Store(), clf.Config, false)
	specs := clf.Config.EncoderTensors()
	for _, dup := range []bool{false, true} {
		dir := filepath.Join(t.TempDir(), "sharded")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"config.json", "vocab.txt"} {
			contents, err := os.ReadFile(filepath.Join(base, f))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, f), contents, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		shards := [2][]safetensors.Named{}
		weightMap := map[string]string{}
		for i, spec := range specs {
			shards[i%2] = append(shards[i%2], fixtureTensor(t, spec.Name, dtypes.Float32, spec.Dims, values[spec.Name]))
			weightMap[spec.Name] = fmt.Sprintf("model-%05d-of-00002.safetensors", i%2+1)
		}
		if dup {
			shards[1] = append(shards[1], shards[0][0])
		}
		for i, shard := range shards {
			if err := safetensors.WriteFile(filepath.Join(dir, fmt.Sprintf("model-%05d-of-00002.safetensors", i+1)), shard, nil); err != nil {
				t.Fatal(err)
			}
		}
		index, _ := json.Marshal(map[string]any{"metadata": map[string]any{}, "weight_map": weightMap})
		if err := os.WriteFile(filepath.Join(dir, "model.safetensors.index.json"), index, 0o644); err != nil {
			t.Fatal(err)
		}
		store := model.NewStore()
		loaded, _, err := LoadPretrained(dir, store, LoadOptions{})
		if dup {
			if err == nil || !strings.Contains(err.Error(), "appears twice") || !strings.Contains(err.Error(), "model-00002-of-00002.safetensors") {
				t.Errorf("a tensor in two shards: error %v, want one naming the shard and saying it appears twice", err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("LoadPretrained(sharded): %v", err)
		}
		got := variableValues(t, store, loaded.Config, false)
		for name, w := range values {
			if d := testutil.MaxAbsDiff(t, name, got[name], w); d != 0 {
				t.Errorf("%s differs after a sharded load: max abs diff %g", name, d)
			}
		}
	}
}

func TestLoadPretrainedErrors(t *testing.T) {
	base, clf, tok := savedMicroModel(t)
	values := variableValues(t, clf.Store(), clf.Config, false)
	specs := clf.Config.EncoderTensors()

	// copyFolder copies the saved folder so a case can break it.
	copyFolder := func(t *testing.T) string {
		dst := filepath.Join(t.TempDir(), "model")
		if err := os.MkdirAll(dst, 0o755); err != nil {
			t.Fatal(err)
		}
		entries, _ := os.ReadDir(base)
		for _, e := range entries {
			contents, err := os.ReadFile(filepath.Join(base, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dst, e.Name()), contents, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dst
	}
	writeWeights := func(t *testing.T, dir string, mutate func([]safetensors.Named) []safetensors.Named) {
		var list []safetensors.Named
		for _, s := range specs {
			list = append(list, fixtureTensor(t, s.Name, dtypes.Float32, s.Dims, values[s.Name]))
		}
		if err := safetensors.WriteFile(filepath.Join(dir, "model.safetensors"), mutate(list), nil); err != nil {
			t.Fatal(err)
		}
	}
	writeFile := func(t *testing.T, path, contents string) {
		if err := os.WriteFile(path, []byte(contents), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	cases := []struct {
		name    string
		prepare func(t *testing.T) string
		opts    LoadOptions
		wantErr []string
	}{
		{"missing folder", func(t *testing.T) string { return filepath.Join(t.TempDir(), "nope") }, LoadOptions{},
			[]string{"model folder", "nope"}},
		{"no config.json", func(t *testing.T) string {
			d := copyFolder(t)
			_ = os.Remove(filepath.Join(d, "config.json"))
			return d
		}, LoadOptions{}, []string{"config.json"}},
		{"no weights", func(t *testing.T) string {
			d := copyFolder(t)
			_ = os.Remove(filepath.Join(d, "model.safetensors"))
			return d
		}, LoadOptions{}, []string{"no weights file"}},
		{"pytorch weights only", func(t *testing.T) string {
			d := copyFolder(t)
			_ = os.Remove(filepath.Join(d, "model.safetensors"))
			writeFile(t, filepath.Join(d, "pytorch_model.bin"), "not really")
			return d
		}, LoadOptions{}, []string{"pytorch_model.bin", "only safetensors is supported"}},
		{"another architecture", func(t *testing.T) string {
			d := copyFolder(t)
			writeFile(t, filepath.Join(d, "config.json"), `{"model_type": "albert", "vocab_size": 33}`)
			return d
		}, LoadOptions{}, []string{`model_type "albert"`, "bert, distilbert, electra, roberta"}},
		{"more layers than the config", func(t *testing.T) string {
			d := copyFolder(t)
			writeWeights(t, d, func(l []safetensors.Named) []safetensors.Named {
				extra := l[len(l)-3] // a layer tensor, renamed into layer 2
				extra.Name = "bert.encoder.layer.2.output.LayerNorm.bias"
				return append(l, extra)
			})
			return d
		}, LoadOptions{}, []string{"1 unexpected tensors", "bert.encoder.layer.2.output.LayerNorm.bias", "num_hidden_layers=2"}},
		{"missing tensor", func(t *testing.T) string {
			d := copyFolder(t)
			writeWeights(t, d, func(l []safetensors.Named) []safetensors.Named {
				var out []safetensors.Named
				for _, x := range l {
					if x.Name != "bert.pooler.dense.weight" && x.Name != "bert.encoder.layer.1.attention.self.key.bias" {
						out = append(out, x)
					}
				}
				return out
			})
			return d
		}, LoadOptions{}, []string{"2 missing tensors", "bert.pooler.dense.weight", "bert.encoder.layer.1.attention.self.key.bias"}},
		{"tensor with the wrong shape", func(t *testing.T) string {
			d := copyFolder(t)
			writeWeights(t, d, func(l []safetensors.Named) []safetensors.Named {
				for i := range l {
					if name := l[i].Name; name == "bert.encoder.layer.0.intermediate.dense.weight" {
						dims := l[i].Tensor.Shape().Dimensions
						l[i] = fixtureTensor(t, name, dtypes.Float32, []int{dims[1], dims[0]}, values[name])
					}
				}
				return l
			})
			return d
		}, LoadOptions{}, []string{"wrong shape", "bert.encoder.layer.0.intermediate.dense.weight has shape [16 24], config wants [24 16]"}},
		{"config and weights disagree on hidden size", func(t *testing.T) string {
			d := copyFolder(t)
			cfg := clf.Config
			cfg.HiddenSize, cfg.NumAttentionHeads = 32, 4
			contents, _ := cfg.JSON()
			writeFile(t, filepath.Join(d, "config.json"), string(contents))
			return d
		}, LoadOptions{}, []string{"wrong shape", "bert.embeddings.word_embeddings.weight"}},
		{"vocabulary larger than the embeddings", func(t *testing.T) string {
			d := copyFolder(t)
			writeFile(t, filepath.Join(d, "vocab.txt"), strings.Join(append(tok.Vocab(), "extra"), "\n"))
			return d
		}, LoadOptions{}, []string{"vocab.txt has 34 tokens", "have 33 rows"}},
		{"max_len above the positions", copyFolder, LoadOptions{MaxLen: 13},
			[]string{"max_len 13 is above the model's max_position_embeddings (12)"}},
		{"negative labels", copyFolder, LoadOptions{NumLabels: -1}, []string{"NumLabels"}},
		{"truncated weights file", func(t *testing.T) string {
			d := copyFolder(t)
			path := filepath.Join(d, "model.safetensors")
			contents, _ := os.ReadFile(path)
			writeFile(t, path, string(contents[:len(contents)-10]))
			return d
		}, LoadOptions{}, []string{"model.safetensors", `tensor "classifier.weight"`, "does not fit"}},
		{"not a safetensors file", func(t *testing.T) string {
			d := copyFolder(t)
			writeFile(t, filepath.Join(d, "model.safetensors"), "garbage garbage garbage")
			return d
		}, LoadOptions{}, []string{"model.safetensors", "not a safetensors file"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := c.prepare(t)
			store := model.NewStore()
			_, _, err := LoadPretrained(dir, store, c.opts)
			if err == nil {
				t.Fatal("LoadPretrained succeeded, want an error")
			}
			for _, want := range c.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
			if store.NumVariables() != 0 {
				t.Errorf("a failed load left %d variables in the store", store.NumVariables())
			}
		})
	}
}

// fixtureTensor returns a tensor for a safetensors fixture: float32 values with the given
// dimensions, stored as dtype (rounded to nearest for F16 and BF16).
func fixtureTensor(t *testing.T, name string, dtype dtypes.DType, dims []int, values []float32) safetensors.Named {
	t.Helper()
	x, err := safetensors.ConvertFloat(tensors.FromFlatDataAndDimensions(values, dims...), dtype)
	if err != nil {
		t.Fatalf("fixture tensor %s: %v", name, err)
	}
	return safetensors.Named{Name: name, Tensor: x}
}
