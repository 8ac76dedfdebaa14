package auto

import (
	"fmt"

	"github.com/goaccel/goaccel/models/bert"
	"github.com/gomlx/gomlx/ml/model"
)

// bertFamily is models/bert as a Family: BERT, RoBERTa, XLM-RoBERTa, DistilBERT and ELECTRA,
// with the tokenizer LoadPretrained reads (vocab.txt, tokenizer.json, merges.txt + vocab.json,
// sentencepiece.bpe.model).
var bertFamily = &hfFamily[bert.Config, *bert.Classifier]{
	name: "bert", ref: "google-bert/bert-base-uncased", types: bert.Families(), inputs: 3,
	shape: Shape{Hidden: 768, Layers: 12, Heads: 12, FF: 3072, Vocab: 30522},
	parse: bert.ParseConfig, newClf: bert.NewClassifier, check: bert.Config.CheckMaxLen, json: bert.Config.JSON,
	config: func(c *bert.Classifier) *bert.Config { return &c.Config },
	load: func(dir string, store *model.Store, req LoadRequest) (*bert.Classifier, Processor, error) {
		clf, tok, err := bert.LoadPretrained(dir, store, bert.LoadOptions{MaxLen: req.MaxLen, NumLabels: req.NumLabels,
			LoadHead: req.LoadHead, Head: req.Head})
		if err != nil {
			return nil, nil, err
		}
		return clf, NewTokenizer(tok, dir), nil
	},
	save: func(dir string, clf *bert.Classifier, p Processor) error {
		t, ok := p.(*bertTokenizer)
		if !ok {
			return fmt.Errorf("auto: SavePretrained: a BERT model's processor is %T, not its tokenizer", p)
		}
		return bert.SavePretrained(dir, clf, t.bert)
	},
	// HF's BertConfig defaults (dropout 0.1, exact GELU) at the shape.
	reference: func(s Shape, maxLen int) (bert.Config, error) {
		cfg := bert.TinyConfig(s.Vocab)
		cfg.HiddenSize, cfg.NumHiddenLayers, cfg.NumAttentionHeads, cfg.IntermediateSize = s.Hidden, s.Layers, s.Heads, s.FF
		cfg.MaxPositionEmbeddings = max(512, maxLen)
		return cfg, cfg.Validate()
	},
	facts: func(c *bert.Config) Facts {
		return Facts{ModelType: c.Family(), MaxPositions: c.MaxPositionEmbeddings, Inputs: 3,
			Shape: Shape{c.HiddenSize, c.NumHiddenLayers, c.NumAttentionHeads, c.IntermediateSize, c.VocabSize}}
	},
	head: func(c *bert.Config) (*int, *[]string, *string) { return &c.NumLabels, &c.Labels, &c.ProblemType },
	dropout: func(c *bert.Config, rate float64) {
		c.HiddenDropoutProb, c.AttentionProbsDropoutProb, c.ClassifierDropout = rate, rate, &rate
	},
	checkpointing: func(c *bert.Config) *bool { return &c.GradientCheckpointing },
	// Per token and layer the Q, K, V and output projections 4 d², the feed-forward 2 d f, the
	// attention's scores and weighted sum 2 S d; per example the pooler d² and the head 2 d
	// (docs/performance.md).
	flops: func(c bert.Config, b, seq float64) float64 {
		h, l, f := float64(c.HiddenSize), float64(c.NumHiddenLayers), float64(c.IntermediateSize)
		return 2 * (b*seq*l*(4*h*h+2*h*f+2*seq*h) + b*(h*h+2*h))
	},
}

// BERT makes a Model of a BERT-family classifier and its tokenizer built in code (such as
// models/bert/sample's tiny one), with opts' head, labels, dropout and gradient checkpointing
// applied as Load applies them; opts.MaxLen and opts.LoadHead are not used. Call it before
// the classifier's head has variables.
func BERT(clf *bert.Classifier, tok *bert.Tokenizer, opts Options) (*Model, error) {
	if clf == nil || tok == nil {
		return nil, fmt.Errorf("auto: BERT: nil classifier or tokenizer")
	}
	if err := opts.Head.Validate(); err != nil {
		return nil, fmt.Errorf("auto: BERT: %w", err)
	}
	clf.Config.Head = opts.Head
	return newModel(&hfNetwork[bert.Config, *bert.Classifier]{bertFamily, clf}, NewTokenizer(tok, ""), opts, "")
}

// NewTokenizer makes a Tokenizer of a models/bert tokenizer (WordPiece, byte-level BPE or
// Unigram) read from folder dir ("" for one built in code: SavePretrained then writes nothing
// and the family's SavePretrained writes the files, as BERT's does). It runs tok's pipeline
// (tok.Pipeline()) and pads with tok.PadID() to tok.MaxLen().
func NewTokenizer(tok *bert.Tokenizer, dir string) Tokenizer {
	return &bertTokenizer{&textTokenizer{Tokenizer: tok.Pipeline(), pad: tok.PadID(), dir: dir}, tok}
}

// bertTokenizer is the text processor of a BERT-family model, with the models/bert tokenizer
// that bert.SavePretrained writes the files of.
type bertTokenizer struct {
	*textTokenizer
	bert *bert.Tokenizer
}
