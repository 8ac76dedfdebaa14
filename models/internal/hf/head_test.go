package hf

import "testing"

// TestHeadOf: the head config.json's architectures names, and Head's names.
func TestHeadOf(t *testing.T) {
	for _, c := range []struct {
		archs []string
		want  Head
		ok    bool
	}{
		{nil, SequenceClassification, false},
		{[]string{"BertForMaskedLM"}, SequenceClassification, false},
		{[]string{"XLMRobertaForTokenClassification"}, TokenClassification, true},
		{[]string{"DebertaV2ForSequenceClassification"}, SequenceClassification, true},
	} {
		if h, ok := HeadOf(c.archs); h != c.want || ok != c.ok {
			t.Errorf("HeadOf(%q) = %v, %v; want %v, %v", c.archs, h, ok, c.want, c.ok)
		}
	}
	if s := TokenClassification.String(); s != "ForTokenClassification" {
		t.Errorf("TokenClassification.String() = %q", s)
	}
	if s := Head(3).String(); s != "Head(3)" {
		t.Errorf("Head(3).String() = %q", s)
	}
}
