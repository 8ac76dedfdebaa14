package deberta

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
	. "github.com/gomlx/gomlx/core/graph" //nolint:staticcheck
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// copyFolder copies testdata/<name> into a temporary folder, with its tensors and
// config.json edited (see familytest.CopyFolder).
func copyFolder(t *testing.T, name string, edit func([]safetensors.Named) []safetensors.Named, editConfig func(map[string]any)) string {
	t.Helper()
	return familytest.CopyFolder(t, filepath.Join("testdata", name), edit, editConfig)
}

// zeros is a float32 tensor of zeros.
func zeros(dims ...int) *tensors.Tensor {
	n := 1
	for _, d := range dims {
		n *= d
	}
	return tensors.FromFlatDataAndDimensions(make([]float32, n), dims...)
}

// TestLoadPretrainedErrors: a checkpoint that does not fit its config, or a config this
// package does not compute, is refused with an error naming the tensor, or config.json and
// the key.
func TestLoadPretrainedErrors(t *testing.T) {
	without, set, case_ := familytest.Without, familytest.Set, familytest.Case[LoadOptions]
	extra := func(l []safetensors.Named) []safetensors.Named {
		return append(l, safetensors.Named{Name: "deberta.encoder.layer.3.output.LayerNorm.weight", Tensor: zeros(32)})
	}
	familytest.CheckLoadErrors(t, filepath.Join("testdata", "tiny"), []familytest.LoadCase[LoadOptions]{
		case_("control", nil, nil, LoadOptions{}),
		case_("missing tensor", without("deberta.encoder.layer.1.attention.self.key_proj.weight"), nil, LoadOptions{},
			"1 missing tensors: deberta.encoder.layer.1.attention.self.key_proj.weight", "model.safetensors"),
		case_("missing relative embeddings", without("deberta.encoder.rel_embeddings.weight"), nil, LoadOptions{},
			"missing tensors: deberta.encoder.rel_embeddings.weight"),
		case_("missing classifier", without("classifier.bias"), nil, LoadOptions{LoadHead: true},
			"missing tensors: classifier.bias"),
		case_("half a pooler", without("pooler.dense.bias"), nil, LoadOptions{},
			"missing tensors: pooler.dense.bias"),
		case_("wrong shape", nil, set("intermediate_size", 40), LoadOptions{},
			"deberta.encoder.layer.0.intermediate.dense.weight has shape [37 32], config wants [40 32]"),
		case_("other buckets", nil, set("position_buckets", 16), LoadOptions{},
			"deberta.encoder.rel_embeddings.weight has shape [16 32], config wants [32 32]"),
		case_("unshared projections", nil, set("share_att_key", false), LoadOptions{},
			"missing tensors", "deberta.encoder.layer.0.attention.self.pos_key_proj.bias"),
		case_("more layers", extra, nil, LoadOptions{},
			"unexpected tensors", "deberta.encoder.layer.3.output.LayerNorm.weight"),
		case_("conv layer", nil, set("conv_kernel_size", 3), LoadOptions{},
			"config.json", "conv_kernel_size 3 is not supported"),
		case_("head size", nil, set("attention_head_size", 16), LoadOptions{},
			"config.json", "attention_head_size 16"),
		case_("p2p", nil, set("pos_att_type", "p2c|p2p"), LoadOptions{},
			"config.json", `pos_att_type[1] is "p2p"`),
		case_("norm_rel_ebd", nil, set("norm_rel_ebd", "layer_norm|batch_norm"), LoadOptions{},
			`norm_rel_ebd "layer_norm|batch_norm"`),
		case_("activation", nil, set("hidden_act", "gelu_fast"), LoadOptions{},
			`hidden_act "gelu_fast"`),
		case_("pooler size", nil, set("pooler_hidden_size", 16), LoadOptions{},
			"config.json", "pooler_hidden_size 16"),
		case_("another model", nil, set("model_type", "deberta"), LoadOptions{},
			`model_type "deberta" is not "deberta-v2"`),
	}, func(dir string, opts LoadOptions) error {
		_, err := LoadPretrained(dir, model.NewStore(), opts)
		return err
	})
	if _, err := LoadPretrained(t.TempDir(), nil, LoadOptions{}); err == nil || !strings.Contains(err.Error(), "no model.safetensors") {
		t.Errorf("an empty folder: error %v, want one naming model.safetensors", err)
	}
}

// TestParseConfigHubKeys: microsoft/deberta-v3-base's config.json as on the Hub (pos_att_type
// written "p2c|c2p", no embedding_size or pooler keys) reads as DeBERTa-v3, defaults fill what
// is left out, and JSON writes it back so that it reads the same.
func TestParseConfigHubKeys(t *testing.T) {
	cfg, err := ParseConfig([]byte(`{"model_type": "deberta-v2", "attention_probs_dropout_prob": 0.1, "hidden_act": "gelu",
		"hidden_dropout_prob": 0.1, "hidden_size": 768, "initializer_range": 0.02, "intermediate_size": 3072,
		"max_position_embeddings": 512, "relative_attention": true, "position_buckets": 256, "norm_rel_ebd": "layer_norm",
		"share_att_key": true, "pos_att_type": "p2c|c2p", "layer_norm_eps": 1e-7, "max_relative_positions": -1,
		"position_biased_input": false, "num_attention_heads": 12, "num_hidden_layers": 12, "type_vocab_size": 0,
		"vocab_size": 128100, "id2label": {"0": "entailment", "1": "neutral", "2": "contradiction"}}`), "v3-base.json")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.PosAttType, []string{P2C, C2P}) || cfg.EmbeddingSize != 768 || cfg.NumLabels != 3 ||
		cfg.attSpan() != 256 || cfg.maxRelativePositions() != 512 || cfg.PoolerHiddenAct != "gelu" || cfg.clsDropout() != 0.1 {
		t.Errorf("read %+v", cfg)
	}
	if n, want := len(cfg.Tensors()), 3+16*12+3+2+2; n != want {
		t.Errorf("%d tensors, want %d", n, want)
	}
	out, err := cfg.JSON()
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	if doc["architectures"].([]any)[0] != "DebertaV2ForSequenceClassification" || doc["label2id"].(map[string]any)["neutral"] != 1.0 ||
		!strings.Contains(string(out), `"layer_norm_eps": 1e-7`) || !strings.Contains(string(out), `"pooler_dropout": 0.0`) {
		t.Errorf("config.json written: %s", out)
	}
	back, err := ParseConfig(out, "written")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(back.PosAttType, cfg.PosAttType) || !slices.Equal(back.Labels, cfg.Labels) || back.HiddenSize != 768 ||
		back.PositionBuckets != 256 || !back.ShareAttKey || back.PositionBiasedInput {
		t.Errorf("read back: %+v", back)
	}
}

// TestSavePretrainedRoundTrip: a classifier saved by SavePretrained (tiny with class names;
// tiny_alt, read from bfloat16; fresh random models of tiny's layout with c2p alone and of
// tiny_abs's, without relative attention) loads again here with the same
// logits and, when GOACCEL_TORCH_PYTHON names a Python with torch and transformers, in
// transformers' AutoModelForSequenceClassification with the same logits within tolerance.
func TestSavePretrainedRoundTrip(t *testing.T) {
	f := loadFixtures(t)
	backend := familytest.Go(t)
	tiny := loadFixture(t, "tiny")
	tiny.Config.Labels = []string{"negative", "neutral", "positive"}
	fresh := freshClassifier(t, "tiny", func(c *Config) { c.NumLabels, c.Labels, c.PosAttType = 2, nil, []string{C2P} })
	freshAbs := freshClassifier(t, "tiny_abs", nil) // encoder.LayerNorm there but unused
	python := os.Getenv("GOACCEL_TORCH_PYTHON")
	for _, c := range []struct {
		name string
		clf  *Classifier
		in   *run
	}{{"tiny", tiny, f.Models["tiny"].Batch}, {"tiny_alt", loadFixture(t, "tiny_alt"), f.Models["tiny_alt"].Batch},
		{"fresh", fresh, f.Models["tiny"].Batch}, {"fresh_abs", freshAbs, f.Models["tiny_abs"].Batch}} {
		t.Run(c.name, func(t *testing.T) {
			want := logitsOf(t, backend, c.clf, c.in, false) // creates a fresh model's variables
			out := filepath.Join(t.TempDir(), c.name)
			if err := SavePretrained(out, c.clf); err != nil {
				t.Fatal(err)
			}
			back, err := LoadPretrained(out, model.NewStore(), LoadOptions{LoadHead: true})
			if err != nil {
				t.Fatalf("loading the saved folder: %v", err)
			}
			if !slices.Equal(back.Config.Labels, c.clf.Config.Labels) || !slices.Equal(back.Config.PosAttType, c.clf.Config.PosAttType) {
				t.Errorf("read back labels %q pos_att_type %v, saved %q %v", back.Config.Labels, back.Config.PosAttType,
					c.clf.Config.Labels, c.clf.Config.PosAttType)
			}
			if d := testutil.MaxAbsDiff(t, "logits", logitsOf(t, backend, back, c.in, false), want); d != 0 {
				t.Errorf("the saved folder gives logits %g away", d)
			}
			if python == "" {
				testutil.TorchPython(t, "the transformers half")
			}
			in := inputsOf(c.in)
			script := fmt.Sprintf(`
import json, sys, torch
from transformers import AutoModelForSequenceClassification
m = AutoModelForSequenceClassification.from_pretrained(sys.argv[1]).eval()
with torch.no_grad():
    logits = m(input_ids=torch.tensor(%s), attention_mask=torch.tensor(%s), token_type_ids=torch.tensor(%s)).logits
print(json.dumps({"class": type(m).__name__, "pos_att_type": m.config.pos_att_type, "id2label": m.config.id2label,
                  "logits": logits.flatten().tolist()}))
`, pyList(in[0]), pyList(in[1]), pyList(in[2]))
			var res struct {
				Class      string            `json:"class"`
				PosAttType []string          `json:"pos_att_type"`
				ID2Label   map[string]string `json:"id2label"`
				Logits     []float32         `json:"logits"`
			}
			testutil.RunPythonJSON(t, "transformers loading "+out, python, script, &res, out)
			if res.Class != "DebertaV2ForSequenceClassification" || !slices.Equal(res.PosAttType, c.clf.Config.PosAttType) ||
				res.ID2Label["0"] != hf.LabelName(c.clf.Config.Labels, 0) {
				t.Errorf("transformers read %s, pos_att_type %v, id2label %v", res.Class, res.PosAttType, res.ID2Label)
			}
			d := testutil.MaxAbsDiff(t, "logits", res.Logits, want)
			t.Logf("transformers loaded the saved %s folder as %s: logits max abs diff %.3g", c.name, res.Class, d)
			if d > tolerance {
				t.Errorf("transformers' logits differ by %g, want <= %g", d, tolerance)
			}
		})
	}
}

// freshClassifier is a random classifier (seeded) of testdata/<name>'s configuration, changed
// by change when not nil.
func freshClassifier(t *testing.T, name string, change func(*Config)) *Classifier {
	t.Helper()
	cfg, err := LoadConfig(filepath.Join("testdata", name, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if change != nil {
		change(&cfg)
	}
	store := model.NewStore()
	if err := store.SetRNGStateFromSeed(5); err != nil {
		t.Fatal(err)
	}
	clf, err := NewClassifier(cfg, store)
	if err != nil {
		t.Fatal(err)
	}
	return clf
}

// pyList writes an int32 [B, L] tensor as a Python list literal.
func pyList(t *tensors.Tensor) string {
	dims := t.Shape().Dimensions
	flat := tensors.MustCopyFlatData[int32](t)
	rows := make([][]int32, dims[0])
	for i := range rows {
		rows[i] = flat[i*dims[1] : (i+1)*dims[1]]
	}
	out, _ := json.Marshal(rows)
	return string(out)
}

// TestDropoutOnlyInTraining: with every dropout rate set, the logits in training differ from
// those in evaluation, which are the same as without dropout.
func TestDropoutOnlyInTraining(t *testing.T) {
	f := loadFixtures(t)
	backend := familytest.Go(t)
	in := f.Models["tiny"].Batch
	clf := loadFixture(t, "tiny")
	plain := logitsOf(t, backend, clf, in, false)
	rate := 0.1
	cfg := &clf.Config
	cfg.HiddenDropoutProb, cfg.AttentionProbsDropoutProb, cfg.PoolerDropout, cfg.ClsDropout = rate, rate, rate, &rate
	if d := testutil.MaxAbsDiff(t, "eval", logitsOf(t, backend, clf, in, false), plain); d != 0 {
		t.Errorf("evaluation logits with dropout rates set differ by %g from those without", d)
	}
	if d := testutil.MaxAbsDiff(t, "train", logitsOf(t, backend, clf, in, true), plain); d < 1e-3 {
		t.Errorf("training logits differ by only %g from evaluation's: is dropout applied?", d)
	}
}

// TestLoadPretrainedOtherHeads: a masked-LM checkpoint (DebertaV2ForMaskedLM's
// lm_predictions head, no pooler or classifier, and the absolute position table that
// DeBERTa-v3's checkpoints carry unused) loads its encoder with a fresh pooler and
// classifier, and so does a bare DebertaV2Model (names without "deberta."); both give the
// last hidden states of the full checkpoint.
func TestLoadPretrainedOtherHeads(t *testing.T) {
	f := loadFixtures(t)
	backend := familytest.Go(t)
	in := f.Models["tiny"].Batch
	want := in.Hidden(t)
	vocab := f.Models["tiny"].Tokenizer.VocabSize
	maskedLM := func(l []safetensors.Named) []safetensors.Named {
		l = slices.DeleteFunc(l, func(n safetensors.Named) bool {
			return strings.HasPrefix(n.Name, "classifier.") || strings.HasPrefix(n.Name, "pooler.")
		})
		return append(l, safetensors.Named{Name: "lm_predictions.lm_head.dense.weight", Tensor: zeros(32, 32)},
			safetensors.Named{Name: "lm_predictions.lm_head.bias", Tensor: zeros(vocab)},
			safetensors.Named{Name: "deberta.embeddings.position_embeddings.weight", Tensor: zeros(64, 32)})
	}
	bare := func(l []safetensors.Named) []safetensors.Named {
		var out []safetensors.Named
		for _, n := range l {
			if rest, ok := strings.CutPrefix(n.Name, "deberta."); ok {
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
			if store.GetVariable(hf.VarPath("pooler.dense.weight")) != nil || store.GetVariable(hf.VarPath("classifier.weight")) != nil {
				t.Errorf("a pooler or classifier was loaded from a checkpoint that has none")
			}
			hidden, logits := hiddenAndLogits(t, backend, clf, in)
			if d := testutil.MaxAbsDiff(t, "hidden", hidden, want); d > tolerance {
				t.Errorf("last hidden states differ from transformers' by %g", d)
			}
			if len(logits) != 5*len(in.InputIDs) {
				t.Errorf("%d logits, want 5 (NumLabels) per row", len(logits))
			}
		})
	}
}

// TestPaddingRowNotTrained: as transformers' padding_idx, the padding token's embedding row
// gets no gradient, even where [PAD] is written in a real (unmasked) position, while the
// other tokens' rows do.
func TestPaddingRowNotTrained(t *testing.T) {
	clf := loadFixture(t, "tiny")
	ids := [][]int32{{1, 5, 0, 7, 2}} // [PAD] (id 0) inside the text, unmasked
	mask := [][]int32{{1, 1, 1, 1, 1}}
	exec, err := model.NewExec(familytest.Go(t), clf.Store(), func(s *model.Scope, ids, mask *Node) *Node {
		loss := ReduceAllSum(Square(clf.Logits(s, []*Node{ids, mask})))
		table := clf.Store().GetVariable(hf.VarPath("deberta.embeddings.word_embeddings.weight")).NodeValue(ids.Graph())
		return Gradient(loss, table)[0]
	})
	if err != nil {
		t.Fatal(err)
	}
	outs, err := exec.Call(familytest.Matrix(ids), familytest.Matrix(mask))
	if err != nil {
		t.Fatal(err)
	}
	grad := tensors.MustCopyFlatData[float32](outs[0])
	width := clf.Config.EmbeddingSize
	rowNorm := func(row int) (n float64) {
		for _, v := range grad[row*width : (row+1)*width] {
			n += float64(v) * float64(v)
		}
		return n
	}
	if rowNorm(0) != 0 || rowNorm(5) == 0 || rowNorm(7) == 0 {
		t.Errorf("squared gradient norms of rows 0 ([PAD]), 5 and 7: %g, %g, %g; want 0 and two positive", rowNorm(0), rowNorm(5), rowNorm(7))
	}
}
