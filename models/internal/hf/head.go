package hf

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Head is the task a classifier's head is built for, shared by every family: what Logits
// returns and which tensors the head has. Its zero value is SequenceClassification.
//
// A family's config.json names the head in architectures (BertForSequenceClassification,
// DebertaV2ForTokenClassification, ViTForImageClassification...); each family's ParseConfig
// reads it (HeadOf) and JSON writes it back, and LoadOptions.Head chooses it when a folder is
// loaded. A text family builds SequenceClassification or TokenClassification (Validate), an
// image family ImageClassification (ValidateImage).
type Head int

const (
	// SequenceClassification is transformers' *ForSequenceClassification: one vector of
	// logits per sequence, [batch, num_labels], from the family's pooled head.
	SequenceClassification Head = iota
	// TokenClassification is transformers' *ForTokenClassification (named-entity
	// recognition, part-of-speech tagging): one vector of logits per token, [batch, seq_len,
	// num_labels], from a linear classifier on each token's last hidden state (ModernBERT
	// first runs its prediction head on each token).
	TokenClassification
	// ImageClassification is transformers' *ForImageClassification: one vector of logits per
	// image, [batch, num_labels], from a linear classifier on the family's pooled features
	// (ViT's CLS token, a convolutional network's pooled last stage); see ImageClassifier.
	ImageClassification
)

// headInfo is one Head constant with the suffix of transformers' class names and its Go name.
type headInfo struct {
	head           Head
	suffix, goName string
}

// heads are the Head constants, with the suffix of transformers' class names and the Go name
// of each, in the order HeadOf tries them.
var heads = []headInfo{
	{TokenClassification, "ForTokenClassification", "TokenClassification"},
	{SequenceClassification, "ForSequenceClassification", "SequenceClassification"},
	{ImageClassification, "ForImageClassification", "ImageClassification"},
}

// index is h's entry of heads, -1 for another value.
func (h Head) index() int {
	return slices.IndexFunc(heads, func(e headInfo) bool { return e.head == h })
}

// String returns the suffix of transformers' class names for the head,
// "ForSequenceClassification", "ForTokenClassification" or "ForImageClassification" (Head(n)
// for another value).
func (h Head) String() string {
	if i := h.index(); i >= 0 {
		return heads[i].suffix
	}
	return "Head(" + strconv.Itoa(int(h)) + ")"
}

// goName is the Go name of a Head constant, for messages.
func (h Head) goName() string {
	if i := h.index(); i >= 0 {
		return heads[i].goName
	}
	return h.String()
}

// Validate refuses a value that is not the head of a text classifier, SequenceClassification
// or TokenClassification: the check of every text family, which would otherwise build an
// image head as a sequence classifier. ImageClassification is refused here (ValidateImage).
func (h Head) Validate() error {
	if h.index() < 0 || h == ImageClassification {
		return fmt.Errorf("head %s is not SequenceClassification or TokenClassification (the heads of a text family)", h.goName())
	}
	return nil
}

// ValidateImage refuses a value that is not the head of an image classifier,
// ImageClassification: the check of every image family.
func (h Head) ValidateImage() error {
	if h != ImageClassification {
		return fmt.Errorf("head %s is not ImageClassification (the head of an image family)", h.goName())
	}
	return nil
}

// Known refuses a value that is not one of the Head constants, whatever the family.
func (h Head) Known() error {
	if h.index() < 0 {
		return fmt.Errorf("head %s is not SequenceClassification, TokenClassification or ImageClassification", h)
	}
	return nil
}

// HeadOf returns the head that config.json's architectures names: TokenClassification for a
// class ending in "ForTokenClassification", SequenceClassification for one ending in
// "ForSequenceClassification", ImageClassification for "ForImageClassification"; ok is false
// when no class names any (a base model, a masked-LM or pre-training checkpoint, no
// architectures at all), and the families then take SequenceClassification (an image
// family: ImageClassification).
func HeadOf(architectures []string) (h Head, ok bool) {
	for _, a := range architectures {
		for _, e := range heads {
			if strings.HasSuffix(a, e.suffix) {
				return e.head, true
			}
		}
	}
	return SequenceClassification, false
}

// CheckLoadHead is the check a family's LoadPretrained makes of LoadOptions.Head (want)
// and LoadOptions.LoadHead: want must be a Head, and the head to load must be the one the
// checkpoint's architectures names, when it names one; configPath is named in the error,
// with both heads. (Whether the family builds want is the family's check: Validate,
// ValidateImage.)
func CheckLoadHead(configPath string, architectures []string, want Head, loadHead bool) error {
	if err := want.Known(); err != nil {
		return fmt.Errorf("LoadOptions.Head: %w", err)
	}
	if !loadHead {
		return nil
	}
	if named, ok := HeadOf(architectures); ok && named != want {
		return fmt.Errorf("%s: architectures %q is a %s checkpoint, but the head to load (LoadOptions.Head with LoadHead) is %s: "+
			"load it with Head %s, or without LoadHead for a fresh %s head",
			configPath, architectures, named.goName(), want.goName(), named.goName(), want.goName())
	}
	return nil
}
