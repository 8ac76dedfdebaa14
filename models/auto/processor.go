package auto

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/goaccel/goaccel/internal/fsutil"
	"github.com/goaccel/goaccel/models/bert"
	"github.com/gomlx/gomlx/core/tensors"
)

// Processor is a family's input processor, as transformers' AutoProcessor: what turns raw
// inputs (texts for a tokenizer, images for an image processor) into the model's inputs.
// The batch half is BatchProcessor, one per kind of input; labels are not its business (the
// task collates them: data/text.Collator, data.ClassLabels).
type Processor interface {
	// Kind names it ("WordPiece", "BPE", "Unigram" for a tokenizer).
	Kind() string
	// SavePretrained writes its files into a Hugging Face folder.
	SavePretrained(dir string) error
}

// BatchProcessor is a Processor of inputs of type X: Process makes the model's inputs of a
// batch (for text, [input_ids, attention_mask(, token_type_ids)] int32 [B, L]). An image
// processor is a BatchProcessor of images, with no text code involved.
type BatchProcessor[X any] interface {
	Processor
	Process(batch []X) ([]*tensors.Tensor, error)
}

// Tokenizer is the processor of a text family: texts to token ids, at most MaxLen a text
// (special tokens included); ProcessWords takes sentences split into words (token
// classification), padded to MaxLen, and gives each token's word (negative for a special
// token), for text.TagCollator to align the task's tags with.
type Tokenizer interface {
	BatchProcessor[string]
	ProcessWords(sentences [][]string) (inputs []*tensors.Tensor, wordIDs [][]int32, err error)
	// MaxLen is the longest sequence it makes.
	MaxLen() int
	// VocabSize is the number of ids it makes.
	VocabSize() int
}

// NewTokenizer makes a Tokenizer of a models/bert tokenizer (WordPiece, byte-level BPE or
// Unigram) read from folder dir ("" for one built in code: SavePretrained then writes nothing
// and the family's SavePretrained writes the files, as BERT's does).
func NewTokenizer(tok *bert.Tokenizer, dir string) Tokenizer { return &textTokenizer{tok, dir} }

// textTokenizer is models/bert's tokenizer as a Tokenizer, with the folder it came from.
type textTokenizer struct {
	*bert.Tokenizer
	dir string
}

// Process tokenizes texts and pads them to the batch's length (bert.Tokenizer.EncodeBatch).
func (t *textTokenizer) Process(texts []string) ([]*tensors.Tensor, error) {
	if len(texts) == 0 {
		return nil, fmt.Errorf("auto: Process: an empty batch")
	}
	return t.EncodeBatch(texts).Tensors(), nil
}

// ProcessWords tokenizes each sentence's words on their own (bert.Tokenizer.EncodeWords,
// transformers' is_split_into_words) and pads the batch to MaxLen, so that the per-token
// outputs of every batch line up.
func (t *textTokenizer) ProcessWords(sentences [][]string) ([]*tensors.Tensor, [][]int32, error) {
	n, width := len(sentences), t.MaxLen()
	if n == 0 {
		return nil, nil, fmt.Errorf("auto: ProcessWords: an empty batch")
	}
	enc := &bert.Encoded{Batch: n, Len: width, InputIDs: make([]int32, n*width), AttentionMask: make([]int32, n*width),
		TokenTypeIDs: make([]int32, n*width)}
	words := make([][]int32, n)
	for i, s := range sentences {
		ids, w := t.EncodeWords(s)
		for p := range width {
			if p < len(ids) {
				enc.InputIDs[i*width+p], enc.AttentionMask[i*width+p] = ids[p], 1
			} else {
				enc.InputIDs[i*width+p] = t.PadID()
			}
		}
		words[i] = w
	}
	return enc.Tensors(), words, nil
}

// SavePretrained copies the tokenizer files of the folder it was read from into dir, so that
// the folder written tokenizes as the one the model came from.
func (t *textTokenizer) SavePretrained(dir string) error {
	if t.dir == "" {
		return nil
	}
	return copyTokenizerFiles(t.dir, dir)
}

// tokenizerFiles are the files a tokenizer's folder may hold, as transformers' tokenizers
// save them.
var tokenizerFiles = []string{"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
	"added_tokens.json", "vocab.txt", "spm.model", "sentencepiece.bpe.model", "merges.txt", "vocab.json"}

// copyTokenizerFiles copies the tokenizer files of folder src that exist into dst.
func copyTokenizerFiles(src, dst string) error {
	for _, name := range tokenizerFiles {
		b, err := os.ReadFile(filepath.Join(src, name))
		if os.IsNotExist(err) {
			continue
		} else if err != nil {
			return fmt.Errorf("auto: copying the tokenizer: %w", err)
		}
		if err := fsutil.WriteFileAtomic(filepath.Join(dst, name), b); err != nil {
			return fmt.Errorf("auto: copying the tokenizer: %w", err)
		}
	}
	return nil
}

// DefaultMaxLen is the sequence length of Options.MaxLen 0 (or the model's longest, when
// shorter).
const DefaultMaxLen = bert.DefaultMaxLen

// loadTokenizer loads folder dir's tokenizer at maxLen (0: bert.DefaultMaxLen), checked
// against the model's longest sequence and vocabulary (ids past the embedding table would be
// read as a clamped row: a silent wrong answer).
func loadTokenizer(dir string, maxLen int, checkMaxLen func(int) error, vocabSize int) (Tokenizer, error) {
	if maxLen == 0 {
		maxLen = DefaultMaxLen
	}
	if err := checkMaxLen(maxLen); err != nil {
		return nil, fmt.Errorf("auto: %s: %w", dir, err)
	}
	tok, err := bert.LoadTokenizer(dir, maxLen)
	if err != nil {
		return nil, err
	}
	if err := tok.CheckVocabSize(vocabSize, filepath.Join(dir, "config.json")); err != nil {
		return nil, fmt.Errorf("auto: %w", err)
	}
	return NewTokenizer(tok, dir), nil
}
