package accelerator

import (
	"iter"
	"testing"

	"github.com/goaccel/goaccel/data"
	"github.com/goaccel/goaccel/internal/plugins"
	"github.com/goaccel/goaccel/internal/testutil"
	"github.com/gomlx/gomlx/core/tensors"
)

// cpuPlugin returns the XLA CPU plugin for multi-device tests. Without one, the test is
// skipped loudly — except under CI (CI set), where the plugin is part of the install and
// its absence fails the test.
func cpuPlugin(t testing.TB) string {
	t.Helper()
	var found []string
	for _, p := range plugins.Find() {
		if p.Kind == plugins.CPU {
			found = append(found, p.Path)
		}
	}
	return testutil.CPUPlugin(t, found...)
}

// newXLA returns an Accelerator on n XLA CPU devices.
func newXLA(t testing.TB, n int) *Accelerator {
	t.Helper()
	a, err := New(Config{Backend: cpuPlugin(t), Devices: n, Quiet: true, Seed: 7})
	if err != nil {
		t.Fatalf("New(%d devices): %v", n, err)
	}
	t.Cleanup(a.Close)
	return a
}

// fixedSource is a minimal data.Source over in-memory rows for the accelerator's own tests:
// no shuffling, DistributedSampler padding by wrap, and a short last batch completed with
// masked fillers. (The full loader lives in package data.)
type fixedSource struct {
	x           [][]float32
	y           []int32
	batch       int
	replicas    int
	ownReplicas []int
	epoch       int
}

func (s *fixedSource) Distribute(n int, ranks []int) error {
	s.replicas, s.ownReplicas = n, ranks
	return nil
}
func (s *fixedSource) BatchSize() int            { return s.batch }
func (s *fixedSource) FixedGlobalBatchSize() int { return 0 } // per-device batches
func (s *fixedSource) perReplica() int {
	return (len(s.x) + s.replicas - 1) / s.replicas
}
func (s *fixedSource) BatchesPerEpoch() int { return (s.perReplica() + s.batch - 1) / s.batch }
func (s *fixedSource) State() data.LoaderState {
	return data.LoaderState{Epoch: s.epoch, NumReplicas: s.replicas}
}
func (s *fixedSource) Restore(st data.LoaderState) error { s.epoch = st.Epoch; return nil }
func (s *fixedSource) Epoch() iter.Seq2[*data.GlobalBatch, error] {
	return func(yield func(*data.GlobalBatch, error) bool) {
		n, per := len(s.x), s.perReplica()
		total := per * s.replicas
		for step := range s.BatchesPerEpoch() {
			st := &data.GlobalBatch{Epoch: s.epoch, Index: step}
			for _, r := range s.ownReplicas {
				b := &data.Batch{}
				var xs [][]float32
				var ys []int32
				var mask []bool
				for k := range s.batch {
					slot := step*s.batch + k // position within this replica
					pos := r + slot*s.replicas
					real := slot < per && pos < n
					idx := 0
					if slot < per {
						idx = pos % n
					}
					if !real {
						pos = -1
					}
					xs, ys = append(xs, s.x[idx]), append(ys, s.y[idx])
					mask = append(mask, real)
					b.Indices = append(b.Indices, idx)
					b.Positions = append(b.Positions, pos)
				}
				_ = total
				b.Inputs = []*tensors.Tensor{tensors.FromValue(xs)}
				b.Labels = tensors.FromValue(ys)
				b.Mask = tensors.FromValue(mask)
				b.Real = mask
				st.Shards = append(st.Shards, b)
			}
			if !yield(st, nil) {
				return
			}
		}
		s.epoch++
	}
}

// toyData makes n examples of a 3-class problem over 8 features, deterministic.
func toyData(n int) ([][]float32, []int32) {
	x := make([][]float32, n)
	y := make([]int32, n)
	for i := range n {
		row := make([]float32, 8)
		for j := range row {
			row[j] = float32((i*7+j*13)%17)/17 - 0.5
		}
		y[i] = int32((i * 5) % 3)
		row[y[i]] += 1 // a learnable signal
		x[i] = row
	}
	return x, y
}

// mustLoss reads a step's loss on the host or fails the test.
func mustLoss(t testing.TB, l Loss) float64 {
	t.Helper()
	v, err := l.Value()
	if err != nil {
		t.Fatal(err)
	}
	return v
}
