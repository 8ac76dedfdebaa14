package tokenizers

import (
	"encoding/json"
	"fmt"
)

// PostProcessor adds the special tokens around the ids of one text or of a pair of texts
// and gives their type ids (tokenizer.json's "post_processor").
type PostProcessor interface {
	// Added is the number of special tokens added to one text (pair false) or to a pair.
	Added(pair bool) int
	// Process joins a and b (nil: one text) with the special tokens.
	Process(a, b *Encoding) Encoding
}

// TemplatePiece is one piece of a template: a special token (its ids) or a text (Sequence
// "A" or "B"), with the type id of its tokens.
type TemplatePiece struct {
	Special []int32  // the ids of a special token; nil for a text
	Tokens  []string // the tokens of those ids, as the file names them (one per id)
	Seq     string   // "A" or "B" for a text
	TypeID  int32
}

// TemplateProcessing lays out the encoding as its Single and Pair templates say.
// RobertaProcessing, BertProcessing and the ByteLevel post-processor are read as templates.
type TemplateProcessing struct {
	Single, Pair []TemplatePiece
	// TrimOffsets (RobertaProcessing's and ByteLevel's trim_offsets) makes the offset of a
	// byte-level token leave out the spaces ("Ġ") it begins or ends with, except the one
	// space of a text's first token when AddPrefixSpace (the pre-tokenizer put it there).
	TrimOffsets, AddPrefixSpace bool
}

// Added counts the special tokens of a template.
func (t *TemplateProcessing) Added(pair bool) int {
	tpl := t.Single
	if pair {
		tpl = t.Pair
	}
	n := 0
	for _, p := range tpl {
		n += len(p.Special)
	}
	return n
}

// Process lays out a (and b) along the template.
func (t *TemplateProcessing) Process(a, b *Encoding) Encoding {
	tpl := t.Single
	if b != nil {
		tpl = t.Pair
	}
	var out Encoding
	for _, p := range tpl {
		if p.Special != nil {
			for _, id := range p.Special {
				out.append(id, p.TypeID, -1)
			}
			continue
		}
		seq := a
		if p.Seq == "B" {
			seq = b
		}
		for i, id := range seq.IDs {
			out.append(id, p.TypeID, seq.WordIDs[i])
		}
	}
	return out
}

// usesSeq tells whether a template lays out the text seq ("A" or "B").
func usesSeq(tpl []TemplatePiece, seq string) bool {
	for _, p := range tpl {
		if p.Special == nil && p.Seq == seq {
			return true
		}
	}
	return false
}

// specialPair is RobertaProcessing's and BertProcessing's ["<s>", 0].
type specialPair struct {
	token string
	id    int32
}

func (s *specialPair) UnmarshalJSON(b []byte) error {
	var v []json.RawMessage
	if err := json.Unmarshal(b, &v); err != nil || len(v) != 2 {
		return fmt.Errorf("%s is not a [token, id] pair", b)
	}
	if err := json.Unmarshal(v[0], &s.token); err != nil {
		return err
	}
	return json.Unmarshal(v[1], &s.id)
}

// newBertLike is BertProcessing (cls A sep, cls A sep B sep with B's type id 1) or
// RobertaProcessing (cls A sep, cls A sep sep B sep with type ids 0) as a template.
func newBertLike(cls, sep specialPair, roberta bool) *TemplateProcessing {
	c := TemplatePiece{Special: []int32{cls.id}, Tokens: []string{cls.token}}
	s := TemplatePiece{Special: []int32{sep.id}, Tokens: []string{sep.token}}
	s1 := s
	s1.TypeID = 1
	t := &TemplateProcessing{Single: []TemplatePiece{c, {Seq: "A"}, s}}
	if roberta {
		t.Pair = []TemplatePiece{c, {Seq: "A"}, s, s, {Seq: "B"}, s}
	} else {
		t.Pair = []TemplatePiece{c, {Seq: "A"}, s, {Seq: "B", TypeID: 1}, s1}
	}
	return t
}

// postProcessorJSON is a post-processor as tokenizer.json writes it.
type postProcessorJSON struct {
	Type          string          `json:"type"`
	Single, Pair  []templateJSON  `json:"-"`
	RawSingle     json.RawMessage `json:"single"`
	RawPair       json.RawMessage `json:"pair"`
	SpecialTokens map[string]struct {
		ID     string   `json:"id"`
		IDs    []int32  `json:"ids"`
		Tokens []string `json:"tokens"`
	} `json:"special_tokens"`
	Cls            *specialPair `json:"cls"`
	Sep            *specialPair `json:"sep"`
	TrimOffsets    *bool        `json:"trim_offsets"`
	AddPrefixSpace *bool        `json:"add_prefix_space"`
}

// templateJSON is one piece of a TemplateProcessing template.
type templateJSON struct {
	SpecialToken *struct {
		ID     string `json:"id"`
		TypeID int32  `json:"type_id"`
	} `json:"SpecialToken"`
	Sequence *struct {
		ID     string `json:"id"`
		TypeID int32  `json:"type_id"`
	} `json:"Sequence"`
}

// ParsePostProcessor builds the post-processor of raw (a tokenizer.json's "post_processor"), source
// naming the file in errors; null is none (nil).
func ParsePostProcessor(raw json.RawMessage, source string) (PostProcessor, error) {
	if isNull(raw) {
		return nil, nil
	}
	var p postProcessorJSON
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, fmt.Errorf("tokenizers: %s: parsing the post-processor: %w", source, err)
	}
	switch p.Type {
	case "RobertaProcessing", "BertProcessing":
		if p.Cls == nil || p.Sep == nil {
			return nil, fmt.Errorf("tokenizers: %s: post-processor %s without cls or sep", source, p.Type)
		}
		t := newBertLike(*p.Cls, *p.Sep, p.Type == "RobertaProcessing")
		if p.Type == "RobertaProcessing" {
			t.TrimOffsets, t.AddPrefixSpace = orTrue(p.TrimOffsets), orTrue(p.AddPrefixSpace)
		}
		return t, nil
	case "ByteLevel":
		return &TemplateProcessing{Single: []TemplatePiece{{Seq: "A"}}, Pair: []TemplatePiece{{Seq: "A"}, {Seq: "B", TypeID: 1}},
			TrimOffsets: orTrue(p.TrimOffsets), AddPrefixSpace: orTrue(p.AddPrefixSpace)}, nil
	case "TemplateProcessing":
		t := &TemplateProcessing{}
		for _, side := range []struct {
			raw  json.RawMessage
			into *[]TemplatePiece
			name string
		}{{p.RawSingle, &t.Single, "single"}, {p.RawPair, &t.Pair, "pair"}} {
			var pieces []templateJSON
			if err := json.Unmarshal(side.raw, &pieces); err != nil {
				return nil, fmt.Errorf("tokenizers: %s: TemplateProcessing %s: %w", source, side.name, err)
			}
			for _, piece := range pieces {
				switch {
				case piece.SpecialToken != nil:
					sp, ok := p.SpecialTokens[piece.SpecialToken.ID]
					if !ok {
						return nil, fmt.Errorf("tokenizers: %s: TemplateProcessing %s: special token %q is not in special_tokens", source, side.name, piece.SpecialToken.ID)
					}
					if len(sp.IDs) == 0 || len(sp.Tokens) != len(sp.IDs) {
						return nil, fmt.Errorf("tokenizers: %s: TemplateProcessing special token %q has %d ids and %d tokens: want one token per id, at least one",
							source, piece.SpecialToken.ID, len(sp.IDs), len(sp.Tokens))
					}
					*side.into = append(*side.into, TemplatePiece{Special: sp.IDs, Tokens: sp.Tokens, TypeID: piece.SpecialToken.TypeID})
				case piece.Sequence != nil && (piece.Sequence.ID == "A" || piece.Sequence.ID == "B"):
					*side.into = append(*side.into, TemplatePiece{Seq: piece.Sequence.ID, TypeID: piece.Sequence.TypeID})
				default:
					return nil, fmt.Errorf("tokenizers: %s: TemplateProcessing %s: a piece is neither SpecialToken nor Sequence A or B", source, side.name)
				}
			}
		}
		// The single template lays out one text: $A, never $B (there is none); the pair
		// template lays out both.
		if !usesSeq(t.Single, "A") || usesSeq(t.Single, "B") {
			return nil, fmt.Errorf("tokenizers: %s: TemplateProcessing single must use $A and not $B (it lays out one text)", source)
		}
		if !usesSeq(t.Pair, "A") || !usesSeq(t.Pair, "B") {
			return nil, fmt.Errorf("tokenizers: %s: TemplateProcessing pair must use both $A and $B", source)
		}
		return t, nil
	}
	return nil, fmt.Errorf("tokenizers: post-processor type %q in %s is not supported (supported: TemplateProcessing, RobertaProcessing, BertProcessing, ByteLevel)", p.Type, source)
}
