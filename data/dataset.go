package data

import (
	"fmt"
	"iter"
)

// Dataset is an indexed (map-style) dataset: Len examples, read one at a time by index.
// Get must be safe for concurrent use, since loader workers call it from several goroutines.
type Dataset[T any] interface {
	// Len is the number of examples.
	Len() int
	// Get returns example i, for 0 <= i < Len().
	Get(i int) (T, error)
}

// Stream is a streaming (iterable) dataset: its examples can only be read in order, once per
// call to All. An error ends the pass. Each call to All starts a new pass from the beginning.
type Stream[T any] interface {
	All() iter.Seq2[T, error]
}

// Slice is an in-memory dataset. It is both a Dataset and a Stream.
type Slice[T any] []T

// FromSlice returns items as a dataset. The slice is used as is, not copied.
func FromSlice[T any](items []T) Slice[T] { return Slice[T](items) }

// Len is the number of examples.
func (s Slice[T]) Len() int { return len(s) }

// Get returns example i, or an error if i is out of range.
func (s Slice[T]) Get(i int) (T, error) {
	if i < 0 || i >= len(s) {
		var zero T
		return zero, fmt.Errorf("data: index %d out of range [0, %d)", i, len(s))
	}
	return s[i], nil
}

// All yields the examples in order, with a nil error.
func (s Slice[T]) All() iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		for _, v := range s {
			if !yield(v, nil) {
				return
			}
		}
	}
}

// Subset is the view of a Dataset restricted to some of its indices, in the given order
// (what Split returns).
type Subset[T any] struct {
	Dataset Dataset[T]
	// Indices are indices of Dataset: example i of the subset is Dataset.Get(Indices[i]).
	Indices []int
}

// Len is the number of examples in the subset.
func (s Subset[T]) Len() int { return len(s.Indices) }

// Get returns example i of the subset.
func (s Subset[T]) Get(i int) (T, error) {
	if i < 0 || i >= len(s.Indices) {
		var zero T
		return zero, fmt.Errorf("data: subset index %d out of range [0, %d)", i, len(s.Indices))
	}
	return s.Dataset.Get(s.Indices[i])
}

// Collect reads a whole stream into memory, for example to shuffle it or to split it.
func Collect[T any](s Stream[T]) (Slice[T], error) {
	var out Slice[T]
	for v, err := range s.All() {
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}
