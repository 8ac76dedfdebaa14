// Package tokparity holds what the tokenizer parity tests of models/bert and tokenizers
// share: the rt-polarity sentences the fixtures were made from, and the fixtures' digest of
// an encoded row.
package tokparity

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/data/text"
	"github.com/goaccel/goaccel/internal/testutil"
)

// Sentences returns the rt-polarity sentences (positives, then negatives, as
// text.LoadPolarity reads them), failing t unless they are the n sentences whose
// newline-joined text has the given sha256 (the fixture's). It skips t when the data is
// absent.
func Sentences(t testing.TB, n int, sha string) []string {
	t.Helper()
	dir := testutil.PolarityDir(t)
	all, err := text.LoadPolarity(filepath.Join(dir, "rt-polarity.pos"), filepath.Join(dir, "rt-polarity.neg"))
	if err != nil {
		t.Fatal(err)
	}
	texts := make([]string, all.Len())
	for i := range texts {
		texts[i] = all[i].Text
	}
	if sum := fmt.Sprintf("%x", sha256.Sum256([]byte(strings.Join(texts, "\n")))); len(texts) != n || sum != sha {
		t.Fatalf("the %d sentences read from %s (sha256 %s) are not the %d the fixture was made from (sha256 %s)",
			len(texts), dir, sum, n, sha)
	}
	return texts
}

// Digest is the fixtures' digest of a row: 8 bytes of sha256 over the little-endian int32
// ids, then the attention mask, then the type ids.
func Digest(ids, mask, types []int32) [8]byte {
	h := sha256.New()
	buf := make([]byte, 4)
	for _, seq := range [][]int32{ids, mask, types} {
		for _, v := range seq {
			binary.LittleEndian.PutUint32(buf, uint32(v))
			h.Write(buf)
		}
	}
	var d [8]byte
	copy(d[:], h.Sum(nil))
	return d
}

// ReadFixture decodes the JSON fixture at path into v, failing t when it cannot.
func ReadFixture(t testing.TB, path string, v any) {
	t.Helper()
	contents, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(contents, v); err != nil {
		t.Fatalf("parsing %s: %v", path, err)
	}
}

// FileSHA256 is the hex sha256 of the file at path.
func FileSHA256(t testing.TB, path string) string {
	t.Helper()
	contents, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", sha256.Sum256(contents))
}

// Tally is what a parity test counted over the n sentences: those whose row (singleOK) and
// whose pair with the next sentence (pairOK) have the fixture's digest, and those truncated.
type Tally struct {
	Name, Class, Transformers      string
	N, SingleOK, PairOK, Truncated int
	MaxLen                         int
}

// Check logs the tally and fails t unless every sentence and pair matched and as many
// sentences were truncated as the fixture says (wantTruncated).
func (c Tally) Check(t testing.TB, wantTruncated int) {
	t.Helper()
	t.Logf("%s (%s, transformers %s): %d/%d sentences and %d/%d pairs identical (ids, attention mask, type ids at max_len %d; %d sentences truncated)",
		c.Name, c.Class, c.Transformers, c.SingleOK, c.N, c.PairOK, c.N-1, c.MaxLen, c.Truncated)
	if c.SingleOK != c.N || c.PairOK != c.N-1 {
		t.Errorf("%d sentences and %d pairs differ from transformers", c.N-c.SingleOK, c.N-1-c.PairOK)
	}
	if c.Truncated != wantTruncated {
		t.Errorf("%d sentences truncated, transformers truncated %d", c.Truncated, wantTruncated)
	}
}
