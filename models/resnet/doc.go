// Package resnet is a ResNet image classifier for GoMLX with the semantics of transformers'
// ResNetForImageClassification (model_type "resnet": the microsoft/resnet-18 to -152
// folders), and loading and saving of its Hugging Face folders.
//
// # The model
//
// Classifier.Logits(s, [pixel_values]) (or [pixel_values, mask]) returns [B, num_labels]
// logits from float [B, H, W, num_channels] images, channels last (goaccel's image layout,
// docs/images.md): the stem (a 7x7 convolution with stride 2, BatchNorm, hidden_act, a 3x3
// max-pool with stride 2), the stages of config.json's layer_type ("basic": two 3x3
// convolutions; "bottleneck": 1x1 to a quarter of the width, 3x3, 1x1 back, the stride where
// downsample_in_bottleneck says), a 1x1 projection shortcut with BatchNorm where the width
// or the stride changes, hidden_act after each residual sum, global average pooling and the
// linear classifier. There is no dropout in the model, as in transformers.
//
// The BatchNorms are models/nn.BatchNorm, torch.nn.BatchNorm2d's meaning: in a training
// graph the batch's statistics over its real examples (the mask) and one update of the
// running statistics (momentum 0.1, the unbiased variance, num_batches_tracked + 1), in an
// evaluation graph the running statistics. They are loaded from the folder and saved back
// with the weights.
//
// It is checked against transformers (scripts/make_vision_fixtures.py, pinned to
// transformers 5.25.0) on two tiny random checkpoints transformers wrote (basic with
// downsample_in_first_stage; bottleneck with downsample_in_bottleneck and GELU), at two image
// sizes, in evaluation and in training mode, and on 20 SGD steps with the running statistics
// after them.
//
// # Typical use
//
//	store := model.NewStore()
//	clf, err := resnet.LoadPretrained(modelDir, store, resnet.LoadOptions{NumLabels: 37})
//	job, err := acc.Prepare(clf, opt, loader) // batches of [pixel_values] NHWC float32
//	step := job.TrainStep(func(s *model.Scope, b accelerator.GraphBatch) *graph.Node {
//	    l := accelerator.CrossEntropy(clf.Logits(s, []*graph.Node{b.Inputs[0], b.Mask}), b.Labels, b.Mask)
//	    acc.Backward(s, l)
//	    return l
//	})
//	err = resnet.SavePretrained(outDir, clf) // an HF folder transformers can read
package resnet
