package data

import (
	"fmt"
	"iter"

	"github.com/gomlx/gomlx/core/tensors"
)

// CollateFunc turns examples into host tensors, each with the examples on axis 0: the model
// inputs (for BERT: input ids, attention mask and token type ids, int32 [N, L]) and the labels
// ([N], or nil).
//
// The loaders call it once per global batch with the examples of all the local devices'
// batches together, device after device (N = BatchSize x local devices), padding slots
// included (they repeat a real example), and split the tensors along axis 0 into the
// per-device batches. So a collate function that picks a length from its examples (padding to
// the longest text, or to a bucket) gives every device of a global batch the same shapes. With
// Workers > 1 it is called from several goroutines at once and must be safe for that.
type CollateFunc[T any] func(examples []T) (inputs []*tensors.Tensor, labels *tensors.Tensor, err error)

// LoaderConfig configures NewLoader and NewStreamLoader.
type LoaderConfig[T any] struct {
	// BatchSize is the number of examples in the batch of each replica (device), as in PyTorch
	// DDP: the global batch is BatchSize x replicas. It must be > 0.
	BatchSize int
	// Shuffle draws a new order every epoch (seeded with Seed + epoch); see DistributedSampler.
	// Streaming datasets cannot be shuffled.
	Shuffle bool
	// Seed seeds the shuffle. Restore replaces it with the saved one.
	Seed int64
	// DropLast leaves out the tail of the epoch instead of padding it: the sampler drops the
	// examples that would need wrap-around padding and the loader drops the last short global
	// batch, so every slot of every batch is a real example. Without it nothing is left out:
	// padding slots complete the epoch, marked Real = false.
	DropLast bool
	// Workers is the number of goroutines that read and collate global batches ahead of the
	// consumer (up to 2 x Workers in advance); they are still delivered in order. 0 builds each
	// global batch on the consumer's goroutine when it is asked for.
	Workers int
	// Collate makes the tensors of a global batch (see CollateFunc). It is required.
	Collate CollateFunc[T]
}

func (c LoaderConfig[T]) validate(caller string) error {
	switch {
	case c.BatchSize <= 0:
		return fmt.Errorf("%s: LoaderConfig.BatchSize = %d, want > 0", caller, c.BatchSize)
	case c.Workers < 0:
		return fmt.Errorf("%s: LoaderConfig.Workers = %d, want >= 0", caller, c.Workers)
	case c.Collate == nil:
		return fmt.Errorf("%s: LoaderConfig.Collate is nil; set it to a function that makes tensors of examples", caller)
	}
	return nil
}

// loaderBase is what Loader and StreamLoader share: the configuration, the resumable position,
// the Source methods that only read or move the position, and the loop that hands out the
// global batches of a pass.
type loaderBase[T any] struct {
	cfg LoaderConfig[T]
	pos *position
}

// newLoaderBase is the part of NewLoader and NewStreamLoader that is the same for both; n is
// the number of examples, for the error when DropLast leaves no global batch.
func newLoaderBase[T any](caller string, n int, cfg LoaderConfig[T], batchesPerEpoch func(int) int) (loaderBase[T], error) {
	if batchesPerEpoch(1) <= 0 {
		return loaderBase[T]{}, fmt.Errorf("%s: %d examples make no full batch of %d and LoaderConfig.DropLast is set; "+
			"lower BatchSize or unset DropLast", caller, n, cfg.BatchSize)
	}
	return loaderBase[T]{cfg: cfg, pos: newPosition(cfg.Seed, batchesPerEpoch)}, nil
}

// Distribute splits the data over numReplicas replicas (devices x processes), of which this
// process feeds localRanks (one batch per local rank in every GlobalBatch, in that order). More
// replicas than examples is allowed: the replicas past the data get padding (see
// DistributedSampler), unless DropLast leaves no global batch, which is an error. A position
// restored mid-epoch can only continue with the replica count it was saved with.
func (l *loaderBase[T]) Distribute(numReplicas int, localRanks []int) error {
	return l.pos.distribute(numReplicas, localRanks)
}

// BatchSize is the per-replica batch size: the first axis of every tensor of a Batch.
func (l *loaderBase[T]) BatchSize() int { return l.cfg.BatchSize }

// BatchesPerEpoch is the number of global batches of one epoch with the current replica
// count; every replica gets that many batches.
func (l *loaderBase[T]) BatchesPerEpoch() int {
	l.pos.mu.Lock()
	r := l.pos.numReplicas
	l.pos.mu.Unlock()
	return l.pos.batchesPerEpoch(r)
}

// State returns the loader's position, to be saved with a checkpoint. A global batch counts
// as consumed once it has been handed out by Epoch; after the last one of an epoch the
// position is the start of the next epoch.
func (l *loaderBase[T]) State() LoaderState { return l.pos.state() }

// Restore moves the loader to a saved position (and takes its seed). The next call to Epoch
// continues that epoch after its BatchesConsumed global batches.
func (l *loaderBase[T]) Restore(st LoaderState) error { return l.pos.restore(st) }

// SetEpoch moves the loader to the start of the given epoch. It is rarely needed: the epoch
// advances by itself at the end of each pass.
func (l *loaderBase[T]) SetEpoch(epoch int) { l.pos.setEpoch(epoch) }

// globalBatchSlots produces the global batches of a pass: for each, the examples of all local
// replicas' batches together (replica after replica) and the batches with their slots
// (Real, Indices, Positions) filled in, through emit.
type globalBatchSlots[T any] func(ps pass, emit func(index int, build func() ([]T, []*Batch, error)) bool) error

// epoch runs one pass: produce finds the examples of each global batch (on a goroutine of its
// own when Workers > 0), the workers collate them, and the global batches are handed out in
// order, each recorded in the position as it is.
func (l *loaderBase[T]) epoch(produce globalBatchSlots[T]) iter.Seq2[*GlobalBatch, error] {
	return func(yield func(*GlobalBatch, error) bool) {
		ps, err := l.pos.begin()
		if err != nil {
			yield(nil, err)
			return
		}
		jobs := func(emit func(job) bool) error {
			return produce(ps, func(index int, build func() ([]T, []*Batch, error)) bool {
				return emit(func() (*GlobalBatch, error) {
					examples, batches, err := build()
					if err == nil {
						err = collateGlobalBatch(examples, batches, l.cfg.Collate)
					}
					if err != nil {
						return nil, fmt.Errorf("data: epoch %d, global batch %d: %w", ps.epoch+1, index+1, err)
					}
					return &GlobalBatch{Epoch: ps.epoch, Index: index, Shards: batches}, nil
				})
			})
		}
		for gb, err := range ordered(jobs, l.cfg.Workers) {
			if err == nil {
				err = l.pos.handOut(ps, gb.Index)
			}
			if err != nil {
				yield(nil, err)
				return
			}
			if !yield(gb, nil) {
				return
			}
		}
	}
}

// Loader serves an indexed Dataset as a Source: per epoch, every replica gets its share of the
// DistributedSampler order, cut into batches of BatchSize, and each global batch carries one
// batch per local replica.
//
// Global batch t gives replica r samples t*B .. t*B+B-1 of the replica's share (B = BatchSize).
// Every replica has the same number of batches, BatchesPerEpoch:
//
//	ceil(NumSamples / B)      (DropLast: floor(NumSamples / B))
//
// where NumSamples is DistributedSampler.NumSamples. A short last batch is completed by
// repeating its first example, marked Real = false, so every batch has the same shapes. Padding
// slots (the sampler's wrap-around duplicates and these fillers) have Real = false, a false
// Mask and Position -1.
//
// The epoch advances by itself when a pass ends. The position is saved by State and restored
// by Restore: the global batches after a restored position are exactly those an uninterrupted
// run would have yielded. A Loader must not be iterated by two goroutines at once.
type Loader[T any] struct {
	loaderBase[T]
	ds Dataset[T]
	n  int
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
	l := &Loader[T]{ds: ds, n: n}
	l.cfg = cfg // read by batchesPerEpochOver
	var err error
	if l.loaderBase, err = newLoaderBase("data.NewLoader", n, cfg, l.batchesPerEpochOver); err != nil {
		return nil, err
	}
	return l, nil
}

func (l *Loader[T]) sampler(numReplicas int, seed int64) DistributedSampler {
	return DistributedSampler{Len: l.n, NumReplicas: numReplicas, Shuffle: l.cfg.Shuffle, Seed: seed, DropLast: l.cfg.DropLast}
}

func (l *Loader[T]) batchesPerEpochOver(numReplicas int) int {
	ns, b := l.sampler(numReplicas, 0).NumSamples(), l.cfg.BatchSize
	if l.cfg.DropLast {
		return ns / b
	}
	return (ns + b - 1) / b
}

// Epoch yields the remaining global batches of the current epoch (all of them unless the
// loader was stopped or restored mid-epoch), then moves to the next epoch. Stopping the loop
// early keeps the position: the next call continues after the last global batch handed out.
// An error (a dataset read, a collate failure) ends the pass without consuming the failed
// global batch.
func (l *Loader[T]) Epoch() iter.Seq2[*GlobalBatch, error] {
	return l.epoch(func(ps pass, emit func(int, func() ([]T, []*Batch, error)) bool) error {
		s := l.sampler(ps.numReplicas, ps.seed)
		order, numSamples := s.Order(ps.epoch), s.NumSamples()
		for t := ps.start; t < ps.batches; t++ {
			if !emit(t, func() ([]T, []*Batch, error) { return l.slots(ps, order, numSamples, t) }) {
				return nil
			}
		}
		return nil
	})
}

// slots gathers the examples of global batch t: one batch per local replica.
func (l *Loader[T]) slots(ps pass, order []int, numSamples, t int) ([]T, []*Batch, error) {
	bs, r := l.cfg.BatchSize, ps.numReplicas
	examples, batches := make([]T, 0, bs*len(ps.localRanks)), make([]*Batch, len(ps.localRanks))
	for j, rank := range ps.localRanks {
		b, first := newBatch(bs), len(examples)
		for k := range bs {
			i := t*bs + k // the i-th sample of this replica
			if i >= numSamples {
				// Short last batch: repeat the first example (k > 0 here, as t < batches).
				examples = append(examples, examples[first])
				b.Indices[k], b.Positions[k] = b.Indices[0], -1
				continue
			}
			p := rank + i*r // its position in the epoch order: order[rank::r][i]
			ex, err := l.ds.Get(order[p])
			if err != nil {
				return nil, nil, fmt.Errorf("replica %d: example %d: %w", rank, order[p], err)
			}
			examples = append(examples, ex)
			b.Indices[k], b.Real[k], b.Positions[k] = order[p], p < l.n, p
			if p >= l.n {
				b.Positions[k] = -1 // wrap-around padding from the sampler
			}
		}
		batches[j] = b
	}
	return examples, batches, nil
}

var (
	_ Source = (*Loader[int])(nil)
	_ Source = (*StreamLoader[int])(nil)
)
