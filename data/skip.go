package data

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// ErrSkipped is what errors.Is finds in an error made by Skip.
var ErrSkipped = errors.New("example left out")

// Skip marks err, an error of Dataset.Get or of LoaderConfig.Augment, as a broken example
// that the loaders leave out instead of ending the pass: its slot in the batch becomes a
// masked one (Real false, Mask false, Position -1, filled with another example of the global
// batch so the shapes hold), so it is never trained on nor counted in metrics; the loader
// counts it (Skipped) and tells LoaderConfig.OnSkip. Skip(nil) is nil. A dataset decides what
// it may skip (image datasets with their SkipBad option: a truncated or corrupt file);
// without Skip, an error ends the pass naming the example.
func Skip(err error) error {
	if err == nil {
		return nil
	}
	return skipError{err}
}

type skipError struct{ err error }

func (e skipError) Error() string   { return e.err.Error() }
func (e skipError) Unwrap() []error { return []error{e.err, ErrSkipped} }

// SkippedExample is an example a loader left out (see Skip): its index in the dataset and
// the error that names it (the file, and row for a table, as the dataset reports them).
type SkippedExample struct {
	Index int
	Err   error
}

// maxSkipsKept bounds the skipped examples a loader keeps for SkippedExamples; the count
// (Skipped) goes on past it.
const maxSkipsKept = 1000

// skips counts the examples a loader left out, and keeps the first maxSkipsKept.
type skips struct {
	n      atomic.Int64
	onSkip func(index int, err error)
	mu     sync.Mutex
	kept   []SkippedExample
}

// note records that example index was left out for err.
func (s *skips) note(index int, err error) {
	s.mu.Lock()
	if len(s.kept) < maxSkipsKept {
		s.kept = append(s.kept, SkippedExample{Index: index, Err: err})
	}
	s.n.Add(1) // after kept grows: a reader never counts more than it can list (up to the bound)
	s.mu.Unlock()
	if s.onSkip != nil {
		s.onSkip(index, err)
	}
}

// Skipped is the number of examples left out so far because their Get or Augment returned a
// Skip error (see Skip): each time one is left out of a global batch built, so an example
// broken for good counts once an epoch (and again if a batch is built twice, as after a
// Restore). It is safe to call while a pass runs: the run's log prints it.
func (l *loaderBase[T]) Skipped() int64 { return l.skips.n.Load() }

// SkippedExamples lists the examples counted by Skipped in the order they were left out, the
// first 1000 of them (the count goes on past that), for a run's log; safe to call while a
// pass runs.
func (l *loaderBase[T]) SkippedExamples() []SkippedExample {
	l.skips.mu.Lock()
	defer l.skips.mu.Unlock()
	return append([]SkippedExample(nil), l.skips.kept...)
}

// standIns fills the slots of examples marked in out (left out: a zero value, or a copy of
// one) with the first example that is not, so the global batch collates with the same
// shapes; it fails when every slot is marked.
func standIns[T any](examples []T, out []bool) error {
	good := -1
	for i, o := range out {
		if !o {
			good = i
			break
		}
	}
	if good < 0 {
		return fmt.Errorf("all %d examples of the global batch were left out as broken (Skip): nothing to fill their slots with", len(examples))
	}
	for i, o := range out {
		if o {
			examples[i] = examples[good]
		}
	}
	return nil
}
