package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/checkpoint/safetensors"
	"github.com/goaccel/goaccel/models/bert"
	"github.com/gomlx/gomlx/core/tensors"
)

// robertaFolder writes a RoBERTa-style model folder with a tokenizer.json only (the byte-level
// BPE tokenizer that models/bert's tests train on rt-polarity), a tiny config and random
// weights.
func robertaFolder(t *testing.T, modelType string) string {
	t.Helper()
	dir := t.TempDir()
	tokJSON, err := os.ReadFile(filepath.Join("..", "..", "models", "bert", "testdata", "roberta_bpe", "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), tokJSON, 0o644); err != nil {
		t.Fatal(err)
	}
	tok, err := bert.LoadTokenizer(dir, 32)
	if err != nil {
		t.Fatal(err)
	}
	config := fmt.Sprintf(`{"model_type": %q, "vocab_size": %d, "hidden_size": 32, "num_hidden_layers": 1,
		"num_attention_heads": 2, "intermediate_size": 64, "max_position_embeddings": 66, "type_vocab_size": 1,
		"pad_token_id": 1, "layer_norm_eps": 1e-5}`, modelType, tok.VocabSize())
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	if modelType != "roberta" {
		return dir
	}
	cfg, err := bert.ParseConfig([]byte(config), "config.json")
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var list []safetensors.Named
	for _, spec := range cfg.EncoderTensors() {
		n := 1
		for _, d := range spec.Dims {
			n *= d
		}
		values := make([]float32, n)
		for i := range values {
			switch {
			case strings.HasSuffix(spec.Name, "LayerNorm.weight"):
				values[i] = 1
			case strings.HasSuffix(spec.Name, ".weight"):
				values[i] = float32(rng.NormFloat64() * 0.02)
			}
		}
		list = append(list, safetensors.Named{Name: spec.Name, Tensor: tensors.FromFlatDataAndDimensions(values, spec.Dims...)})
	}
	if err := safetensors.WriteFile(filepath.Join(dir, "model.safetensors"), list, map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestRobertaTokenizerJSONFolder fine-tunes a RoBERTa folder whose tokenizer is a byte-level
// BPE tokenizer.json (no vocab.txt) for a few steps: the family and the tokenizer show in the
// model line, and best/ is a RoBERTa folder again. A model_type outside the families is an
// error that lists them.
func TestRobertaTokenizerJSONFolder(t *testing.T) {
	o := defaultOptions()
	o.Backend, o.ModelDir, o.OutputDir = "go", robertaFolder(t, "roberta"), t.TempDir()
	o.Epochs, o.MaxSteps, o.BatchSize, o.MaxLen, o.Workers = 1, 3, 8, 32, 0
	var out bytes.Buffer
	res, _, err := run(o, &out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "model: roberta (model_type in config.json), BPE tokenizer") {
		t.Errorf("the output does not name the family and the tokenizer:\n%s", out.String())
	}
	if res.Steps != 3 {
		t.Errorf("%d steps, want 3", res.Steps)
	}
	cfg, err := os.ReadFile(filepath.Join(o.OutputDir, "best", "config.json"))
	if err != nil || !strings.Contains(string(cfg), `"RobertaForSequenceClassification"`) {
		t.Errorf("best/config.json: %v\n%s", err, cfg)
	}
	if _, err := os.Stat(filepath.Join(o.OutputDir, "best", "tokenizer.json")); err != nil {
		t.Errorf("best/ has no tokenizer.json: %v", err)
	}

	o = defaultOptions()
	o.Backend, o.ModelDir, o.OutputDir = "go", robertaFolder(t, "albert"), t.TempDir()
	if _, _, err := run(o, &out); err == nil || !strings.Contains(err.Error(), `--model_dir`) ||
		!strings.Contains(err.Error(), `model_type "albert" is not supported: the supported families are bert, distilbert, electra, roberta`) {
		t.Errorf("an ALBERT folder: %v, want an error listing the families", err)
	}
}
