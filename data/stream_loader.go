package data

import (
	"fmt"
	"iter"
)

// StreamLoader serves a streaming dataset as a Source. The stream is read in order, once per
// epoch, and dealt over the replicas: example i goes to replica i mod R. Global batch t takes
// the R*B examples i in [t*R*B, (t+1)*R*B) (B = BatchSize), and replica r's batch holds those
// with i mod R = r, in order. Every replica therefore has the same number of batches:
//
//	ceil(N / (R*B))      (DropLast: floor(N / (R*B)))
//
// With GlobalBatchSize G, global batch t takes the G examples [t*G, (t+1)*G) and replica r
// the contiguous share of S = ceil(G/R) from t*G + r*S, as in Loader (see LoaderConfig).
//
// In the last global batch, the slots past the end of the stream are filled by repeating an
// example of that global batch, marked Real = false with Position -1, so every batch has the
// same shapes and the real examples of all replicas together are the stream, each exactly
// once. Index and Position of a real example are its number i in the stream.
//
// N is counted by reading the stream once in NewStreamLoader; a stream whose length changes
// later makes the pass fail. The stream is not shuffled (Shuffle is refused): to shuffle, load
// it with Collect and use NewLoader. State, Restore and SetEpoch work as in Loader; a restored
// pass skips the consumed examples by reading over them.
type StreamLoader[T any] struct {
	loaderBase[T]
	s Stream[T]
	n int
}

// NewStreamLoader returns a loader over the stream s for a single replica; Distribute splits
// it over more (with more replicas than examples, the replicas past the end get only
// padding). It reads the stream once to count its examples, and fails if that pass fails, if
// the stream is empty, or if the configuration is invalid.
func NewStreamLoader[T any](s Stream[T], cfg LoaderConfig[T]) (*StreamLoader[T], error) {
	if s == nil {
		return nil, fmt.Errorf("data: NewStreamLoader: nil stream")
	}
	if err := cfg.validate("data: NewStreamLoader"); err != nil {
		return nil, err
	}
	if cfg.Shuffle {
		return nil, fmt.Errorf("data: NewStreamLoader: LoaderConfig.Shuffle is set, but a stream is read in order; " +
			"load it with data.Collect and use data.NewLoader to shuffle")
	}
	n := 0
	for _, err := range s.All() {
		if err != nil {
			return nil, fmt.Errorf("data: NewStreamLoader: counting the examples: %w", err)
		}
		n++
	}
	if n == 0 {
		return nil, fmt.Errorf("data: NewStreamLoader: empty dataset (the stream has no example)")
	}
	l := &StreamLoader[T]{s: s, n: n}
	var err error
	if l.loaderBase, err = newLoaderBase("data: NewStreamLoader", n, cfg); err != nil {
		return nil, err
	}
	return l, nil
}

// Epoch yields the remaining global batches of the current epoch, then moves to the next one
// (see Loader.Epoch); the epoch number only numbers them, the order of a stream is the same in
// every epoch. The stream is read on a goroutine of its own when Workers > 0.
func (l *StreamLoader[T]) Epoch() iter.Seq2[*GlobalBatch, error] {
	return l.epoch(func(ps pass, emit func(int, func() ([]T, []*Batch, []bool, error)) bool) error {
		perGlobalBatch := l.pos.lay.perGlobal(ps.numReplicas)
		skip, i := ps.base+(ps.start-ps.segStart)*perGlobalBatch, 0
		t := ps.start
		round := make([]T, 0, perGlobalBatch)
		flush := func() bool {
			if t >= ps.batches {
				return true // DropLast: the short tail round is left out
			}
			ex, index := round, t
			round, t = make([]T, 0, perGlobalBatch), t+1
			return emit(index, func() ([]T, []*Batch, []bool, error) { return l.slots(ps, ex, index) })
		}
		for ex, err := range l.s.All() {
			if err != nil {
				return err
			}
			i++
			if i <= skip {
				continue
			}
			if i > l.n {
				return fmt.Errorf("data: the stream grew: it had %d examples when the loader was made, now more; "+
					"make a new loader after changing the data", l.n)
			}
			round = append(round, ex)
			if len(round) == perGlobalBatch && !flush() {
				return nil
			}
		}
		if i != l.n {
			return fmt.Errorf("data: the stream shrank: it had %d examples when the loader was made, now %d; "+
				"make a new loader after changing the data", l.n, i)
		}
		if len(round) > 0 {
			flush()
		}
		return nil
	})
}

// slots deals the examples of global batch t (its round of the stream, short in the last one)
// to the local replicas' batches. A slot past the end of the stream or of the share repeats
// its batch's first example, or the global batch's.
func (l *StreamLoader[T]) slots(ps pass, round []T, t int) ([]T, []*Batch, []bool, error) {
	base, _ := ps.slot(l.pos.lay, t, 0, 0) // stream number of round[0]
	return dealSlots(l.pos.lay, ps, t, l.skips, func(_, k, p int, inShare bool) (ex T, index int, isReal, repeat bool, err error) {
		switch q := p - base; {
		case inShare && q < len(round):
			return round[q], p, true, false, nil
		case k > 0:
			return ex, 0, false, true, nil
		}
		return round[0], base, false, false, nil
	})
}
