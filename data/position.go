package data

import (
	"fmt"
	"slices"
	"sync"
)

// layout is how the examples of an epoch's global order are cut into global batches and
// dealt to the replicas' batches. A pass starts at a position base of the order (0 at the
// start of an epoch, the examples already consumed after a resume on another replica count):
// its global batch t holds the perGlobal(R) positions from base + t*perGlobal(R).
//
// Per-device batches (batch B > 0, global 0): replica r's slot k of global batch t is position
// base + t*B*R + k*R + r, DistributedSampler's interleaving (replica r reads r, r+R, ...).
// Global batches (global G > 0): replica r's slot k is position base + t*G + r*S + k with
// S = ceil(G/R), a contiguous share; slots with r*S + k >= G are masked.
type layout struct {
	n, batch, global int // examples of an epoch, BatchSize, GlobalBatchSize (one of the two is 0)
	dropLast         bool
}

// share is the number of slots of every replica's batch over r replicas.
func (g layout) share(r int) int {
	if g.global > 0 {
		return (g.global + r - 1) / r
	}
	return g.batch
}

// perGlobal is the number of positions of the epoch's order one global batch covers.
func (g layout) perGlobal(r int) int {
	if g.global > 0 {
		return g.global
	}
	return g.batch * r
}

// batchesFrom is the number of global batches of a pass that starts at position base.
func (g layout) batchesFrom(base, r int) int {
	rem, per := max(g.n-base, 0), g.perGlobal(r)
	if g.dropLast {
		return rem / per
	}
	return (rem + per - 1) / per
}

// slot is the position in the epoch's order of slot k of replica's batch in global batch t of
// a pass from base over r replicas, and whether the slot is part of the replica's share (false
// for the masked slots past a global batch's G examples); it is real if also p < n.
func (g layout) slot(base, t, r, replica, k int) (p int, inShare bool) {
	if g.global > 0 {
		off := replica*g.share(r) + k
		return base + t*g.global + off, off < g.global
	}
	return base + t*g.batch*r + k*r + replica, true
}

// position is the resumable state shared by Loader and StreamLoader: how the data is split
// over replicas, the current epoch, how many of its global batches were handed out and where
// the current pass started in the epoch's global example order.
type position struct {
	mu          sync.Mutex
	lay         layout
	numReplicas int
	replicas    []int
	distributed bool // Distribute was called (not just the default single replica)
	epoch       int
	consumed    int // global batches of the epoch handed out
	seed        int64
	posReplicas int  // replica count that consumed refers to (0: unknown, e.g. an old state)
	base        int  // position in the epoch's order where the current pass layout starts
	segStart    int  // global batches of the epoch handed out before base
	legacy      bool // restored from a state without ExamplesConsumed: only posReplicas continues it
	savedGlobal int  // GlobalBatchSize of a restored mid-epoch state
	gen         int  // bumped by every change made from outside a pass
}

// pass is a snapshot of the position taken when a pass starts.
type pass struct {
	epoch, start, batches, numReplicas int
	base, segStart                     int // global batch t is batch t-segStart of the layout from base
	replicas                           []int
	seed                               int64
	gen                                int
}

// slot is layout.slot for global batch t of the pass.
func (ps pass) slot(g layout, t, replica, k int) (int, bool) {
	return g.slot(ps.base, t-ps.segStart, ps.numReplicas, replica, k)
}

func newPosition(seed int64, lay layout) *position {
	return &position{lay: lay, numReplicas: 1, replicas: []int{0}, seed: seed, savedGlobal: lay.global}
}

// batchesPerEpoch is the number of global batches of a whole epoch over r replicas.
func (p *position) batchesPerEpoch(r int) int { return p.lay.batchesFrom(0, r) }

func (p *position) distribute(numReplicas int, replicas []int) error {
	if numReplicas < 1 {
		return fmt.Errorf("data: Distribute(numReplicas = %d): want >= 1", numReplicas)
	}
	if len(replicas) == 0 {
		return fmt.Errorf("data: Distribute(%d, replicas = []): want at least one replica", numReplicas)
	}
	seen := make(map[int]bool, len(replicas))
	for _, r := range replicas {
		if r < 0 || r >= numReplicas {
			return fmt.Errorf("data: Distribute: replica %d not in [0, %d)", r, numReplicas)
		}
		if seen[r] {
			return fmt.Errorf("data: Distribute: replica %d given twice in %v", r, replicas)
		}
		seen[r] = true
	}
	if g := p.lay.global; g > 0 && g < numReplicas {
		return fmt.Errorf("data: Distribute: LoaderConfig.GlobalBatchSize = %d is smaller than the %d replicas; "+
			"every replica needs at least one example of each global batch: set GlobalBatchSize >= %d or use fewer devices",
			g, numReplicas, numReplicas)
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
	p.numReplicas, p.replicas, p.distributed = numReplicas, slices.Clone(replicas), true
	p.gen++
	return nil
}

// examplesLocked is the position in the epoch's global order: the examples of the epoch
// handed out (padding not counted).
func (p *position) examplesLocked() int {
	if p.consumed == 0 || p.legacy {
		return 0
	}
	r := max(p.posReplicas, 1)
	return min(p.base+(p.consumed-p.segStart)*p.lay.perGlobal(r), p.lay.n)
}

// checkLocked verifies that the saved position can be continued with numReplicas replicas.
func (p *position) checkLocked(numReplicas int) error {
	if p.consumed == 0 {
		return nil
	}
	where := fmt.Sprintf("the loader position (epoch %d after %d global batches)", p.epoch+1, p.consumed)
	if p.legacy {
		// A state saved before the position in the epoch's order was recorded: the old rule.
		if p.lay.global > 0 {
			return fmt.Errorf("data: %s was saved by an older goaccel without its place in the epoch's example order "+
				"and cannot continue mid-epoch with LoaderConfig.GlobalBatchSize; resume with BatchSize and %d replicas, "+
				"or from the start of an epoch", where, p.posReplicas)
		}
		if p.posReplicas != 0 && p.posReplicas != numReplicas {
			return fmt.Errorf("data: %s was reached with %d replicas and cannot "+
				"continue mid-epoch with %d; resume with %d replicas or from the start of an epoch",
				where, p.posReplicas, numReplicas, p.posReplicas)
		}
		if batches := p.batchesPerEpoch(numReplicas); p.consumed > batches {
			return fmt.Errorf("data: %s is past the end of the epoch "+
				"(%d global batches); restore a state saved by this loader over the same data", where, batches)
		}
		return nil
	}
	if p.savedGlobal != p.lay.global {
		return fmt.Errorf("data: %s was saved with %s but this loader has %s; a global batch "+
			"cannot change mid-epoch: resume with the saved setting, or from the start of an epoch",
			where, describeGlobal(p.savedGlobal), describeGlobal(p.lay.global))
	}
	if p.base > p.lay.n || (p.lay.global > 0 && p.consumed > p.batchesPerEpoch(numReplicas)) {
		return fmt.Errorf("data: %s (%d examples) is past the end of the epoch (%d examples, %d global batches); "+
			"restore a state saved by this loader over the same data", where, p.base, p.lay.n, p.batchesPerEpoch(numReplicas))
	}
	return nil
}

func describeGlobal(g int) string {
	if g == 0 {
		return "per-device batches (BatchSize, no GlobalBatchSize)"
	}
	return fmt.Sprintf("GlobalBatchSize %d", g)
}

func (p *position) state() LoaderState {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.numReplicas
	if p.consumed > 0 && p.posReplicas != 0 {
		r = p.posReplicas
	}
	return LoaderState{Epoch: p.epoch, BatchesConsumed: p.consumed, Seed: p.seed, NumReplicas: r,
		ExamplesConsumed: p.examplesLocked(), GlobalBatchSize: p.lay.global}
}

func (p *position) restore(st LoaderState) error {
	if st.Epoch < 0 || st.BatchesConsumed < 0 || st.NumReplicas < 0 || st.ExamplesConsumed < 0 || st.GlobalBatchSize < 0 {
		return fmt.Errorf("data: Restore(%+v): negative field", st)
	}
	if st.BatchesConsumed == 0 && st.ExamplesConsumed > 0 {
		return fmt.Errorf("data: Restore(%+v): ExamplesConsumed without BatchesConsumed", st)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	epoch, consumed, seed, posReplicas := p.epoch, p.consumed, p.seed, p.posReplicas
	base, segStart, savedGlobal, legacy := p.base, p.segStart, p.savedGlobal, p.legacy
	p.epoch, p.consumed, p.seed, p.posReplicas = st.Epoch, st.BatchesConsumed, st.Seed, st.NumReplicas
	p.base, p.segStart, p.savedGlobal = st.ExamplesConsumed, st.BatchesConsumed, st.GlobalBatchSize
	p.legacy = st.BatchesConsumed > 0 && st.ExamplesConsumed == 0
	if p.legacy || st.BatchesConsumed == 0 {
		p.base, p.segStart = 0, 0
	}
	if p.distributed {
		// Otherwise the check waits for Distribute (Restore may come before Prepare).
		if err := p.checkLocked(p.numReplicas); err != nil {
			p.epoch, p.consumed, p.seed, p.posReplicas = epoch, consumed, seed, posReplicas
			p.base, p.segStart, p.savedGlobal, p.legacy = base, segStart, savedGlobal, legacy
			return err
		}
	}
	p.gen++
	return nil
}

// startEpochLocked moves to the start of epoch e.
func (p *position) startEpochLocked(e int) {
	p.epoch, p.consumed, p.base, p.segStart, p.legacy = e, 0, 0, 0, false
	p.savedGlobal = p.lay.global
}

func (p *position) setEpoch(epoch int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.startEpochLocked(epoch)
	p.gen++
}

// begin snapshots the position at the start of a pass. A pass on another replica count than
// the position's continues from the examples consumed, re-split over the new count.
func (p *position) begin() (pass, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.checkLocked(p.numReplicas); err != nil {
		return pass{}, err
	}
	r := p.numReplicas
	switch {
	case p.consumed == 0:
		p.startEpochLocked(p.epoch)
	case p.legacy: // checked: the same replica count, from the start of the epoch
		p.base, p.segStart, p.legacy, p.savedGlobal = 0, 0, false, p.lay.global
	case p.posReplicas != r:
		p.base, p.segStart = p.examplesLocked(), p.consumed
	}
	batches := p.segStart + p.lay.batchesFrom(p.base, r)
	if p.consumed >= batches { // a restored end-of-epoch position
		p.startEpochLocked(p.epoch + 1)
		batches = p.batchesPerEpoch(r)
	}
	p.posReplicas = r
	return pass{epoch: p.epoch, start: p.consumed, batches: batches, numReplicas: r, base: p.base, segStart: p.segStart,
		replicas: slices.Clone(p.replicas), seed: p.seed, gen: p.gen}, nil
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
		p.startEpochLocked(ps.epoch + 1)
	}
	return nil
}
