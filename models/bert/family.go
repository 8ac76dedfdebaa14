package bert

import (
	"slices"
	"strings"
)

// The BERT family: BERT, RoBERTa, DistilBERT and ELECTRA share one encoder (embeddings, then
// post-LN layers of self-attention and an exact-GELU feed-forward block) and differ in a few
// places, each a field of family below, chosen once from config.json's model_type:
//
//	             tensor prefix  token types  positions            pooler  head
//	bert         bert.          yes          0..L-1               yes     dense on the pooled [CLS]
//	roberta      roberta.       1 type       pad_token_id+1+i     no      dense, tanh, out_proj on <s>
//	distilbert   distilbert.    no           0..L-1               no      pre_classifier, ReLU, classifier on [CLS]
//	electra      electra.       yes          0..L-1               no      dense, GELU, out_proj on [CLS]
//
// DistilBERT names its layer tensors differently (q_lin, sa_layer_norm, ffn.lin1, ...) and its
// config.json keys too (dim, n_layers, ...); ELECTRA's embeddings may be narrower than its
// layers (embedding_size), with a projection (embeddings_project) between them.
//
// The table's head is the sequence classifier's (Head SequenceClassification). Every family's
// token classifier (TokenClassification) is the same: dropout, then "classifier" (a linear
// layer hidden -> num_labels) on each token's last hidden state, with no pooler (BERT's token
// model is built without one, add_pooling_layer=False in transformers).

// family describes one architecture of the BERT family.
type family struct {
	modelType  string     // config.json's model_type
	class      string     // the prefix of transformers' class names, "Bert" (BertForSequenceClassification)
	prefix     string     // the encoder's tensor prefix, "bert"
	layers     string     // the layers' tensor path under the prefix, "encoder.layer"
	layer      layerNames // tensor names inside a layer
	tokenTypes bool       // token_type_embeddings exist
	pooler     bool       // a pooler (tanh dense on the first token) exists
	// paddingOffset: position ids count from pad_token_id+1 and skip padding (RoBERTa's
	// create_position_ids_from_input_ids) instead of 0..L-1.
	paddingOffset bool
	head          headKind
}

// architecture is transformers' class of the family's model with head h,
// "BertForTokenClassification".
func (f *family) architecture(h Head) string { return f.class + h.String() }

// layerNames are the names of the modules of one encoder layer (without .weight / .bias).
type layerNames struct {
	query, key, value, attnOut, attnNorm, ffnIn, ffnOut, outNorm string
}

// headKind is the shape of a family's classification head.
type headKind int

const (
	headPooled      headKind = iota // BERT: dropout, classifier on the pooled output
	headPreClassify                 // DistilBERT: pre_classifier, ReLU, dropout, classifier on the first token
	headDenseOut                    // RoBERTa, ELECTRA: dropout, dense, activation, dropout, out_proj on the first token
)

var (
	bertLayer = layerNames{
		query: "attention.self.query", key: "attention.self.key", value: "attention.self.value",
		attnOut: "attention.output.dense", attnNorm: "attention.output.LayerNorm",
		ffnIn: "intermediate.dense", ffnOut: "output.dense", outNorm: "output.LayerNorm",
	}
	distilLayer = layerNames{
		query: "attention.q_lin", key: "attention.k_lin", value: "attention.v_lin",
		attnOut: "attention.out_lin", attnNorm: "sa_layer_norm",
		ffnIn: "ffn.lin1", ffnOut: "ffn.lin2", outNorm: "output_layer_norm",
	}
)

// families is the table of supported architectures, by model_type.
var families = map[string]*family{
	"bert": {modelType: "bert", class: "Bert", prefix: "bert", layers: "encoder.layer",
		layer: bertLayer, tokenTypes: true, pooler: true, head: headPooled},
	"roberta": {modelType: "roberta", class: "Roberta", prefix: "roberta", layers: "encoder.layer",
		layer: bertLayer, tokenTypes: true, paddingOffset: true, head: headDenseOut},
	// XLM-RoBERTa is RoBERTa's encoder under the same names, with a SentencePiece Unigram
	// tokenizer (see the tokenizers package).
	"xlm-roberta": {modelType: "xlm-roberta", class: "XLMRoberta", prefix: "roberta",
		layers: "encoder.layer", layer: bertLayer, tokenTypes: true, paddingOffset: true, head: headDenseOut},
	"distilbert": {modelType: "distilbert", class: "DistilBert", prefix: "distilbert",
		layers: "transformer.layer", layer: distilLayer, head: headPreClassify},
	"electra": {modelType: "electra", class: "Electra", prefix: "electra", layers: "encoder.layer",
		layer: bertLayer, tokenTypes: true, head: headDenseOut},
}

// Families lists the model_type values LoadPretrained accepts, sorted.
func Families() []string {
	names := make([]string, 0, len(families))
	for name := range families {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// familyOf returns the family of a model_type ("" is "bert"), or nil.
func familyOf(modelType string) *family {
	if modelType == "" {
		modelType = "bert"
	}
	return families[modelType]
}

// Family returns the configuration's architecture: its model_type, "bert" when unset.
func (c Config) Family() string {
	if c.ModelType == "" {
		return "bert"
	}
	return c.ModelType
}

// family returns c's family; Validate has checked that it exists.
func (c Config) family() *family {
	if f := familyOf(c.ModelType); f != nil {
		return f
	}
	return families["bert"]
}

// embeddingSize is the width of the embeddings: ELECTRA's embedding_size, else hidden_size.
func (c Config) embeddingSize() int {
	if c.EmbeddingSize > 0 {
		return c.EmbeddingSize
	}
	return c.HiddenSize
}

// hasPooler reports whether the model has BERT's pooler: the family has one and the head is
// the sequence classifier's.
func (c Config) hasPooler() bool { return c.family().pooler && c.Head == SequenceClassification }

// projectsEmbeddings reports whether an embeddings_project dense maps the embeddings to the
// layers' width (ELECTRA with embedding_size != hidden_size).
func (c Config) projectsEmbeddings() bool {
	return c.family().modelType == "electra" && c.embeddingSize() != c.HiddenSize
}

// positionOffset is the first position id of a real token: pad_token_id+1 for RoBERTa, else 0.
func (c Config) positionOffset() int {
	if c.family().paddingOffset {
		return c.PadTokenID + 1
	}
	return 0
}

// joinName joins the non-empty parts of a tensor name with dots.
func joinName(parts ...string) string {
	out := parts[:0:0]
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, ".")
}
