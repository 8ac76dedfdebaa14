// Package modernbert is a ModernBERT sequence classifier for GoMLX with the semantics of
// transformers' ModernBertForSequenceClassification (model_type "modernbert":
// answerdotai/ModernBERT-base and -large, and the models that reuse it, such as mmBERT), and
// loading and saving of its Hugging Face folders.
//
// # The model
//
// Classifier.Logits(s, [input_ids, attention_mask]) returns [B, num_labels] logits: token
// embeddings and LayerNorm (no position embeddings), num_hidden_layers pre-norm layers
// (rotary self-attention through a fused Wqkv, global in every global_attn_every_n_layers-th
// layer and over a sliding window of local_attention tokens in the others, each with its own
// RoPE base; a GeGLU feed-forward block), the final norm, pooling ("cls" or "mean"), the
// prediction head (dense, activation, LayerNorm) and the classifier, with dropout wherever
// transformers has it, active only while the Store marks the graph as training
// (the dropout every family shares). Classifier.Encoder returns the last hidden states (ModernBertModel).
// With Config.Head TokenClassification (LoadOptions.Head) it is ModernBertForTokenClassification:
// no pooling, the prediction head, dropout and classifier on every token, [B, L, num_labels]
// logits (Classifier.TokenHead), with the same tensors.
// Biases exist where config.json's attention_bias, mlp_bias, norm_bias and classifier_bias
// say (none but the classifier's in the released models).
//
// It is checked against transformers (scripts/make_modernbert_fixtures.py, pinned to
// transformers 5.25.0) on two tiny random checkpoints that transformers writes
// (testdata/tiny, float32 without biases; testdata/tiny_bias, bfloat16 with every bias), on a
// 40-token sequence (five times the local window) and a padded batch, for both poolings, and
// on 20 SGD steps.
//
// Variables are named after the HF tensors (VarPath and HFName convert): the tensor
// "model.layers.0.attn.Wqkv.weight" is the variable "/model/layers/0/attn/Wqkv/weight", with
// PyTorch's [out, in] layout.
//
// # Typical use
//
//	store := model.NewStore()
//	clf, err := modernbert.LoadPretrained(modelDir, store, modernbert.LoadOptions{NumLabels: 2})
//	job, err := acc.Prepare(clf, opt, loader) // batches of [input_ids, attention_mask]
//	step := job.TrainStep(func(s *model.Scope, b accelerator.GraphBatch) *graph.Node {
//	    l := accelerator.CrossEntropy(clf.Logits(s, b.Inputs), b.Labels, b.Mask)
//	    acc.Backward(s, l)
//	    return l
//	})
//	err = modernbert.SavePretrained(outDir, clf) // an HF folder transformers can read
//
// The attention is computed in full ([B, heads, L, L] scores, masked), in float32; a padded
// batch is not packed.
package modernbert
