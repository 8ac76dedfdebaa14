package data

import (
	"errors"
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
	// DDP: the global batch is BatchSize x replicas, so it grows with the devices. Set it or
	// GlobalBatchSize, not both.
	BatchSize int
	// GlobalBatchSize fixes the global batch instead: each global batch holds GlobalBatchSize
	// consecutive examples of the epoch's order (G), whatever the replica count R, and every
	// replica gets a contiguous share of S = ceil(G/R) slots; the last replicas' shares are
	// completed with masked slots (S*R - G of them, at most R-1), so every batch has S slots.
	// The same G examples form global batch t on any number of devices and processes, so the
	// updates (a mean over the real examples) are the same on any topology. It must be >= R
	// (Distribute fails otherwise, naming both numbers).
	//
	// Worked example, N = 20 examples, G = 8, R = 3 replicas, no shuffle:
	//
	//	S = ceil(8/3) = 3 slots per replica; ceil(20/8) = 3 global batches (DropLast: floor, 2)
	//	global batch 1 (positions 0-7):   replica 0 = 0 1 2,    replica 1 = 3 4 5,  replica 2 = 6 7 *
	//	global batch 2 (positions 8-15):  replica 0 = 8 9 10,   replica 1 = 11 12 13, replica 2 = 14 15 *
	//	global batch 3 (positions 16-19): replica 0 = 16 17 18, replica 1 = 19 * *, replica 2 = * * *
	//	                                  (* masked, Real = false; DropLast leaves out 16-19)
	//
	// On R = 2 the same run has S = 4: global batch 1 is replica 0 = 0 1 2 3, replica 1 = 4 5 6 7.
	// The 16 examples on 3 replicas of the issue that asked for this are 6 + 6 + 4, 2 masked.
	// Without DropLast the epoch's last global batch holds the N mod G remaining examples (the
	// replicas past them get only masked slots); DropLast leaves it out, but the shares of a
	// G that R does not divide still have masked slots.
	GlobalBatchSize int
	// Shuffle draws a new order every epoch (seeded with Seed + epoch); see DistributedSampler.
	// Streaming datasets cannot be shuffled.
	Shuffle bool
	// Seed seeds the shuffle. Restore replaces it with the saved one.
	Seed int64
	// DropLast leaves out the tail of the epoch instead of padding it: with BatchSize, the
	// sampler drops the examples that would need wrap-around padding and the loader drops the
	// last short global batch, so every slot of every batch is a real example; with
	// GlobalBatchSize, the last short global batch is dropped. Without it nothing is left out:
	// padding slots complete the epoch, marked Real = false.
	DropLast bool
	// Workers is the number of goroutines that read and collate global batches ahead of the
	// consumer (up to 2 x Workers in advance); they are still delivered in order. 0 builds each
	// global batch on the consumer's goroutine when it is asked for.
	Workers int
	// Collate makes the tensors of a global batch (see CollateFunc). It is required.
	Collate CollateFunc[T]
	// Augment, when set, transforms each example before Collate (on the workers, with
	// Workers > 0), given its ExampleKey: random augmentations drawn from key.Rand() are then
	// the same on every topology and worker count, and after a resume. It returns a new
	// example and leaves its argument as it was: a padding slot may share it.
	Augment func(example T, key ExampleKey) (T, error)
	// OnSkip, when set, is told of each example left out because Dataset.Get or Augment
	// returned a Skip error (its index and the error), from the workers' goroutines: it must
	// be safe for concurrent use. The loaders count them either way (Skipped).
	OnSkip func(index int, err error)
}

func (c LoaderConfig[T]) validate(caller string) error {
	switch {
	case c.BatchSize > 0 && c.GlobalBatchSize > 0:
		return fmt.Errorf("%s: LoaderConfig.BatchSize = %d and GlobalBatchSize = %d are both set; set one: BatchSize "+
			"per device (the global batch grows with the devices) or GlobalBatchSize for all of them", caller, c.BatchSize, c.GlobalBatchSize)
	case c.GlobalBatchSize < 0:
		return fmt.Errorf("%s: LoaderConfig.GlobalBatchSize = %d, want > 0", caller, c.GlobalBatchSize)
	case c.GlobalBatchSize == 0 && c.BatchSize <= 0:
		return fmt.Errorf("%s: LoaderConfig.BatchSize = %d, want > 0 (or set GlobalBatchSize instead)", caller, c.BatchSize)
	case c.GlobalBatchSize > 0 && c.BatchSize < 0:
		return fmt.Errorf("%s: LoaderConfig.BatchSize = %d, want 0 with GlobalBatchSize", caller, c.BatchSize)
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
	cfg   LoaderConfig[T]
	pos   *position
	skips *skips
}

// newLoaderBase is the part of NewLoader and NewStreamLoader that is the same for both; n is
// the number of examples.
func newLoaderBase[T any](caller string, n int, cfg LoaderConfig[T]) (loaderBase[T], error) {
	lay := layout{n: n, batch: cfg.BatchSize, global: cfg.GlobalBatchSize, dropLast: cfg.DropLast}
	if lay.batchesFrom(0, 1) <= 0 {
		return loaderBase[T]{}, fmt.Errorf("%s: %d examples make no full batch of %d and LoaderConfig.DropLast is set; "+
			"lower the batch size or unset DropLast", caller, n, lay.perGlobal(1))
	}
	return loaderBase[T]{cfg: cfg, pos: newPosition(cfg.Seed, lay), skips: &skips{onSkip: cfg.OnSkip}}, nil
}

// Distribute splits the data over numReplicas replicas (devices x processes), of which this
// process feeds the replicas listed in replicas (one batch each in every GlobalBatch, in that
// order). More replicas than examples is allowed: the replicas past the data get padding (see
// DistributedSampler), unless DropLast leaves no global batch, which is an error; with
// GlobalBatchSize, more replicas than GlobalBatchSize is an error. A position restored
// mid-epoch continues on any replica count with the rest of the epoch (see Restore).
func (l *loaderBase[T]) Distribute(numReplicas int, replicas []int) error {
	return l.pos.distribute(numReplicas, replicas)
}

// BatchSize is the per-replica batch size: the first axis of every tensor of a Batch. With
// GlobalBatchSize it is the share ceil(GlobalBatchSize / replicas) of the current split.
func (l *loaderBase[T]) BatchSize() int {
	l.pos.mu.Lock()
	r := l.pos.numReplicas
	l.pos.mu.Unlock()
	return l.pos.lay.share(r)
}

// FixedGlobalBatchSize is LoaderConfig.GlobalBatchSize: the global batch shared out over the
// replicas whatever their count, or 0 with per-device batches (LoaderConfig.BatchSize).
func (l *loaderBase[T]) FixedGlobalBatchSize() int { return l.pos.lay.global }

// GlobalBatchSize is the number of examples of the epoch's order in one global batch of the
// current split: LoaderConfig.GlobalBatchSize, or BatchSize x replicas without it.
func (l *loaderBase[T]) GlobalBatchSize() int {
	l.pos.mu.Lock()
	r := l.pos.numReplicas
	l.pos.mu.Unlock()
	return l.pos.lay.perGlobal(r)
}

// BatchesPerEpoch is the number of global batches of a whole epoch with the current replica
// count; every replica gets that many batches. (An epoch resumed mid-way on another replica
// count with per-device batches has the count of its rest re-split, see Restore.)
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
// continues that epoch after its BatchesConsumed global batches, on any replica count: the
// rest of the epoch is the epoch's order from ExamplesConsumed on, each remaining example
// exactly once and in that order. With GlobalBatchSize the global batches are those of the
// uninterrupted run whatever the count. With per-device batches on the count the position was
// reached with they are too; on another count R' the rest is split as a fresh epoch of the
// remaining examples would be (interleaved over R', wrap-around padding), so the epoch has
// another number of global batches (and with DropLast up to R' x BatchSize - 1 more examples
// are left out). A mid-epoch position continues only with the GlobalBatchSize (or per-device
// batches) it was saved with: otherwise Restore, Distribute or Epoch fails naming both. A
// state saved before ExamplesConsumed existed continues, as it did then, only with the
// replica count it was reached with.
func (l *loaderBase[T]) Restore(st LoaderState) error { return l.pos.restore(st) }

// SetEpoch moves the loader to the start of the given epoch. It is rarely needed: the epoch
// advances by itself at the end of each pass.
func (l *loaderBase[T]) SetEpoch(epoch int) { l.pos.setEpoch(epoch) }

// globalBatchSlots produces the global batches of a pass: for each, the examples of all local
// replicas' batches together (replica after replica) and the batches with their slots
// (Real, Indices, Positions) filled in, through emit.
// out marks the slots of examples left out (Skip), which hold a stand-in.
type globalBatchSlots[T any] func(ps pass, emit func(index int, build func() ([]T, []*Batch, []bool, error)) bool) error

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
			return produce(ps, func(index int, build func() ([]T, []*Batch, []bool, error)) bool {
				return emit(func() (*GlobalBatch, error) {
					examples, batches, out, err := build()
					if err == nil {
						err = augment(examples, batches, out, ps.seed, ps.epoch, l.cfg.Augment, l.skips)
					}
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
		return nil, fmt.Errorf("data: NewLoader: nil dataset")
	}
	if err := cfg.validate("data: NewLoader"); err != nil {
		return nil, err
	}
	n := ds.Len()
	if n <= 0 {
		return nil, fmt.Errorf("data: NewLoader: empty dataset (Len() = %d)", n)
	}
	l := &Loader[T]{ds: ds, n: n}
	var err error
	if l.loaderBase, err = newLoaderBase("data: NewLoader", n, cfg); err != nil {
		return nil, err
	}
	return l, nil
}

func (l *Loader[T]) sampler(numReplicas int, seed int64) DistributedSampler {
	return DistributedSampler{Len: l.n, NumReplicas: numReplicas, Shuffle: l.cfg.Shuffle, Seed: seed, DropLast: l.cfg.DropLast}
}

// Epoch yields the remaining global batches of the current epoch (all of them unless the
// loader was stopped or restored mid-epoch), then moves to the next epoch. Stopping the loop
// early keeps the position: the next call continues after the last global batch handed out.
// An error (a dataset read, a collate failure) ends the pass without consuming the failed
// global batch.
func (l *Loader[T]) Epoch() iter.Seq2[*GlobalBatch, error] {
	return l.epoch(func(ps pass, emit func(int, func() ([]T, []*Batch, []bool, error)) bool) error {
		perm := l.sampler(ps.numReplicas, ps.seed).perm(ps.epoch)
		for t := ps.start; t < ps.batches; t++ {
			if !emit(t, func() ([]T, []*Batch, []bool, error) { return l.slots(ps, perm, t) }) {
				return nil
			}
		}
		return nil
	})
}

// slots gathers the examples of global batch t: one batch per local replica. A slot past the
// real examples is the sampler's wrap-around padding (per-device batches, within the
// replicas' equal shares of the rest of the epoch) or a filler that repeats the batch's first
// example (or, for a batch with no real example, the global batch's first).
func (l *Loader[T]) slots(ps pass, perm []int, t int) ([]T, []*Batch, []bool, error) {
	lay, r := l.pos.lay, ps.numReplicas
	sampled := ps.base + (l.n-ps.base+r-1)/r*r // end of the wrap-around padding (per-device batches)
	first, _ := ps.slot(lay, t, 0, 0)
	return dealSlots(lay, ps, t, l.skips, func(rank, k, p int, inShare bool) (ex T, index int, isReal, repeat bool, err error) {
		isReal = inShare && p < l.n
		switch {
		case isReal || (lay.global == 0 && p < sampled):
			index = perm[p%l.n]
		case k > 0:
			return ex, 0, false, true, nil
		default:
			index = perm[first]
		}
		if ex, err = l.ds.Get(index); err != nil {
			err = fmt.Errorf("replica %d: example %d: %w", rank, index, err)
		}
		return ex, index, isReal, false, err
	})
}

// dealSlots builds the batches of global batch t for the local replicas, the part Loader and
// StreamLoader share: slot k of replica rank, at position p of the pass (inShare: p is in the
// replica's share of the global batch), holds the example fill returns with its index, and is
// real or not (a position of -1); repeat fills it instead with a copy of the batch's first
// example (k > 0 only). An example whose fill fails with a Skip error is left out: its slot
// (and the slots repeating it) is masked and marked in out, holding a stand-in, and skips
// counts it.
func dealSlots[T any](lay layout, ps pass, t int, skips *skips, fill func(rank, k, p int, inShare bool) (ex T, index int, isReal, repeat bool, err error)) ([]T, []*Batch, []bool, error) {
	bs := lay.share(ps.numReplicas)
	examples, batches := make([]T, 0, bs*len(ps.replicas)), make([]*Batch, len(ps.replicas))
	var out []bool // allocated at the first example left out
	mark := func(slot int) {
		if out == nil {
			out = make([]bool, cap(examples))
		}
		out[slot] = true
	}
	for j, rank := range ps.replicas {
		b, firstSlot := newBatch(bs), len(examples)
		for k := range bs {
			p, inShare := ps.slot(lay, t, rank, k)
			ex, index, isReal, repeat, err := fill(rank, k, p, inShare)
			switch {
			case err != nil && errors.Is(err, ErrSkipped):
				if isReal { // a padding slot repeats an example counted where it is real
					skips.note(index, err)
				}
				mark(len(examples))
				isReal = false
			case err != nil:
				return nil, nil, nil, err
			case repeat:
				if out != nil && out[firstSlot] {
					mark(len(examples))
				}
				examples = append(examples, examples[firstSlot])
				b.Indices[k], b.Positions[k] = b.Indices[0], -1
				continue
			}
			examples = append(examples, ex)
			b.Indices[k], b.Real[k], b.Positions[k] = index, isReal, p
			if !isReal {
				b.Positions[k] = -1
			}
		}
		batches[j] = b
	}
	if out != nil {
		if err := standIns(examples, out); err != nil {
			return nil, nil, nil, err
		}
	}
	return examples, batches, out, nil
}

var (
	_ Source = (*Loader[int])(nil)
	_ Source = (*StreamLoader[int])(nil)
)
