package data

import (
	"fmt"
	"iter"

	"github.com/gomlx/gomlx/core/tensors"
)

// CollateFunc turns the examples of one batch into host tensors, each with the batch on axis 0:
// the model inputs (for BERT: input ids, attention mask and token type ids, int32 [B, L]) and
// the labels ([B], or nil). It is called with exactly BatchSize examples, padding slots
// included (they repeat a real example). With Workers > 1 it is called from several goroutines
// at once and must be safe for that.
type CollateFunc[T any] func(examples []T) (inputs []*tensors.Tensor, labels *tensors.Tensor, err error)

// LoaderConfig configures NewLoader and NewStreamLoader.
type LoaderConfig[T any] struct {
	// BatchSize is the number of examples per replica (device) and step, as in PyTorch DDP:
	// the global batch is BatchSize x replicas. It must be > 0.
	BatchSize int
	// Shuffle draws a new order every epoch (seeded with Seed + epoch); see DistributedSampler.
	// Streaming datasets cannot be shuffled.
	Shuffle bool
	// Seed seeds the shuffle. Restore replaces it with the saved one.
	Seed int64
	// DropLast leaves out the tail of the epoch instead of padding it: the sampler drops the
	// examples that would need wrap-around padding and the loader drops the last short batch,
	// so every slot of every batch is a real example. Without it nothing is left out: padding
	// slots complete the epoch, marked Real = false.
	DropLast bool
	// Workers is the number of goroutines that read and collate batches ahead of the consumer
	// (up to 2 x Workers steps in advance); steps are still delivered in order. 0 builds each
	// step on the consumer's goroutine when it is asked for.
	Workers int
	// Collate makes the tensors of a batch. It is required.
	Collate CollateFunc[T]
}

func (c LoaderConfig[T]) validate(caller string) error {
	switch {
	case c.BatchSize <= 0:
		return fmt.Errorf("%s: LoaderConfig.BatchSize = %d, want > 0", caller, c.BatchSize)
	case c.Workers < 0:
		return fmt.Errorf("%s: LoaderConfig.Workers = %d, want >= 0", caller, c.Workers)
	case c.Collate == nil:
		return fmt.Errorf("%s: LoaderConfig.Collate is nil", caller)
	}
	return nil
}

// Loader serves an indexed Dataset as a Source: per epoch, every replica gets its share of the
// DistributedSampler order, cut into batches of BatchSize, and each global step carries one
// batch per local replica.
//
// Step t of replica r holds samples t*B .. t*B+B-1 of the replica's share (B = BatchSize).
// Every replica has the same number of steps, StepsPerEpoch:
//
//	ceil(NumSamples / B)      (DropLast: floor(NumSamples / B))
//
// where NumSamples is DistributedSampler.NumSamples. A short last batch is completed by
// repeating its first example, marked Real = false, so every step has the same shapes. Padding
// slots (the sampler's wrap-around duplicates and these fillers) have Real = false, a false
// Mask and Position -1.
//
// The epoch advances by itself when a pass ends. The position is saved by State and restored
// by Restore: the steps after a restored position are exactly those an uninterrupted run would
// have yielded. A Loader must not be iterated by two goroutines at once.
type Loader[T any] struct {
	ds  Dataset[T]
	n   int
	cfg LoaderConfig[T]
	pos *position
}

// NewLoader returns a loader over ds for a single replica; Distribute (called by the
// Accelerator's Prepare) splits it over more. It fails on a nil or empty dataset and on an
// invalid configuration.
func NewLoader[T any](ds Dataset[T], cfg LoaderConfig[T]) (*Loader[T], error) {
	if ds == nil {
		return nil, fmt.Errorf("data.NewLoader: nil dataset")
	}
	if err := cfg.validate("data.NewLoader"); err != nil {
		return nil, err
	}
	n := ds.Len()
	if n <= 0 {
		return nil, fmt.Errorf("data.NewLoader: empty dataset (Len() = %d)", n)
	}
	l := &Loader[T]{ds: ds, n: n, cfg: cfg}
	l.pos = newPosition(cfg.Seed, l.stepsPerEpoch)
	if l.stepsPerEpoch(1) <= 0 {
		return nil, fmt.Errorf("data.NewLoader: %d examples make no full batch of %d and DropLast is set", n, cfg.BatchSize)
	}
	return l, nil
}

func (l *Loader[T]) sampler(numReplicas int, seed int64) DistributedSampler {
	return DistributedSampler{Len: l.n, NumReplicas: numReplicas, Shuffle: l.cfg.Shuffle, Seed: seed, DropLast: l.cfg.DropLast}
}

func (l *Loader[T]) stepsPerEpoch(numReplicas int) int {
	ns, b := l.sampler(numReplicas, 0).NumSamples(), l.cfg.BatchSize
	if l.cfg.DropLast {
		return ns / b
	}
	return (ns + b - 1) / b
}

// Distribute splits the data over numReplicas replicas (devices x processes), of which this
// process feeds localRanks (one batch per local rank in every Step, in that order). More
// replicas than examples is allowed: the sampler pads by wrapping (see DistributedSampler),
// unless DropLast leaves no step, which is an error. A position restored mid-epoch can only
// continue with the replica count it was saved with.
func (l *Loader[T]) Distribute(numReplicas int, localRanks []int) error {
	return l.pos.distribute(numReplicas, localRanks)
}

// BatchSize is the per-replica batch size: the first axis of every tensor of a Batch.
func (l *Loader[T]) BatchSize() int { return l.cfg.BatchSize }

// BatchesPerEpoch is the number of steps of one epoch with the current replica count.
func (l *Loader[T]) BatchesPerEpoch() int {
	l.pos.mu.Lock()
	r := l.pos.numReplicas
	l.pos.mu.Unlock()
	return l.stepsPerEpoch(r)
}

// State returns the loader's position, to be saved with a checkpoint. A step counts as
// consumed once it has been handed out by Epoch; after the last step of an epoch the position
// is the start of the next one.
func (l *Loader[T]) State() LoaderState { return l.pos.state() }

// Restore moves the loader to a saved position (and takes its seed). The next call to Epoch
// continues that epoch after its StepsConsumed steps.
func (l *Loader[T]) Restore(st LoaderState) error { return l.pos.restore(st) }

// SetEpoch moves the loader to the start of the given epoch. It is rarely needed: the epoch
// advances by itself at the end of each pass.
func (l *Loader[T]) SetEpoch(epoch int) { l.pos.setEpoch(epoch) }

// Epoch yields the remaining steps of the current epoch (all of them unless the loader was
// stopped or restored mid-epoch), then moves to the next epoch. Stopping the loop early keeps
// the position: the next call continues after the last step handed out. An error (a dataset
// read, a collate failure) ends the pass without consuming the failed step.
func (l *Loader[T]) Epoch() iter.Seq2[*GlobalBatch, error] {
	return func(yield func(*GlobalBatch, error) bool) {
		ps, err := l.pos.begin()
		if err != nil {
			yield(nil, err)
			return
		}
		s := l.sampler(ps.numReplicas, ps.seed)
		order, numSamples := s.Order(ps.epoch), s.NumSamples()
		produce := func(emit func(job) bool) error {
			for t := ps.start; t < ps.steps; t++ {
				if !emit(func() (*GlobalBatch, error) { return l.step(ps, order, numSamples, t) }) {
					return nil
				}
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

// step builds global step t: one batch per local replica.
func (l *Loader[T]) step(ps pass, order []int, numSamples, t int) (*GlobalBatch, error) {
	bs, r := l.cfg.BatchSize, ps.numReplicas
	st := &GlobalBatch{Epoch: ps.epoch, Index: t, Shards: make([]*Batch, len(ps.localRanks))}
	for j, rank := range ps.localRanks {
		b, examples := newBatch(bs), make([]T, bs)
		for k := range bs {
			i := t*bs + k // the i-th sample of this replica
			if i >= numSamples {
				// Short last batch: repeat the first example (k > 0 here, as t < steps).
				examples[k], b.Indices[k], b.Positions[k] = examples[0], b.Indices[0], -1
				continue
			}
			p := rank + i*r // its position in the epoch order: order[rank::r][i]
			ex, err := l.ds.Get(order[p])
			if err != nil {
				return nil, fmt.Errorf("data: epoch %d step %d replica %d: example %d: %w", ps.epoch, t, rank, order[p], err)
			}
			examples[k], b.Indices[k], b.Real[k], b.Positions[k] = ex, order[p], p < l.n, p
			if p >= l.n {
				b.Positions[k] = -1 // wrap-around padding from the sampler
			}
		}
		if err := collateBatch(b, examples, l.cfg.Collate); err != nil {
			return nil, fmt.Errorf("data: epoch %d step %d replica %d: %w", ps.epoch, t, rank, err)
		}
		st.Shards[j] = b
	}
	return st, nil
}

var (
	_ Source = (*Loader[Labeled])(nil)
	_ Source = (*StreamLoader[Labeled])(nil)
)
