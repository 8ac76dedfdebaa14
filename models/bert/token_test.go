package bert

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/internal/testutil"
	"github.com/gomlx/compute"
	. "github.com/gomlx/gomlx/core/graph" //nolint:staticcheck
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// tokenFixtures is testdata/token_fixtures.json, written by scripts/make_token_fixtures.py:
// per family, a tiny *ForTokenClassification checkpoint transformers saved (its config.json
// and tensor list; the weights are weightValues'), the family fixtures' padded batch and
// transformers' per-token logits of it.
type tokenFixtures struct {
	Transformers string                    `json:"transformers_version"`
	Families     map[string]*familyFixture `json:"families"`
}

// loadTokenFixtures reads testdata/token_fixtures.json, one entry per family.
func loadTokenFixtures(t *testing.T) []*familyFixture {
	t.Helper()
	contents, err := os.ReadFile(filepath.Join("testdata", "token_fixtures.json"))
	if err != nil {
		t.Fatal(err)
	}
	var f tokenFixtures
	if err := json.Unmarshal(contents, &f); err != nil {
		t.Fatalf("parsing testdata/token_fixtures.json: %v", err)
	}
	var out []*familyFixture
	for _, name := range Families() {
		fx := f.Families[name]
		if fx == nil {
			t.Fatalf("testdata/token_fixtures.json has no %s", name)
		}
		out = append(out, fx)
	}
	return out
}

// tokenLogits runs Classifier.Logits once (inference) on in and returns them with their shape.
func tokenLogits(t *testing.T, backend compute.Backend, clf *Classifier, in []*tensors.Tensor) ([]float32, []int) {
	t.Helper()
	exec, err := model.NewExec(backend, clf.Store(), func(s *model.Scope, ids, mask, types *Node) *Node {
		return clf.Logits(s, []*Node{ids, mask, types})
	})
	if err != nil {
		t.Fatal(err)
	}
	outs, err := exec.Call(in[0], in[1], in[2])
	if err != nil {
		t.Fatalf("running the %s token classifier: %v", clf.Config.Family(), err)
	}
	return tensors.MustCopyFlatData[float32](outs[0]), outs[0].Shape().Dimensions
}

// tokenOpts loads a folder as a token classifier, with its head.
func tokenOpts(f *familyFixture) LoadOptions {
	return LoadOptions{MaxLen: len(f.InputIDs[0]), LoadHead: true, Head: TokenClassification}
}

// TestTokenTensorsMatchTransformers: each family's token classifier, its Head read from the
// architectures of the config.json transformers wrote, has transformers' tensors, name for
// name and shape for shape (no pooler, "classifier" [num_labels, hidden]).
func TestTokenTensorsMatchTransformers(t *testing.T) {
	for _, f := range loadTokenFixtures(t) {
		t.Run(f.ModelType, func(t *testing.T) {
			cfg, err := ParseConfig(f.Config, "token_fixtures.json")
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Head != TokenClassification {
				t.Fatalf("Head %v from architectures %q, want TokenClassification", cfg.Head, cfg.Architectures)
			}
			ours := cfg.Tensors()
			sort.Slice(ours, func(i, j int) bool { return ours[i].Name < ours[j].Name })
			if theirs := fixtureSpecs(t, f); !slices.EqualFunc(ours, theirs, func(a, b TensorSpec) bool { return a.Name == b.Name && slices.Equal(a.Dims, b.Dims) }) {
				t.Errorf("tensors differ:\n ours   %v\n theirs %v", ours, theirs)
			}
		})
	}
}

// TestTokenParityWithTransformers: each family's token classifier, loaded with its head, gives
// transformers' per-token logits [3, 12, 5] of a padded batch within familyTolerance, on the
// pure-Go and the XLA CPU backends.
func TestTokenParityWithTransformers(t *testing.T) {
	for _, f := range loadTokenFixtures(t) {
		dir := writeFamilyFolder(t, f)
		want := decodeF32(t, "logits", f.LogitsB64, f.LogitsShape)
		for name, backend := range testBackends(t) {
			t.Run(f.ModelType+"/"+name, func(t *testing.T) {
				clf, _, err := LoadPretrained(dir, model.NewStore(), tokenOpts(f))
				if err != nil {
					t.Fatal(err)
				}
				got, shape := tokenLogits(t, backend, clf, familyInputs(f))
				if !slices.Equal(shape, f.LogitsShape) {
					t.Fatalf("logits shape %v, want %v", shape, f.LogitsShape)
				}
				d := testutil.MaxAbsDiff(t, "logits", got, want)
				t.Logf("%s token classifier on %s vs transformers %s: per-token logits %v max abs diff %.3g", f.ModelType, name, f.Transformers, shape, d)
				if d > familyTolerance {
					t.Errorf("max abs diff %g, want <= %g", d, familyTolerance)
				}
			})
		}
	}
}

// TestTokenSavePretrained: each family's token classifier saved by SavePretrained writes the
// family's *ForTokenClassification config.json (no problem_type) and loads back, with its head,
// with the same logits; with GOACCEL_TORCH_PYTHON (a Python with torch and transformers,
// outside the repository) transformers' AutoModelForTokenClassification reads the folder and
// gives the same logits within familyTolerance.
func TestTokenSavePretrained(t *testing.T) {
	python := os.Getenv("GOACCEL_TORCH_PYTHON")
	backend := mustGoBackend(t)
	for _, f := range loadTokenFixtures(t) {
		t.Run(f.ModelType, func(t *testing.T) {
			clf, tok, err := LoadPretrained(writeFamilyFolder(t, f), model.NewStore(), tokenOpts(f))
			if err != nil {
				t.Fatal(err)
			}
			clf.Config.Labels = []string{"O", "B-PER", "I-PER", "B-LOC", "I-LOC"}
			out := filepath.Join(t.TempDir(), "saved")
			if err := SavePretrained(out, clf, tok); err != nil {
				t.Fatal(err)
			}
			var doc map[string]any
			contents, err := os.ReadFile(filepath.Join(out, "config.json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(contents, &doc); err != nil {
				t.Fatal(err)
			}
			wantClass := clf.Config.family().class + "ForTokenClassification"
			if archs, _ := doc["architectures"].([]any); len(archs) != 1 || archs[0] != wantClass {
				t.Errorf("config.json architectures %v, want [%s]", doc["architectures"], wantClass)
			}
			if _, ok := doc["problem_type"]; ok {
				t.Errorf("config.json has problem_type %v: transformers writes none for a token classifier", doc["problem_type"])
			}
			back, _, err := LoadPretrained(out, model.NewStore(), tokenOpts(f))
			if err != nil {
				t.Fatalf("loading the saved folder: %v", err)
			}
			if !slices.Equal(back.Config.Labels, clf.Config.Labels) || back.Config.Head != TokenClassification {
				t.Errorf("read back labels %q head %v", back.Config.Labels, back.Config.Head)
			}
			want, _ := tokenLogits(t, backend, clf, familyInputs(f))
			if got, _ := tokenLogits(t, backend, back, familyInputs(f)); testutil.MaxAbsDiff(t, "logits", got, want) != 0 {
				t.Errorf("the saved %s folder gives other logits", f.ModelType)
			}
			if python == "" {
				testutil.TorchPython(t, "the transformers half")
			}
			ids, _ := json.Marshal(f.InputIDs)
			mask, _ := json.Marshal(f.AttentionMask)
			types, _ := json.Marshal(f.TokenTypeIDs)
			script := fmt.Sprintf(`
import json, sys, torch
from transformers import AutoModelForTokenClassification
m = AutoModelForTokenClassification.from_pretrained(sys.argv[1], attn_implementation="eager").eval()
feed = dict(input_ids=torch.tensor(%s), attention_mask=torch.tensor(%s))
if m.config.model_type in ("bert", "electra"):
    feed["token_type_ids"] = torch.tensor(%s)
with torch.no_grad():
    print(json.dumps({"class": type(m).__name__, "id2label": m.config.id2label, "logits": m(**feed).logits.flatten().tolist()}))
`, ids, mask, types)
			var res struct {
				Class    string            `json:"class"`
				ID2Label map[string]string `json:"id2label"`
				Logits   []float32         `json:"logits"`
			}
			testutil.RunPythonJSON(t, "transformers loading "+out, python, script, &res, out)
			if res.Class != wantClass || res.ID2Label["1"] != "B-PER" {
				t.Errorf("transformers read %s with id2label %v, want %s with B-PER as class 1", res.Class, res.ID2Label, wantClass)
			}
			d := testutil.MaxAbsDiff(t, "logits", res.Logits, want)
			t.Logf("transformers loaded the saved folder as %s: per-token logits max abs diff %.3g", res.Class, d)
			if d > familyTolerance {
				t.Errorf("transformers' logits of the saved folder differ by %g, want <= %g", d, familyTolerance)
			}
		})
	}
}

// TestTokenFromSequenceCheckpoint: each family's sequence-classifier checkpoint (BERT's with
// its pooler) loaded for a token classifier, without LoadHead, gives the checkpoint's encoder
// (transformers' last hidden states) and a fresh token head (N(0, initializer_range²)
// weights, zero biases): the sequence head and the pooler are passed over, not read and not
// errors. The other way, a token checkpoint gives a sequence classifier its encoder.
func TestTokenFromSequenceCheckpoint(t *testing.T) {
	backend := mustGoBackend(t)
	for _, f := range loadFamilyFixtures(t) {
		t.Run(f.ModelType, func(t *testing.T) {
			store := model.NewStore()
			if err := store.SetRNGStateFromSeed(9); err != nil {
				t.Fatal(err)
			}
			clf, _, err := LoadPretrained(writeFamilyFolder(t, f), store, LoadOptions{MaxLen: len(f.InputIDs[0]), NumLabels: 7, Head: TokenClassification})
			if err != nil {
				t.Fatal(err)
			}
			for _, path := range []string{"/classifier/weight", "/classifier/dense/weight", "/pre_classifier/weight", "/" + f.ModelType + "/pooler/dense/weight"} {
				if store.GetVariable(path) != nil {
					t.Errorf("%s was loaded: the token classifier has no use for it", path)
				}
			}
			exec, err := model.NewExec(backend, store, func(s *model.Scope, ids, mask, types *Node) (*Node, *Node) {
				h, pooled := clf.Encoder(s, ids, mask, types)
				if pooled != nil {
					t.Errorf("the token classifier's encoder has a pooled output")
				}
				return h, clf.TokenHead(s, h)
			})
			if err != nil {
				t.Fatal(err)
			}
			in := familyInputs(f)
			outs, err := exec.Call(in[0], in[1], in[2])
			if err != nil {
				t.Fatal(err)
			}
			if d := testutil.MaxAbsDiff(t, "hidden", tensors.MustCopyFlatData[float32](outs[0]), decodeF32(t, "hidden", f.HiddenB64, f.HiddenShape)); d > familyTolerance {
				t.Errorf("last hidden states differ from transformers' by %g", d)
			}
			if dims := outs[1].Shape().Dimensions; !slices.Equal(dims, []int{f.HiddenShape[0], f.HiddenShape[1], 7}) {
				t.Errorf("token logits shaped %v, want [%d %d 7]", dims, f.HiddenShape[0], f.HiddenShape[1])
			}
			w := variableValues(t, store, clf.Config, true)
			weight, bias := w["classifier.weight"], w["classifier.bias"]
			var sum2 float64
			for _, v := range weight {
				sum2 += float64(v) * float64(v)
			}
			std := sum2 / float64(len(weight))
			if r := clf.Config.InitializerRange; std < 0.5*r*r || std > 2*r*r || slices.ContainsFunc(bias, func(v float32) bool { return v != 0 }) {
				t.Errorf("fresh classifier: weight variance %.3g (want about %.3g), bias %v (want zeros)", std, r*r, bias)
			}
		})
	}
	for _, f := range loadTokenFixtures(t) {
		if f.ModelType == "bert" { // BERT's sequence classifier needs a pooler, which a token checkpoint lacks
			continue
		}
		t.Run("sequence from token/"+f.ModelType, func(t *testing.T) {
			clf, _, err := LoadPretrained(writeFamilyFolder(t, f), model.NewStore(), LoadOptions{MaxLen: len(f.InputIDs[0])})
			if err != nil {
				t.Fatal(err)
			}
			if clf.Config.Head != SequenceClassification || clf.Store().GetVariable("/classifier/weight") != nil {
				t.Errorf("head %v, classifier loaded %v: want a fresh sequence head", clf.Config.Head, clf.Store().GetVariable("/classifier/weight") != nil)
			}
		})
	}
}

// TestTokenHeadMismatch: LoadHead with a head the folder's architectures does not name is an
// error naming the config.json, the architecture and both heads, in both directions.
func TestTokenHeadMismatch(t *testing.T) {
	tok, seq := loadTokenFixtures(t)[0], loadFamilyFixtures(t)[0] // bert
	for _, c := range []struct {
		what string
		dir  string
		head Head
		want []string
	}{
		{"token checkpoint for sequences", writeFamilyFolder(t, tok), SequenceClassification,
			[]string{"config.json", "BertForTokenClassification", "a TokenClassification checkpoint", "is SequenceClassification"}},
		{"sequence checkpoint for tokens", writeFamilyFolder(t, seq), TokenClassification,
			[]string{"config.json", "BertForSequenceClassification", "a SequenceClassification checkpoint", "is TokenClassification"}},
	} {
		t.Run(c.what, func(t *testing.T) {
			_, _, err := LoadPretrained(c.dir, model.NewStore(), LoadOptions{MaxLen: 12, LoadHead: true, Head: c.head})
			if err == nil {
				t.Fatal("loaded; want an error naming both heads")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
	if _, _, err := LoadPretrained(writeFamilyFolder(t, seq), nil, LoadOptions{MaxLen: 12, Head: 7}); err == nil || !strings.Contains(err.Error(), "LoadOptions.Head") {
		t.Errorf("LoadOptions.Head 7: error %v, want one naming LoadOptions.Head", err)
	}
}

// TestTokenDropout: the token head's dropout is active only in training and has
// transformers' rate: classifier_dropout (or hidden_dropout_prob) before the classifier, but
// DistilBERT's dropout (hidden_dropout_prob here), not seq_classif_dropout.
func TestTokenDropout(t *testing.T) {
	backend := mustGoBackend(t)
	for _, f := range loadTokenFixtures(t) {
		if f.ModelType != "bert" && f.ModelType != "distilbert" {
			continue
		}
		t.Run(f.ModelType, func(t *testing.T) {
			clf, _, err := LoadPretrained(writeFamilyFolder(t, f), model.NewStore(), tokenOpts(f))
			if err != nil {
				t.Fatal(err)
			}
			clf.Config.HiddenDropoutProb, clf.Config.AttentionProbsDropoutProb = 0, 0
			half := 0.5
			clf.Config.ClassifierDropout = &half // DistilBERT: seq_classif_dropout
			in := familyInputs(f)
			logits := func(train bool) []float32 {
				exec, err := model.NewExec(backend, clf.Store(), func(s *model.Scope, ids, mask, types *Node) *Node {
					s.Store().SetTraining(ids.Graph(), train)
					return clf.Logits(s, []*Node{ids, mask, types})
				})
				if err != nil {
					t.Fatal(err)
				}
				outs, err := exec.Call(in[0], in[1], in[2])
				if err != nil {
					t.Fatal(err)
				}
				return tensors.MustCopyFlatData[float32](outs[0])
			}
			d := testutil.MaxAbsDiff(t, "train vs eval", logits(true), logits(false))
			if dropped := d > 1e-3; dropped != (f.ModelType == "bert") {
				t.Errorf("training logits differ from evaluation's by %g with classifier_dropout 0.5 and every other rate 0: want a difference for bert only", d)
			}
		})
	}
}
