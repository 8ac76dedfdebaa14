package data

import (
	"fmt"
	"slices"
	"sync"
)

// position is the resumable state shared by Loader and StreamLoader: how the data is split
// over replicas, the current epoch and how many of its global batches were handed out.
type position struct {
	mu          sync.Mutex
	numReplicas int
	localRanks  []int
	distributed bool // Distribute was called (not just the default single replica)
	epoch       int
	consumed    int
	seed        int64
	posReplicas int // replica count that consumed refers to (0: unknown, e.g. an old state)
	gen         int // bumped by every change made from outside a pass
	// batchesPerEpoch is the number of global batches of an epoch over numReplicas replicas.
	batchesPerEpoch func(numReplicas int) int
}

// pass is a snapshot of the position taken when a pass starts.
type pass struct {
	epoch, start, batches, numReplicas int
	localRanks                         []int
	seed                               int64
	gen                                int
}

func newPosition(seed int64, batchesPerEpoch func(int) int) *position {
	return &position{numReplicas: 1, localRanks: []int{0}, seed: seed, batchesPerEpoch: batchesPerEpoch}
}

func (p *position) distribute(numReplicas int, localRanks []int) error {
	if numReplicas < 1 {
		return fmt.Errorf("data: Distribute(numReplicas = %d): want >= 1", numReplicas)
	}
	if len(localRanks) == 0 {
		return fmt.Errorf("data: Distribute(%d, localRanks = []): want at least one local rank", numReplicas)
	}
	seen := make(map[int]bool, len(localRanks))
	for _, r := range localRanks {
		if r < 0 || r >= numReplicas {
			return fmt.Errorf("data: Distribute: local rank %d not in [0, %d)", r, numReplicas)
		}
		if seen[r] {
			return fmt.Errorf("data: Distribute: local rank %d given twice in %v", r, localRanks)
		}
		seen[r] = true
	}
	if n := p.batchesPerEpoch(numReplicas); n <= 0 {
		return fmt.Errorf("data: Distribute(%d replicas): no global batch left in an epoch (too few examples for the "+
			"batch size with DropLast); lower LoaderConfig.BatchSize or unset LoaderConfig.DropLast", numReplicas)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.checkLocked(numReplicas); err != nil {
		return err
	}
	p.numReplicas, p.localRanks, p.distributed = numReplicas, slices.Clone(localRanks), true
	p.gen++
	return nil
}

// checkLocked verifies that the saved position can be continued with numReplicas replicas.
func (p *position) checkLocked(numReplicas int) error {
	if p.consumed == 0 {
		return nil
	}
	if p.posReplicas != 0 && p.posReplicas != numReplicas {
		return fmt.Errorf("data: the loader position (epoch %d after %d global batches) was reached with %d replicas and cannot "+
			"continue mid-epoch with %d; resume with %d replicas or from the start of an epoch",
			p.epoch+1, p.consumed, p.posReplicas, numReplicas, p.posReplicas)
	}
	if batches := p.batchesPerEpoch(numReplicas); p.consumed > batches {
		return fmt.Errorf("data: the loader position (epoch %d after %d global batches) is past the end of the epoch "+
			"(%d global batches); restore a state saved by this loader over the same data", p.epoch+1, p.consumed, batches)
	}
	return nil
}

func (p *position) state() LoaderState {
	p.mu.Lock()
	defer p.mu.Unlock()
	return LoaderState{Epoch: p.epoch, BatchesConsumed: p.consumed, Seed: p.seed, NumReplicas: p.numReplicas}
}

func (p *position) restore(st LoaderState) error {
	if st.Epoch < 0 || st.BatchesConsumed < 0 || st.NumReplicas < 0 {
		return fmt.Errorf("data: Restore(%+v): negative field", st)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	epoch, consumed, seed, posReplicas := p.epoch, p.consumed, p.seed, p.posReplicas
	p.epoch, p.consumed, p.seed, p.posReplicas = st.Epoch, st.BatchesConsumed, st.Seed, st.NumReplicas
	if p.distributed {
		// Otherwise the check waits for Distribute (Restore may come before Prepare).
		if err := p.checkLocked(p.numReplicas); err != nil {
			p.epoch, p.consumed, p.seed, p.posReplicas = epoch, consumed, seed, posReplicas
			return err
		}
	}
	p.gen++
	return nil
}

func (p *position) setEpoch(epoch int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.epoch, p.consumed = epoch, 0
	p.gen++
}

// begin snapshots the position at the start of a pass.
func (p *position) begin() (pass, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.checkLocked(p.numReplicas); err != nil {
		return pass{}, err
	}
	batches := p.batchesPerEpoch(p.numReplicas)
	if p.consumed >= batches { // a restored end-of-epoch position
		p.epoch, p.consumed = p.epoch+1, 0
	}
	p.posReplicas = p.numReplicas
	return pass{epoch: p.epoch, start: p.consumed, batches: batches, numReplicas: p.numReplicas,
		localRanks: slices.Clone(p.localRanks), seed: p.seed, gen: p.gen}, nil
}

// handOut records that global batch index of the pass was handed out; after the last one of
// the epoch the position moves to the start of the next epoch.
func (p *position) handOut(ps pass, index int) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.gen != ps.gen {
		return fmt.Errorf("data: the loader position was changed (SetEpoch, Restore or Distribute) during a pass")
	}
	p.consumed = index + 1
	if p.consumed >= ps.batches {
		p.epoch, p.consumed = ps.epoch+1, 0
	}
	return nil
}
