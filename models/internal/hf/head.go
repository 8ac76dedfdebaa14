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
// DebertaV2ForTokenClassification, ...); each family's ParseConfig reads it (HeadOf) and JSON
// writes it back, and LoadOptions.Head chooses it when a folder is loaded. A new head (the
// image classifier's) is one more constant and one more entry of heads.
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
}

// index is h's entry of heads, -1 for another value.
func (h Head) index() int {
	return slices.IndexFunc(heads, func(e headInfo) bool { return e.head == h })
}

// String returns the suffix of transformers' class names for the head,
// "ForSequenceClassification" or "ForTokenClassification" (Head(n) for another value).
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

// Validate refuses a value that is not one of the Head constants.
func (h Head) Validate() error {
	if h.index() < 0 {
		return fmt.Errorf("head %s is not SequenceClassification or TokenClassification", h)
	}
	return nil
}

// HeadOf returns the head that config.json's architectures names: TokenClassification for a
// class ending in "ForTokenClassification", SequenceClassification for one ending in
// "ForSequenceClassification"; ok is false when no class names either (a base model, a
// masked-LM or pre-training checkpoint, no architectures at all), and the families then take
// SequenceClassification.
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
// with both heads.
func CheckLoadHead(configPath string, architectures []string, want Head, loadHead bool) error {
	if err := want.Validate(); err != nil {
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
