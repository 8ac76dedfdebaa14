// Package vit is a ViT image classifier for GoMLX with the semantics of transformers'
// ViTForImageClassification (model_type "vit": google/vit-base-patch16-224 and the
// checkpoints fine-tuned from it) and Dinov2ForImageClassification (model_type "dinov2":
// facebook/dinov2-*), and loading and saving of their Hugging Face folders.
//
// # The model
//
// Classifier.Logits(s, [pixel_values]) takes the image processor's float32 pixels in
// goaccel's layout, [B, H, W, num_channels] (NHWC, docs/images.md), and returns [B,
// num_labels] logits: the patch embedding (a convolution of kernel and stride patch_size),
// the CLS token and the position embeddings (bicubically interpolated for another image size
// when Config.InterpolatePosEncoding asks for it), num_hidden_layers pre-norm encoder layers
// (self-attention with qkv_bias, GELU feed-forward), the final LayerNorm, and the linear
// classifier on the CLS token, with dropout wherever transformers has it, active only while
// the Store marks the graph as training. Classifier.Encoder returns the last hidden states
// (ViTModel's last_hidden_state).
//
// DINOv2 (Config.ModelType DINOv2) is the same encoder with norm1 and norm2, a layer scale on
// each sub-layer's output, stochastic depth (drop_path_rate), a SwiGLU feed-forward when
// use_swiglu_ffn, position embeddings always interpolated to the image's size, and the
// classifier on the CLS token concatenated with the mean of the patch tokens (Pool).
//
// Mixed precision (SetComputeDType), gradient checkpointing (Config.GradientCheckpointing)
// and LoRA (AttachLoRA, default targets query and value, the classifier trained and saved
// as PEFT's modules_to_save) work as in the text families; models/auto registers the family
// (auto.Load reads a ViT folder with its preprocessor_config.json).
package vit
