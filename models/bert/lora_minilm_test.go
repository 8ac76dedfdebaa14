package bert

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/internal/testutil"
	"github.com/goaccel/goaccel/models/lora"
	"github.com/goaccel/goaccel/optim"
	"github.com/gomlx/compute"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// headParameters is the number of weights of cfg's head.
func headParameters(cfg Config) int {
	n := 0
	for _, t := range cfg.HeadTensors() {
		n += shapes.Make(variableDType, t.Dims...).Size()
	}
	return n
}

// loraFigures is what one MiniLM run measures: the weights that train and Adam's state.
type loraFigures struct {
	trainable, stateBytes int64
	losses                []float32
}

// miniLMRun loads the pretrained MiniLM of dir with a fresh 2-class head (and an adapter of
// cfg unless nil), takes steps Adam steps on in, and returns its figures and the classifier.
func miniLMRun(t *testing.T, backend compute.Backend, dir string, cfg *lora.Config, in []*tensors.Tensor, steps int) (*Classifier, *Tokenizer, loraFigures) {
	t.Helper()
	store := model.NewStore()
	if err := store.SetRNGStateFromSeed(7); err != nil {
		t.Fatal(err)
	}
	clf, tok, err := LoadPretrained(dir, store, LoadOptions{MaxLen: 32, NumLabels: 2})
	if err != nil {
		t.Fatal(err)
	}
	if cfg != nil {
		if _, err := clf.AttachLoRA(*cfg, dir); err != nil {
			t.Fatal(err)
		}
	}
	opt, err := optim.Adam(optim.AdamConfig{LearningRate: 1e-3})
	if err != nil {
		t.Fatal(err)
	}
	step := trainExec(t, backend, clf, opt, nil)
	labels := tensors.FromFlatDataAndDimensions([]int32{1, 0, 1, 0}, 4)
	var f loraFigures
	for range steps {
		out, err := step.Call(in[0], in[1], in[2], labels)
		if err != nil {
			t.Fatal(err)
		}
		f.losses = append(f.losses, tensors.MustCopyFlatData[float32](out[0])[0])
	}
	for v := range clf.Store().IterVariables() {
		switch {
		case strings.HasSuffix(v.Path(), "_moment"):
			f.stateBytes += int64(v.Shape().ByteSize())
		case v.Trainable:
			f.trainable += int64(v.Shape().Size())
		}
	}
	return clf, tok, f
}

// TestLoRAMiniLM: the figures of docs/lora.md on the pretrained all-MiniLM-L6-v2 (the parity
// fixture's folder): LoRA with PEFT's defaults (r=8, alpha=8, query and value) against full
// fine-tuning, 3 Adam steps each: the weights that train and Adam's state bytes (measured in
// the Store); the encoder bit for bit after LoRA's steps; and, with GOACCEL_TORCH_PYTHON (a
// Python with torch, transformers and peft), PEFT's logits of the saved adapter on the
// pretrained folder and transformers' of the merged folder, within 1e-5 of goaccel's.
func TestLoRAMiniLM(t *testing.T) {
	testutil.Long(t, "LoRA and full fine-tuning of the pretrained MiniLM, for docs/lora.md's figures (tier 1: TestLoRASaveLoad, TestLoRATrainsOnlyAdapterAndHead)")
	f := loadParityFixture(t)
	dir := parityModelDir(t, f)
	if _, err := os.Stat(filepath.Join(dir, "model.safetensors")); err != nil {
		testutil.Missing(t, "the pretrained MiniLM ("+dir+")", "run make deps, or set GOACCEL_BERT_DIR")
	}
	backend := mustGoBackend(t)
	if _, err := os.Stat(xlaPluginPath()); err == nil {
		b, err := xlaBackend()
		if err != nil {
			t.Fatal(err)
		}
		backend = b
	}
	tok, err := LoadTokenizer(dir, 32)
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{"a charming and often hilarious movie .", "the plot is thin and the acting is worse .",
		"one of the best films of the year", "dull , predictable and far too long"}
	in := tok.EncodeBatch(texts).Tensors()
	const steps = 3

	store := model.NewStore()
	base, _, err := LoadPretrained(dir, store, LoadOptions{MaxLen: 32, NumLabels: 2})
	if err != nil {
		t.Fatal(err)
	}
	encoder := variableValues(t, store, base.Config, false)

	clf, tok, lf := miniLMRun(t, backend, dir, &lora.Config{}, in, steps)
	after := variableValues(t, clf.Store(), clf.Config, false)
	for name, v := range encoder {
		if !slices.Equal(v, after[name]) {
			t.Errorf("%s changed under LoRA", name)
		}
	}
	full, _, ff := miniLMRun(t, backend, dir, nil, in, steps)
	t.Logf("all-MiniLM-L6-v2 (%d weights), %d Adam steps on %s:", full.NumParameters(), steps, backend.Name())
	t.Logf("  LoRA r=8 alpha=8 query,value: %d trainable (%d in the adapter), Adam state %d bytes, losses %.4f",
		lf.trainable, clf.Adapter().NumTrainable()-headParameters(clf.Config), lf.stateBytes, lf.losses)
	t.Logf("  full fine-tuning:             %d trainable, Adam state %d bytes, losses %.4f", ff.trainable, ff.stateBytes, ff.losses)
	if lf.stateBytes != 8*lf.trainable || ff.stateBytes != 8*ff.trainable {
		t.Errorf("Adam's state is not two float32 moments per trainable weight: %d for %d, %d for %d", lf.stateBytes, lf.trainable, ff.stateBytes, ff.trainable)
	}
	if int(lf.trainable) != clf.Adapter().NumTrainable() || int(ff.trainable) != full.NumParameters() {
		t.Errorf("trainable %d (LoRA, NumTrainable %d), %d (full, NumParameters %d)", lf.trainable, clf.Adapter().NumTrainable(), ff.trainable, full.NumParameters())
	}

	out := filepath.Join(t.TempDir(), "best")
	if err := SavePretrained(out, clf, tok); err != nil {
		t.Fatal(err)
	}
	want := loraLogits(t, backend, clf, in)
	python := os.Getenv("GOACCEL_TORCH_PYTHON")
	if python == "" {
		testutil.TorchPython(t, "the PEFT half")
	}
	ids, _ := json.Marshal(texts)
	script := `
import json, sys, torch, peft
from transformers import AutoModelForSequenceClassification as M, AutoTokenizer
from peft import PeftModel
texts = json.loads(sys.argv[4])
tok = AutoTokenizer.from_pretrained(sys.argv[1])
feed = tok(texts, padding="max_length", truncation=True, max_length=32, return_tensors="pt")
def run(m):
    with torch.no_grad():
        return m(**feed).logits.flatten().tolist()
pm = PeftModel.from_pretrained(M.from_pretrained(sys.argv[1], num_labels=2, attn_implementation="eager"), sys.argv[2]).eval()
merged = M.from_pretrained(sys.argv[3], attn_implementation="eager").eval()
print(json.dumps({"peft": peft.__version__, "adapter": run(pm), "merged": run(merged)}))
`
	var res struct {
		PEFT    string    `json:"peft"`
		Adapter []float32 `json:"adapter"`
		Merged  []float32 `json:"merged"`
	}
	testutil.RunPythonJSON(t, "peft loading "+out, python, script, &res, dir, filepath.Join(out, AdapterDir), out, string(ids))
	da := testutil.MaxAbsDiff(t, "PEFT logits", res.Adapter, want)
	dm := testutil.MaxAbsDiff(t, "merged logits", res.Merged, want)
	t.Logf("  peft %s: PeftModel.from_pretrained logits max abs diff %.3g, merged folder in transformers %.3g", res.PEFT, da, dm)
	if da > familyTolerance || dm > familyTolerance {
		t.Errorf("PEFT's logits differ by %g and the merged folder's by %g, want <= %g", da, dm, familyTolerance)
	}
}
