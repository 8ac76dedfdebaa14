package sample

import (
	"math/rand/v2"
	"strings"

	"github.com/goaccel/goaccel/data"
	"github.com/goaccel/goaccel/data/text"
)

// EntityTags are the tags of Entities in id order: IOB2 over persons, places and
// organizations.
func EntityTags() []string {
	return []string{"O", "B-PER", "I-PER", "B-LOC", "I-LOC", "B-ORG", "I-ORG"}
}

// The pieces Entities makes its sentences of: names of each type (one or two words) and
// templates whose slots take them, in the built-in reviews' lower-case style.
var (
	entityNames = map[string][]string{
		"PER": {"alice", "bob", "carla diaz", "dev patel", "emma", "farid", "grace hopper", "hiro", "ines", "jon snow"},
		"LOC": {"paris", "new york", "lagos", "lima", "oslo", "rio de janeiro", "cairo", "seoul", "kyoto", "austin"},
		"ORG": {"pixar", "warner bros", "studio ghibli", "netflix", "the academy", "focus features", "miramax", "hbo", "disney", "lionsgate"},
	}
	entityTemplates = []string{
		"PER watched the film in LOC",
		"PER and PER loved the ORG movie",
		"the ORG drama was boring , said PER",
		"a stunning thriller shot in LOC by ORG",
		"PER left the screening in LOC after an hour",
		"ORG released the sequel , and PER hated it",
		"critics in LOC praised the ORG comedy",
		"PER wrote a witty review of the ORG film",
		"the opening scene in LOC was pure joy",
		"nobody at ORG expected PER to cheer",
	}
)

// Entities returns n sentences of a small synthetic named-entity task, the same for a seed:
// templates of a few review-like words with person, place and organization names in their
// slots, each word tagged as EntityTags numbers them ("grace hopper" is B-PER I-PER). Names
// are lower case words of letters, which the tiny BERT's vocabulary spells out, so a
// program trains a real token classifier with nothing to download.
func Entities(n int, seed uint64) data.Slice[text.Tagged] {
	ids := map[string]int{}
	for i, tag := range EntityTags() {
		ids[tag] = i
	}
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	out := make(data.Slice[text.Tagged], n)
	for i := range out {
		var ex text.Tagged
		for _, slot := range strings.Fields(entityTemplates[rng.IntN(len(entityTemplates))]) {
			names, ok := entityNames[slot]
			if !ok {
				ex.Words, ex.Tags = append(ex.Words, slot), append(ex.Tags, ids["O"])
				continue
			}
			for j, w := range strings.Fields(names[rng.IntN(len(names))]) {
				prefix := "I-"
				if j == 0 {
					prefix = "B-"
				}
				ex.Words, ex.Tags = append(ex.Words, w), append(ex.Tags, ids[prefix+slot])
			}
		}
		out[i] = ex
	}
	return out
}
