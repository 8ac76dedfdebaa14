package bert

import (
	"fmt"
	"slices"

	"github.com/goaccel/goaccel/data"
	"github.com/goaccel/goaccel/data/text"
	"github.com/gomlx/gomlx/core/tensors"
)

// Encoded is a batch of tokenized texts on the host, padded to a common length L: every
// slice holds B*L values, row-major ([B, L]).
type Encoded struct {
	// Batch and Len are B and L.
	Batch, Len int
	// InputIDs are the token ids, [PAD] after the end of each text.
	InputIDs []int32
	// AttentionMask is 1 for real tokens ([CLS] and [SEP] included) and 0 for padding.
	AttentionMask []int32
	// TokenTypeIDs are all 0 (single-segment inputs).
	TokenTypeIDs []int32
}

// Tensors returns [input_ids, attention_mask, token_type_ids] as int32 [B, L] tensors, the
// inputs of Classifier.Logits.
func (e *Encoded) Tensors() []*tensors.Tensor {
	return []*tensors.Tensor{
		tensors.FromFlatDataAndDimensions(e.InputIDs, e.Batch, e.Len),
		tensors.FromFlatDataAndDimensions(e.AttentionMask, e.Batch, e.Len),
		tensors.FromFlatDataAndDimensions(e.TokenTypeIDs, e.Batch, e.Len),
	}
}

// WithBuckets returns a copy of the tokenizer that pads each batch to the smallest of the
// given lengths that holds its longest text (MaxLen is always the last bucket; see
// data.BucketLength), instead of always padding to MaxLen: short batches cost less, and only a
// few shapes get compiled. It works on any number of devices: the data loaders collate a
// global batch at once, so all its devices' batches get the bucket of its longest text.
func (t *Tokenizer) WithBuckets(lengths ...int) (*Tokenizer, error) {
	buckets := slices.Clone(lengths)
	slices.Sort(buckets)
	buckets = slices.Compact(buckets)
	for _, b := range buckets {
		if b < 2 || b > t.maxLen {
			return nil, fmt.Errorf("bert: bucket length %d must be in [2, max_len=%d]", b, t.maxLen)
		}
	}
	if len(buckets) == 0 || buckets[len(buckets)-1] != t.maxLen {
		buckets = append(buckets, t.maxLen)
	}
	t2 := *t
	t2.buckets = buckets
	return &t2, nil
}

// withMaxLen returns a copy of the tokenizer that makes sequences of maxLen tokens (no
// buckets).
func (t *Tokenizer) withMaxLen(maxLen int) (*Tokenizer, error) {
	if err := t.special.checkMaxLen(maxLen); err != nil {
		return nil, err
	}
	t2 := *t
	t2.maxLen, t2.buckets = maxLen, []int{maxLen}
	if t.uni != nil {
		var err error
		if t2.uni, err = t.uni.WithMaxLen(maxLen); err != nil {
			return nil, fmt.Errorf("bert: %w", err)
		}
	}
	return &t2, nil
}

// EncodeBatch tokenizes texts (see Encode) and pads them to a common length: MaxLen, or the
// smallest bucket that fits the longest text when WithBuckets was used.
func (t *Tokenizer) EncodeBatch(texts []string) *Encoded {
	encoded := make([][]int32, len(texts))
	longest := 0
	for i, text := range texts {
		encoded[i] = t.Encode(text)
		longest = max(longest, len(encoded[i]))
	}
	seqLen := t.maxLen
	if len(t.buckets) > 0 {
		seqLen = data.BucketLength(longest, t.buckets)
	}
	e := &Encoded{
		Batch: len(texts), Len: seqLen,
		InputIDs:      make([]int32, len(texts)*seqLen),
		AttentionMask: make([]int32, len(texts)*seqLen),
		TokenTypeIDs:  make([]int32, len(texts)*seqLen),
	}
	for i, ids := range encoded {
		copy(e.InputIDs[i*seqLen:(i+1)*seqLen], data.PadTo(ids, seqLen, t.special.pad))
		mask := e.AttentionMask[i*seqLen : (i+1)*seqLen]
		for j := range ids {
			mask[j] = 1
		}
	}
	return e
}

// Collate turns labeled examples into the classifier's inputs and labels; it has the
// signature of data.CollateFunc[text.Labeled]. inputs are [input_ids, attention_mask,
// token_type_ids], int32 [B, L] (see EncodeBatch); the labels are the task's, collated and
// checked by text.Labels (int32 [B] classes, or float32 [B, K] values). It fails on an empty
// batch and on the labels text.Labels refuses.
func (t *Tokenizer) Collate(examples []text.Labeled) (inputs []*tensors.Tensor, labels *tensors.Tensor, err error) {
	if labels, err = text.Labels(examples); err != nil {
		return nil, nil, fmt.Errorf("bert: %w", err)
	}
	texts := make([]string, len(examples))
	for i, ex := range examples {
		texts[i] = ex.Text
	}
	return t.EncodeBatch(texts).Tensors(), labels, nil
}

// Compile-time check that Collate fits the data loader.
var _ data.CollateFunc[text.Labeled] = (*Tokenizer)(nil).Collate
