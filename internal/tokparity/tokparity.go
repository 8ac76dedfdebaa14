// Package tokparity holds what the tokenizer parity tests of models/bert and tokenizers
// share: the rt-polarity sentences the fixtures were made from, and the fixtures' digest of
// an encoded row.
package tokparity

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
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
