package text

// Tagged is one example of token classification (named entities, say): a sentence as its
// words, and the id of each word's tag (package table's LoadTagged numbers the tags).
type Tagged struct {
	Words []string
	Tags  []int
}
