package tokenizers

import (
	"fmt"
	"math"
	"os"
	"regexp"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/goaccel/goaccel/internal/pbwire"
)

// SentencePieceOptions say what a model family puts around the pieces of a SentencePiece
// model (spm.model), which the file itself does not say.
type SentencePieceOptions struct {
	// Cls and Sep are the special tokens of the post-processor: Cls A Sep for one text,
	// Cls A Sep B Sep for a pair, with type id 1 on "B Sep".
	Cls, Sep string
	// Extra are special tokens given the ids after the pieces when the model has no such
	// piece (DeBERTa-v3's "[MASK]").
	Extra []string
}

// The piece types of sentencepiece_model.proto.
const (
	pieceNormal  = 1
	pieceUnknown = 2
	pieceControl = 3
)

// sentencePieceModel is what LoadSentencePiece reads of a ModelProto.
type sentencePieceModel struct {
	pieces                 []string
	scores                 []float64
	types                  []int
	unigram                bool // trainer_spec.model_type (UNIGRAM when absent)
	unkID                  int
	byteFallback           bool
	charsmap               []byte
	addDummyPrefix         bool
	removeExtraWhitespaces bool
}

// LoadSentencePiece reads a SentencePiece Unigram model (spm.model, a protobuf ModelProto)
// and builds the pipeline transformers' conversion of it (DebertaV2TokenizerFast's) writes
// in tokenizer.json:
//
//   - normalizer: the precompiled_charsmap (Precompiled), which the normalizer spec must
//     have; with remove_extra_whitespaces, Strip on the right and runs of spaces made one space;
//   - pre-tokenizer: Metaspace (▁), prepend_scheme "always" with add_dummy_prefix ("never"
//     without), split;
//   - model: Unigram over the pieces and their scores, trainer_spec's unk_id and
//     byte_fallback;
//   - added tokens: the control and unknown pieces (special, not normalized), then
//     opts.Extra;
//   - post-processor: opts.Cls and opts.Sep around the texts;
//   - decoder: Metaspace, with the pre-tokenizer's prepend_scheme.
func LoadSentencePiece(path string, opts SentencePieceOptions) (*Tokenizer, error) {
	contents, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizers: %w", err)
	}
	m, err := parseModelProto(contents)
	if err != nil {
		return nil, fmt.Errorf("tokenizers: %s: %w", path, err)
	}
	if !m.unigram {
		return nil, fmt.Errorf("tokenizers: %s: a SentencePiece model whose type is not Unigram is not supported", path)
	}
	if len(m.charsmap) == 0 {
		// transformers 5's DebertaV2Tokenizer then normalizes otherwise (whitespace runs and
		// control characters to one space, NFC), which is not built here.
		return nil, fmt.Errorf("tokenizers: %s: a SentencePiece model without a precompiled_charsmap (normalizer_spec) is not supported", path)
	}
	u, err := NewUnigram(m.pieces, m.scores, m.unkID, m.byteFallback)
	if err != nil {
		return nil, fmt.Errorf("tokenizers: %s: %w", path, err)
	}
	t := &Tokenizer{model: u, source: path}
	p, err := NewPrecompiled(m.charsmap)
	if err != nil {
		return nil, fmt.Errorf("tokenizers: %s: %w", path, err)
	}
	norm := NormalizerSequence{p}
	if m.removeExtraWhitespaces {
		norm = append(norm, Strip{Right: true}, Replace{Pattern: regexp.MustCompile(" {2,}"), Content: " "})
	}
	t.normalizer = norm
	scheme := "never"
	if m.addDummyPrefix {
		scheme = "always"
	}
	t.preTokenizer = Metaspace{Replacement: "▁", PrependScheme: scheme, Split: true}
	t.decoder = MetaspaceDecoder{Replacement: "▁", PrependScheme: scheme}

	var added []AddedToken
	have := map[string]int32{}
	for i, p := range m.pieces {
		have[p] = int32(i)
		if m.types[i] == pieceControl || m.types[i] == pieceUnknown {
			added = append(added, AddedToken{Content: p, ID: int32(i), Special: true})
		}
	}
	next := int32(len(m.pieces))
	for _, e := range opts.Extra {
		if _, ok := have[e]; ok {
			continue
		}
		have[e] = next
		added = append(added, AddedToken{Content: e, ID: next, Special: true})
		next++
	}
	cls, ok1 := have[opts.Cls]
	sep, ok2 := have[opts.Sep]
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("tokenizers: %s: the model has no piece %q or %q (the cls and sep tokens)", path, opts.Cls, opts.Sep)
	}
	t.post = newBertLike(specialPair{opts.Cls, cls}, specialPair{opts.Sep, sep}, false)
	return newTokenizer(t, added)
}

// parseModelProto reads the fields of sentencepiece_model.proto that LoadSentencePiece
// uses: ModelProto.pieces (1: piece 1, score 2, type 3), trainer_spec (2: model_type 3,
// byte_fallback 35, unk_id 40) and normalizer_spec (3: precompiled_charsmap 2,
// add_dummy_prefix 3, remove_extra_whitespaces 4), with the proto's defaults.
func parseModelProto(b []byte) (*sentencePieceModel, error) {
	m := &sentencePieceModel{unigram: true, addDummyPrefix: true, removeExtraWhitespaces: true}
	err := pbwire.EachField(b, func(num protowire.Number, typ protowire.Type, v []byte, n uint64) error {
		if typ != protowire.BytesType {
			return nil
		}
		switch num {
		case 1:
			piece, score, kind := "", 0.0, pieceNormal
			err := pbwire.EachField(v, func(num protowire.Number, typ protowire.Type, v []byte, n uint64) error {
				switch {
				case num == 1 && typ == protowire.BytesType:
					piece = string(v)
				case num == 2 && typ == protowire.Fixed32Type:
					score = float64(math.Float32frombits(uint32(n)))
				case num == 3 && typ == protowire.VarintType:
					kind = int(n)
				}
				return nil
			})
			if err != nil {
				return fmt.Errorf("piece %d: %w", len(m.pieces), err)
			}
			m.pieces, m.scores, m.types = append(m.pieces, piece), append(m.scores, score), append(m.types, kind)
		case 2:
			return pbwire.EachField(v, func(num protowire.Number, typ protowire.Type, v []byte, n uint64) error {
				if typ != protowire.VarintType {
					return nil
				}
				switch num {
				case 3:
					m.unigram = n == 1
				case 35:
					m.byteFallback = n != 0
				case 40:
					m.unkID = int(int32(n))
				}
				return nil
			})
		case 3:
			return pbwire.EachField(v, func(num protowire.Number, typ protowire.Type, v []byte, n uint64) error {
				switch {
				case num == 2 && typ == protowire.BytesType:
					m.charsmap = v
				case num == 3 && typ == protowire.VarintType:
					m.addDummyPrefix = n != 0
				case num == 4 && typ == protowire.VarintType:
					m.removeExtraWhitespaces = n != 0
				}
				return nil
			})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the SentencePiece model: %w", err)
	}
	if len(m.pieces) == 0 {
		return nil, fmt.Errorf("the SentencePiece model has no pieces")
	}
	return m, nil
}
