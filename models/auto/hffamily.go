package auto

import (
	"github.com/goaccel/goaccel/models/lora"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
)

// hfFamily is the Family of a package laid out as models/bert, models/modernbert and
// models/deberta are (a Config struct with ParseConfig, CheckMaxLen and JSON; NewClassifier,
// LoadPretrained and SavePretrained; a Classifier with Logits and AttachLoRA): the few
// functions below are all that differs between them (bert.go, modernbert.go, deberta.go).
type hfFamily[C any, K hfClassifier] struct {
	name, ref string
	types     []string
	shape     Shape
	parse     func(contents []byte, name string) (C, error)
	newClf    func(C, *model.Store) (K, error)
	// loadModel reads the folder's config and weights (LoadPretrained); the processor is
	// the folder's tokenizer, unless load reads both (BERT's LoadPretrained).
	loadModel func(dir string, store *model.Store, req LoadRequest) (K, error)
	load      func(dir string, store *model.Store, req LoadRequest) (K, Processor, error)
	// saveModel writes the config and weights (SavePretrained), then the processor writes
	// its files, unless save writes both (BERT's SavePretrained).
	saveModel func(dir string, clf K) error
	save      func(dir string, clf K, p Processor) error
	config    func(K) *C
	// reference is the config of the reference model at a shape, for sequences of maxLen.
	reference func(shape Shape, maxLen int) (C, error)
	facts     func(*C) Facts
	head      func(*C) (numLabels *int, labels *[]string, problemType *string)
	dropout   func(*C, float64)
	// checkpointing is the config's GradientCheckpointing.
	checkpointing func(*C) *bool
	check         func(C, int) error
	flops         func(c C, batch, seq float64) float64
	json          func(C) ([]byte, error)
	// inputs is how many of the processor's inputs Logits reads.
	inputs int
}

// hfClassifier is what hfFamily needs of a family's classifier.
type hfClassifier interface {
	Classifier
	Logits(s *model.Scope, inputs []*Node) *Node
	AttachLoRA(cfg lora.Config, baseNameOrPath string) (*lora.Adapter, error)
}

// Name is the family's short name.
func (f *hfFamily[C, K]) Name() string { return f.name }

// ModelTypes are the model_type values it reads.
func (f *hfFamily[C, K]) ModelTypes() []string { return f.types }

// ParseConfig reads a config.json.
func (f *hfFamily[C, K]) ParseConfig(contents []byte, name string) (Config, error) {
	c, err := f.parse(contents, name)
	if err != nil {
		return nil, err
	}
	return &hfConfig[C, K]{f, &c}, nil
}

// Load reads the folder with the family's LoadPretrained.
func (f *hfFamily[C, K]) Load(dir string, store *model.Store, req LoadRequest) (Network, Processor, error) {
	if f.load != nil {
		clf, p, err := f.load(dir, store, req)
		if err != nil {
			return nil, nil, err
		}
		return &hfNetwork[C, K]{f, clf}, p, nil
	}
	clf, err := f.loadModel(dir, store, req)
	if err != nil {
		return nil, nil, err
	}
	cfg := f.config(clf)
	p, err := loadTokenizer(dir, req.MaxLen, func(n int) error { return f.check(*cfg, n) }, f.facts(cfg).Vocab)
	if err != nil {
		return nil, nil, err
	}
	return &hfNetwork[C, K]{f, clf}, p, nil
}

// Reference is the bench's model of the family.
func (f *hfFamily[C, K]) Reference() Reference {
	return Reference{Name: f.ref, Shape: f.shape, Config: func(shape Shape, maxLen int) (Config, error) {
		c, err := f.reference(shape, maxLen)
		if err != nil {
			return nil, err
		}
		return &hfConfig[C, K]{f, &c}, nil
	}}
}

// hfConfig is a family's Config struct as a Config.
type hfConfig[C any, K hfClassifier] struct {
	f *hfFamily[C, K]
	c *C
}

func (c *hfConfig[C, K]) Facts() Facts { return c.f.facts(c.c) }

func (c *hfConfig[C, K]) SetNumLabels(n int) {
	num, names, _ := c.f.head(c.c)
	*num, *names = n, nil
}

func (c *hfConfig[C, K]) CheckMaxLen(maxLen int) error { return c.f.check(*c.c, maxLen) }

func (c *hfConfig[C, K]) ForwardFLOPs(batch, seq int) float64 {
	return c.f.flops(*c.c, float64(batch), float64(seq))
}

func (c *hfConfig[C, K]) New(store *model.Store) (Network, error) {
	clf, err := c.f.newClf(*c.c, store)
	if err != nil {
		return nil, err
	}
	return &hfNetwork[C, K]{c.f, clf}, nil
}

func (c *hfConfig[C, K]) JSON() ([]byte, error) { return c.f.json(*c.c) }

// hfNetwork is a family's classifier as a Network.
type hfNetwork[C any, K hfClassifier] struct {
	f   *hfFamily[C, K]
	clf K
}

func (n *hfNetwork[C, K]) Classifier() Classifier { return n.clf }

func (n *hfNetwork[C, K]) Logits(s *model.Scope, inputs []*Node) *Node {
	return n.clf.Logits(s, inputs[:min(len(inputs), n.f.inputs)])
}

func (n *hfNetwork[C, K]) Config() Config { return &hfConfig[C, K]{n.f, n.f.config(n.clf)} }

func (n *hfNetwork[C, K]) HeadFields() (*int, *[]string, *string) { return n.f.head(n.f.config(n.clf)) }

func (n *hfNetwork[C, K]) SetDropout(rate float64) { n.f.dropout(n.f.config(n.clf), rate) }

func (n *hfNetwork[C, K]) SetGradientCheckpointing(on bool) {
	*n.f.checkpointing(n.f.config(n.clf)) = on
}

func (n *hfNetwork[C, K]) LoRATargets() []string {
	return lora.DefaultTargetModules(n.Config().Facts().ModelType)
}

func (n *hfNetwork[C, K]) AttachLoRA(cfg lora.Config, base string) (*lora.Adapter, error) {
	return n.clf.AttachLoRA(cfg, base)
}

func (n *hfNetwork[C, K]) SavePretrained(dir string, p Processor) error {
	if n.f.save != nil {
		return n.f.save(dir, n.clf, p)
	}
	if err := n.f.saveModel(dir, n.clf); err != nil {
		return err
	}
	return p.SavePretrained(dir)
}
