package tokenizers

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/rivo/uniseg"
)

// Precompiled is SentencePiece's compiled character map (the normalizer spec's
// precompiled_charsmap, nmt_nfkc's for instance), as the tokenizers library applies it.
//
// The map is a blob: a little-endian uint32 n, then n bytes of a double-array trie (the
// darts-clone layout: 32-bit units) whose keys are UTF-8 strings and whose values are byte
// offsets into the rest of the blob, which holds the replacements, each ended by a 0 byte.
//
// The text is read one grapheme cluster at a time: a cluster shorter than 6 bytes that has a
// key as prefix is replaced whole, by the replacement of the shortest such key; otherwise
// each character of the cluster is replaced by the replacement of the shortest key that is
// a prefix of it, or kept. (This is the tokenizers library's rule, which differs from
// SentencePiece's own longest match on bytes.)
type Precompiled struct {
	trie         []uint32
	replacements []byte
}

// NewPrecompiled reads a compiled character map (the raw blob, not its base64).
func NewPrecompiled(blob []byte) (*Precompiled, error) {
	if len(blob) < 4 {
		return nil, fmt.Errorf("precompiled_charsmap of %d bytes: too short for its header", len(blob))
	}
	n := binary.LittleEndian.Uint32(blob)
	if n%4 != 0 || uint64(n) > uint64(len(blob)-4) {
		return nil, fmt.Errorf("precompiled_charsmap: trie of %d bytes in a blob of %d", n, len(blob))
	}
	p := &Precompiled{trie: make([]uint32, n/4), replacements: blob[4+n:]}
	for i := range p.trie {
		p.trie[i] = binary.LittleEndian.Uint32(blob[4+4*i:])
	}
	if len(p.trie) == 0 {
		return nil, fmt.Errorf("precompiled_charsmap: empty trie")
	}
	return p, nil
}

// newPrecompiledBase64 reads tokenizer.json's precompiled_charsmap.
func newPrecompiledBase64(s string) (*Precompiled, error) {
	blob, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("precompiled_charsmap is not base64: %w", err)
	}
	return NewPrecompiled(blob)
}

// The fields of a darts-clone unit.
func unitHasLeaf(u uint32) bool  { return (u>>8)&1 == 1 }
func unitValue(u uint32) uint32  { return u & (1<<31 - 1) }
func unitLabel(u uint32) uint32  { return u & (1<<31 | 0xff) }
func unitOffset(u uint32) uint32 { return (u >> 10) << ((u & (1 << 9)) >> 6) }

// shortestPrefix returns the value of the shortest key that is a prefix of key.
func (p *Precompiled) shortestPrefix(key string) (uint32, bool) {
	pos := unitOffset(p.trie[0])
	for i := 0; i < len(key); i++ {
		pos ^= uint32(key[i])
		if int(pos) >= len(p.trie) {
			return 0, false
		}
		unit := p.trie[pos]
		if unitLabel(unit) != uint32(key[i]) {
			return 0, false
		}
		pos ^= unitOffset(unit)
		if int(pos) >= len(p.trie) {
			return 0, false
		}
		if unitHasLeaf(unit) {
			return unitValue(p.trie[pos]), true
		}
	}
	return 0, false
}

// transform is the replacement of chunk, if a key is a prefix of it.
func (p *Precompiled) transform(chunk string) (string, bool) {
	off, ok := p.shortestPrefix(chunk)
	if !ok || int(off) > len(p.replacements) {
		return "", false
	}
	rest := p.replacements[off:]
	end := 0
	for end < len(rest) && rest[end] != 0 {
		end++
	}
	return string(rest[:end]), true
}

// Normalize applies the map.
func (p *Precompiled) Normalize(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	state := -1
	for rest := s; rest != ""; {
		var cluster string
		cluster, rest, _, state = uniseg.FirstGraphemeClusterInString(rest, state)
		if len(cluster) < 6 {
			if norm, ok := p.transform(cluster); ok {
				b.WriteString(norm)
				continue
			}
		}
		for i := 0; i < len(cluster); {
			_, n := utf8.DecodeRuneInString(cluster[i:])
			if norm, ok := p.transform(cluster[i : i+n]); ok {
				b.WriteString(norm)
			} else {
				b.WriteString(cluster[i : i+n])
			}
			i += n
		}
	}
	return b.String()
}
