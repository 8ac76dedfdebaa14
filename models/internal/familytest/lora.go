package familytest

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/checkpoint/safetensors"
	"github.com/goaccel/goaccel/internal/envvar"
	"github.com/goaccel/goaccel/internal/testutil"
	"github.com/goaccel/goaccel/models/lora"
	"github.com/goaccel/goaccel/optim"
	. "github.com/gomlx/gomlx/core/graph" //nolint:staticcheck // GoMLX's graph API reads best dot-imported.
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// LoRAModel is a family's classifier as the LoRA checks use it.
type LoRAModel interface {
	model.StoreProvider
	// Logits takes [input_ids, attention_mask].
	Logits(s *model.Scope, inputs []*Node) *Node
	AttachLoRA(cfg lora.Config, baseNameOrPath string) (*lora.Adapter, error)
	Adapter() *lora.Adapter
	NumParameters() int
}

// LoRAKit is what the LoRA checks need of a family: its tiny checkpoint with a sequence
// classifier's head and a training record, and its functions.
type LoRAKit[C LoRAModel] struct {
	// Family is the model_type.
	Family string
	// Dir is the checkpoint's folder (read only).
	Dir string
	// Train is the checkpoint's training record (its batches; its first loss is
	// transformers' loss of the base model on the first batch).
	Train *TrainRun
	// Load reads a folder with its head into a new Store.
	Load func(dir string) (C, error)
	// SavePretrained and LoadAdapter are the family's.
	SavePretrained func(dir string, c C) error
	LoadAdapter    func(dir string, c C) (*lora.Adapter, error)
	// Defaults are the family's default target modules.
	Defaults []string
	// Extra is one more target module for the saving check, one that PEFT matches in several
	// places, frozen head layers included.
	Extra string
	// HeadFrozen are tensors of the head that PEFT does not train (not named by its
	// modules_to_save): they must be frozen.
	HeadFrozen []string
	// Lacks is a target module of another family, and Has a layer the error for it must list.
	Lacks, Has string
}

// Check runs CheckTraining, CheckSave and CheckBadInput as subtests.
func (k LoRAKit[C]) Check(t *testing.T) {
	t.Run("training", k.CheckTraining)
	t.Run("save", k.CheckSave)
	t.Run("bad_input", k.CheckBadInput)
}

// logits runs c.Logits once for inference on the first batch of the training record.
func (k LoRAKit[C]) logits(t testing.TB, c C) []float32 {
	t.Helper()
	exec, err := model.NewExec(XLA(t), c.Store(), func(s *model.Scope, ids, mask *Node) *Node {
		return c.Logits(s, []*Node{ids, mask})
	})
	if err != nil {
		t.Fatal(err)
	}
	b := k.Train.Batches[0]
	out, err := exec.Call(Matrix(b.InputIDs), Matrix(b.AttentionMask))
	if err != nil {
		t.Fatalf("running Logits: %v", err)
	}
	return tensors.MustCopyFlatData[float32](out[0])
}

// load is Load, failing the test on error.
func (k LoRAKit[C]) load(t testing.TB, dir string) C {
	t.Helper()
	c, err := k.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// isAdapterOrClassifier reports whether a Store path is the adapter's or the final
// classifier's (what LoRA trains).
func isAdapterOrClassifier(path string) bool {
	return strings.Contains(path, "/lora_A/") || strings.Contains(path, "/lora_B/") || strings.HasPrefix(path, "/classifier/")
}

// values returns the model variables of store (not the optimizer's) by path.
func values(store *model.Store) map[string][]float32 {
	out := map[string][]float32{}
	for v := range store.IterVariables() {
		if p := v.Path(); !strings.HasSuffix(p, "_moment") && v.Shape().DType.IsFloat() && strings.Count(p, "/") > 1 {
			out[p] = tensors.MustCopyFlatData[float32](v.MustValue())
		}
	}
	return out
}

// CheckTraining: a fresh adapter of the family's defaults gives the base's logits bit for
// bit; it targets the defaults in every layer, and only A, B and the classifier train (the
// head's HeadFrozen tensors do not); 3 Adam steps through the accelerator have a first loss
// equal to transformers' loss of the base (within 1e-4), change A, B and the classifier, and
// leave every other weight bit for bit as loaded; Adam's state is that of the trainable
// weights only.
func (k LoRAKit[C]) CheckTraining(t *testing.T) {
	want := k.logits(t, k.load(t, k.Dir))
	clf := k.load(t, k.Dir)
	a, err := clf.AttachLoRA(lora.Config{R: 4, Alpha: 8}, k.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if d := testutil.MaxAbsDiff(t, "logits", k.logits(t, clf), want); d != 0 {
		t.Errorf("a fresh adapter changes the logits by %g, want 0 (B = 0)", d)
	}
	if got := a.Config().TargetModules; !slices.Equal(got, k.Defaults) {
		t.Errorf("default targets %q, want %q", got, k.Defaults)
	}
	per := map[string]int{}
	for _, m := range a.Targets() {
		per[m[strings.LastIndex(m, ".")+1:]]++
	}
	for _, d := range k.Defaults {
		if per[d] == 0 || per[d] != per[k.Defaults[0]] {
			t.Errorf("targets %q: want every layer's %q", a.Targets(), k.Defaults)
		}
	}
	trainable := 0
	for v := range clf.Store().IterVariables() {
		if v.Trainable {
			trainable += v.Shape().Size()
			if !isAdapterOrClassifier(v.Path()) {
				t.Errorf("%s is trainable: only the adapter and the classifier should be (PEFT's modules_to_save)", v.Path())
			}
		}
	}
	if trainable != a.NumTrainable() {
		t.Errorf("%d trainable weights in the Store, NumTrainable says %d", trainable, a.NumTrainable())
	}
	// Training runs on the accelerator's own backend: a fresh copy, whose A and B the first
	// step creates.
	clf = k.load(t, k.Dir)
	if a, err = clf.AttachLoRA(lora.Config{R: 4, Alpha: 8}, k.Dir); err != nil {
		t.Fatal(err)
	}
	before := values(clf.Store())
	for _, name := range k.HeadFrozen {
		if _, ok := before["/"+strings.ReplaceAll(name, ".", "/")]; !ok {
			t.Fatalf("%s is not in the Store", name)
		}
	}
	opt, err := optim.Adam(optim.AdamConfig{LearningRate: 1e-2, WeightDecay: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	var state int64
	losses := k.Train.run(t, clf, clf.Logits, opt, 3, "no", func() {
		after := values(clf.Store())
		if got := trainableNames(clf.Store()); len(got) != 2*len(a.Targets())+2 {
			t.Errorf("after the steps %q train, want A and B of %d layers and the classifier", got, len(a.Targets()))
		}
		for p, b := range before {
			changed := !slices.Equal(b, after[p])
			if trains := isAdapterOrClassifier(p); changed != trains {
				t.Errorf("%s changed=%v after 3 steps, want %v", p, changed, trains)
			}
		}
		for v := range clf.Store().IterVariables() {
			p := v.Path()
			if strings.HasSuffix(p, "_moment") {
				state += int64(v.Shape().ByteSize())
			} else if strings.Contains(p, "/lora_B/") && slices.Equal(after[p], make([]float32, len(after[p]))) {
				t.Errorf("%s is still zero after 3 steps", p)
			}
		}
	})
	if d := losses[0] - k.Train.Losses[0]; !(d <= 1e-4 && d >= -1e-4) {
		t.Errorf("first LoRA step's loss %.6f, transformers' loss of the base %.6f", losses[0], k.Train.Losses[0])
	}
	if want := int64(2 * 4 * a.NumTrainable()); state != want {
		t.Errorf("Adam's state is %d bytes, want %d (two float32 moments of the %d trainable weights)", state, want, a.NumTrainable())
	}
	t.Logf("%s (%s): LoRA r=4 on %q trains %d of %d weights (%.1f%%); Adam state %d bytes (full fine-tuning: %d); losses %.4f -> %.4f (transformers' base loss %.4f)",
		k.Family, k.Dir, k.Defaults, a.NumTrainable(), clf.NumParameters(), 100*float64(a.NumTrainable())/float64(clf.NumParameters()),
		state, 2*4*clf.NumParameters(), losses[0], losses[2], k.Train.Losses[0])
}

// randomizeB gives every lora_B of the adapter N(0, 0.5²) values (B is zero before training,
// which would hide a wrong B or a wrong scale).
func randomizeB(t testing.TB, store *model.Store, a *lora.Adapter, seed uint64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 1))
	for _, m := range a.Targets() {
		v := store.GetVariable("/" + strings.ReplaceAll(m, ".", "/") + "/lora_B/weight")
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

// trainableNames are the HF names of the Store's trainable variables ("classifier.weight",
// "model.layers.0.attn.Wqkv.lora_A.weight"), sorted.
func trainableNames(store *model.Store) []string {
	var out []string
	for v := range store.IterVariables() {
		if v.Trainable {
			out = append(out, strings.ReplaceAll(strings.TrimPrefix(v.Path(), "/"), "/", "."))
		}
	}
	sort.Strings(out)
	return out
}

// CheckSave: an adapter on the defaults and Extra (r 2, alpha 6, B random) is saved by
// SavePretrained as the merged folder, which the family loads with the same logits within
// 1e-5, and PEFT's files in adapter/ (A and B of the targets and the classifier, PEFT's
// configuration), which load back onto a fresh base bit for bit. With GOACCEL_TORCH_PYTHON:
// peft.PeftModel.from_pretrained on transformers' model of the base folder and transformers
// on the merged folder give the logits within 1e-5, and get_peft_model with the same
// configuration trains the same tensors as goaccel (its modules_to_save's matches).
func (k LoRAKit[C]) CheckSave(t *testing.T) {
	clf := k.load(t, k.Dir)
	cfg := lora.Config{R: 2, Alpha: 6, TargetModules: append(slices.Clone(k.Defaults), k.Extra)}
	a, err := clf.AttachLoRA(cfg, k.Dir)
	if err != nil {
		t.Fatal(err)
	}
	k.logits(t, clf) // creates A and B
	randomizeB(t, clf.Store(), a, 3)
	want := k.logits(t, clf)
	merged := filepath.Join(t.TempDir(), "merged")
	if err := k.SavePretrained(merged, clf); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(merged, "adapter")
	checkPEFTFiles(t, out, a, cfg)
	back := k.load(t, k.Dir)
	if _, err := k.LoadAdapter(out, back); err != nil {
		t.Fatal(err)
	}
	if d := testutil.MaxAbsDiff(t, "logits", k.logits(t, back), want); d != 0 {
		t.Errorf("the adapter loaded back gives logits %g away", d)
	}
	if d := testutil.MaxAbsDiff(t, "logits", k.logits(t, k.load(t, merged)), want); d > 1e-5 {
		t.Errorf("the merged folder gives logits %g away, want <= 1e-5", d)
	}
	python := envvar.TorchPython.Value()
	if python == "" {
		testutil.TorchPython(t, "the PEFT half")
	}
	b := k.Train.Batches[0]
	in, _ := json.Marshal(map[string]any{"input_ids": b.InputIDs, "attention_mask": b.AttentionMask, "targets": cfg.TargetModules})
	const script = `
import json, sys, torch, peft
from peft import PeftModel, LoraConfig, get_peft_model
from transformers import AutoModelForSequenceClassification as M
args = json.loads(sys.argv[4])
def run(m):
    with torch.no_grad():
        return m(input_ids=torch.tensor(args["input_ids"]), attention_mask=torch.tensor(args["attention_mask"])).logits.flatten().tolist()
pm = PeftModel.from_pretrained(M.from_pretrained(sys.argv[1], attn_implementation="eager"), sys.argv[2]).eval()
merged = M.from_pretrained(sys.argv[3], attn_implementation="eager").eval()
fresh = get_peft_model(M.from_pretrained(sys.argv[1], attn_implementation="eager"),
    LoraConfig(task_type="SEQ_CLS", r=2, lora_alpha=6, target_modules=args["targets"]))
names = sorted(n.replace("base_model.model.", "", 1).replace(".default.", ".").replace(".modules_to_save.", ".")
    for n, p in fresh.named_parameters() if p.requires_grad)
print(json.dumps({"peft": peft.__version__, "adapter": run(pm), "merged": run(merged), "trainable": names}))
`
	var res struct {
		PEFT      string    `json:"peft"`
		Adapter   []float32 `json:"adapter"`
		Merged    []float32 `json:"merged"`
		Trainable []string  `json:"trainable"`
	}
	testutil.RunPythonJSON(t, "peft loading "+out, python, script, &res, k.Dir, out, merged, string(in))
	da := testutil.MaxAbsDiff(t, "PEFT logits", res.Adapter, want)
	dm := testutil.MaxAbsDiff(t, "merged logits", res.Merged, want)
	t.Logf("%s, peft %s, targets %q: PeftModel.from_pretrained logits max abs diff %.3g, merged folder in transformers %.3g; %d trainable tensors as PEFT's",
		k.Family, res.PEFT, cfg.TargetModules, da, dm, len(res.Trainable))
	if da > 1e-5 || dm > 1e-5 {
		t.Errorf("PEFT's logits differ by %g and the merged folder's by %g, want <= 1e-5", da, dm)
	}
	if got := trainableNames(clf.Store()); !slices.Equal(got, res.Trainable) {
		t.Errorf("goaccel trains %q, PEFT's get_peft_model %q", got, res.Trainable)
	}
}

// checkPEFTFiles checks an adapter folder against PEFT's format: adapter_config.json's keys
// and adapter_model.safetensors' names (A and B of the targets, the classifier).
func checkPEFTFiles(t testing.TB, dir string, a *lora.Adapter, cfg lora.Config) {
	t.Helper()
	var doc map[string]any
	contents, err := os.ReadFile(filepath.Join(dir, lora.ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(contents, &doc); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]any{"peft_type": "LORA", "task_type": "SEQ_CLS", "r": float64(cfg.R), "lora_alpha": cfg.Alpha,
		"lora_dropout": 0.0, "bias": "none", "use_rslora": false, "use_dora": false} {
		if doc[key] != want {
			t.Errorf("%s %s = %v, want %v", lora.ConfigFile, key, doc[key], want)
		}
	}
	if fmt.Sprint(doc["modules_to_save"]) != "[classifier score]" {
		t.Errorf("modules_to_save %v, want PEFT's [classifier score]", doc["modules_to_save"])
	}
	named, _, err := safetensors.ReadFile(filepath.Join(dir, lora.WeightsFile))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, n := range named {
		got = append(got, n.Name)
	}
	want := []string{"base_model.model.classifier.bias", "base_model.model.classifier.weight"}
	for _, m := range a.Targets() {
		want = append(want, "base_model.model."+m+".lora_A.weight", "base_model.model."+m+".lora_B.weight")
	}
	sort.Strings(got)
	sort.Strings(want)
	if !slices.Equal(got, want) {
		t.Errorf("%s holds %q, want %q", lora.WeightsFile, got, want)
	}
}

// CheckBadInput: a target module of another family (Lacks) is a lora.TargetError naming it
// and the family's layers (Has among them); an adapter whose tensors do not fit the base is
// refused naming them: another rank in adapter_config.json (tensors of the wrong shape), one
// more target module (missing tensors); a second adapter on a classifier is refused.
func (k LoRAKit[C]) CheckBadInput(t *testing.T) {
	clf := k.load(t, k.Dir)
	_, err := clf.AttachLoRA(lora.Config{TargetModules: []string{k.Lacks}}, "")
	var target *lora.TargetError
	if !errors.As(err, &target) || !strings.Contains(err.Error(), fmt.Sprintf("%q", k.Lacks)) || !strings.Contains(err.Error(), k.Has) {
		t.Errorf("target %q on %s: got %v, want a TargetError naming it and the family's layers (%s)", k.Lacks, k.Family, err, k.Has)
	}
	t.Logf("target %q on %s: %v", k.Lacks, k.Family, err)
	if _, err := clf.AttachLoRA(lora.Config{R: 2}, k.Dir); err != nil {
		t.Fatal(err)
	}
	if _, err := clf.AttachLoRA(lora.Config{R: 2}, k.Dir); err == nil {
		t.Error("a second AttachLoRA gave no error")
	}
	k.logits(t, clf)
	merged := filepath.Join(t.TempDir(), "merged")
	if err := k.SavePretrained(merged, clf); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(merged, "adapter")
	original, err := os.ReadFile(filepath.Join(dir, lora.ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	targets, _ := json.Marshal(append(slices.Clone(k.Defaults), k.Extra))
	for _, c := range []struct{ what, from, to, want string }{
		{"another rank", `"r": 2`, `"r": 3`, "wrong shape"},
		{"one more target", `"target_modules": [`, `"target_modules": ` + string(targets) + `, "was": [`, "missing tensors"},
	} {
		edited := strings.Replace(string(original), c.from, c.to, 1)
		if edited == string(original) {
			t.Fatalf("%s: %q is not in %s", c.what, c.from, original)
		}
		if err := os.WriteFile(filepath.Join(dir, lora.ConfigFile), []byte(edited), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := k.LoadAdapter(dir, k.load(t, k.Dir))
		t.Logf("%s: %v", c.what, err)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error naming the %s", c.what, err, c.want)
		}
	}
}
