package auto

import (
	"slices"
	"strings"
	"testing"
)

// TestEveryFamilyHasABlank: NewBlank builds every model_type Load reads (a family added to
// the table without a blank builder fails here), and the fixtures' families come out named
// by their model_type, with their inputs.
func TestEveryFamilyHasABlank(t *testing.T) {
	var blanks []string
	for _, b := range blankBuilders {
		blanks = append(blanks, b.types...)
	}
	slices.Sort(blanks)
	if !slices.Equal(blanks, Families()) {
		t.Errorf("blank builders for %v, families %v", blanks, Families())
	}
	for _, c := range []struct {
		dir, family string
		inputs      int
	}{
		{"../modernbert/testdata/tiny", "modernbert", 2},
		{"../deberta/testdata/tiny", "deberta-v2", 3},
		{"../deberta/testdata/tiny_v3", "deberta-v2", 3},
	} {
		b, err := NewBlank(c.dir, 7, 16)
		if err != nil {
			t.Errorf("%s: %v", c.dir, err)
			continue
		}
		if b.Family != c.family || b.Inputs != c.inputs || b.Classifier.NumParameters() == 0 {
			t.Errorf("%s: family %s, %d inputs, %d parameters; want %s, %d", c.dir, b.Family, b.Inputs, b.Classifier.NumParameters(), c.family, c.inputs)
		}
	}
	if _, err := NewBlank("../modernbert/testdata/tiny", 0, 100000); err == nil || !strings.Contains(err.Error(), "--seq_len 100000") ||
		!strings.Contains(err.Error(), "config.json") {
		t.Errorf("a --seq_len beyond the positions: %v", err)
	}
}
