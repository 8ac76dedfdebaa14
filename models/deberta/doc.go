// Package deberta is a DeBERTa-v2/v3 sequence classifier for GoMLX with the semantics of
// transformers' DebertaV2ForSequenceClassification (model_type "deberta-v2":
// microsoft/deberta-v3-xsmall to -large, mdeberta-v3-base and the many models fine-tuned from
// them), and loading and saving of its Hugging Face folders.
//
// # The model
//
// Classifier.Logits(s, [input_ids, attention_mask, token_type_ids]) returns [B, num_labels]
// logits: token embeddings and LayerNorm multiplied by the attention mask (no absolute
// positions in v3), num_hidden_layers post-norm layers of disentangled self-attention and a
// feed-forward block, the ContextPooler (the first token's state, a dense and
// pooler_hidden_act) and the classifier, with dropout wherever transformers has it, active
// only while the Store marks the graph as training (the dropout every family shares).
// Classifier.Encoder returns the last hidden states (DebertaV2Model). With Config.Head
// TokenClassification (LoadOptions.Head) it is DebertaV2ForTokenClassification: dropout
// (hidden_dropout_prob) and the classifier on every token, [B, L, num_labels] logits
// (Classifier.TokenHead), and no pooler.
//
// The attention adds to the content scores q·k the relative-position terms that pos_att_type
// names: c2p, the query's content against the relative embedding of its distance to the key,
// and p2c, the key's content against the relative embedding of the distance seen from the
// key. The relative embeddings are one table shared by every layer (encoder.rel_embeddings,
// normalised by encoder.LayerNorm), projected by the layer's own query_proj and key_proj
// (share_att_key); distances are mapped to log buckets (position_buckets, LogBucket). Every
// score is divided by sqrt(head_dim·(1+len(pos_att_type))).
//
// It is checked against transformers (scripts/make_deberta_fixtures.py, pinned to
// transformers 5.25.0) on tiny random checkpoints that transformers writes: testdata/tiny
// (DeBERTa-v3's layout, float32, with an spm.model), on a 40-token sequence (longer than the
// 8 buckets) and a padded batch, and on 20 SGD steps; and two others in bfloat16 for the
// keys v3 leaves at one value (unshared position projections, no buckets, absolute
// positions, token types, embed_proj; no relative attention).
//
// Variables are named after the HF tensors (VarPath and HFName convert): the tensor
// "deberta.encoder.layer.0.attention.self.query_proj.weight" is the variable
// "/deberta/encoder/layer/0/attention/self/query_proj/weight", with PyTorch's [out, in]
// layout.
//
// # Typical use
//
//	store := model.NewStore()
//	clf, err := deberta.LoadPretrained(modelDir, store, deberta.LoadOptions{NumLabels: 2})
//	tok, err := auto.LoadTokenizer(modelDir, 256) // reads spm.model; the loader's Collate: text.Collator(tok.Process)
//	job, err := acc.Prepare(clf, opt, loader)     // batches of [input_ids, attention_mask, token_type_ids]
//	step := job.TrainStep(func(s *model.Scope, b accelerator.GraphBatch) *graph.Node {
//	    l := accelerator.CrossEntropy(clf.Logits(s, b.Inputs), b.Labels, b.Mask)
//	    acc.Backward(s, l)
//	    return l
//	})
//	err = deberta.SavePretrained(outDir, clf) // an HF folder transformers can read
//
// The attention is computed in full ([B, heads, L, L] scores, masked, and the [B, heads, L,
// 2·position_buckets] relative scores each term gathers from), in float32.
package deberta
