// Package tokenizers reads the tokenizers of Hugging Face model folders and turns texts into
// the ids a model reads, with the semantics of the tokenizers library (Rust) that
// transformers' fast tokenizers run.
//
// A tokenizer.json describes a pipeline, and a Tokenizer is made of the same parts, each a
// small type behind an interface:
//
//   - the added vocabulary (special tokens and added words), matched in the raw text first,
//     then in the normalized pieces between those matches (see AddedVocab);
//   - a Normalizer (BertNormalizer, Precompiled, NFC, NFD, NFKC, NFKD, Lowercase, Strip,
//     Replace, Prepend, Sequence);
//   - a PreTokenizer, which cuts a normalized piece into words (BertPreTokenizer, ByteLevel
//     with GPT-2's pattern, Metaspace, WhitespaceSplit, Whitespace, Sequence);
//   - a Model, which gives the ids of a word (WordPiece, BPE, Unigram);
//   - a PostProcessor, which adds the special tokens around one text or a pair of texts and
//     gives the type ids (TemplateProcessing, RobertaProcessing, BertProcessing, ByteLevel).
//
// An added token has the id the tokenizers library gives it (its id in the vocabulary, else
// the next one after the vocabulary and the added tokens before it); a file that says another
// id is refused, naming the token.
//
// Decode turns ids back into text with the file's decoder (WordPiece, ByteLevel, Metaspace,
// Sequence), as transformers' tokenizer.decode does. EncodeTruncated cuts a text or a pair
// as transformers' truncation strategies (longest_first, only_first, only_second) with a
// stride and the overflowing windows, and Pad pads a batch (to the longest or a length,
// pad_to_multiple_of, left or right) with its attention mask.
//
// EncodeOffsets also gives each token's span in the original text (transformers'
// return_offsets_mapping): every component keeps the alignment of the normalized text with
// the original (see Aligned), in bytes; CharOffsets converts to transformers' code points.
//
// FromFolder reads the tokenizer of a model folder alone, as transformers' AutoTokenizer
// does: vocab.txt (with tokenizer_config.json, special_tokens_map.json and
// added_tokens.json), tokenizer.json or spm.model. LoadSentencePiece reads a SentencePiece
// model (spm.model) directly and builds the pipeline that transformers' conversion of it
// would write.
//
// A component that the file names and this package does not implement is an error that
// names the component, its type and the file: never a silent approximation.
//
// The package knows no model: the families of models/ choose which tokenizer they read.
package tokenizers
