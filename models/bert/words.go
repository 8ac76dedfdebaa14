package bert

import (
	"fmt"

	"github.com/goaccel/goaccel/data"
	"github.com/goaccel/goaccel/data/text"
	"github.com/gomlx/gomlx/core/tensors"
)

// IgnoreIndex is the label of the token positions that do not count in token
// classification: special tokens, padding, and the pieces of a word after its first
// (PyTorch's CrossEntropyLoss ignore_index, and metrics.IgnoreIndex).
//
// Deprecated: it is text.IgnoreIndex, the task's (data/text).
const IgnoreIndex = text.IgnoreIndex

// AlignTags gives each token of a sentence encoded by EncodeWords its label, as run_ner.py
// aligns word labels; it is text.AlignTags (the task's rule, shared by every processor).
//
// Deprecated: use text.AlignTags.
func AlignTags(wordIDs []int32, tags []int, pieceTag func(tag int) int) ([]int32, error) {
	return text.AlignTags(wordIDs, tags, pieceTag)
}

// CollateTagged turns sentences of words with tag ids into the model inputs ([input_ids,
// attention_mask, token_type_ids], int32 [N, MaxLen]: always padded to MaxLen, so that the
// gathered per-token outputs of every batch line up) and the labels (int32 [N, MaxLen], tag
// ids aligned by AlignTags, IgnoreIndex on padding). pieceTag is AlignTags'. A sentence
// whose words and tags differ in number is an error naming it.
func (t *Tokenizer) CollateTagged(examples []text.Tagged, pieceTag func(tag int) int) (inputs []*tensors.Tensor, labels *tensors.Tensor, err error) {
	if len(examples) == 0 {
		return nil, nil, fmt.Errorf("bert: CollateTagged called with an empty batch")
	}
	n, width := len(examples), t.maxLen
	enc := &Encoded{Batch: n, Len: width, InputIDs: make([]int32, n*width), AttentionMask: make([]int32, n*width),
		TokenTypeIDs: make([]int32, n*width)}
	flat := make([]int32, n*width)
	for i, ex := range examples {
		if len(ex.Words) != len(ex.Tags) {
			return nil, nil, fmt.Errorf("bert: CollateTagged: sentence %d has %d words and %d tags", i, len(ex.Words), len(ex.Tags))
		}
		ids, words := t.EncodeWords(ex.Words)
		row, err := AlignTags(words, ex.Tags, pieceTag)
		if err != nil {
			return nil, nil, err
		}
		for p := range width {
			at := i*width + p
			if p < len(ids) {
				enc.InputIDs[at], enc.AttentionMask[at], flat[at] = ids[p], 1, row[p]
			} else {
				enc.InputIDs[at], flat[at] = t.PadID(), IgnoreIndex
			}
		}
	}
	return enc.Tensors(), tensors.FromFlatDataAndDimensions(flat, n, width), nil
}

// TagCollator is CollateTagged with pieceTag fixed, for data.LoaderConfig's Collate.
func (t *Tokenizer) TagCollator(pieceTag func(tag int) int) data.CollateFunc[text.Tagged] {
	return func(examples []text.Tagged) ([]*tensors.Tensor, *tensors.Tensor, error) {
		return t.CollateTagged(examples, pieceTag)
	}
}
