package bert

import "testing"

func TestHFNameAndVarPath(t *testing.T) {
	cases := []struct {
		varPath, hfName string
	}{
		{"/bert/embeddings/word_embeddings/weight", "bert.embeddings.word_embeddings.weight"},
		{"/bert/embeddings/LayerNorm/bias", "bert.embeddings.LayerNorm.bias"},
		{"/bert/encoder/layer/0/attention/self/query/weight", "bert.encoder.layer.0.attention.self.query.weight"},
		{"/bert/encoder/layer/11/output/LayerNorm/weight", "bert.encoder.layer.11.output.LayerNorm.weight"},
		{"/bert/pooler/dense/bias", "bert.pooler.dense.bias"},
		{"/classifier/weight", "classifier.weight"},
	}
	for _, c := range cases {
		if got, ok := HFName(c.varPath); !ok || got != c.hfName {
			t.Errorf("HFName(%q) = %q, %v; want %q", c.varPath, got, ok, c.hfName)
		}
		if got, ok := HFName(c.varPath[1:]); !ok || got != c.hfName {
			t.Errorf("HFName(%q) without leading slash = %q, %v; want %q", c.varPath[1:], got, ok, c.hfName)
		}
		if got, ok := VarPath(c.hfName); !ok || got != c.varPath {
			t.Errorf("VarPath(%q) = %q, %v; want %q", c.hfName, got, ok, c.varPath)
		}
	}

	aliases := []struct {
		hfName, varPath string
	}{
		{"embeddings.word_embeddings.weight", "/bert/embeddings/word_embeddings/weight"},
		{"encoder.layer.3.intermediate.dense.bias", "/bert/encoder/layer/3/intermediate/dense/bias"},
		{"pooler.dense.weight", "/bert/pooler/dense/weight"},
		{"bert.embeddings.LayerNorm.gamma", "/bert/embeddings/LayerNorm/weight"},
		{"encoder.layer.0.output.LayerNorm.beta", "/bert/encoder/layer/0/output/LayerNorm/bias"},
	}
	for _, c := range aliases {
		if got, ok := VarPath(c.hfName); !ok || got != c.varPath {
			t.Errorf("VarPath(%q) = %q, %v; want %q", c.hfName, got, ok, c.varPath)
		}
	}

	for _, notModel := range []string{
		"/optimizer/adam/m/bert/pooler/dense/weight", "/global_step", "/rng_state", "/bert/encoder/layer/x/output/dense/weight",
		"/bert/encoder/layer/01/output/dense/weight", "/bert/encoder/layer/0/output/dense/kernel", "/bert/pooler/dense.weight", "",
	} {
		if name, ok := HFName(notModel); ok {
			t.Errorf("HFName(%q) = %q, true; want false", notModel, name)
		}
	}
	for _, notModel := range []string{
		"cls.predictions.bias", "bert.embeddings.position_ids", "encoder.layer.0.attention.self.distance_embedding.weight", "lm_head.weight",
	} {
		if path, ok := VarPath(notModel); ok {
			t.Errorf("VarPath(%q) = %q, true; want false", notModel, path)
		}
	}
}

func TestTensorsCoverTheModel(t *testing.T) {
	cfg := microConfig(33)
	specs := cfg.Tensors()
	if want := 5 + 16*cfg.NumHiddenLayers + 2 + 2; len(specs) != want {
		t.Fatalf("Tensors() lists %d tensors, want %d", len(specs), want)
	}
	seen := map[string]bool{}
	for _, s := range specs {
		if seen[s.Name] {
			t.Errorf("tensor %q listed twice", s.Name)
		}
		seen[s.Name] = true
		path, ok := VarPath(s.Name)
		if !ok {
			t.Errorf("VarPath(%q) failed", s.Name)
			continue
		}
		if back, ok := HFName(path); !ok || back != s.Name {
			t.Errorf("HFName(VarPath(%q)) = %q, %v", s.Name, back, ok)
		}
	}
	clf, err := NewClassifier(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	// hidden 16, 2 layers, intermediate 24, 12 positions, vocab 33, 3 labels.
	want := 33*16 + 12*16 + 2*16 + 2*16 +
		2*(4*(16*16+16)+2*2*16+(24*16+24)+(16*24+16)) +
		(16*16 + 16) + (3*16 + 3)
	if got := clf.NumParameters(); got != want {
		t.Errorf("NumParameters = %d, want %d", got, want)
	}
}
