package bert

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gomlx/compute/dtypes/float16"
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
		if d := maxAbsDiff(t, name, got[name], w); d != 0 {
			t.Errorf("%s differs after save and load: max abs diff %g", name, d)
		}
	}
	enc := tok.EncodeBatch(referenceTexts)
	h1, p1 := encodeOnce(t, mustGoBackend(t), clf, enc)
	h2, p2 := encodeOnce(t, mustGoBackend(t), loaded, loadedTok.EncodeBatch(referenceTexts))
	if maxAbsDiff(t, "hidden", h1, h2) != 0 || maxAbsDiff(t, "pooled", p1, p2) != 0 {
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
	var list []stTensor
	dtypeOf := map[string]string{}
	for i, spec := range clf.Config.EncoderTensors() {
		dtype := []string{"F16", "BF16", "F32"}[i%3]
		dtypeOf[spec.Name] = dtype
		list = append(list, stTensor{Name: strings.TrimPrefix(spec.Name, "bert."), DType: dtype, Shape: spec.Dims, Data: values[spec.Name]})
	}
	list = append(list,
		stTensor{Name: "cls.predictions.bias", DType: "F32", Shape: []int{3}, Data: []float32{1, 2, 3}},
		stTensor{Name: "classifier.weight", DType: "F32", Shape: []int{1, 2}, Data: []float32{1, 2}},
	)
	if err := writeSafetensors(filepath.Join(dir, "model.safetensors"), list, nil); err != nil {
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
	writeWeights := func(t *testing.T, dir string, mutate func([]stTensor) []stTensor) {
		var list []stTensor
		for _, s := range specs {
			list = append(list, stTensor{Name: s.Name, DType: "F32", Shape: s.Dims, Data: values[s.Name]})
		}
		if err := writeSafetensors(filepath.Join(dir, "model.safetensors"), mutate(list), nil); err != nil {
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
			writeFile(t, filepath.Join(d, "config.json"), `{"model_type": "roberta", "vocab_size": 33}`)
			return d
		}, LoadOptions{}, []string{`model_type "roberta"`}},
		{"more layers than the config", func(t *testing.T) string {
			d := copyFolder(t)
			writeWeights(t, d, func(l []stTensor) []stTensor {
				extra := l[len(l)-3] // a layer tensor, renamed into layer 2
				extra.Name = "bert.encoder.layer.2.output.LayerNorm.bias"
				return append(l, extra)
			})
			return d
		}, LoadOptions{}, []string{"1 unexpected tensors", "bert.encoder.layer.2.output.LayerNorm.bias", "num_hidden_layers=2"}},
		{"missing tensor", func(t *testing.T) string {
			d := copyFolder(t)
			writeWeights(t, d, func(l []stTensor) []stTensor {
				var out []stTensor
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
			writeWeights(t, d, func(l []stTensor) []stTensor {
				for i := range l {
					if l[i].Name == "bert.encoder.layer.0.intermediate.dense.weight" {
						l[i].Shape = []int{l[i].Shape[1], l[i].Shape[0]}
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
		}, LoadOptions{}, []string{"model.safetensors", "does not fit"}},
		{"not a safetensors file", func(t *testing.T) string {
			d := copyFolder(t)
			writeFile(t, filepath.Join(d, "model.safetensors"), "garbage garbage garbage")
			return d
		}, LoadOptions{}, []string{"is not a safetensors file"}},
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

func TestSafetensorsRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.safetensors")
	in := []stTensor{
		{Name: "b", DType: "F32", Shape: []int{2, 3}, Data: []float32{1, -2, 3.5, 0, 1e-8, -7}},
		{Name: "a", DType: "F16", Shape: []int{2}, Data: []float32{0.5, -1.25}},
		{Name: "s", DType: "BF16", Shape: nil, Data: []float32{3}},
	}
	if err := writeSafetensors(path, in, map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
	st, err := openSafetensors(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if st.dataStart%8 != 0 {
		t.Errorf("data starts at %d, want 8-byte alignment", st.dataStart)
	}
	for _, want := range in {
		got, err := st.readFloat32(want.Name)
		if err != nil {
			t.Fatal(err)
		}
		if d := maxAbsDiff(t, want.Name, got, want.Data); d != 0 {
			t.Errorf("%s: got %v, want %v", want.Name, got, want.Data)
		}
		if e := st.entries[want.Name]; e.DType != want.DType || len(e.Shape) != len(want.Shape) {
			t.Errorf("%s: header says %s %v, want %s %v", want.Name, e.DType, e.Shape, want.DType, want.Shape)
		}
	}
	if _, err := st.readFloat32("missing"); err == nil || !strings.Contains(err.Error(), `no tensor "missing"`) {
		t.Errorf("reading a missing tensor: %v", err)
	}
	if err := writeSafetensors(path, []stTensor{{Name: "x", DType: "F32", Shape: []int{3}, Data: []float32{1}}}, nil); err == nil {
		t.Error("writing a tensor whose data does not match its shape succeeded")
	}
}
