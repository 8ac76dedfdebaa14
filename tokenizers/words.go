package tokenizers

// EncodeWords returns the encoding of a text given as its words, as transformers'
// tokenizers encode with is_split_into_words=True: each word goes through the pipeline on
// its own (normalized, pre-tokenized and split by the model, so that a Metaspace
// pre-tokenizer puts its "▁" before every word), its tokens carry its index in WordIDs, and
// the whole is truncated to MaxLen and wrapped in the post-processor's special tokens (word
// id -1). A ByteLevel pre-tokenizer puts a space before every word (transformers requires
// add_prefix_space=True for such input, and a word that is an added token gets none).
func (t *Tokenizer) EncodeWords(words []string) Encoding {
	if t.preTokenizer != nil {
		if p, changed := withPrefixSpace(t.preTokenizer); changed {
			wt := *t
			wt.preTokenizer = p
			t = &wt
		}
	}
	added := 0
	if t.post != nil {
		added = t.post.Added(false)
	}
	var e Encoding
	for i, w := range words {
		if t.maxLen > 0 && len(e.IDs) >= t.maxLen-added {
			break // the words after it would be truncated away
		}
		one := t.encodeText(w)
		for j := range one.IDs {
			e.append(one.IDs[j], 0, int32(i))
		}
	}
	if t.maxLen > 0 {
		e.truncate(max(t.maxLen-added, 0))
	}
	if t.post == nil {
		return e
	}
	return t.post.Process(&e, nil)
}

// withPrefixSpace is p with every ByteLevel's AddPrefixSpace set, and whether it has one.
func withPrefixSpace(p PreTokenizer) (PreTokenizer, bool) {
	switch p := p.(type) {
	case ByteLevel:
		p.AddPrefixSpace = true
		return p, true
	case PreTokenizerSequence:
		out := make(PreTokenizerSequence, len(p))
		changed := false
		for i, q := range p {
			var c bool
			out[i], c = withPrefixSpace(q)
			changed = changed || c
		}
		return out, changed
	}
	return p, false
}
