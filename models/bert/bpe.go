package bert

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/goaccel/goaccel/tokenizers"

	"golang.org/x/text/unicode/norm"
)

// Byte-level BPE, RoBERTa's tokenizer (and GPT-2's), as a Hugging Face tokenizer.json
// describes it, in four steps:
//
//  1. added tokens: the special tokens ("<s>", "<mask>", ...) and the words a user added
//     are cut out of the text first and become their own ids (see added.go: lstrip / rstrip
//     swallow the spaces beside them);
//  2. normalizer: none for RoBERTa (NFC, NFKC, NFD, NFKD and Lowercase are also read);
//  3. ByteLevel pre-tokenizer: a space is put in front when add_prefix_space; the text is
//     split by GPT-2's pattern
//     's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//     (written out by hand below: Go's regexp has no look-ahead), and every UTF-8 byte of a
//     piece becomes one printable character (bytes that are not printable are shifted above
//     U+0100: a space is "Ġ");
//  4. BPE: each piece starts as its characters, and the adjacent pair with the lowest merge
//     rank is merged, everywhere in the piece, until no pair has a merge; the resulting
//     symbols are looked up in the vocabulary.
//
// Example with roberta-base: "Hello world!" -> "Hello", "Ġworld", "!" -> ids 31414, 232, 328.

// byteRune maps each byte to its printable stand-in (GPT-2's bytes_to_unicode).
var byteRune = func() [256]rune {
	var m [256]rune
	next := rune(256)
	for b := range 256 {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			m[b] = rune(b)
		} else {
			m[b] = next
			next++
		}
	}
	return m
}()

// byteLevelBPE is the segmenter of a byte-level BPE tokenizer.json.
type byteLevelBPE struct {
	ids            map[string]int32 // the model's vocabulary (no added token beyond it)
	ranks          map[string]int   // "left right" -> merge rank
	normalizers    []func(string) string
	addPrefixSpace bool
	useRegex       bool
	unk            int32 // -1: unknown symbols are dropped, as transformers does without unk_token
	fuseUnk        bool
	ignoreMerges   bool
	prefix, suffix string // continuing_subword_prefix and end_of_word_suffix (empty for RoBERTa)
	trimOffsets    bool   // RobertaProcessing's trim_offsets: offsets leave out a token's spaces
}

// normalize applies the tokenizer.json normalizer.
func (m *byteLevelBPE) normalize(text string) string {
	for _, f := range m.normalizers {
		text = f(text)
	}
	return text
}

// appendPlain appends the ids of a normalized text that holds no added token.
func (m *byteLevelBPE) appendPlain(text string, out []int32) []int32 {
	if text == "" {
		return out
	}
	if m.addPrefixSpace && !strings.HasPrefix(text, " ") {
		text = " " + text
	}
	pieces := []string{text}
	if m.useRegex {
		pieces = splitGPT2(text)
	}
	var mapped strings.Builder
	for _, piece := range pieces {
		mapped.Reset()
		for i := 0; i < len(piece); i++ {
			mapped.WriteRune(byteRune[piece[i]])
		}
		out = m.appendWord(mapped.String(), out)
	}
	return out
}

// appendWord appends the BPE ids of one pre-tokenized (byte-mapped) word.
func (m *byteLevelBPE) appendWord(word string, out []int32) []int32 {
	for _, p := range m.appendPieces(word, nil) {
		out = append(out, p.id)
	}
	return out
}

// piece is a token of a word and the characters of the word it covers: word[start:end] in
// runes (for a byte-mapped word, its bytes before the mapping).
type piece struct {
	start, end int
	id         int32
}

// appendPieces appends the BPE tokens of one pre-tokenized (byte-mapped) word.
func (m *byteLevelBPE) appendPieces(word string, out []piece) []piece {
	runes := []rune(word)
	if m.ignoreMerges {
		if id, ok := m.ids[word]; ok {
			return append(out, piece{0, len(runes), id})
		}
	}
	symbols := make([]string, len(runes))
	sizes := make([]int, len(runes)) // the characters of the word each symbol covers
	for i, r := range runes {
		sizes[i] = 1
		s := string(r)
		if i > 0 {
			s = m.prefix + s
		}
		if i == len(runes)-1 {
			s += m.suffix
		}
		symbols[i] = s
	}
	for len(symbols) > 1 {
		bestRank, best := -1, -1
		for i := range len(symbols) - 1 {
			if r, ok := m.ranks[symbols[i]+" "+symbols[i+1]]; ok && (bestRank < 0 || r < bestRank) {
				bestRank, best = r, i
			}
		}
		if best < 0 {
			break
		}
		left, right := symbols[best], symbols[best+1]
		merged := left + strings.TrimPrefix(right, m.prefix)
		next, nextSizes := symbols[:0:0], sizes[:0:0]
		for i := 0; i < len(symbols); i++ {
			if i+1 < len(symbols) && symbols[i] == left && symbols[i+1] == right {
				next, nextSizes = append(next, merged), append(nextSizes, sizes[i]+sizes[i+1])
				i++
				continue
			}
			next, nextSizes = append(next, symbols[i]), append(nextSizes, sizes[i])
		}
		symbols, sizes = next, nextSizes
	}
	lastUnk := false
	pos := 0
	for i, s := range symbols {
		id, ok := m.ids[s]
		switch {
		case ok:
			out, lastUnk = append(out, piece{pos, pos + sizes[i], id}), false
		case m.unk < 0:
			// No unk_token: the symbol is dropped, as the tokenizers library does.
		case m.fuseUnk && lastUnk:
			out[len(out)-1].end = pos + sizes[i]
		default:
			out, lastUnk = append(out, piece{pos, pos + sizes[i], m.unk}), true
		}
		pos += sizes[i]
	}
	return out
}

// splitGPT2 splits text as GPT-2's pattern does (see the top of this file); every byte of
// text is in exactly one piece, a byte that is not UTF-8 (a character U+FFFD for the
// pattern) kept as it is.
func splitGPT2(text string) []string {
	rs := make([]rune, 0, len(text))
	at := make([]int, 0, len(text)+1) // the byte offset of each rune, then len(text)
	for i := 0; i < len(text); {
		r, n := utf8.DecodeRuneInString(text[i:])
		rs, at = append(rs, r), append(at, i)
		i += n
	}
	at = append(at, len(text))
	var pieces []string
	for i := 0; i < len(rs); {
		n := gpt2Match(rs, i)
		pieces = append(pieces, text[at[i]:at[i+n]])
		i += n
	}
	return pieces
}

// gpt2Match is the length (in runes) of the pattern's match at rs[i], trying its
// alternatives in order as a backtracking regular expression engine does.
func gpt2Match(rs []rune, i int) int {
	if rs[i] == '\'' && i+1 < len(rs) {
		switch rs[i+1] {
		case 's', 't', 'm', 'd':
			return 2
		}
		if i+2 < len(rs) {
			switch string(rs[i+1 : i+3]) {
			case "re", "ve", "ll":
				return 3
			}
		}
	}
	for _, class := range []func(rune) bool{unicode.IsLetter, unicode.IsNumber, isOtherGPT2} {
		start := i
		if rs[i] == ' ' && i+1 < len(rs) && class(rs[i+1]) {
			start = i + 1 // " ?" takes the space
		}
		if !class(rs[start]) {
			continue
		}
		end := start
		for end < len(rs) && class(rs[end]) {
			end++
		}
		return end - i
	}
	// \s+(?!\S) and then \s+: a run of whitespace, less its last character when a
	// non-space follows (that one goes with the next word), unless the run is one long.
	end := i
	for end < len(rs) && unicode.IsSpace(rs[end]) {
		end++
	}
	switch {
	case end == i:
		return 1 // unreachable: every rune is a letter, a number, other or whitespace
	case end == len(rs) || end-i == 1:
		return end - i
	default:
		return end - i - 1
	}
}

// isOtherGPT2 is [^\s\p{L}\p{N}].
func isOtherGPT2(r rune) bool {
	return !unicode.IsSpace(r) && !unicode.IsLetter(r) && !unicode.IsNumber(r)
}

// bpeJSON is the part of a tokenizer.json that a byte-level BPE tokenizer is read from.
type bpeJSON struct {
	AddedTokens  []addedJSON     `json:"added_tokens"`
	Normalizer   *normalizerJSON `json:"normalizer"`
	PreTokenizer *struct {
		Type           string `json:"type"`
		AddPrefixSpace bool   `json:"add_prefix_space"`
		UseRegex       *bool  `json:"use_regex"`
	} `json:"pre_tokenizer"`
	PostProcessor *bpePostProcessor `json:"post_processor"`
	Model         struct {
		Type                    string           `json:"type"`
		Dropout                 *float64         `json:"dropout"`
		UnkToken                *string          `json:"unk_token"`
		ContinuingSubwordPrefix *string          `json:"continuing_subword_prefix"`
		EndOfWordSuffix         *string          `json:"end_of_word_suffix"`
		FuseUnk                 bool             `json:"fuse_unk"`
		ByteFallback            bool             `json:"byte_fallback"`
		IgnoreMerges            bool             `json:"ignore_merges"`
		Vocab                   map[string]int32 `json:"vocab"`
		Merges                  []any            `json:"merges"`
	} `json:"model"`
}

// normalizerJSON is a tokenizer.json normalizer (possibly a Sequence).
type normalizerJSON struct {
	Type        string           `json:"type"`
	Normalizers []normalizerJSON `json:"normalizers"`
}

// normalizers turns n into functions; it fails on the kinds this package does not implement.
func (n *normalizerJSON) normalizers() ([]func(string) string, error) {
	if n == nil {
		return nil, nil
	}
	switch n.Type {
	case "Sequence":
		var out []func(string) string
		for i := range n.Normalizers {
			fs, err := n.Normalizers[i].normalizers()
			if err != nil {
				return nil, err
			}
			out = append(out, fs...)
		}
		return out, nil
	case "NFC":
		return []func(string) string{norm.NFC.String}, nil
	case "NFD":
		return []func(string) string{norm.NFD.String}, nil
	case "NFKC":
		return []func(string) string{norm.NFKC.String}, nil
	case "NFKD":
		return []func(string) string{norm.NFKD.String}, nil
	case "Lowercase":
		return []func(string) string{tokenizers.Lowercase{}.Normalize}, nil
	}
	return nil, fmt.Errorf("normalizer %q is not supported with BPE: none, Sequence, NFC, NFD, NFKC, NFKD and Lowercase are", n.Type)
}

// newByteLevelBPE builds the segmenter of a byte-level BPE tokenizer.json (doc), its
// vocabulary without the added tokens; errors say what is not supported, without the file
// name (the caller adds it).
func newByteLevelBPE(doc *bpeJSON) (*byteLevelBPE, error) {
	md := doc.Model
	if md.Dropout != nil && *md.Dropout != 0 {
		return nil, fmt.Errorf("BPE dropout %g is not supported (it makes tokenization random)", *md.Dropout)
	}
	if md.ByteFallback {
		return nil, fmt.Errorf("BPE byte_fallback is not supported")
	}
	pt := doc.PreTokenizer
	if pt == nil || pt.Type != "ByteLevel" {
		kind := "none"
		if pt != nil {
			kind = fmt.Sprintf("%q", pt.Type)
		}
		return nil, fmt.Errorf("pre_tokenizer %s is not supported with BPE: only ByteLevel (byte-level BPE, as RoBERTa's) is", kind)
	}
	normalize, err := doc.Normalizer.normalizers()
	if err != nil {
		return nil, err
	}
	m := &byteLevelBPE{ids: map[string]int32{}, ranks: map[string]int{}, normalizers: normalize,
		addPrefixSpace: pt.AddPrefixSpace, useRegex: pt.UseRegex == nil || *pt.UseRegex, unk: -1,
		fuseUnk: md.FuseUnk, ignoreMerges: md.IgnoreMerges}
	if pp := doc.PostProcessor; pp != nil && pp.Type == "RobertaProcessing" {
		m.trimOffsets = pp.TrimOffsets == nil || *pp.TrimOffsets
	}
	if md.ContinuingSubwordPrefix != nil {
		m.prefix = *md.ContinuingSubwordPrefix
	}
	if md.EndOfWordSuffix != nil {
		m.suffix = *md.EndOfWordSuffix
	}
	for tok, id := range md.Vocab {
		m.ids[tok] = id // the ids are checked with the added tokens' (idTable)
	}
	for rank, merge := range md.Merges {
		var left, right string
		switch v := merge.(type) {
		case string: // "Ġ t"
			var ok bool
			if left, right, ok = strings.Cut(v, " "); !ok {
				return nil, fmt.Errorf("merge %d %q is not two tokens separated by a space", rank, v)
			}
		case []any: // ["Ġ", "t"], tokenizers 0.20 and later
			var ok1, ok2 bool
			if len(v) == 2 {
				left, ok1 = v[0].(string)
				right, ok2 = v[1].(string)
			}
			if !ok1 || !ok2 {
				return nil, fmt.Errorf("merge %d %s is not a pair of tokens", rank, showJSON(v))
			}
		default:
			return nil, fmt.Errorf("merge %d %s is not a pair of tokens", rank, showJSON(v))
		}
		key := left + " " + right
		if _, dup := m.ranks[key]; !dup {
			m.ranks[key] = rank
		}
	}
	if u := md.UnkToken; u != nil && *u != "" {
		id, ok := m.ids[*u]
		if !ok {
			return nil, fmt.Errorf("unk_token %q is not in the vocabulary", *u)
		}
		m.unk = id
	}
	return m, nil
}

// bpePostProcessor is tokenizer.json's post_processor as the BPE reader takes it: the fields
// of RobertaProcessing and BertProcessing, and the raw text for a TemplateProcessing (which
// tokenizers.ParsePostProcessor reads).
type bpePostProcessor struct {
	Type        string `json:"type"`
	Sep         []any  `json:"sep"`
	Cls         []any  `json:"cls"`
	TrimOffsets *bool  `json:"trim_offsets"`
	raw         json.RawMessage
}

// UnmarshalJSON reads the fields and keeps the raw text.
func (p *bpePostProcessor) UnmarshalJSON(b []byte) error {
	type fields bpePostProcessor
	if err := json.Unmarshal(b, (*fields)(p)); err != nil {
		return err
	}
	p.raw = slices.Clone(b)
	return nil
}

// bpeSpecials reads the post-processor's tokens: RobertaProcessing (<s> A </s>, pairs
// <s> A </s></s> B </s>, every type id 0), BertProcessing ([CLS] A [SEP], pairs
// [CLS] A [SEP] B [SEP] with type ids 1 on B), or a TemplateProcessing of either layout
// (templateSpecials). The padding token is "<pad>", or "[PAD]".
func bpeSpecials(doc *bpeJSON, ids map[string]int32) (*specialTokens, error) {
	sp, err := postSpecials(doc.PostProcessor, ids, "BPE")
	if err != nil {
		return nil, err
	}
	return withPad(sp, ids)
}

// postSpecials reads the special tokens of a post-processor (see bpeSpecials) for a
// tokenizer of the given kind (named in errors); the padding token is left to the caller.
func postSpecials(pp *bpePostProcessor, ids map[string]int32, kind string) (*specialTokens, error) {
	if pp != nil && pp.Type == "TemplateProcessing" {
		parsed, err := tokenizers.ParsePostProcessor(pp.raw, "tokenizer.json")
		if err != nil {
			return nil, err
		}
		names := make(map[int32]string, len(ids))
		for name, id := range ids {
			names[id] = name
		}
		tp := parsed.(*tokenizers.TemplateProcessing)
		if err := checkTemplateIDs(tp, ids); err != nil {
			return nil, err
		}
		sp, err := templateSpecials(tp, names)
		if err != nil {
			return nil, fmt.Errorf("post_processor TemplateProcessing: %w", err)
		}
		return sp, nil
	}
	if pp == nil || (pp.Type != "RobertaProcessing" && pp.Type != "BertProcessing") {
		what := "none"
		if pp != nil {
			what = fmt.Sprintf("%q", pp.Type)
		}
		return nil, fmt.Errorf("post_processor %s is not supported with %s: RobertaProcessing, BertProcessing and TemplateProcessing are", what, kind)
	}
	pair := func(what string, v []any) (int32, error) {
		if len(v) == 2 {
			if name, ok := v[0].(string); ok {
				if id, ok := v[1].(float64); ok {
					if have, ok := ids[name]; ok && float64(have) == id {
						return have, nil
					} else if !ok {
						return 0, fmt.Errorf("post_processor %s token %q is not in the vocabulary", what, name)
					}
					return 0, fmt.Errorf("post_processor %s %s gives %q id %g, but the vocabulary gives it id %d", what, showJSON(v), name, id, ids[name])
				}
			}
		}
		return 0, fmt.Errorf("post_processor %s %s is not a [token, id] pair", what, showJSON(v))
	}
	cls, err := pair("cls", pp.Cls)
	if err != nil {
		return nil, err
	}
	sep, err := pair("sep", pp.Sep)
	if err != nil {
		return nil, err
	}
	sp := &specialTokens{cls: cls, sep: sep, pairSeps: 2, pairTypeID: 0}
	if pp.Type == "BertProcessing" {
		sp.pairSeps, sp.pairTypeID = 1, 1
	}
	return sp, nil
}

// checkTemplateIDs checks that each special token of a TemplateProcessing is in the
// vocabulary with the ids the template gives it.
func checkTemplateIDs(tp *tokenizers.TemplateProcessing, ids map[string]int32) error {
	for _, tpl := range [][]tokenizers.TemplatePiece{tp.Single, tp.Pair} {
		for _, p := range tpl {
			for i, id := range p.Special {
				tok := p.Tokens[i] // ParsePostProcessor gives one token per id
				have, ok := ids[tok]
				switch {
				case !ok:
					return fmt.Errorf("post_processor TemplateProcessing: special token %q (id %d) is not in the vocabulary", tok, id)
				case have != id:
					return fmt.Errorf("post_processor TemplateProcessing: special token %q has id %d, but the vocabulary gives it id %d", tok, id, have)
				}
			}
		}
	}
	return nil
}

// showJSON is v as JSON, for errors that show what the file says.
func showJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// withPad sets sp's padding token: "<pad>", or "[PAD]".
func withPad(sp *specialTokens, ids map[string]int32) (*specialTokens, error) {
	for _, name := range []string{"<pad>", PadToken} {
		if id, ok := ids[name]; ok {
			sp.pad = id
			return sp, nil
		}
	}
	return nil, fmt.Errorf("the vocabulary has no padding token (<pad> or %s)", PadToken)
}

// templateSpecials reads a TemplateProcessing whose templates have one of the two layouts
// this package encodes: single X $A Y, pair X $A Y $B Y (BERT's, $B and its Y with one type
// id, 0 or 1) or X $A Y Y $B Y (RoBERTa's, every type id 0), X and Y special tokens of one id
// each. Another template is an error that shows it (names: the tokens of the ids).
func templateSpecials(t *tokenizers.TemplateProcessing, names map[int32]string) (*specialTokens, error) {
	show := func(tpl []tokenizers.TemplatePiece) string {
		var parts []string
		for _, p := range tpl {
			if p.Special == nil {
				parts = append(parts, fmt.Sprintf("$%s:%d", p.Seq, p.TypeID))
				continue
			}
			var toks []string
			for _, id := range p.Special {
				toks = append(toks, names[id])
			}
			parts = append(parts, fmt.Sprintf("%s:%d", strings.Join(toks, "+"), p.TypeID))
		}
		return strings.Join(parts, " ")
	}
	refuse := func() (*specialTokens, error) {
		return nil, fmt.Errorf("single %q, pair %q: the templates supported are \"X $A Y\" with pairs "+
			"\"X $A Y $B:t Y:t\" (BERT's) or \"X $A Y Y $B Y\" (RoBERTa's), X and Y special tokens of one id", show(t.Single), show(t.Pair))
	}
	// special is piece p's one id when it is a special token of one id with type id typeID.
	special := func(p tokenizers.TemplatePiece, typeID int32) (int32, bool) {
		if len(p.Special) != 1 || p.TypeID != typeID {
			return 0, false
		}
		return p.Special[0], true
	}
	text := func(p tokenizers.TemplatePiece, name string) bool { return p.Special == nil && p.Seq == name }
	single, pair := t.Single, t.Pair
	if len(single) != 3 || !text(single[1], "A") || single[1].TypeID != 0 {
		return refuse()
	}
	cls, ok1 := special(single[0], 0)
	sep, ok2 := special(single[2], 0)
	if !ok1 || !ok2 {
		return refuse()
	}
	is := func(p tokenizers.TemplatePiece, want, typeID int32) bool {
		got, ok := special(p, typeID)
		return ok && got == want
	}
	if len(pair) < 3 || !is(pair[0], cls, 0) || !text(pair[1], "A") || pair[1].TypeID != 0 || !is(pair[2], sep, 0) {
		return refuse()
	}
	switch len(pair) {
	case 5: // X $A Y $B:t Y:t
		if tb := pair[3].TypeID; text(pair[3], "B") && is(pair[4], sep, tb) && (tb == 0 || tb == 1) {
			return &specialTokens{cls: cls, sep: sep, pairSeps: 1, pairTypeID: tb}, nil
		}
	case 6: // X $A Y Y $B Y
		if text(pair[4], "B") && pair[4].TypeID == 0 && is(pair[3], sep, 0) && is(pair[5], sep, 0) {
			return &specialTokens{cls: cls, sep: sep, pairSeps: 2, pairTypeID: 0}, nil
		}
	}
	return refuse()
}
