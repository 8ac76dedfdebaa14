package tokenizers

import (
	"encoding/json"
	"fmt"
	"math"
	"unicode/utf8"
)

// Model gives the ids of one word (tokenizer.json's "model").
type Model interface {
	// AppendIDs appends the ids of word (never empty) to out.
	AppendIDs(word string, out []int32) []int32
	// Vocab is the model's vocabulary: token i has id i.
	Vocab() []string
}

// unkPenalty is what an unknown character costs below the lowest score of the vocabulary
// (SentencePiece's kUnkPenalty).
const unkPenalty = 10.0

// Unigram is SentencePiece's unigram language model: a word is cut into the pieces whose
// scores (log probabilities) have the largest sum (Viterbi). A character that no piece
// covers is unknown; consecutive unknown characters make one unknown token (the tokenizers
// library's fuse_unk). With ByteFallback, an unknown stretch becomes the pieces <0x00>..<0xFF>
// of its bytes when the vocabulary has them all.
type Unigram struct {
	pieces       []string
	scores       []float64
	ids          map[string]int32
	unk          int32
	byteFallback bool
	minScore     float64
	maxPiece     int // the longest piece, in bytes
}

// NewUnigram makes a unigram model of pieces with their scores; unk is the id of the unknown
// piece, byteFallback as tokenizer.json's byte_fallback.
func NewUnigram(pieces []string, scores []float64, unk int, byteFallback bool) (*Unigram, error) {
	if len(pieces) == 0 || len(pieces) != len(scores) {
		return nil, fmt.Errorf("unigram: %d pieces and %d scores", len(pieces), len(scores))
	}
	u := &Unigram{pieces: pieces, scores: scores, ids: make(map[string]int32, len(pieces)),
		byteFallback: byteFallback, minScore: math.Inf(1)}
	for i, p := range pieces {
		if _, dup := u.ids[p]; dup {
			return nil, fmt.Errorf("unigram: piece %q is twice in the vocabulary", p)
		}
		u.ids[p] = int32(i)
		u.minScore = min(u.minScore, scores[i])
		u.maxPiece = max(u.maxPiece, len(p))
	}
	if unk < 0 || unk >= len(pieces) {
		return nil, fmt.Errorf("unigram: unk_id %d is outside the %d pieces", unk, len(pieces))
	}
	u.unk = int32(unk)
	return u, nil
}

// Vocab returns the pieces (piece i has id i).
func (u *Unigram) Vocab() []string { return u.pieces }

// node is the best path found so far that ends at a byte position of the word.
type node struct {
	start int // where its last piece starts; -1: no path yet
	id    int32
	score float64
}

// AppendIDs appends the ids of the best segmentation of word.
func (u *Unigram) AppendIDs(word string, out []int32) []int32 {
	for _, s := range u.appendSpans(word, nil) {
		out = append(out, s.id)
	}
	return out
}

// appendSpans appends the pieces of the best segmentation of word, each with the bytes of
// word it covers (the byte pieces of an unknown stretch each cover the whole stretch).
func (u *Unigram) appendSpans(word string, out []span) []span {
	best := make([]node, len(word)+1)
	for i := range best {
		best[i].start = -1
	}
	best[0].start = 0
	unkScore := u.minScore - unkPenalty
	for start := 0; start < len(word); {
		_, charLen := utf8.DecodeRuneInString(word[start:])
		if best[start].start < 0 { // unreachable (cannot happen: every character is covered)
			start += charLen
			continue
		}
		base := best[start].score
		single := false
		for end := start + 1; end <= len(word) && end-start <= u.maxPiece; end++ {
			if end < len(word) && !utf8.RuneStart(word[end]) {
				continue
			}
			id, ok := u.ids[word[start:end]]
			if !ok {
				continue
			}
			if cand := u.scores[id] + base; best[end].start < 0 || cand > best[end].score {
				best[end] = node{start: start, id: id, score: cand}
			}
			if end-start == charLen {
				single = true
			}
		}
		if !single {
			end := start + charLen
			if cand := unkScore + base; best[end].start < 0 || cand > best[end].score {
				best[end] = node{start: start, id: u.unk, score: cand}
			}
		}
		start += charLen
	}
	// Back from the end; consecutive unknown pieces are fused into one.
	var rev []span
	for end := len(word); end > 0; {
		n := best[end]
		// The tokenizers library fuses by id: a piece matched in the word whose id is the
		// unknown one's (the text "<unk>") is fused too.
		if n.id == u.unk && len(rev) > 0 && rev[len(rev)-1].id == u.unk {
			rev[len(rev)-1].start = n.start
		} else {
			rev = append(rev, span{start: n.start, end: end, id: n.id})
		}
		end = n.start
	}
	for i := len(rev) - 1; i >= 0; i-- {
		s := rev[i]
		if s.id != u.unk {
			out = append(out, s)
			continue
		}
		for _, id := range u.appendUnknown(word[s.start:s.end], nil) {
			out = append(out, span{start: s.start, end: s.end, id: id})
		}
	}
	return out
}

// span is one piece of a segmentation: word[start:end] and its id.
type span struct {
	start, end int
	id         int32
}

// appendUnknown appends the ids of a stretch no piece covers: its byte pieces with
// ByteFallback when the vocabulary has them all, else the unknown piece.
func (u *Unigram) appendUnknown(s string, out []int32) []int32 {
	if id, ok := u.ids[s]; ok { // a fused stretch that happens to be a piece
		return append(out, id)
	}
	if u.byteFallback {
		mark := len(out)
		for i := 0; i < len(s); i++ {
			id, ok := u.ids[fmt.Sprintf("<0x%02X>", s[i])]
			if !ok {
				out = out[:mark]
				break
			}
			out = append(out, id)
		}
		if len(out) > mark {
			return out
		}
	}
	return append(out, u.unk)
}

// unigramJSON is tokenizer.json's Unigram model.
type unigramJSON struct {
	Type         string               `json:"type"`
	UnkID        *int                 `json:"unk_id"`
	Vocab        [][2]json.RawMessage `json:"vocab"`
	ByteFallback bool                 `json:"byte_fallback"`
}

// parseUnigram reads tokenizer.json's Unigram model.
func parseUnigram(raw json.RawMessage, source string) (*Unigram, error) {
	var m unigramJSON
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("tokenizers: %s: parsing the Unigram model: %w", source, err)
	}
	pieces := make([]string, len(m.Vocab))
	scores := make([]float64, len(m.Vocab))
	for i, e := range m.Vocab {
		if err := json.Unmarshal(e[0], &pieces[i]); err != nil {
			return nil, fmt.Errorf("tokenizers: %s: Unigram vocab entry %d: %w", source, i, err)
		}
		if err := json.Unmarshal(e[1], &scores[i]); err != nil {
			return nil, fmt.Errorf("tokenizers: %s: Unigram vocab entry %d (%q): %w", source, i, pieces[i], err)
		}
	}
	if m.UnkID == nil {
		return nil, fmt.Errorf("tokenizers: %s: a Unigram model without unk_id is not supported", source)
	}
	u, err := NewUnigram(pieces, scores, *m.UnkID, m.ByteFallback)
	if err != nil {
		return nil, fmt.Errorf("tokenizers: %s: %w", source, err)
	}
	return u, nil
}
