package deberta

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/goaccel/goaccel/internal/testutil"
	"github.com/goaccel/goaccel/models/internal/familytest"
	"github.com/goaccel/goaccel/tokenizers"
	"github.com/gomlx/compute"
	_ "github.com/gomlx/compute/gobackend"
	. "github.com/gomlx/gomlx/core/graph" //nolint:staticcheck
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// tolerance is the largest max-abs difference accepted between this package and
// transformers on the tiny checkpoints, in float32.
const tolerance = 1e-5

// run is one input of fixtures.json with transformers' outputs; Texts are the texts
// transformers' tokenizer made the inputs of, when it did.
type run struct {
	familytest.Run
	Texts []string `json:"texts"`
}

// tokenizerRun is what transformers' DebertaV2TokenizerFast gives on the tiny folder.
type tokenizerRun struct {
	Class     string `json:"tokenizer_class"`
	VocabSize int    `json:"vocab_size"`
	MaxLen    int    `json:"max_len"`
	Cases     []struct {
		Text    string  `json:"text"`
		IDs     []int32 `json:"ids"`
		TypeIDs []int32 `json:"token_type_ids"`
	} `json:"cases"`
	PairCases []struct {
		A, B    string
		IDs     []int32 `json:"ids"`
		TypeIDs []int32 `json:"token_type_ids"`
	} `json:"pair_cases"`
}

// fixtureModel is one checkpoint of fixtures.json (written by scripts/make_deberta_fixtures.py)
// and transformers' outputs on it.
type fixtureModel struct {
	Folder    string               `json:"folder"`
	Batch     *run                 `json:"batch"`
	Single    *run                 `json:"single"`
	Texts     *run                 `json:"texts"`
	Tokenizer *tokenizerRun        `json:"tokenizer"`
	Train     *familytest.TrainRun `json:"train"`
}

// fixtures is testdata/fixtures.json.
type fixtures struct {
	Transformers string                   `json:"transformers_version"`
	Models       map[string]*fixtureModel `json:"models"`
	Buckets      map[string]struct {
		PositionBuckets int   `json:"position_buckets"`
		MaxPosition     int   `json:"max_position"`
		First           int   `json:"first"`
		Buckets         []int `json:"buckets"`
	} `json:"buckets"`
}

var readFixtures = sync.OnceValues(func() (*fixtures, error) {
	contents, err := os.ReadFile(filepath.Join("testdata", "fixtures.json"))
	if err != nil {
		return nil, err
	}
	var f fixtures
	if err := json.Unmarshal(contents, &f); err != nil {
		return nil, err
	}
	return &f, nil
})

func loadFixtures(t *testing.T) *fixtures {
	t.Helper()
	f, err := readFixtures()
	if err != nil {
		t.Fatalf("reading testdata/fixtures.json: %v", err)
	}
	if len(f.Models) != 4 || f.Models["tiny"] == nil || f.Models["tiny_v3"] == nil {
		t.Fatalf("testdata/fixtures.json has models %d, want tiny, tiny_alt, tiny_abs and tiny_v3", len(f.Models))
	}
	return f
}

// inputsOf is a run's [input_ids, attention_mask, token_type_ids] (zeros when it has none).
func inputsOf(r *run) []*tensors.Tensor {
	types := r.TokenTypeIDs
	if types == nil {
		types = make([][]int32, len(r.InputIDs))
		for i := range types {
			types[i] = make([]int32, len(r.InputIDs[i]))
		}
	}
	return []*tensors.Tensor{familytest.Matrix(r.InputIDs), familytest.Matrix(r.AttentionMask), familytest.Matrix(types)}
}

// hiddenAndLogits runs the encoder and the head once (inference).
func hiddenAndLogits(t *testing.T, backend compute.Backend, clf *Classifier, r *run) (hidden, logits []float32) {
	t.Helper()
	exec, err := model.NewExec(backend, clf.Store(), func(s *model.Scope, ids, mask, types *Node) (*Node, *Node) {
		h := clf.Encoder(s, ids, mask, types)
		return h, clf.Head(s, h)
	})
	if err != nil {
		t.Fatal(err)
	}
	in := inputsOf(r)
	outs, err := exec.Call(in[0], in[1], in[2])
	if err != nil {
		t.Fatalf("running the classifier: %v", err)
	}
	return tensors.MustCopyFlatData[float32](outs[0]), tensors.MustCopyFlatData[float32](outs[1])
}

// logitsOf runs Classifier.Logits once, in training mode when train (dropout on), else in inference.
func logitsOf(t *testing.T, backend compute.Backend, clf *Classifier, r *run, train bool) []float32 {
	t.Helper()
	exec, err := model.NewExec(backend, clf.Store(), func(s *model.Scope, ids, mask, types *Node) *Node {
		s.Store().SetTraining(ids.Graph(), train)
		return clf.Logits(s, []*Node{ids, mask, types})
	})
	if err != nil {
		t.Fatal(err)
	}
	in := inputsOf(r)
	outs, err := exec.Call(in[0], in[1], in[2])
	if err != nil {
		t.Fatalf("running Logits: %v", err)
	}
	return tensors.MustCopyFlatData[float32](outs[0])
}

// loadFixture loads testdata/<name> with its classifier.
func loadFixture(t *testing.T, name string) *Classifier {
	t.Helper()
	clf, err := LoadPretrained(filepath.Join("testdata", name), model.NewStore(), LoadOptions{LoadHead: true})
	if err != nil {
		t.Fatal(err)
	}
	return clf
}

// diffs compares a run's hidden states and logits with transformers'.
func diffs(t *testing.T, backend compute.Backend, clf *Classifier, r *run) (dh, dl float64) {
	t.Helper()
	hidden, logits := hiddenAndLogits(t, backend, clf, r)
	dh = testutil.MaxAbsDiff(t, "hidden", hidden, r.Hidden(t))
	dl = testutil.MaxAbsDiff(t, "logits", logits, r.Logits(t))
	return dh, dl
}

// TestTensorsMatchTransformers: the tensors this package builds are those transformers saved,
// name for name and shape for shape, for each checkpoint's layout.
func TestTensorsMatchTransformers(t *testing.T) {
	for name, m := range loadFixtures(t).Models {
		t.Run(name, func(t *testing.T) {
			familytest.CheckTensors(t, filepath.Join("testdata", m.Folder), tensorsOf)
		})
	}
}

// tensorsOf lists the tensors of the configuration in a config.json.
func tensorsOf(configPath string) ([]TensorSpec, error) {
	cfg, err := LoadConfig(configPath)
	return cfg.Tensors(), err
}

// TestParityWithTransformers: on every checkpoint, the last hidden states (padding positions
// included) and the logits of a padded batch match transformers' within tolerance, on the
// pure-Go backend and on XLA's CPU backend; on tiny also a 40-token sequence (distances up
// to 39 over 8 buckets) and texts tokenized by transformers, and Logits gives what Encoder and
// Head give. tiny_v3 has DeBERTa-v3's 512 rows of relative embeddings, of which its batch
// reads 96 (TestRelativeRows).
func TestParityWithTransformers(t *testing.T) {
	f := loadFixtures(t)
	for _, b := range familytest.Backends(t) {
		for _, name := range []string{"tiny", "tiny_alt", "tiny_abs", "tiny_v3"} {
			m := f.Models[name]
			clf := loadFixture(t, m.Folder)
			for _, c := range []struct {
				what string
				run  *run
			}{{"batch", m.Batch}, {"single", m.Single}, {"texts", m.Texts}} {
				if c.run == nil {
					continue
				}
				t.Run(b.Name+"/"+name+"/"+c.what, func(t *testing.T) {
					dh, dl := diffs(t, b.Backend, clf, c.run)
					t.Logf("%s %s %s (shape %v) vs transformers %s: last_hidden_state max abs diff %.3g, logits %.3g",
						b.Name, name, c.what, c.run.HiddenShape, f.Transformers, dh, dl)
					if dh > tolerance || dl > tolerance {
						t.Errorf("max abs diff hidden=%g logits=%g, want both <= %g", dh, dl, tolerance)
					}
				})
			}
		}
		t.Run(b.Name+"/Logits", func(t *testing.T) {
			in := f.Models["tiny"].Batch
			got := logitsOf(t, b.Backend, loadFixture(t, "tiny"), in, false)
			if d := testutil.MaxAbsDiff(t, "Logits", got, in.Logits(t)); d > tolerance {
				t.Errorf("Logits differs from transformers by %g", d)
			}
		})
	}
}

// TestRelativeTermsMatter is the check that the parity test can fail: on tiny's 40-token
// sequence, leaving c2p or p2c out of pos_att_type, or clamping the distances at 8 instead of
// mapping them to log buckets, moves the logits far beyond tolerance (figures in
// docs/families.md).
func TestRelativeTermsMatter(t *testing.T) {
	f := loadFixtures(t)
	g := familytest.Go(t)
	in := f.Models["tiny"].Single
	want := in.Logits(t)
	for _, c := range []struct {
		what   string
		change func(*Config)
	}{
		{"without c2p", func(c *Config) { c.PosAttType = []string{P2C} }},
		{"without p2c", func(c *Config) { c.PosAttType = []string{C2P} }},
		{"without buckets", func(c *Config) { c.PositionBuckets, c.MaxRelativePositions = -1, 8 }},
	} {
		t.Run(c.what, func(t *testing.T) {
			clf := loadFixture(t, "tiny")
			c.change(&clf.Config)
			d := testutil.MaxAbsDiff(t, "logits", logitsOf(t, g, clf, in, false), want)
			t.Logf("%s: logits max abs diff from transformers %.3g", c.what, d)
			if d < 100*tolerance {
				t.Errorf("%s the logits are within %g of transformers': the parity test could not tell", c.what, d)
			}
		})
	}
}

// TestLogBucketMatchesTransformers: LogBucket gives transformers' make_log_bucket_position on
// every distance of fixtures.json's ranges, for DeBERTa-v3's 256 buckets up to 512 and tiny's 8
// up to 64 (the distance max_position-1 lands exactly on a bucket's edge there).
func TestLogBucketMatchesTransformers(t *testing.T) {
	for name, b := range loadFixtures(t).Buckets {
		bad := 0
		for i, want := range b.Buckets {
			rel := b.First + i
			if got := LogBucket(rel, b.PositionBuckets, b.MaxPosition); got != want {
				if bad++; bad < 10 {
					t.Errorf("%s: LogBucket(%d) = %d, transformers %d", name, rel, got, want)
				}
			}
		}
		t.Logf("%s: %d distances, %d differ from transformers'", name, len(b.Buckets), bad)
	}
}

// TestTokenizerParity: tokenizers.FromFolder on the tiny folder (spm.model and
// tokenizer_config.json, no tokenizer.json) gives transformers' DebertaV2TokenizerFast ids and
// type ids on texts and pairs, and, padded with its pad_token to max_len (tokenizers.Pad), the
// batch transformers fed the model.
func TestTokenizerParity(t *testing.T) {
	m := loadFixtures(t).Models["tiny"]
	want := m.Tokenizer
	read, err := tokenizers.FromFolder(filepath.Join("testdata", "tiny"))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := read.WithMaxLen(want.MaxLen)
	if err != nil {
		t.Fatal(err)
	}
	if tok.VocabSize() != want.VocabSize || tok.Kind() != "Unigram" {
		t.Errorf("VocabSize %d, Kind %s; transformers' %s has %d tokens", tok.VocabSize(), tok.Kind(), want.Class, want.VocabSize)
	}
	for _, c := range want.Cases {
		e := tok.Encode(c.Text)
		if !slices.Equal(e.IDs, c.IDs) || !slices.Equal(e.TypeIDs, c.TypeIDs) {
			t.Errorf("Encode(%q): %v %v, transformers %v %v (tokens %q)", c.Text, e.IDs, e.TypeIDs, c.IDs, c.TypeIDs, tok.Tokenize(c.Text))
		}
	}
	for _, c := range want.PairCases {
		e := tok.EncodePair(c.A, c.B)
		if !slices.Equal(e.IDs, c.IDs) || !slices.Equal(e.TypeIDs, c.TypeIDs) {
			t.Errorf("EncodePair(%q, %q): %v %v, transformers %v %v", c.A, c.B, e.IDs, e.TypeIDs, c.IDs, c.TypeIDs)
		}
	}
	padName, ok := tok.SpecialToken("pad_token")
	if !ok {
		t.Fatal("the tiny folder names no pad_token")
	}
	pad, ok := tok.ID(padName)
	if !ok {
		t.Fatalf("pad_token %q is not in the vocabulary", padName)
	}
	encs := make([]tokenizers.Encoding, len(m.Texts.Texts))
	for i, text := range m.Texts.Texts {
		encs[i] = tok.Encode(text)
	}
	for i, e := range tokenizers.Pad(encs, tokenizers.Padding{Length: want.MaxLen, ID: pad}) {
		if !slices.Equal(e.IDs, m.Texts.InputIDs[i]) || !slices.Equal(e.AttentionMask, m.Texts.AttentionMask[i]) ||
			!slices.Equal(e.TypeIDs, m.Texts.TokenTypeIDs[i]) {
			t.Errorf("padded row %d (%q) differs from transformers' %v", i, m.Texts.Texts[i], m.Texts.InputIDs[i])
		}
	}
	t.Logf("%d texts, %d pairs and a padded batch of %d compared with transformers' %s", len(want.Cases), len(want.PairCases),
		len(m.Texts.Texts), want.Class)
}

// TestTrainingParity: from the tiny checkpoint (every dropout rate 0), 20 plain SGD steps on
// two fixed batches taken in turn, run the way users train (accelerator.New, Prepare,
// TrainStep, CrossEntropy, Backward, on one XLA CPU device), give transformers' + PyTorch's
// losses within 1e-4.
func TestTrainingParity(t *testing.T) {
	f := loadFixtures(t)
	clf := loadFixture(t, "tiny")
	f.Models["tiny"].Train.Check(t, clf, clf.Logits, 1e-4, f.Transformers)
}

// TestMixedPrecision: under bf16 and fp16 (SetComputeDType) the logits of the padded batch
// stay within 5% of float32's and are not equal to them, on every checkpoint (relative
// attention with c2p and p2c, absolute positions, the other attention options); and the
// training record's 20 SGD steps under the accelerator's bf16 stay within 30% of PyTorch's
// float32 losses (relative, see CheckMixed): the record's fourth step overshoots (lr 0.1,
// loss 0.47 -> 2.70), which makes steps 3 to 5 sensitive to rounding; there goaccel's bf16
// moves by 16% at most, PyTorch's own bf16 autocast by 6.4% (scripts/autocast_drift.py).
func TestMixedPrecision(t *testing.T) {
	f := loadFixtures(t)
	backend := familytest.XLA(t)
	for name, m := range f.Models {
		t.Run(name, func(t *testing.T) {
			clf := loadFixture(t, m.Folder)
			familytest.CheckMixedLogits(t, backend, clf, clf.Logits, m.Batch.InputIDs, m.Batch.AttentionMask)
		})
	}
	clf := loadFixture(t, "tiny")
	f.Models["tiny"].Train.CheckMixed(t, clf, clf.Logits, "bf16", 0.3, f.Transformers)
}

// TestGradientCheckpointing: with GradientCheckpointing, and dropout on in every layer (0.1,
// the relative embeddings' included), the training record's 20 SGD steps (6 in -short) give
// the plain graph's losses, and the training graph has more matrix products (see
// familytest's CheckGradientCheckpointing).
func TestGradientCheckpointing(t *testing.T) {
	m := loadFixtures(t).Models["tiny"]
	m.Train.CheckGradientCheckpointing(t, func(checkpoint bool) (model.StoreProvider, func(*model.Scope, []*Node) *Node) {
		clf := loadFixture(t, m.Folder)
		clf.Config.HiddenDropoutProb, clf.Config.AttentionProbsDropoutProb, clf.Config.GradientCheckpointing = 0.1, 0.1, checkpoint
		return clf, clf.Logits
	}, m.Batch.InputIDs, m.Batch.AttentionMask)
}

// TestRelativeRows: the encoder reads only the rows of the relative embeddings that some
// distance reaches, and each shifted column reads the row the whole table's column read:
// tiny_v3 (512 rows) at its batch's 40 tokens reads rows 208-303 (distances -39..39 around row
// 256, widened to 16s), tiny (16 rows) reads them all.
func TestRelativeRows(t *testing.T) {
	for _, c := range []struct {
		folder string
		seqLen int
		rows   [2]int
	}{{"tiny_v3", 40, [2]int{208, 304}}, {"tiny_v3", 1, [2]int{256, 272}}, {"tiny", 40, [2]int{0, 16}}, {"tiny_alt", 40, [2]int{0, 32}}} {
		clf := loadFixture(t, c.folder)
		c2p, p2c, rows := clf.Config.readColumns(c.seqLen)
		if rows != c.rows {
			t.Errorf("%s at L %d: rows %v, want %v", c.folder, c.seqLen, rows, c.rows)
		}
		full2p, fullp2c := clf.Config.relativeColumns(c.seqLen)
		for i := range c2p {
			for _, p := range [][2]int32{{c2p[i], full2p[i]}, {p2c[i], fullp2c[i]}} {
				if p[0] < 0 || int(p[0]) >= rows[1]-rows[0] || int(p[0])+rows[0] != int(p[1]) {
					t.Fatalf("%s at L %d, distance %d: column %d of rows %v, the whole table's %d", c.folder, c.seqLen, i-(c.seqLen-1), p[0], rows, p[1])
				}
			}
		}
	}
}
