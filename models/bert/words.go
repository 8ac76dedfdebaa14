package bert

import (
	"fmt"
	"strings"

	"github.com/goaccel/goaccel/data"
	"github.com/goaccel/goaccel/data/text"
	"github.com/gomlx/gomlx/core/tensors"
)

// IgnoreIndex is the label of the token positions that do not count in token
// classification: special tokens, padding, and the pieces of a word after its first
// (PyTorch's CrossEntropyLoss ignore_index, and metrics.IgnoreIndex).
const IgnoreIndex = -100

// EncodeWords tokenizes a sentence given as its words, as transformers' tokenizers do with
// is_split_into_words=True (run_ner.py's call): each word on its own, a byte-level BPE
// word with a space before it (add_prefix_space=True, which transformers requires for
// such input), a SentencePiece word with its "▁"; the pieces truncated so that the whole,
// special tokens included, has at most MaxLen ids. wordIDs[i] is the index of the word
// that token i comes from, -1 for the special tokens: transformers' word_ids().
func (t *Tokenizer) EncodeWords(words []string) (ids, wordIDs []int32) {
	if t.uni != nil {
		e := t.uni.EncodeWords(words)
		return e.IDs, e.WordIDs
	}
	ids, wordIDs = []int32{t.special.cls}, []int32{-1}
	for i, w := range words {
		if len(ids) >= t.maxLen-1 {
			break // the words after it would be truncated away
		}
		n := len(ids)
		ids = t.appendWordIDs(w, ids)
		for range len(ids) - n {
			wordIDs = append(wordIDs, int32(i))
		}
	}
	if len(ids) > t.maxLen-1 {
		ids, wordIDs = ids[:t.maxLen-1], wordIDs[:t.maxLen-1]
	}
	return append(ids, t.special.sep), append(wordIDs, -1)
}

// appendWordIDs appends the ids of one word: appendIDs, except that a byte-level BPE
// tokenizer puts a space before each piece of the word that is not an added token (the
// ByteLevel pre-tokenizer's add_prefix_space, which runs on the text between added tokens:
// a word that is a special token gets no space).
func (t *Tokenizer) appendWordIDs(word string, out []int32) []int32 {
	if t.Kind() != "BPE" {
		return t.appendIDs(word, out)
	}
	spaced := func(normalized string, out []int32) []int32 {
		if !strings.HasPrefix(normalized, " ") {
			normalized = " " + normalized
		}
		return t.seg.appendPlain(normalized, out)
	}
	if t.added == nil {
		return spaced(t.seg.normalize(word), out)
	}
	return t.added.AppendIDs(word, t.seg.normalize, spaced, out)
}

// AlignTags gives each token of a sentence encoded by EncodeWords its label, as run_ner.py
// aligns word labels: the first token of word w gets tags[w]; the special tokens get
// IgnoreIndex; a word's later tokens get IgnoreIndex, or pieceTag(tags[w]) when pieceTag
// is not nil (run_ner.py's --label_all_tokens, where a B- tag's pieces become I-).
func AlignTags(wordIDs []int32, tags []int, pieceTag func(tag int) int) ([]int32, error) {
	labels := make([]int32, len(wordIDs))
	prev := int32(-1)
	for i, w := range wordIDs {
		switch {
		case w < 0:
			labels[i] = IgnoreIndex
		case int(w) >= len(tags):
			return nil, fmt.Errorf("bert: AlignTags: token %d comes from word %d, but there are %d tags", i, w, len(tags))
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
