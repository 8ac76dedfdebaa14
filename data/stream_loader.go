package data

import (
	"fmt"
	"iter"
)

// StreamLoader serves a streaming dataset as a Source. The stream is read in order, once per
// epoch, and dealt over the replicas: example i goes to replica i mod R. Global step t takes
// the R*B examples i in [t*R*B, (t+1)*R*B) (B = BatchSize), and replica r's batch holds those
// with i mod R = r, in order. Every replica therefore has the same number of steps:
//
//	ceil(N / (R*B))      (DropLast: floor(N / (R*B)))
//
// In the last step, the slots past the end of the stream are filled by repeating an example of
// that step, marked Real = false with Position -1, so every step has the same shapes and the
// real examples of all replicas together are the stream, each exactly once. Index and Position
// of a real example are its number i in the stream.
//
// N is counted by reading the stream once in NewStreamLoader; a stream whose length changes
// later makes the pass fail. The stream is not shuffled (Shuffle is refused): to shuffle, load
// it with Collect and use NewLoader. Position, State, Restore and SetEpoch work as in Loader; a
// restored pass skips the consumed examples by reading over them.
type StreamLoader[T any] struct {
	s   Stream[T]
	n   int
	cfg LoaderConfig[T]
	pos *position
}

// NewStreamLoader returns a loader over the stream s for a single replica; Distribute splits
// it over more. It reads the stream once to count its examples, and fails if that pass fails,
// if the stream is empty, or if the configuration is invalid.
func NewStreamLoader[T any](s Stream[T], cfg LoaderConfig[T]) (*StreamLoader[T], error) {
	if s == nil {
		return nil, fmt.Errorf("data.NewStreamLoader: nil stream")
	}
	if err := cfg.validate("data.NewStreamLoader"); err != nil {
		return nil, err
	}
	if cfg.Shuffle {
		return nil, fmt.Errorf("data.NewStreamLoader: LoaderConfig.Shuffle is set, but a stream is read in order; " +
			"load it with data.Collect and use data.NewLoader to shuffle")
	}
	n := 0
	for _, err := range s.All() {
		if err != nil {
			return nil, fmt.Errorf("data.NewStreamLoader: counting the examples: %w", err)
		}
		n++
	}
	if n == 0 {
		return nil, fmt.Errorf("data.NewStreamLoader: empty dataset (the stream has no example)")
	}
	l := &StreamLoader[T]{s: s, n: n, cfg: cfg}
	l.pos = newPosition(cfg.Seed, l.stepsPerEpoch)
	if l.stepsPerEpoch(1) <= 0 {
		return nil, fmt.Errorf("data.NewStreamLoader: %d examples make no full batch of %d and DropLast is set", n, cfg.BatchSize)
	}
	return l, nil
}

func (l *StreamLoader[T]) stepsPerEpoch(numReplicas int) int {
	perStep := numReplicas * l.cfg.BatchSize
	if l.cfg.DropLast {
		return l.n / perStep
	}
	return (l.n + perStep - 1) / perStep
}

// Distribute splits the stream over numReplicas replicas, of which this process feeds
// localRanks. With more replicas than examples, the replicas past the end get only padding.
func (l *StreamLoader[T]) Distribute(numReplicas int, localRanks []int) error {
	return l.pos.distribute(numReplicas, localRanks)
}

// BatchSize is the per-replica batch size: the first axis of every tensor of a Batch.
func (l *StreamLoader[T]) BatchSize() int { return l.cfg.BatchSize }

// BatchesPerEpoch is the number of steps of one epoch with the current replica count.
func (l *StreamLoader[T]) BatchesPerEpoch() int {
	l.pos.mu.Lock()
	r := l.pos.numReplicas
	l.pos.mu.Unlock()
	return l.stepsPerEpoch(r)
}

// State returns the loader's position (see Loader.State).
func (l *StreamLoader[T]) State() LoaderState { return l.pos.state() }

// Restore moves the loader to a saved position (see Loader.Restore).
func (l *StreamLoader[T]) Restore(st LoaderState) error { return l.pos.restore(st) }

// SetEpoch moves the loader to the start of the given epoch; the epoch only numbers the steps,
// the order of a stream is the same in every epoch.
func (l *StreamLoader[T]) SetEpoch(epoch int) { l.pos.setEpoch(epoch) }

// Epoch yields the remaining steps of the current epoch, then moves to the next one (see
// Loader.Epoch). The stream is read on a goroutine of its own when Workers > 0.
func (l *StreamLoader[T]) Epoch() iter.Seq2[*GlobalBatch, error] {
	return func(yield func(*GlobalBatch, error) bool) {
		ps, err := l.pos.begin()
		if err != nil {
			yield(nil, err)
			return
		}
		perStep := ps.numReplicas * l.cfg.BatchSize
		produce := func(emit func(job) bool) error {
			skip, i := ps.start*perStep, 0
			t := ps.start
			round := make([]T, 0, perStep)
			flush := func() bool {
				if t >= ps.steps {
					return true // DropLast: the short tail round is left out
				}
				ex, step := round, t
				round, t = make([]T, 0, perStep), t+1
				return emit(func() (*GlobalBatch, error) { return l.step(ps, ex, step) })
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
					return fmt.Errorf("data: the stream grew: it had %d examples when the loader was made, now more", l.n)
				}
				round = append(round, ex)
				if len(round) == perStep && !flush() {
					return nil
				}
			}
			if i != l.n {
				return fmt.Errorf("data: the stream shrank: it had %d examples when the loader was made, now %d", l.n, i)
			}
			if len(round) > 0 {
				flush()
			}
			return nil
		}
		for st, err := range ordered(produce, l.cfg.Workers) {
			if err == nil {
				err = l.pos.handOut(ps, st.Index)
			}
			if err != nil {
				yield(nil, err)
				return
			}
			if !yield(st, nil) {
				return
			}
		}
	}
}

// step builds global step t from its examples (R*B of them, fewer in the last step).
func (l *StreamLoader[T]) step(ps pass, round []T, t int) (*GlobalBatch, error) {
	bs, r := l.cfg.BatchSize, ps.numReplicas
	base := t * r * bs // stream number of round[0]
	st := &GlobalBatch{Epoch: ps.epoch, Index: t, Shards: make([]*Batch, len(ps.localRanks))}
	for j, rank := range ps.localRanks {
		b, examples := newBatch(bs), make([]T, bs)
		for k := range bs {
			if q := k*r + rank; q < len(round) { // stream number base+q, and (base+q) mod r == rank
				examples[k], b.Indices[k], b.Real[k], b.Positions[k] = round[q], base+q, true, base+q
				continue
			}
			// Past the end of the stream: repeat this batch's first example, or the step's.
			if k > 0 {
				examples[k], b.Indices[k] = examples[0], b.Indices[0]
			} else {
				examples[k], b.Indices[k] = round[0], base
			}
			b.Positions[k] = -1
		}
		if err := collateBatch(b, examples, l.cfg.Collate); err != nil {
			return nil, fmt.Errorf("data: epoch %d step %d replica %d: %w", ps.epoch, t, rank, err)
		}
		st.Shards[j] = b
	}
	return st, nil
}
