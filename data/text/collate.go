package text

import (
	"fmt"

	"github.com/goaccel/goaccel/data"
	"github.com/gomlx/gomlx/core/tensors"
)

// Collator makes the data.CollateFunc[Labeled] of a text model: process turns the batch's
// texts into the model's inputs (a tokenizer's Process, such as auto.Tokenizer's), and the
// labels are the task's (Labels).
func Collator(process func(texts []string) ([]*tensors.Tensor, error)) data.CollateFunc[Labeled] {
	return func(examples []Labeled) ([]*tensors.Tensor, *tensors.Tensor, error) {
		labels, err := Labels(examples)
		if err != nil {
			return nil, nil, err
		}
		texts := make([]string, len(examples))
		for i, ex := range examples {
			texts[i] = ex.Text
		}
		inputs, err := process(texts)
		if err != nil {
			return nil, nil, err
		}
		return inputs, labels, nil
	}
}

// Labels collates the targets of a batch: int32 [N] classes (data.ClassLabels), or float32
// [N, K] values when example 0 has Values (data.ValueLabels). An empty batch, a batch that
// mixes classes and values, a negative class, ragged or non-finite values are errors naming
// the example and quoting its text.
func Labels(examples []Labeled) (*tensors.Tensor, error) {
	if len(examples) == 0 {
		return nil, fmt.Errorf("Collate called with an empty batch")
	}
	quote := func(i int) string { return fmt.Sprintf("%q", truncate(examples[i].Text)) }
	if examples[0].Values != nil {
		values := make([][]float32, len(examples))
		for i, ex := range examples {
			if ex.Values == nil {
				return nil, fmt.Errorf("Collate: example %d (%s) has a class but example 0 has Values: a batch is all classes or all values", i, quote(i))
			}
			values[i] = ex.Values
		}
		labels, err := data.ValueLabels(values, quote)
		if err != nil {
			return nil, fmt.Errorf("Collate: %w", err)
		}
		return labels, nil
	}
	classes := make([]int, len(examples))
	for i, ex := range examples {
		if ex.Values != nil {
			return nil, fmt.Errorf("Collate: example %d (%s) has Values but example 0 has a class: a batch is all classes or all values", i, quote(i))
		}
		classes[i] = ex.Label
	}
	labels, err := data.ClassLabels(classes, quote)
	if err != nil {
		return nil, fmt.Errorf("Collate: %w", err)
	}
	return labels, nil
}

// truncate shortens a text quoted in an error message.
func truncate(text string) string {
	const limit = 60
	r := []rune(text)
	if len(r) <= limit {
		return text
	}
	return string(r[:limit]) + "..."
}
