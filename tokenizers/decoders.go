package tokenizers

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Decoder turns the tokens of a list of ids back into pieces of text, which Decode joins
// (tokenizer.json's "decoder").
type Decoder interface {
	DecodeChain(tokens []string) []string
}

// WordPieceDecoder joins WordPiece tokens: a token that begins with Prefix ("##") is glued to
// the one before, the others get a space before them (not the first); with Cleanup, each
// token has the spaces before punctuation and contractions removed (" ." -> ".", " n't" ->
// "n't", " do not" -> " don't"...).
type WordPieceDecoder struct {
	Prefix  string
	Cleanup bool
}

// DecodeChain decodes the tokens.
func (d WordPieceDecoder) DecodeChain(tokens []string) []string {
	out := make([]string, len(tokens))
	for i, tok := range tokens {
		if i > 0 {
			if rest, ok := strings.CutPrefix(tok, d.Prefix); ok {
				tok = rest
			} else {
				tok = " " + tok
			}
		}
		if d.Cleanup {
			tok = cleanUpTokenization(tok)
		}
		out[i] = tok
	}
	return out
}

// ByteLevelDecoder maps the characters of byte-level tokens back to their bytes (a token
// with a character that stands for no byte is kept as its own UTF-8) and reads the whole as
// UTF-8, each bad sequence a U+FFFD.
type ByteLevelDecoder struct{}

// DecodeChain decodes the tokens into one piece.
func (ByteLevelDecoder) DecodeChain(tokens []string) []string {
	var raw []byte
	for _, tok := range tokens {
		mark := len(raw)
		for _, r := range tok {
			by, ok := runeByte[r]
			if !ok {
				raw = append(raw[:mark], tok...)
				break
			}
			raw = append(raw, by)
		}
	}
	return []string{lossyUTF8(raw)}
}

// MetaspaceDecoder turns Replacement ("▁") back into spaces, and drops the space it makes at
// the start of the first token unless PrependScheme is "never".
type MetaspaceDecoder struct {
	Replacement   string
	PrependScheme string
}

// DecodeChain decodes the tokens.
func (d MetaspaceDecoder) DecodeChain(tokens []string) []string {
	out := make([]string, len(tokens))
	for i, tok := range tokens {
		tok = strings.ReplaceAll(tok, d.Replacement, " ")
		if i == 0 && d.PrependScheme != "never" {
			tok = strings.TrimPrefix(tok, " ")
		}
		out[i] = tok
	}
	return out
}

// DecoderSequence applies decoders one after the other.
type DecoderSequence []Decoder

// DecodeChain applies the sequence.
func (seq DecoderSequence) DecodeChain(tokens []string) []string {
	for _, d := range seq {
		tokens = d.DecodeChain(tokens)
	}
	return tokens
}

// decoderJSON is a decoder as tokenizer.json writes it.
type decoderJSON struct {
	Type          string            `json:"type"`
	Prefix        *string           `json:"prefix"`
	Cleanup       *bool             `json:"cleanup"`
	Replacement   *string           `json:"replacement"`
	PrependScheme *string           `json:"prepend_scheme"`
	AddPrefix     *bool             `json:"add_prefix_space"`
	Decoders      []json.RawMessage `json:"decoders"`
}

// parseDecoder builds the decoder of raw (null: none, nil). A type this package does not
// implement is an error naming it and the file.
func parseDecoder(raw json.RawMessage, source string) (Decoder, error) {
	if isNull(raw) {
		return nil, nil
	}
	var d decoderJSON
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, fmt.Errorf("tokenizers: %s: parsing a decoder: %w", source, err)
	}
	switch d.Type {
	case "WordPiece":
		w := WordPieceDecoder{Prefix: "##", Cleanup: orTrue(d.Cleanup)}
		if d.Prefix != nil {
			w.Prefix = *d.Prefix
		}
		return w, nil
	case "ByteLevel":
		return ByteLevelDecoder{}, nil
	case "Metaspace":
		m := MetaspaceDecoder{Replacement: "▁", PrependScheme: "always"}
		if d.Replacement != nil {
			m.Replacement = *d.Replacement
		}
		switch {
		case d.PrependScheme != nil:
			m.PrependScheme = *d.PrependScheme
		case d.AddPrefix != nil && !*d.AddPrefix:
			m.PrependScheme = "never"
		}
		return m, nil
	case "Sequence":
		var seq DecoderSequence
		for _, r := range d.Decoders {
			sub, err := parseDecoder(r, source)
			if err != nil {
				return nil, err
			}
			if sub != nil {
				seq = append(seq, sub)
			}
		}
		return seq, nil
	}
	return nil, fmt.Errorf("tokenizers: decoder type %q in %s is not supported (supported: WordPiece, ByteLevel, Metaspace, Sequence)", d.Type, source)
}

// Decode is the text of ids, as transformers' tokenizer.decode(ids, skip_special_tokens)
// makes it: the tokens of the ids (an id outside the vocabulary is left out; with
// skipSpecialTokens, so is every special added token), joined by the decoder (with none,
// by spaces), then, when the folder's tokenizer_config.json sets
// clean_up_tokenization_spaces and the model is not BPE, with transformers' clean-up of the
// spaces before punctuation and contractions. It fails when the file's decoder is of a type
// this package does not implement.
func (t *Tokenizer) Decode(ids []int32, skipSpecialTokens bool) (string, error) {
	if t.decoderErr != nil {
		return "", t.decoderErr
	}
	special := map[int32]bool{}
	if skipSpecialTokens {
		for _, a := range t.added.Tokens() {
			if a.Special {
				special[a.ID] = true
			}
		}
	}
	tokens := make([]string, 0, len(ids))
	for _, id := range ids {
		if id < 0 || int(id) >= len(t.tokens) || special[id] {
			continue
		}
		tokens = append(tokens, t.tokens[id])
	}
	var text string
	if t.decoder == nil {
		text = strings.Join(tokens, " ")
	} else {
		text = strings.Join(t.decoder.DecodeChain(tokens), "")
	}
	if _, bpe := t.model.(*BPE); t.cleanUpSpaces && !bpe {
		text = cleanUpSpaces(text)
	}
	return text, nil
}

// cleanUpSpaces is transformers' clean_up_tokenization (which, unlike the WordPiece
// decoder's clean-up, leaves " do not" alone).
func cleanUpSpaces(s string) string {
	return strings.NewReplacer(" .", ".", " ?", "?", " !", "!", " ,", ",", " ' ", "'", " n't", "n't",
		" 'm", "'m", " 's", "'s", " 've", "'ve", " 're", "'re").Replace(s)
}
