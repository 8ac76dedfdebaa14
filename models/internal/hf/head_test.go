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
		{[]string{"ViTForImageClassification"}, ImageClassification, true},
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

// TestHeadKinds: a text family's check refuses the image head and an image family's the text
// heads, so that neither builds the other's head as its own; Known takes all three.
func TestHeadKinds(t *testing.T) {
	for _, h := range []Head{SequenceClassification, TokenClassification, ImageClassification, Head(3)} {
		text, image, known := h.Validate() == nil, h.ValidateImage() == nil, h.Known() == nil
		wantText, wantImage := h == SequenceClassification || h == TokenClassification, h == ImageClassification
		if text != wantText || image != wantImage || known != (wantText || wantImage) {
			t.Errorf("%v: Validate ok %v, ValidateImage ok %v, Known ok %v", h, text, image, known)
		}
	}
	if p := HeadProblemType(ImageClassification, ""); p != "single_label_classification" {
		t.Errorf("HeadProblemType(ImageClassification, \"\") = %q, want single_label_classification", p)
	}
	err := LoadOptions{Head: ImageClassification}.Apply("config.json", TaskFields{NumLabels: new(int), Labels: new([]string), Head: new(Head)})
	if err == nil {
		t.Errorf("a text family's LoadOptions.Apply took the image head")
	}
}
