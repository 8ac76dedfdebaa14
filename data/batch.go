package data

import (
	"iter"

	"github.com/gomlx/gomlx/core/tensors"
)

// Batch is one device's share of a training or evaluation step, collated on the host.
//
// Every example slot carries a mask bit: Mask[i] is true for a real example and false for a
// padding slot (a duplicate added by the sampler so that every replica does the same number of
// steps, or a filler that completes a short last batch so that XLA sees a single shape).
// Metrics and losses that honour the mask count each real example exactly once.
type Batch struct {
	// Inputs are the model inputs, each with the batch on axis 0 (for example token ids,
	// attention mask and token type ids, all [B, L] int32).
	Inputs []*tensors.Tensor
	// Labels holds one label per example, shape [B] (nil for unlabeled data).
	Labels *tensors.Tensor
	// Mask is a [B] bool tensor: true for real examples, false for padding.
	Mask *tensors.Tensor
	// Real mirrors Mask on the host, so the host can drop padding without reading the tensor.
	Real []bool
	// Indices are the dataset indices of the examples in the batch (padding repeats an index).
	Indices []int
	// Positions are the positions of the examples in the epoch's order (before sharding over
	// replicas), so results gathered from all replicas can be put back in global order.
	// Padding slots hold -1.
	Positions []int
}

// Size is the number of example slots in the batch, padding included.
func (b *Batch) Size() int { return len(b.Indices) }

// NumReal is the number of real (unmasked) examples in the batch.
func (b *Batch) NumReal() int {
	n := 0
	for _, r := range b.Real {
		if r {
			n++
		}
	}
	return n
}

// GlobalBatch is one global step: Shards[r] is the batch of local replica r (one replica per device
// of this process). All shards of a step have the same shapes.
type GlobalBatch struct {
	// Epoch and Index locate the step: Index counts the steps of the epoch from 0.
	Epoch, Index int
	Shards       []*Batch
}

// Source is what the Accelerator consumes: a loader that can be split over replicas and that
// yields, step after step, one batch per local replica. *Loader implements it.
type Source interface {
	// Distribute tells the source how many replicas there are in total (devices x processes)
	// and which of them are local to this process. It is called by Accelerator.Prepare.
	Distribute(numReplicas int, localRanks []int) error
	// BatchSize is the per-replica (per-device) batch size: the first axis of every input.
	BatchSize() int
	// BatchesPerEpoch is the number of steps in one pass over the data, for the current split.
	BatchesPerEpoch() int
	// Epoch returns one pass over the data, starting at the saved position if the source was
	// restored mid-epoch. The epoch number advances by itself when a pass ends.
	Epoch() iter.Seq2[*GlobalBatch, error]
	// State returns the position of the source (epoch, steps consumed, seed), for checkpoints.
	State() LoaderState
	// Restore moves the source to a saved position.
	Restore(LoaderState) error
}

// LoaderState is the resumable position of a loader: resuming at it yields exactly the
// steps an uninterrupted run would have yielded next.
type LoaderState struct {
	Epoch         int   `json:"epoch"`
	StepsConsumed int   `json:"steps_consumed"`
	Seed          int64 `json:"seed"`
	NumReplicas   int   `json:"num_replicas"`
}
