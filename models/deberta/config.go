package deberta

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/goaccel/goaccel/models/internal/hf"
)

// The relative-attention terms, as config.json's pos_att_type names them.
const (
	// C2P is the content-to-position term: a query's content against the relative position
	// of each key.
	C2P = "c2p"
	// P2C is the position-to-content term: each key's content against the relative position
	// of the query.
	P2C = "p2c"
)

// Config holds the hyperparameters of a DeBERTa-v2/v3 encoder and its sequence-classification
// head, with the names and meaning of transformers' DebertaV2Config (config.json, model_type
// "deberta-v2").
//
// DeBERTa-v3 (microsoft/deberta-v3-xsmall to -large, mdeberta-v3-base) sets relative_attention,
// position_buckets 256, share_att_key, norm_rel_ebd "layer_norm", pos_att_type "p2c|c2p",
// position_biased_input false and type_vocab_size 0. The other values of those keys are
// computed too (absolute positions, token types, unshared position projections, no buckets, no
// relative attention, an embedding_size other than hidden_size). What is not computed is
// refused by ParseConfig with an error naming config.json and the key: conv_kernel_size > 0
// (the ConvLayer of deberta-v2-xlarge and -xxlarge), an attention_head_size other than
// hidden_size / num_attention_heads, a pooler_hidden_size other than hidden_size, and
// pos_att_type or norm_rel_ebd entries other than those above.
type Config struct {
	// VocabSize is the number of rows of the token-embedding table (vocab_size).
	VocabSize int `json:"vocab_size"`
	// HiddenSize is the width of every layer (hidden_size).
	HiddenSize int `json:"hidden_size"`
	// EmbeddingSize is the width of the embeddings (embedding_size; hidden_size when absent);
	// when it differs from HiddenSize, embed_proj maps them to HiddenSize.
	EmbeddingSize int `json:"embedding_size"`
	// NumHiddenLayers is the number of encoder layers (num_hidden_layers).
	NumHiddenLayers int `json:"num_hidden_layers"`
	// NumAttentionHeads is the number of attention heads; it divides HiddenSize.
	NumAttentionHeads int `json:"num_attention_heads"`
	// IntermediateSize is the width of the feed-forward block (intermediate_size).
	IntermediateSize int `json:"intermediate_size"`
	// HiddenAct is the feed-forward activation (hidden_act): see Activations.
	HiddenAct string `json:"hidden_act"`
	// HiddenDropoutProb is the dropout rate of the embeddings, of the relative embeddings in
	// each attention, and after the attention's and the feed-forward's output projections
	// (hidden_dropout_prob); the classifier's too when ClsDropout is nil.
	HiddenDropoutProb float64 `json:"hidden_dropout_prob"`
	// AttentionProbsDropoutProb is the dropout rate of the attention probabilities
	// (attention_probs_dropout_prob).
	AttentionProbsDropoutProb float64 `json:"attention_probs_dropout_prob"`
	// MaxPositionEmbeddings is the size of the absolute position table when
	// PositionBiasedInput, and the default of MaxRelativePositions (max_position_embeddings).
	MaxPositionEmbeddings int `json:"max_position_embeddings"`
	// TypeVocabSize is the number of token types (type_vocab_size); 0, as in DeBERTa-v3,
	// means no token-type embedding (token_type_ids are then not read).
	TypeVocabSize int `json:"type_vocab_size"`
	// InitializerRange is the standard deviation of fresh weights (initializer_range; 0
	// means 0.02, as in transformers).
	InitializerRange float64 `json:"initializer_range"`
	// LayerNormEps is the epsilon of every LayerNorm (layer_norm_eps).
	LayerNormEps float64 `json:"layer_norm_eps"`
	// RelativeAttention adds the disentangled relative-position terms (PosAttType) to the
	// attention scores, with the shared table encoder.rel_embeddings (relative_attention).
	RelativeAttention bool `json:"relative_attention"`
	// MaxRelativePositions is the largest relative distance (max_relative_positions; below
	// 1 means MaxPositionEmbeddings): the relative embeddings have 2·MaxRelativePositions
	// rows when PositionBuckets <= 0.
	MaxRelativePositions int `json:"max_relative_positions"`
	// PositionBuckets, when positive, maps relative distances to log buckets
	// (position_buckets; 256 in DeBERTa-v3): distances below PositionBuckets/2 keep their
	// value, longer ones share buckets on a log scale up to MaxRelativePositions, and the
	// relative embeddings have 2·PositionBuckets rows.
	PositionBuckets int `json:"position_buckets"`
	// PosAttType lists the relative-attention terms, C2P and P2C (pos_att_type, written
	// "p2c|c2p" on the Hub). Each one adds its term and widens the scaling of every score:
	// the scores are divided by sqrt(head_dim·(1 + len(PosAttType))).
	PosAttType []string `json:"pos_att_type"`
	// ShareAttKey makes the position projections those of the content (share_att_key): the
	// relative embeddings go through query_proj and key_proj; otherwise through pos_key_proj
	// (C2P) and pos_query_proj (P2C).
	ShareAttKey bool `json:"share_att_key"`
	// NormRelEbd is "layer_norm" to normalise the relative embeddings with encoder.LayerNorm
	// before use, or "none" (norm_rel_ebd).
	NormRelEbd string `json:"norm_rel_ebd"`
	// PositionBiasedInput adds absolute position embeddings to the token embeddings
	// (position_biased_input; false in DeBERTa-v3).
	PositionBiasedInput bool `json:"position_biased_input"`
	// PadTokenID is the padding token's id (pad_token_id; nil: null): its row of the token
	// embeddings is zero in a fresh model and never trained, as transformers' padding_idx.
	PadTokenID *int `json:"pad_token_id"`
	// PoolerHiddenAct is the activation of the pooler's dense (pooler_hidden_act): see
	// Activations.
	PoolerHiddenAct string `json:"pooler_hidden_act"`
	// PoolerDropout is the dropout rate on the first token's state before the pooler's dense
	// (pooler_dropout).
	PoolerDropout float64 `json:"pooler_dropout"`
	// ClsDropout is the dropout rate before the classifier (cls_dropout); nil means
	// HiddenDropoutProb.
	ClsDropout *float64 `json:"cls_dropout"`
	// NumLabels is the number of classes of the classifier.
	NumLabels int `json:"num_labels"`
	// Labels names the classes by class id, as transformers' id2label (label2id is its
	// inverse); nil leaves them unnamed (LABEL_0, LABEL_1, ... in config.json).
	Labels []string `json:"-"`
	// ProblemType is transformers' problem_type (as every family's): empty or
	// "single_label_classification", "multi_label_classification" or "regression". The head
	// is the same; it says which loss transformers computes with the folder.
	ProblemType string `json:"-"`
	// Head is the task head (the Head every family shares): SequenceClassification (the zero value:
	// DebertaV2ForSequenceClassification, the ContextPooler then the classifier, [B,
	// num_labels] logits) or TokenClassification (DebertaV2ForTokenClassification: dropout and
	// the classifier on every token, [B, L, num_labels], no pooler). ParseConfig reads it from
	// architectures, JSON writes the class of it, LoadOptions.Head sets it when a folder is
	// loaded.
	Head hf.Head `json:"-"`

	// GradientCheckpointing turns on activation checkpointing (rematerialisation) per
	// encoder layer in training graphs, as transformers' gradient_checkpointing_enable():
	// only each layer's input is kept for the backward pass, and the layer's activations
	// (dropout's random bits included) are recomputed from it there, trading about one more
	// forward pass of compute for the memory of the activations. Losses and gradients are
	// those of the plain graph. It is a training choice, not part of the architecture:
	// config.json neither reads nor writes it.
	GradientCheckpointing bool `json:"-"`

	// architectures is config.json's architectures as ParseConfig read it (LoadPretrained
	// checks LoadOptions.Head against it).
	architectures []string
}

// Activations lists the activation names (hidden_act, pooler_hidden_act) this package
// computes, with transformers' meaning (the Activations every family shares): "gelu" is the exact (erf)
// GELU, "gelu_new" and "gelu_pytorch_tanh" its tanh approximation, "silu" and "swish"
// x·sigmoid(x), and "tanh".
func Activations() []string { return hf.Activations() }

// defaultConfig holds DebertaV2Config's defaults, used for the keys a config.json leaves out
// (embedding_size is hidden_size's, set after reading).
func defaultConfig() Config {
	pad := 0
	return Config{
		VocabSize: 128100, HiddenSize: 1536, NumHiddenLayers: 24, NumAttentionHeads: 24, IntermediateSize: 6144,
		HiddenAct: "gelu", HiddenDropoutProb: 0.1, AttentionProbsDropoutProb: 0.1, MaxPositionEmbeddings: 512,
		InitializerRange: 0.02, LayerNormEps: 1e-7, MaxRelativePositions: -1, PositionBuckets: -1,
		NormRelEbd: "none", PositionBiasedInput: true, PoolerHiddenAct: "gelu", NumLabels: 2, PadTokenID: &pad,
	}
}

// fileKeys are the config.json keys read besides Config's own fields, or read in another
// form than the field's.
type fileKeys struct {
	hf.TaskKeys
	PosAttType        json.RawMessage `json:"pos_att_type"`
	EmbeddingSize     *int            `json:"embedding_size"`
	PoolerHiddenSize  *int            `json:"pooler_hidden_size"`
	AttentionHeadSize *int            `json:"attention_head_size"`
	ConvKernelSize    *int            `json:"conv_kernel_size"`
}

// ParseConfig parses the contents of a DeBERTa-v2/v3 config.json; name is used in error
// messages (usually the file path). Keys missing from the file take DebertaV2Config's
// defaults; num_labels falls back to the size of id2label, then to 2. pos_att_type is read
// as a list or as the Hub's "p2c|c2p", and norm_rel_ebd's entries are lowercased, as in
// transformers. The result is validated; what this package does not compute is refused.
func ParseConfig(contents []byte, name string) (Config, error) {
	fail := func(err error) (Config, error) { return Config{}, fmt.Errorf("deberta: %s: %w", name, err) }
	var keys fileKeys
	if err := json.Unmarshal(contents, &keys); err != nil {
		return Config{}, fmt.Errorf("deberta: parsing %s: %w", name, err)
	}
	if keys.ModelType != "deberta-v2" {
		return fail(fmt.Errorf("model_type %q is not \"deberta-v2\" (DeBERTa-v2 and -v3)", keys.ModelType))
	}
	var cfg Config
	{
		// pos_att_type is read below, from either spelling.
		var plain struct {
			Config
			PosAttType json.RawMessage `json:"pos_att_type"`
		}
		plain.Config = defaultConfig()
		if err := json.Unmarshal(contents, &plain); err != nil {
			return Config{}, fmt.Errorf("deberta: parsing %s: %w", name, err)
		}
		cfg = plain.Config
	}
	var err error
	if cfg.PosAttType, err = parsePosAttType(keys.PosAttType); err != nil {
		return fail(err)
	}
	cfg.NormRelEbd = strings.ToLower(strings.TrimSpace(cfg.NormRelEbd))
	if keys.EmbeddingSize == nil {
		cfg.EmbeddingSize = cfg.HiddenSize
	}
	if k := keys.ConvKernelSize; k != nil && *k > 0 {
		return fail(fmt.Errorf("conv_kernel_size %d is not supported: the convolution after the first layer "+
			"(DeBERTa-v2's ConvLayer, in deberta-v2-xlarge and -xxlarge) is not implemented; DeBERTa-v3 has none", *k))
	}
	if p := keys.PoolerHiddenSize; p != nil && *p != cfg.HiddenSize {
		return fail(fmt.Errorf("pooler_hidden_size %d differs from hidden_size %d: not supported "+
			"(the classifier reads hidden_size values from the pooler)", *p, cfg.HiddenSize))
	}
	if a := keys.AttentionHeadSize; a != nil && cfg.NumAttentionHeads > 0 && *a != cfg.HiddenSize/cfg.NumAttentionHeads {
		return fail(fmt.Errorf("attention_head_size %d differs from hidden_size / num_attention_heads = %d: not supported",
			*a, cfg.HiddenSize/cfg.NumAttentionHeads))
	}
	task, err := keys.Task(cfg.NumLabels)
	if err != nil {
		return fail(err)
	}
	cfg.NumLabels, cfg.Labels, cfg.ProblemType, cfg.Head = task.NumLabels, task.Labels, task.ProblemType, task.Head
	cfg.architectures = keys.Architectures
	if err := cfg.Validate(); err != nil {
		return fail(err)
	}
	return cfg, nil
}

// parsePosAttType reads pos_att_type: null, a list of names, or names joined by "|"
// ("p2c|c2p"), lowercased and trimmed as transformers does.
func parsePosAttType(raw json.RawMessage) ([]string, error) {
	s := strings.TrimSpace(string(raw))
	if s == "" || s == "null" {
		return nil, nil
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err != nil {
		var joined string
		if err := json.Unmarshal(raw, &joined); err != nil {
			return nil, fmt.Errorf("pos_att_type %s is neither a list of names nor a string like \"p2c|c2p\"", s)
		}
		list = strings.Split(joined, "|")
	}
	out := []string{}
	for _, t := range list {
		if t = strings.ToLower(strings.TrimSpace(t)); t != "" {
			out = append(out, t)
		}
	}
	return out, nil
}

// LoadConfig reads and validates a DeBERTa-v2/v3 config.json file.
func LoadConfig(path string) (Config, error) { return hf.LoadConfig("deberta", path, ParseConfig) }

// Validate checks that the configuration describes a model this package can build; errors
// name the config.json key.
func (c Config) Validate() error {
	if err := hf.ValidateProblemType(c.ProblemType); err != nil {
		return err
	}
	if err := c.Head.Validate(); err != nil {
		return err
	}
	for _, p := range []struct {
		key   string
		value int
	}{
		{"vocab_size", c.VocabSize}, {"hidden_size", c.HiddenSize}, {"embedding_size", c.EmbeddingSize},
		{"intermediate_size", c.IntermediateSize}, {"num_hidden_layers", c.NumHiddenLayers},
		{"num_attention_heads", c.NumAttentionHeads}, {"max_position_embeddings", c.MaxPositionEmbeddings},
		{"num_labels", c.NumLabels},
	} {
		if p.value <= 0 {
			return fmt.Errorf("%s must be positive, got %d", p.key, p.value)
		}
	}
	if c.HiddenSize%c.NumAttentionHeads != 0 {
		return fmt.Errorf("hidden_size (%d) must be a multiple of num_attention_heads (%d)", c.HiddenSize, c.NumAttentionHeads)
	}
	if c.TypeVocabSize < 0 {
		return fmt.Errorf("type_vocab_size must not be negative, got %d", c.TypeVocabSize)
	}
	if p := c.PadTokenID; p != nil && (*p < 0 || *p >= c.VocabSize) {
		return fmt.Errorf("pad_token_id %d is outside the vocabulary (vocab_size %d)", *p, c.VocabSize)
	}
	for i, t := range c.PosAttType {
		if t != C2P && t != P2C {
			return fmt.Errorf("pos_att_type[%d] is %q: only %q and %q are supported", i, t, C2P, P2C)
		}
		if slices.Index(c.PosAttType, t) != i {
			return fmt.Errorf("pos_att_type names %q twice", t)
		}
	}
	for _, n := range strings.Split(c.NormRelEbd, "|") {
		if n = strings.TrimSpace(n); n != "none" && n != "layer_norm" {
			return fmt.Errorf("norm_rel_ebd %q is not supported: use \"layer_norm\" or \"none\"", c.NormRelEbd)
		}
	}
	if c.RelativeAttention && c.PositionBuckets > 0 && c.PositionBuckets/2 < 2 {
		return fmt.Errorf("position_buckets %d is too small: the log buckets need at least 4", c.PositionBuckets)
	}
	if c.RelativeAttention && c.PositionBuckets > 0 && c.maxRelativePositions() <= c.PositionBuckets/2+1 {
		return fmt.Errorf("max_relative_positions (%d, or max_position_embeddings when below 1) must exceed position_buckets/2 + 1 = %d",
			c.maxRelativePositions(), c.PositionBuckets/2+1)
	}
	for _, a := range []struct{ key, value string }{{"hidden_act", c.HiddenAct}, {"pooler_hidden_act", c.PoolerHiddenAct}} {
		if !slices.Contains(Activations(), a.value) {
			return fmt.Errorf("%s %q is not supported: use one of %s", a.key, a.value, strings.Join(Activations(), ", "))
		}
	}
	if !(c.LayerNormEps > 0) {
		return fmt.Errorf("layer_norm_eps must be positive, got %g", c.LayerNormEps)
	}
	if !(c.InitializerRange >= 0) {
		return fmt.Errorf("initializer_range must not be negative, got %g", c.InitializerRange)
	}
	for _, r := range []struct {
		key   string
		value float64
	}{
		{"hidden_dropout_prob", c.HiddenDropoutProb}, {"attention_probs_dropout_prob", c.AttentionProbsDropoutProb},
		{"pooler_dropout", c.PoolerDropout}, {"cls_dropout", c.clsDropout()},
	} {
		if !(r.value >= 0 && r.value < 1) {
			return fmt.Errorf("%s must be in [0, 1), got %g", r.key, r.value)
		}
	}
	return hf.ValidateLabels(c.Labels, c.NumLabels)
}

// HeadDim is the width of one attention head, HiddenSize / NumAttentionHeads.
func (c Config) HeadDim() int { return c.HiddenSize / c.NumAttentionHeads }

// Has reports whether pos_att_type has the term t (C2P or P2C).
func (c Config) Has(t string) bool { return slices.Contains(c.PosAttType, t) }

// CheckMaxLen returns an error if sequences of maxLen tokens do not fit the model: with
// absolute positions (position_biased_input) at most max_position_embeddings; with relative
// positions only, any length (distances beyond max_relative_positions share the last bucket).
func (c Config) CheckMaxLen(maxLen int) error {
	if maxLen < 1 || (c.PositionBiasedInput && maxLen > c.MaxPositionEmbeddings) {
		return fmt.Errorf("deberta: max_len %d is outside the model's 1 to max_position_embeddings (%d)",
			maxLen, c.MaxPositionEmbeddings)
	}
	return nil
}

// maxRelativePositions is max_relative_positions, or max_position_embeddings when below 1.
func (c Config) maxRelativePositions() int {
	if c.MaxRelativePositions < 1 {
		return c.MaxPositionEmbeddings
	}
	return c.MaxRelativePositions
}

// attSpan is the number of relative distances on each side that have an embedding:
// position_buckets when positive, else the maximum relative position. The relative
// embeddings have 2·attSpan rows.
func (c Config) attSpan() int {
	if c.PositionBuckets > 0 {
		return c.PositionBuckets
	}
	return c.maxRelativePositions()
}

// normRel reports whether the relative embeddings are normalised (norm_rel_ebd has
// "layer_norm"); encoder.LayerNorm exists then, with or without relative attention.
func (c Config) normRel() bool {
	for _, n := range strings.Split(c.NormRelEbd, "|") {
		if strings.TrimSpace(n) == "layer_norm" {
			return true
		}
	}
	return false
}

// clsDropout is the dropout rate before the classifier: cls_dropout, else hidden_dropout_prob.
func (c Config) clsDropout() float64 {
	if c.ClsDropout != nil {
		return *c.ClsDropout
	}
	return c.HiddenDropoutProb
}

// JSON returns the configuration as a config.json document for
// DebertaV2ForSequenceClassification, or DebertaV2ForTokenClassification with Head
// TokenClassification: model_type "deberta-v2", pos_att_type as a list, pooler_hidden_size,
// id2label, label2id and problem_type (see hf.HeadProblemType), floats written as floats.
func (c Config) JSON() ([]byte, error) {
	type extra struct {
		ModelType        string   `json:"model_type"`
		Architectures    []string `json:"architectures"`
		PoolerHiddenSize int      `json:"pooler_hidden_size"`
		hf.TaskJSON
	}
	e := extra{ModelType: "deberta-v2", Architectures: []string{"DebertaV2" + c.Head.String()},
		PoolerHiddenSize: c.HiddenSize,
		TaskJSON:         hf.Task{NumLabels: c.NumLabels, Labels: c.Labels, ProblemType: c.ProblemType, Head: c.Head}.JSON()}
	if c.PosAttType == nil {
		c.PosAttType = []string{}
	}
	var cls *hf.PyFloat
	if c.ClsDropout != nil {
		v := hf.PyFloat(*c.ClsDropout)
		cls = &v
	}
	// transformers 5's configs are strict dataclasses: a float field must read as a float.
	return json.MarshalIndent(struct {
		Config
		extra
		HiddenDropoutProb         hf.PyFloat  `json:"hidden_dropout_prob"`
		AttentionProbsDropoutProb hf.PyFloat  `json:"attention_probs_dropout_prob"`
		InitializerRange          hf.PyFloat  `json:"initializer_range"`
		LayerNormEps              hf.PyFloat  `json:"layer_norm_eps"`
		PoolerDropout             hf.PyFloat  `json:"pooler_dropout"`
		ClsDropout                *hf.PyFloat `json:"cls_dropout"`
	}{c, e, hf.PyFloat(c.HiddenDropoutProb), hf.PyFloat(c.AttentionProbsDropoutProb), hf.PyFloat(c.InitializerRange),
		hf.PyFloat(c.LayerNormEps), hf.PyFloat(c.PoolerDropout), cls}, "", "  ")
}
