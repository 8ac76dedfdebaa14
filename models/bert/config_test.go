package bert

import (
	"math"
	"strings"
	"testing"
)

func TestParseConfig(t *testing.T) {
	cases := []struct {
		name    string
		json    string
		check   func(t *testing.T, c Config)
		wantErr string
	}{
		{
			name: "minilm",
			json: `{"architectures": ["BertModel"], "hidden_size": 384, "num_hidden_layers": 6, "num_attention_heads": 12,
				"intermediate_size": 1536, "hidden_act": "gelu", "layer_norm_eps": 1e-12, "max_position_embeddings": 512,
				"model_type": "bert", "type_vocab_size": 2, "vocab_size": 30522, "position_embedding_type": "absolute"}`,
			check: func(t *testing.T, c Config) {
				if c.HiddenSize != 384 || c.NumHiddenLayers != 6 || c.HeadDim() != 32 || c.VocabSize != 30522 {
					t.Errorf("parsed %+v", c)
				}
				if c.NumLabels != 2 || c.classifierDropout() != 0.1 || c.InitializerRange != 0.02 {
					t.Errorf("defaults not applied: num_labels %d, classifier dropout %g, init range %g",
						c.NumLabels, c.classifierDropout(), c.InitializerRange)
				}
			},
		},
		{
			name: "labels from id2label, explicit classifier dropout",
			json: `{"id2label": {"0": "neg", "1": "neutral", "2": "pos"}, "classifier_dropout": 0.3}`,
			check: func(t *testing.T, c Config) {
				if c.NumLabels != 3 || c.classifierDropout() != 0.3 || strings.Join(c.Labels, ",") != "neg,neutral,pos" {
					t.Errorf("num_labels %d, classifier dropout %g, labels %q; want 3, 0.3 and neg,neutral,pos", c.NumLabels,
						c.classifierDropout(), c.Labels)
				}
			},
		},
		{name: "explicit num_labels wins", json: `{"num_labels": 5, "id2label": {"0": "a"}}`,
			check: func(t *testing.T, c Config) {
				if c.NumLabels != 5 || c.Labels != nil {
					t.Errorf("num_labels %d, labels %q; want 5, and the names of 1 class dropped", c.NumLabels, c.Labels)
				}
			}},
		{name: "another architecture", json: `{"model_type": "albert"}`, wantErr: `model_type "albert" is not supported: the supported families are bert, distilbert, electra, roberta`},
		{name: "relative positions", json: `{"position_embedding_type": "relative_key"}`, wantErr: "position_embedding_type"},
		{name: "approximate gelu", json: `{"hidden_act": "gelu_new"}`, wantErr: "hidden_act"},
		{name: "heads do not divide", json: `{"hidden_size": 100, "num_attention_heads": 12}`, wantErr: "multiple of num_attention_heads"},
		{name: "zero layers", json: `{"num_hidden_layers": 0}`, wantErr: "num_hidden_layers must be positive"},
		{name: "dropout 1", json: `{"hidden_dropout_prob": 1.0}`, wantErr: "hidden_dropout_prob"},
		{name: "not json", json: `{"hidden_size": `, wantErr: "parsing cfg.json"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := ParseConfig([]byte(c.json), "cfg.json")
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) || !strings.Contains(err.Error(), "cfg.json") {
					t.Errorf("error = %v, want one naming cfg.json and containing %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			c.check(t, cfg)
		})
	}
}

func TestConfigJSONRoundTrip(t *testing.T) {
	cfg := microConfig(40)
	contents, err := cfg.JSON()
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseConfig(contents, "roundtrip")
	if err != nil {
		t.Fatal(err)
	}
	if back.VocabSize != 40 || back.HiddenSize != 16 || back.NumLabels != 3 || back.MaxPositionEmbeddings != 12 ||
		len(back.Architectures) != 1 || back.Architectures[0] != "BertForSequenceClassification" {
		t.Errorf("round trip gave %+v", back)
	}
}

func TestCheckMaxLen(t *testing.T) {
	cfg := TinyConfig(100)
	for _, c := range []struct {
		maxLen int
		ok     bool
	}{{2, true}, {128, true}, {129, false}, {1, false}} {
		err := cfg.CheckMaxLen(c.maxLen)
		if (err == nil) != c.ok {
			t.Errorf("CheckMaxLen(%d) = %v, want ok=%v", c.maxLen, err, c.ok)
		}
		if err != nil && c.maxLen > 2 && !strings.Contains(err.Error(), "max_position_embeddings (128)") {
			t.Errorf("CheckMaxLen(%d) error %q does not name the limit", c.maxLen, err)
		}
	}
}

// TestValidateRefusesNaNRate checks that a NaN dropout rate (possible from Go, not from JSON)
// is refused, naming the key.
func TestValidateRefusesNaNRate(t *testing.T) {
	cfg := TinyConfig(100)
	cfg.AttentionProbsDropoutProb = math.NaN()
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "attention_probs_dropout_prob must be in [0, 1), got NaN") {
		t.Fatalf("Validate with a NaN attention dropout: got %v", err)
	}
}
