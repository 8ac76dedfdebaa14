package auto

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/internal/testutil"
	"github.com/goaccel/goaccel/models/bert/sample"
	"github.com/goaccel/goaccel/models/modernbert"
	"github.com/gomlx/compute"
	_ "github.com/gomlx/compute/gobackend"
	. "github.com/gomlx/gomlx/core/graph" //nolint:staticcheck
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// goBackend is the pure-Go backend: the registry's tests check what Load builds, not speed.
func goBackend(t *testing.T) compute.Backend {
	t.Helper()
	b, err := compute.NewWithConfig("go:ops_sequential")
	if err != nil {
		t.Fatalf("creating the pure-Go backend: %v", err)
	}
	return b
}

// logits tokenizes texts with m's tokenizer and runs m.Logits once (inference).
func logits(t *testing.T, m *Model, texts []string) []float32 {
	t.Helper()
	inputs, err := m.Tokenizer().Process(texts)
	if err != nil {
		t.Fatalf("Process: %v", err)
	}
	exec, err := model.NewExec(goBackend(t), m.Classifier.Store(), func(s *model.Scope, in []*Node) *Node {
		return m.Logits(s, in)
	})
	if err != nil {
		t.Fatal(err)
	}
	args := make([]any, len(inputs))
	for i, x := range inputs {
		args[i] = x
	}
	outs, err := exec.Call(args...)
	if err != nil {
		t.Fatalf("running Logits: %v", err)
	}
	if got := outs[0].Shape().Dimensions; !slices.Equal(got, []int{len(texts), m.NumLabels()}) {
		t.Fatalf("logits of shape %v, want [%d %d]", got, len(texts), m.NumLabels())
	}
	return tensors.MustCopyFlatData[float32](outs[0])
}

var texts = []string{"a charming , often hilarious movie .", "dull and far too long", "[CLS] fun [SEP]"}

// TestBERTRoundTripThroughTheRegistry: a tiny BERT made in code, saved by Model.SavePretrained
// and loaded back by Load (by model_type, with its head and label names) gives the same logits.
func TestBERTRoundTripThroughTheRegistry(t *testing.T) {
	clf, tok, err := sample.TinyClassifier(model.NewStore(), 16)
	if err != nil {
		t.Fatal(err)
	}
	m, err := BERT(clf, tok, Options{Labels: []string{"neg", "neu", "pos"}})
	if err != nil {
		t.Fatal(err)
	}
	want := logits(t, m, texts)
	dir := t.TempDir()
	if err := m.SavePretrained(dir); err != nil {
		t.Fatalf("SavePretrained: %v", err)
	}
	info, err := Inspect(dir)
	if err != nil {
		t.Fatal(err)
	}
	if info.ModelType != "bert" || info.NumLabels != 3 || !slices.Equal(info.Labels, []string{"neg", "neu", "pos"}) {
		t.Errorf("Inspect = %+v, want bert with 3 classes neg, neu, pos", info)
	}
	back, err := Load(dir, nil, Options{MaxLen: 16, LoadHead: true})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if back.Family != "bert" || back.NumLabels() != 3 || !slices.Equal(back.Labels(), []string{"neg", "neu", "pos"}) {
		t.Errorf("loaded %s with %d classes %q, want bert with neg, neu, pos", back.Family, back.NumLabels(), back.Labels())
	}
	if d := testutil.MaxAbsDiff(t, "logits", logits(t, back, texts), want); d != 0 {
		t.Errorf("logits after the round trip differ by %g, want 0", d)
	}
	// A fresh head of another size drops the folder's names.
	fresh, err := Load(dir, nil, Options{MaxLen: 16, NumLabels: 2})
	if err != nil {
		t.Fatal(err)
	}
	if fresh.NumLabels() != 2 || fresh.Labels() != nil {
		t.Errorf("NumLabels 2 on a 3-class folder: %d classes named %q, want 2 unnamed", fresh.NumLabels(), fresh.Labels())
	}
	if _, err := Load(dir, nil, Options{MaxLen: 16, NumLabels: 2, Labels: []string{"a", "b", "c"}}); err == nil ||
		!strings.Contains(err.Error(), "NumLabels 2") {
		t.Errorf("3 Labels with NumLabels 2: err = %v, want one naming NumLabels 2", err)
	}
}

// modernBERTFolder is models/modernbert's tiny transformers checkpoint with a 100-token
// WordPiece vocabulary (its vocab_size) beside it.
func modernBERTFolder(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{"config.json", "model.safetensors"} {
		b, err := os.ReadFile(filepath.Join("..", "modernbert", "testdata", "tiny", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	vocab := sample.Vocab()[:100]
	if err := os.WriteFile(filepath.Join(dir, "vocab.txt"), []byte(strings.Join(vocab, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestModernBERTThroughTheRegistry: Load picks models/modernbert by model_type, fine-tunes
// nothing, and its SavePretrained folder (tokenizer copied) loads back with the same logits.
func TestModernBERTThroughTheRegistry(t *testing.T) {
	dir := modernBERTFolder(t)
	m, err := Load(dir, nil, Options{MaxLen: 12, Labels: []string{"x", "y"}})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if m.Family != "modernbert" || m.Processor.Kind() != "WordPiece" {
		t.Fatalf("loaded family %q with a %s tokenizer, want modernbert with WordPiece", m.Family, m.Processor.Kind())
	}
	want := logits(t, m, texts)
	out := t.TempDir()
	if err := m.SavePretrained(out); err != nil {
		t.Fatalf("SavePretrained: %v", err)
	}
	if _, err := os.Stat(filepath.Join(out, "vocab.txt")); err != nil {
		t.Errorf("the exported folder has no tokenizer: %v", err)
	}
	back, err := Load(out, nil, Options{MaxLen: 12, LoadHead: true})
	if err != nil {
		t.Fatalf("Load of the exported folder: %v", err)
	}
	if !slices.Equal(back.Labels(), []string{"x", "y"}) {
		t.Errorf("labels after export %q, want x, y", back.Labels())
	}
	if d := testutil.MaxAbsDiff(t, "logits", logits(t, back, texts), want); d != 0 {
		t.Errorf("logits after the round trip differ by %g, want 0", d)
	}
	remat, err := Load(dir, nil, Options{MaxLen: 12, GradientCheckpointing: true})
	if err != nil {
		t.Fatalf("GradientCheckpointing on modernbert: %v", err)
	}
	if !remat.Classifier.(*modernbert.Classifier).Config.GradientCheckpointing {
		t.Error("Options.GradientCheckpointing did not reach the modernbert Config")
	}
}

// TestLoadRefusals: an unknown model_type names the supported ones; a tokenizer larger than
// the embedding table is refused; a folder without config.json is named.
func TestLoadRefusals(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"model_type": "gpt2"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(dir, nil, Options{})
	if err == nil || !strings.Contains(err.Error(), `"gpt2" is not supported`) || !strings.Contains(err.Error(), "modernbert") {
		t.Errorf("model_type gpt2: err = %v, want one naming it and the supported families", err)
	}
	big := modernBERTFolder(t)
	vocab := sample.Vocab()[:101]
	if err := os.WriteFile(filepath.Join(big, "vocab.txt"), []byte(strings.Join(vocab, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(big, nil, Options{MaxLen: 12}); err == nil || !strings.Contains(err.Error(), "vocab_size is 100") {
		t.Errorf("101 tokens for vocab_size 100: err = %v, want one naming vocab_size", err)
	}
	empty := t.TempDir()
	if _, err := Load(empty, nil, Options{}); err == nil || !strings.Contains(err.Error(), "config.json") {
		t.Errorf("a folder without config.json: err = %v, want one naming config.json", err)
	}
}

// hubCacheWith lays out a Hugging Face hub cache holding id at revision main (and at tag v1)
// with the given snapshot folder's files, as huggingface_hub writes it: blobs, snapshots of
// symbolic links, refs.
func hubCacheWith(t *testing.T, id, from string) (cache, snapshot string) {
	t.Helper()
	cache = t.TempDir()
	repo := filepath.Join(cache, "models--"+strings.ReplaceAll(id, "/", "--"))
	const hash = "0123456789abcdef0123456789abcdef01234567"
	snapshot = filepath.Join(repo, "snapshots", hash)
	for _, dir := range []string{filepath.Join(repo, "blobs"), snapshot, filepath.Join(repo, "refs")} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	entries, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range entries {
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		blob := filepath.Join(repo, "blobs", strings.Repeat(string(rune('a'+i)), 8))
		if err := os.WriteFile(blob, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join("..", "..", "blobs", filepath.Base(blob)), filepath.Join(snapshot, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	for _, ref := range []string{"main", "v1"} {
		if err := os.WriteFile(filepath.Join(repo, "refs", ref), []byte(hash), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return cache, snapshot
}

// TestHubIDFromTheCache: a Hub id loads from the local cache, found through HF_HUB_CACHE,
// HF_HOME or XDG_CACHE_HOME as huggingface_hub finds it, at main, at a tag or at a commit.
func TestHubIDFromTheCache(t *testing.T) {
	cache, snapshot := hubCacheWith(t, "answerdotai/ModernBERT-tiny", modernBERTFolder(t))
	for _, env := range []struct{ name, value string }{
		{"HF_HUB_CACHE", cache},
		{"HF_HOME", filepath.Dir(cache)},
		{"XDG_CACHE_HOME", filepath.Dir(filepath.Dir(cache))},
	} {
		t.Run(env.name, func(t *testing.T) {
			for _, v := range []string{"HF_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME"} {
				t.Setenv(v, "")
			}
			switch env.name { // the layouts HF_HOME and XDG_CACHE_HOME expect
			case "HF_HOME":
				home := t.TempDir()
				if err := os.Symlink(cache, filepath.Join(home, "hub")); err != nil {
					t.Fatal(err)
				}
				env.value = home
			case "XDG_CACHE_HOME":
				xdg := t.TempDir()
				if err := os.MkdirAll(filepath.Join(xdg, "huggingface"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(cache, filepath.Join(xdg, "huggingface", "hub")); err != nil {
					t.Fatal(err)
				}
				env.value = xdg
			}
			t.Setenv(env.name, env.value)
			for _, id := range []string{"answerdotai/ModernBERT-tiny", "answerdotai/ModernBERT-tiny@v1",
				"answerdotai/ModernBERT-tiny@0123456789abcdef0123456789abcdef01234567"} {
				dir, err := Resolve(id)
				if err != nil {
					t.Fatalf("Resolve(%s): %v", id, err)
				}
				if filepath.Base(dir) != filepath.Base(snapshot) {
					t.Errorf("Resolve(%s) = %s, want the snapshot %s", id, dir, snapshot)
				}
			}
		})
	}
	t.Setenv("HF_HUB_CACHE", cache)
	m, err := Load("answerdotai/ModernBERT-tiny", nil, Options{MaxLen: 12})
	if err != nil {
		t.Fatalf("Load by Hub id: %v", err)
	}
	if m.Family != "modernbert" || filepath.Base(m.Dir) != filepath.Base(snapshot) {
		t.Errorf("Load by Hub id: family %s from %s, want modernbert from the snapshot", m.Family, m.Dir)
	}
}

// TestHubIDNotInTheCache: the error names what was typed, the paths tried and the command
// that downloads the model; a path that is neither a folder nor a Hub id says so.
func TestHubIDNotInTheCache(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("HF_HUB_CACHE", cache)
	_, err := Load("microsoft/deberta-v3-small", nil, Options{})
	for _, want := range []string{"microsoft/deberta-v3-small", filepath.Join(cache, "models--microsoft--deberta-v3-small", "refs", "main"),
		"HF_HUB_CACHE", "hf download microsoft/deberta-v3-small"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("a Hub id not in the cache: err = %v, want it to name %q", err, want)
		}
	}
	if _, err := Resolve("microsoft/deberta-v3-small@v2"); err == nil || !strings.Contains(err.Error(), "--revision v2") {
		t.Errorf("a revision not in the cache: err = %v, want the download command with --revision v2", err)
	}
	if _, err := Resolve("./no/such/../folder"); err == nil || !strings.Contains(err.Error(), "no such folder") {
		t.Errorf("a path that is not there: err = %v, want \"no such folder\"", err)
	}
	file := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(file, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Resolve(file); err == nil || !strings.Contains(err.Error(), "is a file") {
		t.Errorf("a file: err = %v, want \"is a file\"", err)
	}
	// A ref that names a snapshot that is not there (an interrupted download).
	repo := filepath.Join(cache, "models--org--half")
	if err := os.MkdirAll(filepath.Join(repo, "refs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "refs", "main"), []byte("feed"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Resolve("org/half"); err == nil || !strings.Contains(err.Error(), "names feed") {
		t.Errorf("a ref to a missing snapshot: err = %v, want it to name the hash", err)
	}
}

// copyFolder copies the files of a testdata folder into a new temporary folder.
func copyFolder(t *testing.T, from string) string {
	t.Helper()
	dir := t.TempDir()
	entries, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestDeBERTaThroughTheRegistry: Load picks models/deberta for model_type deberta-v2 with
// the folder's spm.model (a Unigram tokenizer), and the exported folder (spm.model copied)
// loads back with the same logits.
func TestDeBERTaThroughTheRegistry(t *testing.T) {
	dir := copyFolder(t, filepath.Join("..", "deberta", "testdata", "tiny"))
	m, err := Load(dir, nil, Options{MaxLen: 16, Labels: []string{"a", "b", "c"}})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if m.Family != "deberta-v2" || m.Processor.Kind() != "Unigram" {
		t.Fatalf("loaded family %q with a %s tokenizer, want deberta-v2 with Unigram", m.Family, m.Processor.Kind())
	}
	want := logits(t, m, texts)
	out := t.TempDir()
	if err := m.SavePretrained(out); err != nil {
		t.Fatalf("SavePretrained: %v", err)
	}
	if _, err := os.Stat(filepath.Join(out, "spm.model")); err != nil {
		t.Errorf("the exported folder has no spm.model: %v", err)
	}
	back, err := Load(out, nil, Options{MaxLen: 16, LoadHead: true})
	if err != nil {
		t.Fatalf("Load of the exported folder: %v", err)
	}
	if !slices.Equal(back.Labels(), []string{"a", "b", "c"}) {
		t.Errorf("labels after export %q, want a, b, c", back.Labels())
	}
	if d := testutil.MaxAbsDiff(t, "logits", logits(t, back, texts), want); d != 0 {
		t.Errorf("logits after the round trip differ by %g, want 0", d)
	}
}

// TestProblemTypeReachesEveryFamily: Options.ProblemType is written into the exported
// config.json of every family and read back by Inspect's families; a regression head has
// one unnamed output; an unknown problem type is refused.
func TestProblemTypeReachesEveryFamily(t *testing.T) {
	folders := map[string]func() *Model{
		"bert": func() *Model {
			clf, tok, err := sample.TinyClassifier(model.NewStore(), 16)
			if err != nil {
				t.Fatal(err)
			}
			m, err := BERT(clf, tok, Options{NumLabels: 1, ProblemType: "regression"})
			if err != nil {
				t.Fatal(err)
			}
			return m
		},
		"modernbert": func() *Model {
			m, err := Load(modernBERTFolder(t), nil, Options{MaxLen: 12, NumLabels: 1, ProblemType: "regression"})
			if err != nil {
				t.Fatal(err)
			}
			return m
		},
		"deberta-v2": func() *Model {
			m, err := Load(copyFolder(t, filepath.Join("..", "deberta", "testdata", "tiny")), nil,
				Options{MaxLen: 12, NumLabels: 1, ProblemType: "regression"})
			if err != nil {
				t.Fatal(err)
			}
			return m
		},
	}
	for family, make := range folders {
		t.Run(family, func(t *testing.T) {
			m := make()
			logits(t, m, texts) // the head's variables
			out := t.TempDir()
			if err := m.SavePretrained(out); err != nil {
				t.Fatal(err)
			}
			raw, err := os.ReadFile(filepath.Join(out, "config.json"))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(raw), `"problem_type": "regression"`) || !strings.Contains(string(raw), `"num_labels": 1`) {
				t.Errorf("config.json lacks problem_type regression and num_labels 1:\n%s", raw)
			}
			back, err := Load(out, nil, Options{MaxLen: 12, LoadHead: true})
			if err != nil || back.NumLabels() != 1 || back.Labels() != nil {
				t.Errorf("loading the regression folder back: %v, %d outputs named %q", err, back.NumLabels(), back.Labels())
			}
		})
	}
	if _, err := Load(modernBERTFolder(t), nil, Options{MaxLen: 12, ProblemType: "ranking"}); err == nil ||
		!strings.Contains(err.Error(), `problem_type "ranking"`) {
		t.Errorf("an unknown problem type: %v", err)
	}
}
