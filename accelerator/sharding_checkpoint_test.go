package accelerator

import (
	"testing"

	"github.com/goaccel/goaccel/checkpoint"
	"github.com/goaccel/goaccel/data"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
)

// TestShardedCheckpointAcrossLayouts: a checkpoint of a ZeRO-3 run on 4 devices holds the full
// values (loaded into a new Store, every variable, optimizer state included, equals the
// sharded run's value bit for bit) and resumes unsharded on 1 device as it resumes sharded on 4;
// a checkpoint of an unsharded 1-device run resumes under ZeRO-3 on 4 devices as on 1.
func TestShardedCheckpointAcrossLayouts(t *testing.T) {
	t.Parallel()
	x, y := toyData(96)
	mgr, err := checkpoint.NewManager(t.TempDir(), checkpoint.Options{Logf: func(string, ...any) {}})
	if err != nil {
		t.Fatal(err)
	}
	logits := func(s *model.Scope, in []*Node) *Node { return mlpLogits(s, in[0]) }
	run := func(devices int, sharding string, store *model.Store) shardedResult {
		loader, err := data.NewLoader[toyPoint](toyPoints(x, y), data.LoaderConfig[toyPoint]{
			GlobalBatchSize: 16, Shuffle: true, Seed: 5, Collate: collateToyPoints})
		if err != nil {
			t.Fatal(err)
		}
		res, err := shardRun(newXLASharded(t, devices, sharding), store, loader, 3, logits)
		if err != nil {
			t.Fatalf("%d devices, Sharding %q: %v", devices, sharding, err)
		}
		return res
	}
	save := func(store *model.Store, step int64) string {
		path, err := mgr.Save(&checkpoint.State{Store: store, Progress: checkpoint.Progress{Step: step}})
		if err != nil {
			t.Fatal(err)
		}
		return path
	}
	load := func(path string) *model.Store {
		store := model.NewStore()
		if err := mgr.Load(path, &checkpoint.State{Store: store}); err != nil {
			t.Fatal(err)
		}
		return store
	}

	sharded := run(4, "zero3", nil)
	zero3Ckpt := save(sharded.store, 3)
	loaded := load(zero3Ckpt)
	n := 0
	for v := range sharded.store.IterVariables() {
		if v.Path() == model.JoinPath("/", model.RNGStateVariableName) {
			continue
		}
		want, err := v.Value()
		if err != nil {
			t.Fatal(err)
		}
		lv := loaded.GetVariable(v.Path())
		if lv == nil {
			t.Errorf("the ZeRO-3 checkpoint has no %s", v.Path())
			continue
		}
		got, err := lv.Value()
		if err != nil {
			t.Fatal(err)
		}
		if !got.Shape().Equal(want.Shape()) || !got.Equal(want) {
			t.Errorf("the ZeRO-3 checkpoint's %s is %s %v, the run's %s %v", v.Path(), got.Shape(), got, want.Shape(), want)
		}
		n++
	}
	t.Logf("ZeRO-3 on 4 devices: %d variables saved as full tensors, equal to the run's", n)

	compareSharded(t, "ZeRO-3 1x4 checkpoint resumed on 1x1 unsharded vs 1x4 ZeRO-3", run(4, "zero3", load(zero3Ckpt)), run(1, "no", load(zero3Ckpt)))

	unsharded := run(1, "no", nil)
	oneCkpt := save(unsharded.store, 6)
	compareSharded(t, "1x1 unsharded checkpoint resumed on 1x4 ZeRO-3 vs 1x1", run(1, "no", load(oneCkpt)), run(4, "zero3", load(oneCkpt)))
}
