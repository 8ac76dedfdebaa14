package bert

// SentencePiece Unigram tokenizers: XLM-RoBERTa's and DeBERTa-v2/v3's, read by the
// tokenizers package from a tokenizer.json or from DeBERTa's spm.model; this file names the
// special tokens Collate pads with and SavePretrained writes back.

// unigramFamily is what a family puts around a SentencePiece model: its special tokens and
// transformers' tokenizer class.
type unigramFamily struct {
	cls, sep, pad, unk, mask string
	pairSeps                 int   // separators between the texts of a pair
	pairTypeID               int32 // the type id of the second text
	class                    string
}

var (
	// xlmrUnigram is XLM-RoBERTa's: <s> A </s></s> B </s>.
	xlmrUnigram = unigramFamily{cls: "<s>", sep: "</s>", pad: "<pad>", unk: "<unk>", mask: "<mask>", pairSeps: 2,
		class: "XLMRobertaTokenizer"}
	// debertaUnigram is DeBERTa-v2/v3's: [CLS] A [SEP] B [SEP], type id 1 on "B [SEP]".
	debertaUnigram = unigramFamily{cls: "[CLS]", sep: "[SEP]", pad: "[PAD]", unk: "[UNK]", mask: "[MASK]", pairSeps: 1,
		pairTypeID: 1, class: "DebertaV2Tokenizer"}
)
