package main

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/checkpoint/safetensors"
	"github.com/goaccel/goaccel/examples/internal/exampletest"
	"github.com/goaccel/goaccel/models/auto"
	"github.com/goaccel/goaccel/models/bert"
	"github.com/goaccel/goaccel/models/bert/sample"
	"github.com/gomlx/gomlx/core/tensors"
)

// robertaFolder writes a RoBERTa-style model folder with a tokenizer.json only (the byte-level
// BPE tokenizer that models/bert's tests train on rt-polarity), a tiny config and random
// weights.
func robertaFolder(t *testing.T, modelType string) string {
	t.Helper()
	return familyFolder(t, modelType, filepath.Join("..", "..", "models", "bert", "testdata", "roberta_bpe", "tokenizer.json"))
}

// familyFolder writes a folder of a RoBERTa-encoder family (roberta, xlm-roberta) with the
// tokenizer.json at tokenizerPath, a tiny config and random weights; for another model_type,
// the config only.
func familyFolder(t *testing.T, modelType, tokenizerPath string) string {
	t.Helper()
	dir := t.TempDir()
	tokJSON, err := os.ReadFile(tokenizerPath)
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
	if modelType != "roberta" && modelType != "xlm-roberta" {
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
		!strings.Contains(err.Error(), `model_type "albert" is not supported: the supported families are `+strings.Join(auto.Families(), ", ")) ||
		!strings.Contains(err.Error(), "modernbert, ") {
		t.Errorf("an ALBERT folder: %v, want an error listing the families", err)
	}
}

// modernBERTCache lays out a Hugging Face hub cache holding models/modernbert's tiny
// transformers checkpoint as org/tiny-modernbert (a snapshot named by refs/main), with a
// 100-token WordPiece vocabulary (its vocab_size) as its tokenizer.
func modernBERTCache(t *testing.T) (cache, snapshot string) {
	t.Helper()
	cache = t.TempDir()
	repo := filepath.Join(cache, "models--org--tiny-modernbert")
	snapshot = filepath.Join(repo, "snapshots", "c0ffee")
	if err := os.MkdirAll(snapshot, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"config.json", "model.safetensors"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "models", "modernbert", "testdata", "tiny", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(snapshot, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	vocab := strings.Join(sample.Vocab()[:100], "\n") + "\n"
	if err := os.WriteFile(filepath.Join(snapshot, "vocab.txt"), []byte(vocab), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(repo, "refs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "refs", "main"), []byte("c0ffee\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return cache, snapshot
}

// TestModernBERTByHubID fine-tunes a ModernBERT named by its Hub id, found in the local
// Hugging Face cache, with string labels: the model line names the family and the snapshot,
// and best/ is a ModernBERT folder with the labels and the tokenizer that the registry loads
// back, head included.
func TestModernBERTByHubID(t *testing.T) {
	cache, snapshot := modernBERTCache(t)
	t.Setenv("HF_HUB_CACHE", cache)
	dir := t.TempDir()
	train := filepath.Join(dir, "train.csv")
	writeCSV(t, train, shuffledSample(), [2]string{"negative", "positive"})
	o := defaultOptions()
	o.Backend, o.ModelDir, o.OutputDir, o.TrainFile = "go", "org/tiny-modernbert", filepath.Join(dir, "run"), train
	o.Epochs, o.MaxSteps, o.BatchSize, o.MaxLen, o.Workers = 1, 3, 8, 24, 0
	var out bytes.Buffer
	res, _, err := run(o, &out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{"model: modernbert (model_type in config.json), WordPiece tokenizer",
		"--model_dir org/tiny-modernbert: the Hugging Face cache's " + snapshot} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the output does not say %q:\n%s", want, out.String())
		}
	}
	if res.Steps != 3 {
		t.Errorf("%d steps, want 3", res.Steps)
	}
	best := filepath.Join(o.OutputDir, "best")
	id2label, _, problem := headOf(t, filepath.Join(best, "config.json"))
	if id2label["0"] != "negative" || id2label["1"] != "positive" || problem != "single_label_classification" {
		t.Errorf("best/config.json: id2label %v, problem_type %q; want negative, positive", id2label, problem)
	}
	m, err := auto.Load(best, nil, auto.Options{MaxLen: 24, LoadHead: true})
	if err != nil {
		t.Fatalf("loading best/: %v", err)
	}
	if m.Family != "modernbert" || m.NumLabels() != 2 {
		t.Errorf("best/ loads as %s with %d classes, want modernbert with 2", m.Family, m.NumLabels())
	}

	o.ModelDir, o.OutputDir = "org/not-cached", filepath.Join(dir, "missing")
	if _, _, err := run(o, &out); err == nil || !strings.Contains(err.Error(), "--model_dir org/not-cached") ||
		!strings.Contains(err.Error(), "hf download org/not-cached") {
		t.Errorf("a Hub id not in the cache: %v, want an error naming it and the download command", err)
	}
}

// TestNewFamiliesSameLossesOnEveryTopology: the families that came with the registry
// (ModernBERT, XLM-RoBERTa with its Unigram tokenizer, DeBERTa-v3 with its spm.model) train through the program at a
// fixed global batch (8) with the same step losses on 1 XLA CPU device, on 2, and (MPI) as 2
// processes of 1 device under the launcher, within 1e-5.
func TestNewFamiliesSameLossesOnEveryTopology(t *testing.T) {
	plugin := cpuPlugin(t)
	cache, _ := modernBERTCache(t)
	t.Setenv("HF_HUB_CACHE", cache)
	folders := map[string]string{
		"modernbert":  "org/tiny-modernbert",
		"xlm-roberta": familyFolder(t, "xlm-roberta", filepath.Join("..", "..", "tokenizers", "testdata", "xlmr", "tokenizer.json")),
		"deberta-v2":  filepath.Join("..", "..", "models", "deberta", "testdata", "tiny"), // read only: the run writes elsewhere
	}
	const steps = 4
	for _, family := range []string{"modernbert", "xlm-roberta", "deberta-v2"} {
		t.Run(family, func(t *testing.T) {
			args := func(dir string) []string {
				return []string{"--backend", plugin, "--model_dir", folders[family], "--global_batch_size", "8", "--max_steps",
					strconv.Itoa(steps), "--max_len", "24", "--dropout", "0", "--workers", "0", "--logging_steps", "1",
					"--learning_rate", "1e-3", "--output_dir", dir}
			}
			root := t.TempDir()
			var ref []float64
			var d2 float64
			for _, devices := range []int{1, 2} {
				dir := filepath.Join(root, strconv.Itoa(devices))
				if out, err := exampletest.Child(t, append(args(dir), "--devices", strconv.Itoa(devices))...).CombinedOutput(); err != nil {
					t.Fatalf("%d devices: %v\n%s", devices, err, out)
				}
				losses := stepLosses(t, dir)
				if len(losses) != steps {
					t.Fatalf("%d devices: %d step losses, want %d", devices, len(losses), steps)
				}
				if devices == 1 {
					ref = losses
					continue
				}
				d2 = checkSameLosses(t, "2 devices", losses, ref)
			}
			multi := exampletest.LaunchTwo(t, root, args) // after the device counts: a missing MPI skips only the launch
			dp := checkSameLosses(t, "2 processes", stepLosses(t, multi), ref)
			t.Logf("%s: step losses %v on 1 device; max abs diff %.2g on 2 devices, %.2g on 2 processes", family, ref, d2, dp)
		})
	}
}

// checkSameLosses fails unless got has want's step losses within 1e-5, and returns the
// largest difference.
func checkSameLosses(t *testing.T, what string, got, want []float64) (maxDiff float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d step losses, want %d", what, len(got), len(want))
	}
	for i := range got {
		d := math.Abs(got[i] - want[i])
		maxDiff = max(maxDiff, d)
		if !(d <= 1e-5) {
			t.Errorf("%s: step %d loss %.9f, %.9f on 1 device", what, i+1, got[i], want[i])
		}
	}
	return maxDiff
}
