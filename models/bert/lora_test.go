package bert

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/checkpoint/safetensors"
	"github.com/goaccel/goaccel/internal/testutil"
	"github.com/goaccel/goaccel/models/lora"
	"github.com/goaccel/goaccel/optim"
	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// loraLogits runs Classifier.Logits once for inference and returns the flat logits.
func loraLogits(t *testing.T, backend compute.Backend, clf *Classifier, in []*tensors.Tensor) []float32 {
	t.Helper()
	logits, _ := tokenLogits(t, backend, clf, in)
	return logits
}

// loadFixture loads a family fixture's folder with its head into a new Store.
func loadFixture(t *testing.T, dir string, f *familyFixture) *Classifier {
	clf, _ := loadFixtureTok(t, dir, f)
	return clf
}

// loadFixtureTok is loadFixture with the folder's tokenizer.
func loadFixtureTok(t *testing.T, dir string, f *familyFixture) (*Classifier, *Tokenizer) {
	t.Helper()
	store := model.NewStore()
	if err := store.SetRNGStateFromSeed(5); err != nil {
		t.Fatal(err)
	}
	clf, tok, err := LoadPretrained(dir, store, LoadOptions{MaxLen: len(f.InputIDs[0]), LoadHead: true})
	if err != nil {
		t.Fatal(err)
	}
	return clf, tok
}

// randomizeB gives every lora_B of the classifier's adapter random values (B is zero before
// training, which would hide a wrong B or a wrong scale).
func randomizeB(t *testing.T, clf *Classifier, seed uint64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 1))
	for _, m := range clf.Adapter().Targets() {
		v := clf.Store().GetVariable("/" + strings.ReplaceAll(m, ".", "/") + "/lora_B/weight")
		if v == nil {
			t.Fatalf("no lora_B variable for %s", m)
		}
		data := make([]float32, v.Shape().Size())
		for i := range data {
			data[i] = float32(rng.NormFloat64() * 0.5)
		}
		if err := v.SetValue(tensors.FromFlatDataAndDimensions(data, v.Shape().Dimensions...)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLoRAStepZeroIsBase: in every family, a fresh adapter (B = 0) gives the base model's
// logits bit for bit; it targets PEFT's default modules (query and value; q_lin and v_lin for
// DistilBERT) of every layer, with A within kaiming-uniform's bound 1/sqrt(in), B zero, and
// only A, B and the head trainable.
func TestLoRAStepZeroIsBase(t *testing.T) {
	backend := mustGoBackend(t)
	for _, f := range loadFamilyFixtures(t) {
		t.Run(f.ModelType, func(t *testing.T) {
			dir := writeFamilyFolder(t, f)
			want := loraLogits(t, backend, loadFixture(t, dir, f), familyInputs(f))
			clf := loadFixture(t, dir, f)
			a, err := clf.AttachLoRA(lora.Config{R: 4, Alpha: 8}, dir)
			if err != nil {
				t.Fatal(err)
			}
			got := loraLogits(t, backend, clf, familyInputs(f))
			if d := testutil.MaxAbsDiff(t, "logits", got, want); d != 0 {
				t.Errorf("a fresh adapter changes the logits by %g, want 0 (B = 0)", d)
			}
			cfg := clf.Config
			wantTargets := 2 * cfg.NumHiddenLayers
			if len(a.Targets()) != wantTargets {
				t.Errorf("targets %q, want %d layers", a.Targets(), wantTargets)
			}
			defaults := lora.DefaultTargetModules(cfg.Family())
			for _, m := range a.Targets() {
				if !strings.HasSuffix(m, "."+defaults[0]) && !strings.HasSuffix(m, "."+defaults[1]) {
					t.Errorf("target %s is not one of PEFT's defaults %q", m, defaults)
				}
			}
			trainable := 0
			for v := range clf.Store().IterVariables() {
				if !v.Trainable {
					continue
				}
				trainable += v.Shape().Size()
				p := v.Path()
				isLoRA := strings.Contains(p, "/lora_A/") || strings.Contains(p, "/lora_B/")
				isHead := strings.HasPrefix(p, "/classifier/") || strings.HasPrefix(p, "/pre_classifier/")
				if !isLoRA && !isHead {
					t.Errorf("%s is trainable: only the adapter and the head should be", p)
				}
				values := tensors.MustCopyFlatData[float32](v.MustValue())
				bound := 1 / math.Sqrt(float64(cfg.HiddenSize))
				for _, x := range values {
					if strings.Contains(p, "/lora_B/") && x != 0 {
						t.Fatalf("%s has %g, want zeros", p, x)
					}
					if strings.Contains(p, "/lora_A/") && !(math.Abs(float64(x)) <= bound) {
						t.Fatalf("%s has %g, outside kaiming-uniform's bound %g", p, x, bound)
					}
				}
			}
			if trainable != a.NumTrainable() {
				t.Errorf("%d trainable weights in the Store, NumTrainable says %d", trainable, a.NumTrainable())
			}
		})
	}
}

// TestLoRATrainsOnlyAdapterAndHead: three Adam steps (goaccel's optim, weight decay on) on
// the micro BERT with an adapter change its A, B and head, leave every encoder weight bit
// for bit as it was, and give optimizer state to the adapter and the head only.
func TestLoRATrainsOnlyAdapterAndHead(t *testing.T) {
	backend := mustGoBackend(t)
	clf, tok := newMicroModel(t, backend, 11, 8)
	a, err := clf.AttachLoRA(lora.Config{R: 2, Alpha: 4, Dropout: 0.1}, "")
	if err != nil {
		t.Fatal(err)
	}
	before := variableValues(t, clf.Store(), clf.Config, true)
	opt, err := optim.Adam(optim.AdamConfig{LearningRate: 1e-2, WeightDecay: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	step := trainExec(t, backend, clf, opt, nil)
	in := tok.EncodeBatch([]string{"the movie was great", "the movie was bad !", "hello world"}).Tensors()
	labels := tensors.FromFlatDataAndDimensions([]int32{0, 1, 2}, 3)
	for range 3 {
		if _, err := step.Call(in[0], in[1], in[2], labels); err != nil {
			t.Fatal(err)
		}
	}
	after := variableValues(t, clf.Store(), clf.Config, true)
	head := headNames(clf.Config)
	for name, b := range before {
		changed := !slices.Equal(b, after[name])
		if head[name] != changed {
			t.Errorf("%s changed=%v, want %v (only the head and the adapter train)", name, changed, head[name])
		}
	}
	var stateBytes, adapterWeights int
	for v := range clf.Store().IterVariables() {
		p := v.Path()
		if strings.Contains(p, "/lora_B/") {
			if b := tensors.MustCopyFlatData[float32](v.MustValue()); slices.Equal(b, make([]float32, len(b))) {
				t.Errorf("%s is still zero after 3 steps", p)
			}
		}
		if strings.Contains(p, "/lora_") && !strings.HasSuffix(p, "_moment") {
			adapterWeights += v.Shape().Size()
		}
		if strings.HasSuffix(p, "_moment") {
			stateBytes += int(v.Shape().ByteSize())
			owner := p[strings.Index(p[1:], "/")+1:]
			if !strings.Contains(owner, "/lora_") && !strings.HasPrefix(owner, "/classifier/") {
				t.Errorf("optimizer state %s belongs to a frozen variable", p)
			}
		}
	}
	if want := 2 * 4 * a.NumTrainable(); stateBytes != want {
		t.Errorf("optimizer state is %d bytes, want Adam's two float32 moments of the %d trainable weights = %d", stateBytes, a.NumTrainable(), want)
	}
	t.Logf("micro BERT: %d weights, %d trainable with LoRA (%d in the adapter), optimizer state %d bytes",
		clf.NumParameters(), a.NumTrainable(), adapterWeights, stateBytes)
}

// TestLoRASaveLoad: in every family, SavePretrained of a classifier with an adapter (B random,
// so that it counts) writes a merged plain folder that LoadPretrained reads with the same
// logits (within 1e-5: W + scale·B·A is rounded once more) and, in its subfolder adapter/,
// PEFT's files, with PEFT's names and configuration, which load back onto a fresh copy of the
// base with the same logits bit for bit. With
// GOACCEL_TORCH_PYTHON (a Python with torch, transformers and peft outside the repository),
// peft.PeftModel.from_pretrained on transformers' model of the base folder, and
// transformers on the merged folder, give the same logits within 1e-5.
func TestLoRASaveLoad(t *testing.T) {
	backend := mustGoBackend(t)
	python := os.Getenv("GOACCEL_TORCH_PYTHON")
	for _, f := range loadFamilyFixtures(t) {
		t.Run(f.ModelType, func(t *testing.T) {
			dir := writeFamilyFolder(t, f)
			clf, tok := loadFixtureTok(t, dir, f)
			if _, err := clf.AttachLoRA(lora.Config{R: 2, Alpha: 6}, dir); err != nil {
				t.Fatal(err)
			}
			loraLogits(t, backend, clf, familyInputs(f)) // creates A and B
			randomizeB(t, clf, 3)
			want := loraLogits(t, backend, clf, familyInputs(f))
			merged := filepath.Join(t.TempDir(), "merged")
			if err := SavePretrained(merged, clf, tok); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(merged, AdapterDir)
			checkPEFTFiles(t, out, clf)

			back := loadFixture(t, dir, f)
			if _, err := LoadAdapter(out, back); err != nil {
				t.Fatal(err)
			}
			if d := testutil.MaxAbsDiff(t, "logits", loraLogits(t, backend, back, familyInputs(f)), want); d != 0 {
				t.Errorf("the adapter loaded back gives logits %g away", d)
			}
			plain, _, err := LoadPretrained(merged, model.NewStore(), LoadOptions{MaxLen: len(f.InputIDs[0]), LoadHead: true})
			if err != nil {
				t.Fatal(err)
			}
			if d := testutil.MaxAbsDiff(t, "logits", loraLogits(t, backend, plain, familyInputs(f)), want); d > familyTolerance {
				t.Errorf("the merged folder gives logits %g away, want <= %g", d, familyTolerance)
			}
			script := peftPrelude(t, python, f) + `
from transformers import AutoModelForSequenceClassification as M
base = M.from_pretrained(sys.argv[1], attn_implementation="eager")
pm = PeftModel.from_pretrained(base, sys.argv[2]).eval()
merged = M.from_pretrained(sys.argv[3], attn_implementation="eager").eval()
print(json.dumps({"peft": peft.__version__, "adapter": run(pm), "merged": run(merged)}))
`
			var res struct {
				PEFT    string    `json:"peft"`
				Adapter []float32 `json:"adapter"`
				Merged  []float32 `json:"merged"`
			}
			testutil.RunPythonJSON(t, "peft loading "+out, python, script, &res, dir, out, merged)
			da := testutil.MaxAbsDiff(t, "PEFT logits", res.Adapter, want)
			dm := testutil.MaxAbsDiff(t, "merged logits", res.Merged, want)
			t.Logf("peft %s: PeftModel.from_pretrained logits max abs diff %.3g, merged folder in transformers %.3g", res.PEFT, da, dm)
			if da > familyTolerance || dm > familyTolerance {
				t.Errorf("PEFT's logits differ by %g and the merged folder's by %g, want <= %g", da, dm, familyTolerance)
			}
		})
	}
}

// peftPrelude is the start of a Python script that runs a model of the fixture f's family on
// its inputs (run(m): the flat logits), with PEFT imported; it skips the test, saying so, when
// python (GOACCEL_TORCH_PYTHON) is empty.
func peftPrelude(t *testing.T, python string, f *familyFixture) string {
	t.Helper()
	if python == "" {
		testutil.TorchPython(t, "the PEFT half")
	}
	ids, _ := json.Marshal(f.InputIDs)
	mask, _ := json.Marshal(f.AttentionMask)
	types, _ := json.Marshal(f.TokenTypeIDs)
	return fmt.Sprintf(`
import json, sys, torch, peft
from peft import PeftModel
def run(m):
    feed = dict(input_ids=torch.tensor(%s), attention_mask=torch.tensor(%s))
    if m.config.model_type in ("bert", "electra"):
        feed["token_type_ids"] = torch.tensor(%s)
    with torch.no_grad():
        return m(**feed).logits.flatten().tolist()
`, ids, mask, types)
}

// checkPEFTFiles checks an adapter folder against PEFT's format: adapter_config.json's keys
// and adapter_model.safetensors' names.
func checkPEFTFiles(t *testing.T, dir string, clf *Classifier) {
	t.Helper()
	var doc map[string]any
	contents, err := os.ReadFile(filepath.Join(dir, "adapter_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(contents, &doc); err != nil {
		t.Fatal(err)
	}
	task := map[Head]string{SequenceClassification: "SEQ_CLS", TokenClassification: "TOKEN_CLS"}[clf.Config.Head]
	for key, want := range map[string]any{"peft_type": "LORA", "task_type": task, "r": 2.0, "lora_alpha": 6.0,
		"lora_dropout": 0.0, "bias": "none", "fan_in_fan_out": false, "use_rslora": false, "use_dora": false} {
		if doc[key] != want {
			t.Errorf("adapter_config.json %s = %v, want %v", key, doc[key], want)
		}
	}
	if fmt.Sprint(doc["modules_to_save"]) != "[classifier score]" {
		t.Errorf("modules_to_save %v, want PEFT's [classifier score]", doc["modules_to_save"])
	}
	named, _, err := safetensors.ReadFile(filepath.Join(dir, "adapter_model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, n := range named {
		got = append(got, n.Name)
	}
	var want []string
	for _, m := range clf.Adapter().Targets() {
		want = append(want, "base_model.model."+m+".lora_A.weight", "base_model.model."+m+".lora_B.weight")
	}
	for _, h := range clf.Config.HeadTensors() {
		want = append(want, "base_model.model."+h.Name)
	}
	sort.Strings(got)
	sort.Strings(want)
	if !slices.Equal(got, want) {
		t.Errorf("adapter_model.safetensors holds %q, want %q", got, want)
	}
}

// TestLoRABadInput: the errors name what is wrong: a target module the family lacks (with the
// ones it has), an adapter saved on another family's base, an adapter of other widths, and an
// adapter_config.json goaccel does not compute.
func TestLoRABadInput(t *testing.T) {
	backend := mustGoBackend(t)
	fixtures := map[string]*familyFixture{}
	for _, f := range loadFamilyFixtures(t) {
		fixtures[f.ModelType] = f
	}
	bertDir := writeFamilyFolder(t, fixtures["bert"])
	clf := loadFixture(t, bertDir, fixtures["bert"])
	_, err := clf.AttachLoRA(lora.Config{TargetModules: []string{"q_lin"}}, "")
	if err == nil || !strings.Contains(err.Error(), `"q_lin"`) || !strings.Contains(err.Error(), `"query"`) || !strings.Contains(err.Error(), `"intermediate.dense"`) {
		t.Errorf("target q_lin on bert: got %v, want an error naming it and the layers bert has", err)
	}
	for _, bad := range []lora.Config{{R: -1}, {Dropout: 1}, {Alpha: math.NaN()}, {TargetModules: []string{".query"}}} {
		if _, err := clf.AttachLoRA(bad, ""); err == nil {
			t.Errorf("AttachLoRA(%+v) gave no error", bad)
		}
	}

	// An adapter saved on RoBERTa, loaded onto BERT: other names.
	f := fixtures["roberta"]
	rdir := writeFamilyFolder(t, f)
	rob := loadFixture(t, rdir, f)
	if _, err := rob.AttachLoRA(lora.Config{R: 2}, rdir); err != nil {
		t.Fatal(err)
	}
	loraLogits(t, backend, rob, familyInputs(f))
	radapter := filepath.Join(t.TempDir(), "roberta-adapter")
	if err := SaveAdapter(radapter, rob, nil); err != nil {
		t.Fatal(err)
	}
	_, err = LoadAdapter(radapter, loadFixture(t, bertDir, fixtures["bert"]))
	t.Logf("roberta adapter on bert: %v", err)
	if err == nil || !strings.Contains(err.Error(), "base_model.model.roberta.encoder.layer.0.attention.self.query.lora_A.weight") || !strings.Contains(err.Error(), "missing tensors: base_model.model.bert.") {
		t.Errorf("a roberta adapter on bert: got %v, want an error naming the unexpected and missing tensors", err)
	}

	// An adapter of the micro BERT (hidden 16) onto the fixture's BERT: other shapes.
	micro, microTok := newMicroModel(t, backend, 1, 8)
	if _, err := micro.AttachLoRA(lora.Config{R: 2}, ""); err != nil {
		t.Fatal(err)
	}
	microDir := filepath.Join(t.TempDir(), "micro")
	logitsOnce(t, backend, micro, microTok.EncodeBatch([]string{"the movie"}), false)
	if err := SaveAdapter(microDir, micro, nil); err != nil {
		t.Fatal(err)
	}
	_, err = LoadAdapter(microDir, loadFixture(t, bertDir, fixtures["bert"]))
	t.Logf("micro adapter on the fixture's bert: %v", err)
	if err == nil || !strings.Contains(err.Error(), "wrong shape") {
		t.Errorf("an adapter of other widths: got %v, want an error naming the tensors of the wrong shape", err)
	}

	// A configuration goaccel does not compute.
	contents, err := os.ReadFile(filepath.Join(microDir, "adapter_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	dora := strings.Replace(string(contents), `"use_dora": false`, `"use_dora": true`, 1)
	if err := os.WriteFile(filepath.Join(microDir, "adapter_config.json"), []byte(dora), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadAdapter(microDir, loadFixture(t, bertDir, fixtures["bert"])); err == nil || !strings.Contains(err.Error(), "use_dora") {
		t.Errorf("use_dora: got %v, want an error naming it", err)
	}
}

// TestLoRATokenClassifier: a token classifier's adapter in every family is saved as TOKEN_CLS
// with the token head, loads back bit for bit, and with GOACCEL_TORCH_PYTHON PEFT's
// PeftModel.from_pretrained on transformers' AutoModelForTokenClassification gives the same
// per-token logits within 1e-5.
func TestLoRATokenClassifier(t *testing.T) {
	backend := mustGoBackend(t)
	python := os.Getenv("GOACCEL_TORCH_PYTHON")
	for _, f := range loadTokenFixtures(t) {
		t.Run(f.ModelType, func(t *testing.T) {
			dir := writeFamilyFolder(t, f)
			load := func() *Classifier {
				clf, _, err := LoadPretrained(dir, model.NewStore(), tokenOpts(f))
				if err != nil {
					t.Fatal(err)
				}
				return clf
			}
			clf := load()
			if _, err := clf.AttachLoRA(lora.Config{R: 2, Alpha: 6}, dir); err != nil {
				t.Fatal(err)
			}
			loraLogits(t, backend, clf, familyInputs(f))
			randomizeB(t, clf, 5)
			want := loraLogits(t, backend, clf, familyInputs(f))
			out := filepath.Join(t.TempDir(), "adapter")
			if err := SaveAdapter(out, clf, nil); err != nil {
				t.Fatal(err)
			}
			checkPEFTFiles(t, out, clf)
			back := load()
			if _, err := LoadAdapter(out, back); err != nil {
				t.Fatal(err)
			}
			if d := testutil.MaxAbsDiff(t, "logits", loraLogits(t, backend, back, familyInputs(f)), want); d != 0 {
				t.Errorf("the adapter loaded back gives logits %g away", d)
			}
			script := peftPrelude(t, python, f) + `
from transformers import AutoModelForTokenClassification as M
pm = PeftModel.from_pretrained(M.from_pretrained(sys.argv[1], attn_implementation="eager"), sys.argv[2]).eval()
print(json.dumps({"logits": run(pm)}))
`
			var res struct {
				Logits []float32 `json:"logits"`
			}
			testutil.RunPythonJSON(t, "peft loading "+out, python, script, &res, dir, out)
			d := testutil.MaxAbsDiff(t, "PEFT logits", res.Logits, want)
			t.Logf("PeftModel.from_pretrained on the token classifier: per-token logits max abs diff %.3g", d)
			if d > familyTolerance {
				t.Errorf("PEFT's per-token logits differ by %g, want <= %g", d, familyTolerance)
			}
		})
	}
}

// TestLoRAAdapterNeedsTheBase: an adapter (A, B and the head, as PEFT's files hold) loaded onto
// a classifier whose frozen encoder has no values yet (NewClassifier on a new Store) is
// refused naming the tensors and the merged folder: the encoder would be drawn at random and
// the model would not be the one trained. Onto a classifier with values it loads, as
// lora.LoadFrom loads the other families' adapters.
func TestLoRAAdapterNeedsTheBase(t *testing.T) {
	backend := mustGoBackend(t)
	micro, tok := newMicroModel(t, backend, 1, 8)
	if _, err := micro.AttachLoRA(lora.Config{R: 2}, ""); err != nil {
		t.Fatal(err)
	}
	logitsOnce(t, backend, micro, tok.EncodeBatch([]string{"the movie"}), false)
	dir := filepath.Join(t.TempDir(), "adapter")
	if err := SaveAdapter(dir, micro, nil); err != nil {
		t.Fatal(err)
	}
	bare, err := NewClassifier(microConfig(tok.VocabSize()), model.NewStore())
	if err != nil {
		t.Fatal(err)
	}
	_, err = LoadAdapter(dir, bare)
	t.Logf("adapter onto a classifier without values: %v", err)
	if err == nil || !strings.Contains(err.Error(), "bert.embeddings.word_embeddings.weight") || !strings.Contains(err.Error(), "merged folder") {
		t.Errorf("adapter onto a classifier without values: got %v, want an error naming its tensors and the merged folder", err)
	}
	if bare.Adapter() != nil {
		t.Error("the refused adapter was attached")
	}
	base, _ := newMicroModel(t, backend, 1, 8)
	if _, err := LoadAdapter(dir, base); err != nil {
		t.Errorf("adapter onto a classifier with values: %v", err)
	}
}
