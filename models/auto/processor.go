package auto

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/goaccel/goaccel/internal/fsutil"
	"github.com/goaccel/goaccel/tokenizers"
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

// textTokenizer is a tokenizers pipeline as a Tokenizer: it truncates at the pipeline's
// MaxLen, pads with pad, and came from folder dir ("" for one made in code).
type textTokenizer struct {
	*tokenizers.Tokenizer
	pad int32
	dir string
}

// LoadTokenizer reads the tokenizer of a Hugging Face folder as transformers' AutoTokenizer
// does (tokenizers.FromFolder: vocab.txt, vocab.json + merges.txt, tokenizer.json or
// spm.model, with the folder's special and added tokens), as the processor of a text family:
// it truncates each text at maxLen tokens, special tokens included (0: DefaultMaxLen), pads
// with the folder's pad_token (else <pad>, else [PAD]; a WordPiece vocabulary's [PAD]), and
// its SavePretrained copies the folder's tokenizer files. A family of another module reads
// its folder's tokenizer with it.
func LoadTokenizer(dir string, maxLen int) (Tokenizer, error) {
	t, err := loadText(dir, maxLen)
	if err != nil {
		return nil, err
	}
	return t, nil
}

// loadText is LoadTokenizer.
func loadText(dir string, maxLen int) (*textTokenizer, error) {
	if maxLen == 0 {
		maxLen = DefaultMaxLen
	}
	tok, err := tokenizers.FromFolder(dir)
	if err != nil {
		return nil, err
	}
	pads := []string{"<pad>", "[PAD]"}
	if tok.Kind() == "WordPiece" {
		pads = pads[1:]
	}
	if name, ok := tok.SpecialToken("pad_token"); ok {
		pads = append([]string{name}, pads...)
	}
	pad := int32(-1)
	for _, name := range pads {
		if id, ok := tok.ID(name); ok {
			pad = id
			break
		}
	}
	if pad < 0 {
		return nil, fmt.Errorf("auto: %s: the tokenizer has no padding token (%s)", dir, strings.Join(pads, ", "))
	}
	if tok, err = tok.WithMaxLen(maxLen); err != nil {
		return nil, fmt.Errorf("auto: %s: %w", dir, err)
	}
	return &textTokenizer{Tokenizer: tok, pad: pad, dir: dir}, nil
}

// Process tokenizes texts (tokenizers.Tokenizer.Encode: special tokens, truncation at
// MaxLen) into [input_ids, attention_mask, token_type_ids], int32 [B, MaxLen], padded with
// the padding token's id; the token types are 0.
func (t *textTokenizer) Process(texts []string) ([]*tensors.Tensor, error) {
	if len(texts) == 0 {
		return nil, fmt.Errorf("auto: Process: an empty batch")
	}
	ids := make([][]int32, len(texts))
	for i, s := range texts {
		ids[i] = t.Encode(s).IDs
	}
	return t.padded(ids), nil
}

// padded is the inputs of a batch of ids, each padded to MaxLen.
func (t *textTokenizer) padded(ids [][]int32) []*tensors.Tensor {
	n, width := len(ids), t.MaxLen()
	inputs, mask := make([]int32, n*width), make([]int32, n*width)
	for i, row := range ids {
		for p := range width {
			if p < len(row) {
				inputs[i*width+p], mask[i*width+p] = row[p], 1
			} else {
				inputs[i*width+p] = t.pad
			}
		}
	}
	return []*tensors.Tensor{tensors.FromFlatDataAndDimensions(inputs, n, width), tensors.FromFlatDataAndDimensions(mask, n, width),
		tensors.FromFlatDataAndDimensions(make([]int32, n*width), n, width)}
}

// ProcessWords tokenizes each sentence's words on their own (tokenizers.Tokenizer.EncodeWords,
// transformers' is_split_into_words) and pads the batch to MaxLen, so that the per-token
// outputs of every batch line up.
func (t *textTokenizer) ProcessWords(sentences [][]string) ([]*tensors.Tensor, [][]int32, error) {
	if len(sentences) == 0 {
		return nil, nil, fmt.Errorf("auto: ProcessWords: an empty batch")
	}
	ids, words := make([][]int32, len(sentences)), make([][]int32, len(sentences))
	for i, s := range sentences {
		e := t.EncodeWords(s)
		ids[i], words[i] = e.IDs, e.WordIDs
	}
	return t.padded(ids), words, nil
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
const DefaultMaxLen = 128

// loadTokenizer loads folder dir's tokenizer at maxLen (0: DefaultMaxLen), checked against
// the model's longest sequence and vocabulary (ids past the embedding table would be read as
// a clamped row: a silent wrong answer).
func loadTokenizer(dir string, maxLen int, checkMaxLen func(int) error, vocabSize int) (Tokenizer, error) {
	if maxLen == 0 {
		maxLen = DefaultMaxLen
	}
	if err := checkMaxLen(maxLen); err != nil {
		return nil, fmt.Errorf("auto: %s: %w", dir, err)
	}
	tok, err := loadText(dir, maxLen)
	if err != nil {
		return nil, err
	}
	if n := tok.VocabSize(); n > vocabSize {
		first := max(vocabSize, 0)
		return nil, fmt.Errorf("auto: the tokenizer of %s has %d tokens but %s's vocab_size is %d: the word embeddings have %d rows, "+
			"and token %q (id %d) and the %d after it would reach past them", dir, n, filepath.Join(dir, "config.json"), vocabSize, vocabSize,
			tok.Token(int32(first)), first, n-first-1)
	}
	return tok, nil
}
