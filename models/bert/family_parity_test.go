package bert

import (
	"encoding/json"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/checkpoint/safetensors"
	"github.com/goaccel/goaccel/internal/testutil"
	"github.com/gomlx/compute"
	. "github.com/gomlx/gomlx/core/graph" //nolint:staticcheck
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// familyFixture is testdata/family_<model_type>.json, written by
// scripts/make_family_fixtures.py with transformers: a tiny checkpoint's config.json and
// tensor list (its weights come from weightValues), inputs, and transformers' outputs.
type familyFixture struct {
	ModelType     string          `json:"model_type"`
	Transformers  string          `json:"transformers_version"`
	Config        json.RawMessage `json:"config"`
	Tensors       [][]any         `json:"tensors"`
	InputIDs      [][]int32       `json:"input_ids"`
	AttentionMask [][]int32       `json:"attention_mask"`
	TokenTypeIDs  [][]int32       `json:"token_type_ids"`
	HiddenShape   []int           `json:"hidden_shape"`
	HiddenB64     string          `json:"last_hidden_state_f32_b64"`
	LogitsShape   []int           `json:"logits_shape"`
	LogitsB64     string          `json:"logits_f32_b64"`
	// Texts with special and added tokens in them, as the family's transformers tokenizer
	// encodes them (padded to a common length), and the logits of those ids.
	Texts             []string  `json:"texts"`
	TextInputIDs      [][]int32 `json:"text_input_ids"`
	TextAttentionMask [][]int32 `json:"text_attention_mask"`
	TextTokenTypeIDs  [][]int32 `json:"text_token_type_ids"`
	TextLogitsB64     string    `json:"text_logits_f32_b64"`
	// Tokenizer is the tokenizer.json of the family under testdata (RoBERTa's byte-level
	// BPE), with its sha256; empty for the WordPiece families, which read fixtureVocab.
	Tokenizer    string `json:"tokenizer"`
	TokenizerSHA string `json:"tokenizer_sha256"`
	// Train is 20 steps of plain SGD by PyTorch from these weights with every dropout off:
	// the batches (token types 0) and the mean cross-entropy of each step before its update.
	Train struct {
		LearningRate float64 `json:"learning_rate"`
		Batches      []struct {
			InputIDs      [][]int32 `json:"input_ids"`
			AttentionMask [][]int32 `json:"attention_mask"`
			Labels        []int32   `json:"labels"`
		} `json:"batches"`
		Losses []float64 `json:"losses"`
	} `json:"train"`
}

// familyTolerance is the largest max-abs difference accepted between this package and
// transformers on the tiny checkpoints, in float32.
const familyTolerance = 1e-5

// loadFamilyFixtures reads the four fixtures, in Families order.
func loadFamilyFixtures(t *testing.T) []*familyFixture {
	t.Helper()
	var out []*familyFixture
	for _, name := range Families() {
		contents, err := os.ReadFile(filepath.Join("testdata", "family_"+name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		var f familyFixture
		if err := json.Unmarshal(contents, &f); err != nil {
			t.Fatalf("parsing testdata/family_%s.json: %v", name, err)
		}
		out = append(out, &f)
	}
	return out
}

// weightValues is the fixture script's formula for the values of tensor name: an xorshift32
// stream seeded by crc32(name), scaled (see scripts/make_family_fixtures.py).
func weightValues(name string, n int) []float32 {
	x := crc32.ChecksumIEEE([]byte(name))
	if x == 0 {
		x = 1
	}
	out := make([]float32, n)
	for i := range out {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		k := float64(int(x%2001) - 1000)
		switch {
		case strings.HasSuffix(name, ".bias"):
			out[i] = float32((0.1 * k) / 1000)
		case strings.HasSuffix(name, ".weight") && (strings.Contains(name, "LayerNorm") || strings.Contains(name, "layer_norm")):
			out[i] = float32(1 + (0.1*k)/1000)
		default:
			out[i] = float32((0.2 * k) / 1000)
		}
	}
	return out
}

// fixtureVocab is a WordPiece vocabulary of n tokens, the special ones first.
func fixtureVocab(n int) []string {
	vocab := []string{PadToken, UnkToken, ClsToken, SepToken, MaskToken}
	for i := len(vocab); i < n; i++ {
		vocab = append(vocab, fmt.Sprintf("tok%d", i))
	}
	return vocab
}

// writeFamilyFolder writes f's checkpoint as a Hugging Face folder: the config.json
// transformers wrote, a vocab.txt of vocab_size tokens (or the fixture's tokenizer.json), and
// model.safetensors with the formula's weights under the names and shapes of transformers'
// file.
func writeFamilyFolder(t *testing.T, f *familyFixture, extra ...TensorSpec) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), f.ModelType)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), f.Config, 0o644); err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		VocabSize int `json:"vocab_size"`
	}
	if err := json.Unmarshal(f.Config, &cfg); err != nil {
		t.Fatal(err)
	}
	if f.Tokenizer != "" {
		path := filepath.Join("testdata", filepath.FromSlash(f.Tokenizer))
		if sum := fileSHA256(t, path); sum != f.TokenizerSHA {
			t.Fatalf("%s has sha256 %s, family_%s.json was made from %s: rerun scripts/make_family_fixtures.py",
				path, sum, f.ModelType, f.TokenizerSHA)
		}
		contents, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		writeTestFile(t, dir, "tokenizer.json", string(contents))
	} else if err := os.WriteFile(filepath.Join(dir, "vocab.txt"), []byte(strings.Join(fixtureVocab(cfg.VocabSize), "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var list []safetensors.Named
	for _, spec := range append(fixtureSpecs(t, f), extra...) {
		n := 1
		for _, d := range spec.Dims {
			n *= d
		}
		list = append(list, safetensors.Named{Name: spec.Name,
			Tensor: tensors.FromFlatDataAndDimensions(weightValues(spec.Name, n), spec.Dims...)})
	}
	if err := safetensors.WriteFile(filepath.Join(dir, "model.safetensors"), list, map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// fixtureSpecs are the tensors of transformers' model.safetensors, sorted by name.
func fixtureSpecs(t *testing.T, f *familyFixture) []TensorSpec {
	t.Helper()
	var specs []TensorSpec
	for _, entry := range f.Tensors {
		name, _ := entry[0].(string)
		raw, _ := entry[1].([]any)
		dims := make([]int, len(raw))
		for i, d := range raw {
			dims[i] = int(d.(float64))
		}
		specs = append(specs, TensorSpec{Name: name, Dims: dims})
	}
	sort.Slice(specs, func(i, j int) bool { return specs[i].Name < specs[j].Name })
	return specs
}

// familyInputs returns the fixture's inputs as [B, L] int32 tensors.
func familyInputs(f *familyFixture) []*tensors.Tensor {
	flat := func(rows [][]int32) *tensors.Tensor {
		var v []int32
		for _, r := range rows {
			v = append(v, r...)
		}
		return tensors.FromFlatDataAndDimensions(v, len(rows), len(rows[0]))
	}
	return []*tensors.Tensor{flat(f.InputIDs), flat(f.AttentionMask), flat(f.TokenTypeIDs)}
}

// hiddenAndLogits runs the encoder and the head once (inference) and returns the last hidden
// states and the logits.
func hiddenAndLogits(t *testing.T, backend compute.Backend, clf *Classifier, in []*tensors.Tensor) (hidden, logits []float32) {
	t.Helper()
	exec, err := model.NewExec(backend, clf.Store(), func(s *model.Scope, ids, mask, types *Node) (*Node, *Node) {
		h, pooled := clf.Encoder(s, ids, mask, types)
		if pooled == nil {
			pooled = firstToken(h)
		}
		return h, clf.Head(s, pooled)
	})
	if err != nil {
		t.Fatal(err)
	}
	outs, err := exec.Call(in[0], in[1], in[2])
	if err != nil {
		t.Fatalf("running the %s classifier: %v", clf.Config.Family(), err)
	}
	return tensors.MustCopyFlatData[float32](outs[0]), tensors.MustCopyFlatData[float32](outs[1])
}

// TestFamilyTensorsMatchTransformers: for each family, the tensors this package builds are
// those transformers saves, name for name and shape for shape.
func TestFamilyTensorsMatchTransformers(t *testing.T) {
	for _, f := range loadFamilyFixtures(t) {
		t.Run(f.ModelType, func(t *testing.T) {
			cfg, err := ParseConfig(f.Config, "family_"+f.ModelType+".json")
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Family() != f.ModelType {
				t.Fatalf("Family() = %q, want %q", cfg.Family(), f.ModelType)
			}
			ours := cfg.Tensors()
			sort.Slice(ours, func(i, j int) bool { return ours[i].Name < ours[j].Name })
			theirs := fixtureSpecs(t, f)
			if !slices.EqualFunc(ours, theirs, func(a, b TensorSpec) bool { return a.Name == b.Name && slices.Equal(a.Dims, b.Dims) }) {
				t.Errorf("tensors differ:\n ours   %v\n theirs %v (transformers %s)", ours, theirs, f.Transformers)
			}
		})
	}
}

// TestFamilyParityWithTransformers: the last hidden states and the logits of each family's
// tiny checkpoint, loaded with its head, match transformers' within familyTolerance.
func TestFamilyParityWithTransformers(t *testing.T) {
	for _, f := range loadFamilyFixtures(t) {
		dir := writeFamilyFolder(t, f)
		wantHidden := decodeF32(t, "hidden", f.HiddenB64, f.HiddenShape)
		wantLogits := decodeF32(t, "logits", f.LogitsB64, f.LogitsShape)
		for name, backend := range testBackends(t) {
			t.Run(f.ModelType+"/"+name, func(t *testing.T) {
				clf, _, err := LoadPretrained(dir, model.NewStore(), LoadOptions{MaxLen: len(f.InputIDs[0]), LoadHead: true})
				if err != nil {
					t.Fatal(err)
				}
				hidden, logits := hiddenAndLogits(t, backend, clf, familyInputs(f))
				dh, dl := testutil.MaxAbsDiff(t, "hidden", hidden, wantHidden), testutil.MaxAbsDiff(t, "logits", logits, wantLogits)
				t.Logf("%s on %s vs transformers %s: last_hidden_state max abs diff %.3g, logits max abs diff %.3g",
					f.ModelType, name, f.Transformers, dh, dl)
				if dh > familyTolerance || dl > familyTolerance {
					t.Errorf("max abs diff hidden=%g logits=%g, want both <= %g", dh, dl, familyTolerance)
				}
			})
		}
	}
}

// TestFamilyTextParity: for each family, texts with special and added tokens written in them
// ("[CLS]", "[MASK]", "<mask>", "<s>", a user's words) give transformers' ids through the
// tokenizer LoadPretrained reads, and transformers' logits through the classifier.
func TestFamilyTextParity(t *testing.T) {
	backend := mustGoBackend(t)
	for _, f := range loadFamilyFixtures(t) {
		t.Run(f.ModelType, func(t *testing.T) {
			if len(f.Texts) == 0 || len(f.TextInputIDs) != len(f.Texts) {
				t.Fatalf("family_%s.json has %d texts and %d encodings", f.ModelType, len(f.Texts), len(f.TextInputIDs))
			}
			dir := writeFamilyFolder(t, f)
			clf, tok, err := LoadPretrained(dir, model.NewStore(), LoadOptions{MaxLen: len(f.TextInputIDs[0]), LoadHead: true})
			if err != nil {
				t.Fatal(err)
			}
			enc := tok.EncodeBatch(f.Texts)
			flat := func(rows [][]int32) []int32 { return slices.Concat(rows...) }
			for _, c := range []struct {
				what      string
				got, want []int32
			}{{"input ids", enc.InputIDs, flat(f.TextInputIDs)}, {"attention mask", enc.AttentionMask, flat(f.TextAttentionMask)},
				{"token type ids", enc.TokenTypeIDs, flat(f.TextTokenTypeIDs)}} {
				if !slices.Equal(c.got, c.want) {
					t.Fatalf("%s of %q:\n got  %v\n want %v (transformers)", c.what, f.Texts, c.got, c.want)
				}
			}
			_, logits := hiddenAndLogits(t, backend, clf, enc.Tensors())
			d := testutil.MaxAbsDiff(t, "logits", logits, decodeF32(t, "text logits", f.TextLogitsB64, []int{len(f.Texts), f.LogitsShape[1]}))
			t.Logf("%s (%s): %d texts give transformers' ids; logits max abs diff %.3g", f.ModelType, tok.Kind(), len(f.Texts), d)
			if d > familyTolerance {
				t.Errorf("logits differ from transformers' by %g, want <= %g", d, familyTolerance)
			}
		})
	}
}

// TestFamilyIgnoresUnusedPooler: a RoBERTa or ELECTRA checkpoint saved from the bare model
// (RobertaModel keeps a pooler that the sequence classifier does not use) loads, its pooler
// left out, and gives the same logits.
func TestFamilyIgnoresUnusedPooler(t *testing.T) {
	backend := mustGoBackend(t)
	for _, f := range loadFamilyFixtures(t) {
		if f.ModelType != "roberta" && f.ModelType != "electra" {
			continue
		}
		t.Run(f.ModelType, func(t *testing.T) {
			h := f.HiddenShape[2]
			dir := writeFamilyFolder(t, f, TensorSpec{Name: f.ModelType + ".pooler.dense.weight", Dims: []int{h, h}},
				TensorSpec{Name: f.ModelType + ".pooler.dense.bias", Dims: []int{h}})
			clf, _, err := LoadPretrained(dir, model.NewStore(), LoadOptions{MaxLen: len(f.InputIDs[0]), LoadHead: true})
			if err != nil {
				t.Fatal(err)
			}
			_, logits := hiddenAndLogits(t, backend, clf, familyInputs(f))
			if d := testutil.MaxAbsDiff(t, "logits", logits, decodeF32(t, "logits", f.LogitsB64, f.LogitsShape)); d > familyTolerance {
				t.Errorf("logits differ from transformers' by %g", d)
			}
		})
	}
}

// TestFamilySavePretrained: each family's classifier saved back is a folder that loads again
// with the same logits here and, when GOACCEL_TORCH_PYTHON names a Python with torch and
// transformers (a venv outside the repository), in transformers too.
func TestFamilySavePretrained(t *testing.T) {
	python := os.Getenv("GOACCEL_TORCH_PYTHON")
	backend := mustGoBackend(t)
	for _, f := range loadFamilyFixtures(t) {
		t.Run(f.ModelType, func(t *testing.T) {
			dir := writeFamilyFolder(t, f)
			opts := LoadOptions{MaxLen: len(f.InputIDs[0]), LoadHead: true}
			clf, tok, err := LoadPretrained(dir, model.NewStore(), opts)
			if err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(t.TempDir(), "saved")
			if err := SavePretrained(out, clf, tok); err != nil {
				t.Fatal(err)
			}
			back, _, err := LoadPretrained(out, model.NewStore(), opts)
			if err != nil {
				t.Fatalf("loading the saved folder: %v", err)
			}
			_, want := hiddenAndLogits(t, backend, clf, familyInputs(f))
			if _, got := hiddenAndLogits(t, backend, back, familyInputs(f)); testutil.MaxAbsDiff(t, "logits", got, want) != 0 {
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
from transformers import AutoModelForSequenceClassification
m = AutoModelForSequenceClassification.from_pretrained(sys.argv[1], attn_implementation="eager").eval()
feed = dict(input_ids=torch.tensor(%s), attention_mask=torch.tensor(%s))
if m.config.model_type in ("bert", "electra"):
    feed["token_type_ids"] = torch.tensor(%s)
with torch.no_grad():
    print(json.dumps({"class": type(m).__name__, "logits": m(**feed).logits.flatten().tolist()}))
`, ids, mask, types)
			cmd := exec.Command(python, "-c", script, out)
			cmd.Stderr = os.Stderr
			stdout, err := cmd.Output()
			if err != nil {
				t.Fatalf("transformers could not load the saved %s folder: %v", f.ModelType, err)
			}
			var res struct {
				Class  string    `json:"class"`
				Logits []float32 `json:"logits"`
			}
			if err := json.Unmarshal(stdout, &res); err != nil {
				t.Fatalf("reading the Python output %q: %v", stdout, err)
			}
			d := testutil.MaxAbsDiff(t, "logits", res.Logits, want)
			t.Logf("transformers loaded the saved folder as %s: logits max abs diff %.3g", res.Class, d)
			if d > familyTolerance {
				t.Errorf("transformers' logits of the saved folder differ by %g, want <= %g", d, familyTolerance)
			}
		})
	}
}

// TestFamilyFineTune: each family's tiny checkpoint, with a fresh head, fine-tunes: a few
// Adam steps on a fixed batch (dropout on) bring the loss down.
func TestFamilyFineTune(t *testing.T) {
	backend := mustGoBackend(t)
	for _, f := range loadFamilyFixtures(t) {
		t.Run(f.ModelType, func(t *testing.T) {
			dir := writeFamilyFolder(t, f)
			store := model.NewStore()
			if err := store.SetRNGStateFromSeed(3); err != nil {
				t.Fatal(err)
			}
			clf, _, err := LoadPretrained(dir, store, LoadOptions{MaxLen: len(f.InputIDs[0])})
			if err != nil {
				t.Fatal(err)
			}
			step := trainExec(t, backend, clf, optimizer.Adam().LearningRate(1e-2).Done(), nil)
			in := familyInputs(f)
			labels := tensors.FromFlatDataAndDimensions([]int32{0, 1, 2}, 3)
			var losses []float32
			for range 8 {
				out, err := step.Call(in[0], in[1], in[2], labels)
				if err != nil {
					t.Fatal(err)
				}
				losses = append(losses, tensors.MustCopyFlatData[float32](out[0])[0])
			}
			t.Logf("%s fine-tune losses: %.3f", f.ModelType, losses)
			if last := losses[len(losses)-1]; !(last < 0.5*losses[0]) {
				t.Errorf("loss went from %.3f to %.3f in %d steps, want below half", losses[0], last, len(losses))
			}
		})
	}
}

// savedTokenizerTexts are encoded by the tokenizers saved for transformers: plain text, and
// special and added tokens written in it.
var savedTokenizerTexts = []string{
	"a charming , often hilarious movie .", "  it's   DON'T <mask> café 12 ", "x",
	"<s> </s> <pad> [CLS] [SEP] special-looking tokens in text", "the [MASK] was great[SEP]and [cls]",
	"a <mask>  b<mask>", "the GoAccel xGoAccel goaccel HYPER   movie hyper!  [MASK]", "GoAccel!GoAccel_ hypergoaccel",
}

// savedTokenizers writes, for each family, a tokenizer saved as SavePretrained saves it
// (writeFiles): WordPiece folders (BERT, DistilBERT, ELECTRA) with microVocab and added tokens
// of every kind, RoBERTa's byte-level BPE of testdata/roberta_bpe, and XLM-RoBERTa's Unigram
// of tokenizers/testdata/xlmr. It returns the folders
// and the tokenizers, by family.
func savedTokenizers(t *testing.T, maxLen int) (map[string]string, map[string]*Tokenizer) {
	t.Helper()
	src := t.TempDir()
	writeTestFile(t, src, "vocab.txt", strings.Join(microVocab, "\n")+"\n")
	writeTestFile(t, src, "tokenizer_config.json", `{"do_lower_case": true, "added_tokens_decoder": {
		"4": {"content": "[MASK]", "lstrip": true, "normalized": false, "rstrip": false, "single_word": false, "special": true},
		"33": {"content": "GoAccel", "lstrip": false, "normalized": false, "rstrip": false, "single_word": true, "special": false},
		"34": {"content": "Hyper", "lstrip": false, "normalized": true, "rstrip": true, "single_word": false, "special": false}}}`)
	dirs, toks := map[string]string{}, map[string]*Tokenizer{}
	for _, family := range Families() {
		from := src
		switch family {
		case "roberta":
			from = filepath.Join("testdata", "roberta_bpe")
		case "xlm-roberta":
			from = filepath.Join("..", "..", "tokenizers", "testdata", "xlmr")
		}
		tok, err := LoadTokenizer(from, maxLen)
		if err != nil {
			t.Fatal(err)
		}
		cfg := microConfig(tok.VocabSize())
		cfg.ModelType, cfg.MaxPositionEmbeddings = family, maxLen+2
		dir := filepath.Join(t.TempDir(), family)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := tok.writeFiles(dir, cfg); err != nil {
			t.Fatal(err)
		}
		dirs[family], toks[family] = dir, tok
	}
	return dirs, toks
}

// TestTokenizerSavedLoadsInTransformers: the tokenizer of each family, saved as SavePretrained
// saves it, is read back by transformers' AutoTokenizer, which gives the same ids on texts
// with special and added tokens in them. It needs python3 with transformers and tokenizers
// (make deps; no torch), and fails without them under CI.
func TestTokenizerSavedLoadsInTransformers(t *testing.T) {
	python := testutil.NeedTransformers(t)
	const maxLen = 32
	dirs, toks := savedTokenizers(t, maxLen)
	textsJSON, _ := json.Marshal(savedTokenizerTexts)
	script := fmt.Sprintf(`
import json, sys
from transformers import AutoTokenizer
out = {}
for d in sys.argv[1:]:
    tok = AutoTokenizer.from_pretrained(d)
    out[d] = {"class": type(tok).__name__, "ids": [tok(t, truncation=True, max_length=%d)["input_ids"] for t in %s]}
print(json.dumps(out))
`, maxLen, textsJSON)
	var args []string
	for _, family := range Families() {
		args = append(args, dirs[family])
	}
	cmd := exec.Command(python, append([]string{"-c", script}, args...)...)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("transformers could not load the saved tokenizers: %v", err)
	}
	var res map[string]struct {
		Class string    `json:"class"`
		IDs   [][]int32 `json:"ids"`
	}
	if err := json.Unmarshal(stdout, &res); err != nil {
		t.Fatalf("reading %q: %v", stdout, err)
	}
	for _, family := range Families() {
		r, tok := res[dirs[family]], toks[family]
		if len(r.IDs) != len(savedTokenizerTexts) {
			t.Fatalf("%s: transformers gave %d encodings for %d texts", family, len(r.IDs), len(savedTokenizerTexts))
		}
		same := 0
		for i, text := range savedTokenizerTexts {
			if got := tok.Encode(text); !slices.Equal(got, r.IDs[i]) {
				t.Errorf("%s: %q: ids %v here, %v in transformers (%s)", family, text, got, r.IDs[i], r.Class)
			} else {
				same++
			}
		}
		t.Logf("%s: transformers read the saved folder as %s: %d/%d texts give the same ids", family, r.Class, same, len(savedTokenizerTexts))
	}
}

// TestBPEClassifierSavedLoadsInTransformers: a RoBERTa classifier saved with its byte-level
// BPE tokenizer is read back by transformers' AutoModelForSequenceClassification, whose logits
// on the ids of the tokenizer match. It needs GOACCEL_TORCH_PYTHON (a Python with torch and
// transformers, outside the repository) and skips loudly without it; the tokenizer half is
// TestTokenizerSavedLoadsInTransformers, which needs no torch.
func TestBPEClassifierSavedLoadsInTransformers(t *testing.T) {
	python := os.Getenv("GOACCEL_TORCH_PYTHON")
	if python == "" {
		testutil.TorchPython(t, "the saved RoBERTa classifier loaded by transformers")
	}
	tok, err := LoadTokenizer(filepath.Join("testdata", "roberta_bpe"), 24)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := ParseConfig([]byte(fmt.Sprintf(`{"model_type": "roberta", "vocab_size": %d, "hidden_size": 16,
		"num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 24, "max_position_embeddings": 26,
		"type_vocab_size": 1, "pad_token_id": 1}`, tok.VocabSize())), "config")
	if err != nil {
		t.Fatal(err)
	}
	clf, err := NewClassifier(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	enc := tok.EncodeBatch(savedTokenizerTexts)
	want := logitsOnce(t, mustGoBackend(t), clf, enc, false)
	out := filepath.Join(t.TempDir(), "roberta")
	if err := SavePretrained(out, clf, tok); err != nil {
		t.Fatal(err)
	}
	ids, _ := json.Marshal(enc.InputIDs)
	mask, _ := json.Marshal(enc.AttentionMask)
	script := fmt.Sprintf(`
import json, sys, torch
from transformers import AutoModelForSequenceClassification
m = AutoModelForSequenceClassification.from_pretrained(sys.argv[1], attn_implementation="eager").eval()
shape = (%d, %d)
with torch.no_grad():
    logits = m(input_ids=torch.tensor(%s).reshape(shape), attention_mask=torch.tensor(%s).reshape(shape)).logits
print(json.dumps({"model": type(m).__name__, "logits": logits.flatten().tolist()}))
`, len(savedTokenizerTexts), enc.Len, ids, mask)
	cmd := exec.Command(python, "-c", script, out)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("transformers could not load %s: %v", out, err)
	}
	var res struct {
		Model  string    `json:"model"`
		Logits []float32 `json:"logits"`
	}
	if err := json.Unmarshal(stdout, &res); err != nil {
		t.Fatalf("reading %q: %v", stdout, err)
	}
	d := testutil.MaxAbsDiff(t, "logits", res.Logits, want)
	t.Logf("transformers loaded the saved folder as %s: logits max abs diff %.3g", res.Model, d)
	if d > familyTolerance {
		t.Errorf("transformers' logits differ by %g, want <= %g", d, familyTolerance)
	}
}

// TestFamilyTrainingParity: from each family's fixture weights with dropout off, 20 steps of
// plain SGD on the fixture's two batches (taken in turn) give PyTorch's losses within 1e-4,
// on the XLA CPU backend: the forward pass, the gradients and the update agree, not only the
// inference.
func TestFamilyTrainingParity(t *testing.T) {
	backend := testBackends(t)["xla-cpu"]
	for _, f := range loadFamilyFixtures(t) {
		t.Run(f.ModelType, func(t *testing.T) {
			dir := writeFamilyFolder(t, f)
			clf, _, err := LoadPretrained(dir, model.NewStore(), LoadOptions{MaxLen: len(f.InputIDs[0]), LoadHead: true})
			if err != nil {
				t.Fatal(err)
			}
			zero := 0.0
			cfg := &clf.Config
			cfg.HiddenDropoutProb, cfg.AttentionProbsDropoutProb, cfg.ClassifierDropout = 0, 0, &zero
			step := trainExec(t, backend, clf, optimizer.StochasticGradientDescent().WithLearningRate(f.Train.LearningRate).WithDecay(false).Done(), nil)
			worst := 0.0
			for i, want := range f.Train.Losses {
				b := f.Train.Batches[i%len(f.Train.Batches)]
				flat := func(rows [][]int32) *tensors.Tensor {
					var v []int32
					for _, r := range rows {
						v = append(v, r...)
					}
					return tensors.FromFlatDataAndDimensions(v, len(rows), len(rows[0]))
				}
				types := make([][]int32, len(b.InputIDs))
				for r := range types {
					types[r] = make([]int32, len(b.InputIDs[r]))
				}
				out, err := step.Call(flat(b.InputIDs), flat(b.AttentionMask), flat(types), tensors.FromValue(b.Labels))
				if err != nil {
					t.Fatal(err)
				}
				got := float64(tensors.MustCopyFlatData[float32](out[0])[0])
				worst = math.Max(worst, math.Abs(got-want))
				if math.Abs(got-want) > 1e-4 {
					t.Errorf("step %d: loss %.6f, PyTorch %.6f", i+1, got, want)
				}
			}
			t.Logf("%s: %d SGD steps (lr %g), losses %.4f -> %.4f, max abs diff from PyTorch %.3g", f.ModelType,
				len(f.Train.Losses), f.Train.LearningRate, f.Train.Losses[0], f.Train.Losses[len(f.Train.Losses)-1], worst)
		})
	}
}
