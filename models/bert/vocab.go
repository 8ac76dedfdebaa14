package bert

import (
	"fmt"
	"sort"
	"strings"

	"github.com/goaccel/goaccel/internal/fsutil"
	"github.com/goaccel/goaccel/tokenizers"
)

// DefaultVocabWords is the number of whole words BuildVocab is usually asked to keep for a
// tiny model trained from scratch (the characters are always added on top).
const DefaultVocabWords = 8000

// BuildVocab makes a small uncased WordPiece vocabulary from texts, for a randomly
// initialised model trained from scratch (a pretrained model must use its own vocab.txt):
//
//	[PAD] [UNK] [CLS] [SEP] [MASK]           ids 0..4, as in BERT
//	every character seen, then "##"+char    so any word made of seen characters is covered
//	the maxWords most frequent words        ties broken alphabetically
//
// Words are the output of BERT's basic tokenization (lowercased, accents stripped,
// punctuation split). The result is deterministic.
func BuildVocab(texts []string, maxWords int) []string {
	counts := make(map[string]int)
	chars := make(map[string]bool)
	norm := tokenizers.BertNormalizer{CleanText: true, HandleChineseChars: true, StripAccents: true, Lowercase: true}
	for _, text := range texts {
		for _, w := range (tokenizers.BertPreTokenizer{}).PreTokenize([]tokenizers.Word{{Text: norm.Normalize(text)}}) {
			word := w.Text
			counts[word]++
			for _, r := range word {
				chars[string(r)] = true
			}
		}
	}
	vocab := []string{PadToken, UnkToken, ClsToken, SepToken, MaskToken}
	seen := make(map[string]bool, len(vocab)+2*len(chars)+maxWords)
	for _, tok := range vocab {
		seen[tok] = true
	}
	add := func(tok string) {
		if !seen[tok] {
			seen[tok] = true
			vocab = append(vocab, tok)
		}
	}
	charList := make([]string, 0, len(chars))
	for c := range chars {
		charList = append(charList, c)
	}
	sort.Strings(charList)
	for _, c := range charList {
		add(c)
	}
	for _, c := range charList {
		add("##" + c)
	}
	words := make([]string, 0, len(counts))
	for w := range counts {
		if len([]rune(w)) > 1 {
			words = append(words, w)
		}
	}
	sort.Slice(words, func(i, j int) bool {
		if counts[words[i]] != counts[words[j]] {
			return counts[words[i]] > counts[words[j]]
		}
		return words[i] < words[j]
	})
	if maxWords >= 0 && len(words) > maxWords {
		words = words[:maxWords]
	}
	for _, w := range words {
		add(w)
	}
	return vocab
}

// WriteVocab writes the model's vocabulary as a vocab.txt file (one token per line); added
// tokens beyond it are not written (SavePretrained puts them in tokenizer_config.json).
func (t *Tokenizer) WriteVocab(path string) error {
	if err := fsutil.WriteFileAtomic(path, []byte(strings.Join(t.tokens[:t.modelSize], "\n")+"\n")); err != nil {
		return fmt.Errorf("bert: %w", err)
	}
	return nil
}
