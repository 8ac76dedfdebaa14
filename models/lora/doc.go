// Package lora is LoRA (low-rank adaptation, Hu et al. 2021) for goaccel's models, with the
// semantics and the files of Hugging Face PEFT: a plug a model family consults when it builds
// a linear layer, and that says which variables train and how they are saved.
//
// A targeted linear layer y = x·Wᵀ + b becomes
//
//	y = x·Wᵀ + b + (alpha/r)·dropout(x)·Aᵀ·Bᵀ
//
// with A [r, in] drawn as PEFT draws it (kaiming-uniform with a = sqrt(5): U(-1/sqrt(in),
// 1/sqrt(in))) and B [out, r] zero, so that an adapter before its first step computes the base
// model exactly. The base weights are frozen (not trainable: no gradient, no optimizer state);
// A and B of every targeted layer and the classification head (PEFT's modules_to_save of a
// SEQ_CLS or TOKEN_CLS model: the modules whose names end with "classifier" or "score", so
// ModernBERT's prediction head and DeBERTa's pooler before the classifier stay frozen)
// train.
//
// The family describes its model once (Base: its linear layers and its head's tensors) and
// calls Adapter.Linear in the one function that builds a linear layer; a nil *Adapter leaves
// every layer as it is, so the family has no "if LoRA" branch. The adapter saves itself as
// PEFT's files (Adapter.Save: adapter_config.json and adapter_model.safetensors, which
// peft.PeftModel.from_pretrained reads), loads them back (Adapter.Load, with errors for an
// adapter whose tensors do not fit the base), and folds itself into the base weights
// (Adapter.Merged, PEFT's merge_and_unload) for a plain model folder.
//
// A family with convolutions lists them too (Base.Convs) and calls Adapter.Conv where it
// builds each, giving the layer's own convolution: a targeted torch.nn.Conv2d of kernel k,
// stride and padding becomes, as in PEFT's Conv2d LoRA, y + (alpha/r)·B(A(dropout(x))) with A
// a convolution of the same kernel, stride and padding to r channels (A [r, in, k, k], OIHW,
// kaiming-uniform over in·k·k) and B a 1x1 convolution to out channels ([out, r, 1, 1], zero).
//
// Variables live in the model's Store next to the layer they adapt, under PEFT's names with
// the adapter name left out: the layer "bert.encoder.layer.0.attention.self.query" (Store
// scope "/bert/encoder/layer/0/attention/self/query") gets "lora_A/weight" and
// "lora_B/weight", saved as "base_model.model.bert.encoder.layer.0.attention.self.query.lora_A.weight".
package lora
