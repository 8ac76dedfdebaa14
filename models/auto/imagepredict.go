package auto

import (
	"fmt"
	"slices"

	"github.com/goaccel/goaccel/data/image"
	"github.com/gomlx/compute"
)

// DefaultTopK is the number of classes an ImagePredictor returns per image when told 0:
// transformers' image-classification pipeline's top_k default.
const DefaultTopK = 5

// LabelScore is one class of an image's answer: its name and score, as the
// image-classification pipeline's {"label", "score"}.
type LabelScore struct {
	Label string
	Score float64
}

// ImagePrediction is what an ImagePredictor says of one image: the Prediction (the top
// class, every class's score by id) and TopK, the best classes in order of score, highest
// first (ties in order of id), as transformers' image-classification pipeline returns them.
type ImagePrediction struct {
	Prediction
	TopK []LabelScore
}

// ImagePredictor classifies decoded images with an image model as transformers'
// image-classification pipeline does: the model's image processor (Process: its evaluation
// pipeline, the pixels of transformers' Pillow processors), the forward pass, then the scores
// of function_to_apply's default, chosen by config.json (the logits for problem_type
// "regression"; sigmoid for "multi_label_classification" or a single label; softmax
// otherwise), and the top_k classes. It runs batches as PredictorOf does and is safe for
// concurrent use.
type ImagePredictor struct {
	p    *PredictorOf[*image.RGB]
	topK int
}

// NewImagePredictor returns an ImagePredictor of a loaded image model (Load, or a fine-tuned
// best/ folder loaded with Options.LoadHead) on backend, at most batchSize images a batch (0:
// 32), giving the topK best classes an image (0: DefaultTopK; more than the model has: all,
// as the pipeline caps it). The model's processor must be an image processor (a
// BatchProcessor of *image.RGB, as LoadImageProcessor's).
func NewImagePredictor(m *Model, backend compute.Backend, batchSize, topK int) (*ImagePredictor, error) {
	if topK < 0 {
		return nil, fmt.Errorf("auto: NewImagePredictor: top_k %d: want 1 or more (0: %d)", topK, DefaultTopK)
	}
	p, err := NewPredictorOf[*image.RGB](m, nil, backend, batchSize)
	if err != nil {
		return nil, err
	}
	if topK == 0 {
		topK = DefaultTopK
	}
	return &ImagePredictor{p: p, topK: min(topK, m.NumLabels())}, nil
}

// Predict returns an ImagePrediction per image, in order.
func (p *ImagePredictor) Predict(images []*image.RGB) ([]ImagePrediction, error) {
	preds, err := p.p.Predict(images)
	if err != nil {
		return nil, err
	}
	names := p.p.m.Labels()
	out := make([]ImagePrediction, len(preds))
	for i, pr := range preds {
		order := make([]int, len(pr.Scores))
		for j := range order {
			order[j] = j
		}
		// The pipeline sorts by score, highest first, with Python's stable sort: ties keep
		// the order of their ids.
		slices.SortStableFunc(order, func(a, b int) int {
			switch sa, sb := pr.Scores[a], pr.Scores[b]; {
			case sa > sb:
				return -1
			case sa < sb:
				return 1
			}
			return 0
		})
		top := make([]LabelScore, min(p.topK, len(order)))
		for k := range top {
			label := fmt.Sprintf("LABEL_%d", order[k])
			if names != nil {
				label = names[order[k]]
			}
			top[k] = LabelScore{Label: label, Score: pr.Scores[order[k]]}
		}
		out[i] = ImagePrediction{Prediction: pr, TopK: top}
	}
	return out, nil
}
