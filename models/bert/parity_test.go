package bert

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"github.com/goaccel/goaccel/internal/testutil"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gomlx/gomlx/ml/model"
)

// parityFixture is testdata/parity_minilm.json, written by scripts/make_bert_fixture.py
// with transformers' BertModel and tokenizer.
type parityFixture struct {
	Model           string    `json:"model"`
	WeightsSHA256   string    `json:"model_safetensors_sha256"`
	Transformers    string    `json:"transformers_version"`
	MaxLen          int       `json:"max_len"`
	Sentences       []string  `json:"sentences"`
	InputIDs        [][]int32 `json:"input_ids"`
	AttentionMask   [][]int32 `json:"attention_mask"`
	TokenTypeIDs    [][]int32 `json:"token_type_ids"`
	HiddenShape     []int     `json:"hidden_shape"`
	HiddenB64       string    `json:"last_hidden_state_f32_b64"`
	PooledShape     []int     `json:"pooled_shape"`
	PooledB64       string    `json:"pooler_output_f32_b64"`
	TokenizerMaxLen int       `json:"tokenizer_max_len"`
	TokenizerCases  []struct {
		Text string  `json:"text"`
		IDs  []int32 `json:"ids"`
	} `json:"tokenizer_cases"`
}

// parityTolerance is the largest max-abs difference accepted between our encoder and
// transformers' BertModel.
const parityTolerance = 1e-4

func loadParityFixture(t *testing.T) *parityFixture {
	t.Helper()
	contents, err := os.ReadFile(filepath.Join("testdata", "parity_minilm.json"))
	if err != nil {
		t.Fatalf("reading the parity fixture: %v", err)
	}
	var f parityFixture
	if err := json.Unmarshal(contents, &f); err != nil {
		t.Fatalf("parsing testdata/parity_minilm.json: %v", err)
	}
	return &f
}

// decodeF32 decodes base64 little-endian float32 values and checks their count.
func decodeF32(t *testing.T, what, b64 string, dims []int) []float32 {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatalf("decoding %s: %v", what, err)
	}
	n := 1
	for _, d := range dims {
		n *= d
	}
	if len(raw) != 4*n {
		t.Fatalf("%s: %d bytes for shape %v", what, len(raw), dims)
	}
	out := make([]float32, n)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	return out
}

// parityModelDir is the pretrained folder the fixture was made from: $GOACCEL_BERT_DIR, or
// models-cache/<fixture model> at the repository root (scripts/fetch_model.sh puts it there).
func parityModelDir(t *testing.T, f *parityFixture) string {
	if dir := os.Getenv("GOACCEL_BERT_DIR"); dir != "" {
		return dir
	}
	return filepath.Join("..", "..", "models-cache", f.Model) // go test runs in the package's folder
}

// TestParityWithTransformers compares tokenizer ids, last hidden states and pooled output of
// the pretrained model with the values transformers computed (testdata/parity_minilm.json).
// It needs the pretrained folder, which is not committed: it skips loudly without it.
func TestParityWithTransformers(t *testing.T) {
	f := loadParityFixture(t)
	dir := parityModelDir(t, f)
	weights := filepath.Join(dir, "model.safetensors")
	if _, err := os.Stat(weights); err != nil {
		msg := fmt.Sprintf("SKIPPING HF PARITY TEST: pretrained model %q not found at %s (%v). "+
			"Run make deps (or scripts/fetch_model.sh), or set GOACCEL_BERT_DIR to the folder the fixture was made from.",
			f.Model, dir, err)
		if os.Getenv("CI") != "" {
			t.Fatal("CI is set (make deps fetches the model there) but " + msg)
		}
		t.Skip(msg)
	}
	if sum := fileSHA256(t, weights); sum != f.WeightsSHA256 {
		t.Fatalf("%s has sha256 %s, but testdata/parity_minilm.json was made from weights with sha256 %s: "+
			"point GOACCEL_BERT_DIR to the %s folder", weights, sum, f.WeightsSHA256, f.Model)
	}

	_, tok, err := LoadPretrained(dir, model.NewStore(), LoadOptions{MaxLen: f.MaxLen})
	if err != nil {
		t.Fatalf("LoadPretrained(%s): %v", dir, err)
	}

	// Tokenizer: exact ids, mask and token types for the model sentences...
	enc := tok.EncodeBatch(f.Sentences)
	for b := range f.Sentences {
		row := func(s []int32) []int32 { return s[b*enc.Len : (b+1)*enc.Len] }
		if !slices.Equal(row(enc.InputIDs), f.InputIDs[b]) || !slices.Equal(row(enc.AttentionMask), f.AttentionMask[b]) ||
			!slices.Equal(row(enc.TokenTypeIDs), f.TokenTypeIDs[b]) {
			t.Errorf("sentence %q:\n ids  %v\n want %v\n mask %v\n want %v", f.Sentences[b],
				row(enc.InputIDs), f.InputIDs[b], row(enc.AttentionMask), f.AttentionMask[b])
		}
	}
	// ... and for the tricky texts, at the longer length.
	tokLong, err := LoadTokenizer(dir, f.TokenizerMaxLen)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range f.TokenizerCases {
		if got := tokLong.Encode(c.Text); !slices.Equal(got, c.IDs) {
			t.Errorf("Encode(%q):\n got  %v\n want %v (transformers)", c.Text, got, c.IDs)
		}
	}
	t.Logf("tokenizer: %d model sentences and %d texts match transformers %s exactly",
		len(f.Sentences), len(f.TokenizerCases), f.Transformers)

	wantHidden := decodeF32(t, "hidden", f.HiddenB64, f.HiddenShape)
	wantPooled := decodeF32(t, "pooled", f.PooledB64, f.PooledShape)
	for name, backend := range testBackends(t) {
		t.Run(name, func(t *testing.T) {
			// A fresh Store per backend: variable values get bound to the backend that used them.
			clf, _, err := LoadPretrained(dir, model.NewStore(), LoadOptions{MaxLen: f.MaxLen})
			if err != nil {
				t.Fatalf("LoadPretrained(%s): %v", dir, err)
			}
			hidden, pooled := encodeOnce(t, backend, clf, enc)
			dh := testutil.MaxAbsDiff(t, "hidden", hidden, wantHidden)
			dp := testutil.MaxAbsDiff(t, "pooled", pooled, wantPooled)
			t.Logf("%s vs transformers %s (%s): last_hidden_state max abs diff %.3g, pooler_output max abs diff %.3g",
				name, f.Transformers, f.Model, dh, dp)
			if dh > parityTolerance || dp > parityTolerance {
				t.Errorf("max abs diff hidden=%g pooled=%g, want both <= %g", dh, dp, parityTolerance)
			}
		})
	}
}

// fileSHA256 returns the hex sha256 of a file.
func fileSHA256(t *testing.T, path string) string {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	h := sha256.New()
	if _, err := io.Copy(h, fh); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}
