package data

import (
	"encoding/json"
	"iter"

	"github.com/gomlx/gomlx/core/tensors"
)

// Batch is one device's share of a global batch (for training or evaluation), collated on the
// host.
//
// Every example slot carries a mask bit: Mask[i] is true for a real example and false for a
// padding slot (a duplicate added by the sampler so that every replica gets the same number of
// batches, or a filler that completes a short last batch so that XLA sees a single shape).
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

// GlobalBatch is this process's part of one global batch, what its devices run together in one
// train step (an optimizer update happens every k train steps under accumulation over k):
// Shards[r] is the batch of local replica r (one replica per device of this process); the other
// processes hold the rest of the global batch. All shards of a global batch have the same shapes.
type GlobalBatch struct {
	// Epoch and Index locate the global batch: Index counts the global batches of the epoch
	// from 0.
	Epoch, Index int
	Shards       []*Batch
}

// NumReal is the number of real (unmasked) examples of the global batch on this process.
func (gb *GlobalBatch) NumReal() int {
	n := 0
	for _, b := range gb.Shards {
		n += b.NumReal()
	}
	return n
}

// Source is what the Accelerator consumes: a loader that can be split over replicas and that
// yields, global batch after global batch, one batch per local replica. *Loader and
// *StreamLoader implement it.
type Source interface {
	// Distribute tells the source how many replicas there are in total (devices x processes)
	// and which of them are local to this process. It is called by Accelerator.Prepare.
	Distribute(numReplicas int, replicas []int) error
	// BatchSize is the per-replica (per-device) batch size: the first axis of every input.
	BatchSize() int
	// FixedGlobalBatchSize is the global batch the source shares out over the replicas
	// whatever their count (LoaderConfig.GlobalBatchSize): a run on it computes the same
	// updates on any topology. 0 when the global batch is BatchSize x replicas (per-device
	// batches, growing with the replicas).
	FixedGlobalBatchSize() int
	// BatchesPerEpoch is the number of global batches in one pass over the data, for the
	// current split (each replica gets that many batches).
	BatchesPerEpoch() int
	// Epoch returns one pass over the data, starting at the saved position if the source was
	// restored mid-epoch. The epoch number advances by itself when a pass ends.
	Epoch() iter.Seq2[*GlobalBatch, error]
	// State returns the position of the source (epoch, global batches consumed, seed), for
	// checkpoints.
	State() LoaderState
	// Restore moves the source to a saved position.
	Restore(LoaderState) error
}

// LoaderState is the resumable position of a loader: resuming at it yields exactly the
// global batches an uninterrupted run would have yielded next.
type LoaderState struct {
	// Epoch is the current epoch (0-based).
	Epoch int `json:"epoch"`
	// BatchesConsumed is how many global batches of the epoch were handed out (so, how many
	// batches each replica consumed). With gradient accumulation several make one step.
	BatchesConsumed int `json:"batches_consumed"`
	// Seed is the shuffle seed.
	Seed int64 `json:"seed"`
	// NumReplicas is the replica count the position was reached with.
	NumReplicas int `json:"num_replicas"`
	// ExamplesConsumed is the position in the epoch's global example order (the sampler's
	// order, before it is split over replicas): the examples of the epoch handed out. It is
	// what lets a position continue on another replica count: the rest of the epoch is the
	// order from there, re-split over the new count. A state without it (saved before it
	// existed, ExamplesConsumed 0 with BatchesConsumed > 0) continues only with NumReplicas
	// replicas, as it did then.
	ExamplesConsumed int `json:"examples_consumed,omitempty"`
	// GlobalBatchSize is the loader's LoaderConfig.GlobalBatchSize (0 for per-device
	// batches). A position mid-epoch continues only with the same setting.
	GlobalBatchSize int `json:"global_batch_size,omitempty"`
}

// UnmarshalJSON reads a LoaderState, including one saved before BatchesConsumed was named so
// (as "steps_consumed").
func (s *LoaderState) UnmarshalJSON(b []byte) error {
	type plain LoaderState
	var v struct {
		plain
		OldBatchesConsumed *int `json:"steps_consumed"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*s = LoaderState(v.plain)
	if v.OldBatchesConsumed != nil && s.BatchesConsumed == 0 {
		s.BatchesConsumed = *v.OldBatchesConsumed
	}
	return nil
}
