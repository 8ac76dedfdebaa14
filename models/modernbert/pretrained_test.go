package modernbert

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/checkpoint/safetensors"
	"github.com/goaccel/goaccel/internal/testutil"
	"github.com/goaccel/goaccel/models/internal/familytest"
	"github.com/goaccel/goaccel/models/internal/hf"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// copyFolder copies testdata/<name> into a temporary folder, with its tensors and
// config.json edited (see familytest.CopyFolder).
func copyFolder(t *testing.T, name string, edit func([]safetensors.Named) []safetensors.Named, editConfig func(map[string]any)) string {
	t.Helper()
	return familytest.CopyFolder(t, filepath.Join("testdata", name), edit, editConfig)
}

// TestLoadPretrainedErrors: a checkpoint that does not fit its config, or a config this
// package cannot build, is refused with an error naming the tensor or the key.
func TestLoadPretrainedErrors(t *testing.T) {
	without, set, case_ := familytest.Without, familytest.Set, familytest.Case[LoadOptions]
	extra := func(l []safetensors.Named) []safetensors.Named {
		return append(l, safetensors.Named{Name: "model.layers.3.mlp_norm.weight", Tensor: tensors.FromValue(make([]float32, 32))})
	}
	familytest.CheckLoadErrors(t, filepath.Join("testdata", "tiny"), []familytest.LoadCase[LoadOptions]{
		case_("missing tensor", without("model.layers.1.mlp.Wo.weight"), nil, LoadOptions{},
			"1 missing tensors: model.layers.1.mlp.Wo.weight"),
		case_("missing classifier", without("classifier.bias"), nil, LoadOptions{LoadHead: true},
			"missing tensors: classifier.bias"),
		case_("half a prediction head", without("head.norm.weight"), nil, LoadOptions{},
			"missing tensors: head.norm.weight"),
		case_("wrong shape", nil, set("intermediate_size", 40), LoadOptions{},
			"model.layers.0.mlp.Wi.weight has shape [96 32], config wants [80 32]"),
		case_("biases the config does not have", nil, nil, LoadOptions{}), // the control: loads
		case_("more layers", extra, nil, LoadOptions{},
			"unexpected tensors", "model.layers.3.mlp_norm.weight"),
		case_("bad pooling", nil, set("classifier_pooling", "max"), LoadOptions{},
			"config.json", `classifier_pooling "max"`),
		case_("bad activation", nil, set("hidden_activation", "gelu_fast"), LoadOptions{},
			`hidden_activation "gelu_fast"`),
		case_("bad layer type", nil, set("layer_types", []string{"full_attention", "chunked_attention", "sliding_attention"}), LoadOptions{},
			`layer_types[1] is "chunked_attention"`),
		case_("layer types count", nil, set("layer_types", []string{"full_attention"}), LoadOptions{},
			"layer_types has 1 entries, num_hidden_layers is 3"),
		case_("scaled rope", nil, set("rope_parameters", map[string]any{"full_attention": map[string]any{"rope_type": "yarn", "rope_theta": 1e4}}), LoadOptions{},
			`rope_parameters.full_attention.rope_type "yarn"`),
		case_("rope_scaling", nil, set("rope_scaling", map[string]any{"type": "linear", "factor": 2}), LoadOptions{},
			"rope_scaling"),
		case_("another model", nil, set("model_type", "bert"), LoadOptions{},
			`model_type "bert" is not "modernbert"`),
		case_("odd head width", nil, set("num_attention_heads", 32), LoadOptions{},
			"must be even"),
	}, func(dir string, opts LoadOptions) error {
		_, err := LoadPretrained(dir, model.NewStore(), opts)
		return err
	})
	// A folder with biases read with a config without them: the biases are unexpected.
	dir := copyFolder(t, "tiny_bias", nil, func(doc map[string]any) { doc["attention_bias"] = false })
	if _, err := LoadPretrained(dir, model.NewStore(), LoadOptions{}); err == nil || !strings.Contains(err.Error(), "model.layers.0.attn.Wqkv.bias") {
		t.Errorf("biases the config does not have: error %v, want one naming model.layers.0.attn.Wqkv.bias", err)
	}
}

// TestParseConfigLegacyKeys: the keys of the configs on the Hub (global_attn_every_n_layers,
// global_rope_theta, local_rope_theta, no layer_types or rope_parameters) give the layout
// transformers builds from them, and defaults fill what is left out.
func TestParseConfigLegacyKeys(t *testing.T) {
	cfg, err := ParseConfig([]byte(`{"model_type": "modernbert", "num_hidden_layers": 7, "global_attn_every_n_layers": 3,
		"global_rope_theta": 80000.0, "local_rope_theta": 5000.0, "rope_scaling": null,
		"id2label": {"0": "neg", "1": "pos"}, "label2id": {"neg": 0, "pos": 1}}`), "legacy.json")
	if err != nil {
		t.Fatal(err)
	}
	g, l := FullAttention, SlidingAttention
	if want := []string{g, l, l, g, l, l, g}; !slices.Equal(cfg.LayerTypes, want) {
		t.Errorf("LayerTypes %v, want %v", cfg.LayerTypes, want)
	}
	if cfg.GlobalRopeTheta != 80000 || cfg.LocalRopeTheta != 5000 {
		t.Errorf("thetas %g, %g, want 80000, 5000", cfg.GlobalRopeTheta, cfg.LocalRopeTheta)
	}
	if cfg.NumLabels != 2 || !slices.Equal(cfg.Labels, []string{"neg", "pos"}) || cfg.HiddenSize != 768 || cfg.LocalAttention != 128 {
		t.Errorf("labels %d %q, hidden %d, local_attention %d: want 2 [neg pos], ModernBERT-base's 768 and 128",
			cfg.NumLabels, cfg.Labels, cfg.HiddenSize, cfg.LocalAttention)
	}
	// Written back, both spellings are there, and they read back the same.
	out, err := cfg.JSON()
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	if doc["global_attn_every_n_layers"] != 3.0 || doc["architectures"].([]any)[0] != "ModernBertForSequenceClassification" {
		t.Errorf("config.json written: %s", out)
	}
	back, err := ParseConfig(out, "written")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(back.LayerTypes, cfg.LayerTypes) || back.GlobalRopeTheta != 80000 || back.LocalRopeTheta != 5000 ||
		!slices.Equal(back.Labels, cfg.Labels) {
		t.Errorf("read back: %+v", back)
	}
}

// TestSavePretrainedRoundTrip: a classifier saved by SavePretrained (the bfloat16 checkpoint
// with every bias and mean pooling, with class names; and a fresh random model) loads again
// here with the same logits and, when GOACCEL_TORCH_PYTHON names a Python with torch and
// transformers, in transformers' AutoModelForSequenceClassification with the same logits
// within tolerance.
func TestSavePretrainedRoundTrip(t *testing.T) {
	f := loadFixtures(t)
	backend := mustBackend(t)
	in := f.Models["tiny_bias"].Batch

	loaded, err := LoadPretrained(filepath.Join("testdata", "tiny_bias"), model.NewStore(), LoadOptions{LoadHead: true})
	if err != nil {
		t.Fatal(err)
	}
	loaded.Config.Labels = []string{"negative", "neutral", "positive"}
	freshCfg := loaded.Config
	freshCfg.NormBias, freshCfg.AttentionBias, freshCfg.MLPBias, freshCfg.ClassifierBias = false, false, false, false
	freshCfg.ClassifierPooling, freshCfg.NumLabels, freshCfg.Labels = "cls", 2, nil
	freshCfg.LayerTypes = []string{SlidingAttention, FullAttention, FullAttention} // no global_attn_every_n_layers gives it
	store := model.NewStore()
	if err := store.SetRNGStateFromSeed(5); err != nil {
		t.Fatal(err)
	}
	fresh, err := NewClassifier(freshCfg, store)
	if err != nil {
		t.Fatal(err)
	}
	python := os.Getenv("GOACCEL_TORCH_PYTHON")
	for name, clf := range map[string]*Classifier{"tiny_bias": loaded, "fresh": fresh} {
		t.Run(name, func(t *testing.T) {
			want := logitsOf(t, backend, clf, in.InputIDs, in.AttentionMask, false) // creates a fresh model's variables
			out := filepath.Join(t.TempDir(), name)
			if err := SavePretrained(out, clf); err != nil {
				t.Fatal(err)
			}
			back, err := LoadPretrained(out, model.NewStore(), LoadOptions{LoadHead: true})
			if err != nil {
				t.Fatalf("loading the saved folder: %v", err)
			}
			if !slices.Equal(back.Config.LayerTypes, clf.Config.LayerTypes) || !slices.Equal(back.Config.Labels, clf.Config.Labels) {
				t.Errorf("read back layer_types %v labels %q, saved %v %q", back.Config.LayerTypes, back.Config.Labels,
					clf.Config.LayerTypes, clf.Config.Labels)
			}
			if d := testutil.MaxAbsDiff(t, "logits", logitsOf(t, backend, back, in.InputIDs, in.AttentionMask, false), want); d != 0 {
				t.Errorf("the saved folder gives logits %g away", d)
			}
			if python == "" {
				testutil.TorchPython(t, "the transformers half")
			}
			ids, _ := json.Marshal(in.InputIDs)
			mask, _ := json.Marshal(in.AttentionMask)
			script := fmt.Sprintf(`
import json, sys, torch
from transformers import AutoModelForSequenceClassification
m = AutoModelForSequenceClassification.from_pretrained(sys.argv[1], attn_implementation="eager").eval()
with torch.no_grad():
    logits = m(input_ids=torch.tensor(%s), attention_mask=torch.tensor(%s)).logits
print(json.dumps({"class": type(m).__name__, "layer_types": m.config.layer_types, "id2label": m.config.id2label,
                  "pooling": m.config.classifier_pooling, "logits": logits.flatten().tolist()}))
`, ids, mask)
			var res struct {
				Class      string            `json:"class"`
				LayerTypes []string          `json:"layer_types"`
				ID2Label   map[string]string `json:"id2label"`
				Pooling    string            `json:"pooling"`
				Logits     []float32         `json:"logits"`
			}
			testutil.RunPythonJSON(t, "transformers loading "+out, python, script, &res, out)
			if res.Class != "ModernBertForSequenceClassification" || !slices.Equal(res.LayerTypes, clf.Config.LayerTypes) ||
				res.Pooling != clf.Config.ClassifierPooling || res.ID2Label["0"] != hf.LabelName(clf.Config.Labels, 0) {
				t.Errorf("transformers read %s, layer_types %v, pooling %q, id2label %v", res.Class, res.LayerTypes, res.Pooling, res.ID2Label)
			}
			d := testutil.MaxAbsDiff(t, "logits", res.Logits, want)
			t.Logf("transformers loaded the saved %s folder as %s: logits max abs diff %.3g", name, res.Class, d)
			if d > tolerance {
				t.Errorf("transformers' logits differ by %g, want <= %g", d, tolerance)
			}
		})
	}
}

// TestDropoutOnlyInTraining: with every dropout rate set, the logits in training differ from
// those in evaluation, which are the same as without dropout.
func TestDropoutOnlyInTraining(t *testing.T) {
	f := loadFixtures(t)
	backend := mustBackend(t)
	in := f.Models["tiny"].Batch
	clf, err := LoadPretrained(filepath.Join("testdata", "tiny"), model.NewStore(), LoadOptions{LoadHead: true})
	if err != nil {
		t.Fatal(err)
	}
	plain := logitsOf(t, backend, clf, in.InputIDs, in.AttentionMask, false)
	clf.Config.AttentionDropout, clf.Config.EmbeddingDropout, clf.Config.MLPDropout, clf.Config.ClassifierDropout = 0.1, 0.1, 0.1, 0.1
	logits := func(train bool) []float32 { return logitsOf(t, backend, clf, in.InputIDs, in.AttentionMask, train) }
	if d := testutil.MaxAbsDiff(t, "eval", logits(false), plain); d != 0 {
		t.Errorf("evaluation logits with dropout rates set differ by %g from those without", d)
	}
	if d := testutil.MaxAbsDiff(t, "train", logits(true), plain); d < 1e-3 {
		t.Errorf("training logits differ by only %g from evaluation's: is dropout applied?", d)
	}
}

// TestLoadPretrainedOtherHeads: a masked-LM checkpoint (answerdotai/ModernBERT-base's kind:
// head.dense and head.norm, a decoder, no classifier) loads with its prediction head and a
// fresh classifier, and a bare ModernBertModel (names without "model.", no head at all) loads
// with a fresh head; both give the encoder's last hidden states of the full checkpoint.
func TestLoadPretrainedOtherHeads(t *testing.T) {
	f := loadFixtures(t)
	backend := mustBackend(t)
	in := f.Models["tiny"].Single
	want := testutil.DecodeF32(t, "hidden", in.HiddenB64, in.HiddenShape)
	maskedLM := func(l []safetensors.Named) []safetensors.Named {
		l = slices.DeleteFunc(l, func(n safetensors.Named) bool { return strings.HasPrefix(n.Name, "classifier.") })
		return append(l, safetensors.Named{Name: "decoder.bias", Tensor: tensors.FromValue(make([]float32, 100))})
	}
	bare := func(l []safetensors.Named) []safetensors.Named {
		var out []safetensors.Named
		for _, n := range l {
			if rest, ok := strings.CutPrefix(n.Name, "model."); ok {
				out = append(out, safetensors.Named{Name: rest, Tensor: n.Tensor})
			}
		}
		return out
	}
	for name, edit := range map[string]func([]safetensors.Named) []safetensors.Named{"masked-LM": maskedLM, "bare": bare} {
		t.Run(name, func(t *testing.T) {
			store := model.NewStore()
			clf, err := LoadPretrained(copyFolder(t, "tiny", edit, nil), store, LoadOptions{NumLabels: 5})
			if err != nil {
				t.Fatal(err)
			}
			headLoaded := store.GetVariable(hf.VarPath("head.dense.weight")) != nil
			if headLoaded != (name == "masked-LM") || store.GetVariable(hf.VarPath("classifier.weight")) != nil {
				t.Errorf("head.dense loaded %v, classifier loaded %v: want the prediction head from a masked-LM checkpoint only, never the classifier",
					headLoaded, store.GetVariable(hf.VarPath("classifier.weight")) != nil)
			}
			hidden, logits := hiddenAndLogits(t, backend, clf, in.InputIDs, in.AttentionMask)
			if d := testutil.MaxAbsDiff(t, "hidden", hidden, want); d > tolerance {
				t.Errorf("last hidden states differ from transformers' by %g", d)
			}
			if len(logits) != 5 {
				t.Errorf("%d logits, want 5 (NumLabels)", len(logits))
			}
		})
	}
}
