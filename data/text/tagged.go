package text

import (
	"fmt"

	"github.com/goaccel/goaccel/data"
	"github.com/gomlx/gomlx/core/tensors"
)

// Tagged is one example of token classification (named entities, say): a sentence as its
// words, and the id of each word's tag (package table's LoadTagged numbers the tags).
type Tagged struct {
	Words []string
	Tags  []int
}

// IgnoreIndex is the label of the token positions that do not count in token
// classification: special tokens, padding, and the pieces of a word after its first
// (PyTorch's CrossEntropyLoss ignore_index, metrics.IgnoreIndex and bert.IgnoreIndex).
const IgnoreIndex = -100

// AlignTags gives each token of a sentence its label from its word's tag, as run_ner.py
// aligns word labels: wordIDs are the tokens' words (negative for a special token); the first
// token of word w gets tags[w]; the special tokens get IgnoreIndex; a word's later tokens get
// IgnoreIndex, or pieceTag(tags[w]) when pieceTag is not nil (run_ner.py's
// --label_all_tokens, where a B- tag's pieces become I-).
func AlignTags(wordIDs []int32, tags []int, pieceTag func(tag int) int) ([]int32, error) {
	labels := make([]int32, len(wordIDs))
	prev := int32(-1)
	for i, w := range wordIDs {
		switch {
		case w < 0:
			labels[i] = IgnoreIndex
		case int(w) >= len(tags):
			return nil, fmt.Errorf("text: AlignTags: token %d comes from word %d, but there are %d tags", i, w, len(tags))
		case w != prev:
			labels[i] = int32(tags[w])
		case pieceTag != nil:
			labels[i] = int32(pieceTag(tags[w]))
		default:
			labels[i] = IgnoreIndex
		}
		prev = w
	}
	return labels, nil
}

// TagCollator makes the data.CollateFunc[Tagged] of a token classifier: process turns the
// batch's sentences (words) into the model's inputs ([B, L] each) and each token's word
// (negative for a special token), and the labels are the task's: int32 [B, L], the tags
// aligned by AlignTags with pieceTag, IgnoreIndex on padding. An empty batch, or a sentence
// whose words and tags differ in number, is an error naming it.
func TagCollator(process func(sentences [][]string) ([]*tensors.Tensor, [][]int32, error), pieceTag func(tag int) int) data.CollateFunc[Tagged] {
	return func(examples []Tagged) ([]*tensors.Tensor, *tensors.Tensor, error) {
		if len(examples) == 0 {
			return nil, nil, fmt.Errorf("text: TagCollator: an empty batch")
		}
		sentences := make([][]string, len(examples))
		for i, ex := range examples {
			if len(ex.Words) != len(ex.Tags) {
				return nil, nil, fmt.Errorf("text: TagCollator: sentence %d has %d words and %d tags", i, len(ex.Words), len(ex.Tags))
			}
			sentences[i] = ex.Words
		}
		inputs, wordIDs, err := process(sentences)
		if err != nil {
			return nil, nil, err
		}
		if len(inputs) == 0 || inputs[0].Rank() != 2 || len(wordIDs) != len(examples) {
			return nil, nil, fmt.Errorf("text: TagCollator: the processor made %d inputs and %d word lists for %d sentences: want [B, L] inputs and one list a sentence",
				len(inputs), len(wordIDs), len(examples))
		}
		width := inputs[0].Shape().Dimensions[1]
		flat := make([]int32, len(examples)*width)
		for i, ex := range examples {
			row, err := AlignTags(wordIDs[i], ex.Tags, pieceTag)
			if err != nil {
				return nil, nil, fmt.Errorf("sentence %d: %w", i, err)
			}
			if len(row) > width {
				return nil, nil, fmt.Errorf("text: TagCollator: sentence %d has %d tokens, its inputs %d", i, len(row), width)
			}
			line := flat[i*width : (i+1)*width]
			copy(line, row)
			for p := len(row); p < width; p++ {
				line[p] = IgnoreIndex
			}
		}
		return inputs, tensors.FromFlatDataAndDimensions(flat, len(examples), width), nil
	}
}
