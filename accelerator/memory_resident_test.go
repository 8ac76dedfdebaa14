package accelerator

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"testing"

	"github.com/goaccel/goaccel/accelerator/internal/memplan"
	"github.com/goaccel/goaccel/data"
	"github.com/goaccel/goaccel/internal/testutil"
	"github.com/goaccel/goaccel/models/bert"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
)

// TestResidentBytesExact: on the MLP, and on the MLP with its hidden layer frozen, every
// device holds exactly each variable's shard (or its full value when it stays replicated), for
// each sharding level on 4 devices; the frozen layer counts as frozen weights, 576 bytes on
// each device (144 under zero3).
func TestResidentBytesExact(t *testing.T) {
	x, y := toyData(64)
	models := map[string]func(s *model.Scope, x *Node) *Node{"MLP": mlpLogits, "frozen MLP": frozenMLPLogits}
	for _, name := range []string{"MLP", "frozen MLP"} {
		for _, level := range []sharding{shardNo, shardZero1, shardZero2, shardZero3} {
			residentExact(t, name, models[name], level, x, y)
		}
	}
}

// residentExact is TestResidentBytesExact's check of one model at one level.
func residentExact(t *testing.T, name string, logits func(s *model.Scope, x *Node) *Node, level sharding, x [][]float32, y []int32) {
	t.Helper()
	a := newXLASharded(t, 4, level.String())
	loader, err := data.NewLoader[toyPoint](toyPoints(x, y), data.LoaderConfig[toyPoint]{GlobalBatchSize: 16, Collate: collateToyPoints})
	if err != nil {
		t.Fatal(err)
	}
	res, err := shardRun(a, nil, loader, 1, func(s *model.Scope, in []*Node) *Node { return logits(s, in[0]) })
	if err != nil {
		t.Fatal(err)
	}
	job := res.job
	var counted memplan.Resident
	for v := range job.Store().IterVariables() {
		n := v.Shape().ByteSize()
		if level.sharded(job.variableKind(v)) && slices.ContainsFunc(v.Shape().Dimensions, func(d int) bool { return d%4 == 0 }) {
			n /= 4 // sharded on an axis that 4 divides
		}
		counted.Add(residentKind(job.variableKind(v)), n)
	}
	wantFrozen := int64(0)
	if name == "frozen MLP" {
		wantFrozen = frozenBytes
		if level == shardZero3 {
			wantFrozen /= 4
		}
	}
	if counted.Frozen != wantFrozen {
		t.Errorf("%s %s: the frozen weights count %d bytes, want %d", name, level, counted.Frozen, wantFrozen)
	}
	want := ResidentBytes(counted)
	got, err := job.ResidentBytes()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 {
		t.Fatalf("%s %s: %d devices' bytes, want 4", name, level, len(got))
	}
	for d, r := range got {
		if r != want {
			t.Errorf("%s %s: device %d holds %+v, want %+v", name, level, d, r, want)
		}
	}
	t.Logf("%s %s: per device %+v", name, level, got[0])
}

// bertBase2Layers is BERT-base's widths (hidden 768, 12 heads, feed-forward 3072, vocabulary
// 30522, 512 positions) with 2 layers: 38.7M parameters.
func bertBase2Layers() bert.Config {
	cfg := bert.TinyConfig(30522)
	cfg.HiddenSize, cfg.NumAttentionHeads, cfg.IntermediateSize, cfg.MaxPositionEmbeddings = 768, 12, 3072, 512
	cfg.NumHiddenLayers = 2
	return cfg
}

// residentBERT trains two batches (one update, accumulation 2) of a BERT of cfg on devices
// devices under sharding and returns device 0's resident bytes and the most any device holds.
func residentBERT(t *testing.T, cfg bert.Config, devices int, level sharding) (dev0 ResidentBytes, most int64) {
	t.Helper()
	a := newXLASharded(t, devices, level.String())
	loader, err := data.NewLoader(tinyBERTData(16, cfg.VocabSize), data.LoaderConfig[tinyBERTExample]{
		GlobalBatchSize: 4, Collate: collateTinyBERT})
	if err != nil {
		t.Fatal(err)
	}
	var clf *bert.Classifier
	res, err := shardRun(a, nil, loader, 1, func(s *model.Scope, in []*Node) *Node {
		if clf == nil {
			if clf, err = bert.NewClassifier(cfg, s.Store()); err != nil {
				panic(err)
			}
		}
		return clf.Logits(s, in)
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := res.job.ResidentBytes()
	if err != nil {
		t.Fatal(err)
	}
	// Free this run's buffers before the next one (the 12-layer model holds 1.7 GB a device).
	res.store.Finalize()
	a.Close()
	runtime.GC()
	for _, r := range got {
		most = max(most, r.Total())
	}
	return got[0], most
}

// TestResidentBytesBERTBase2Layers measures the bytes each device holds for a 2-layer BERT at
// BERT-base widths (Adam, gradient accumulation 2, clipping) on 1, 2 and 4 XLA CPU devices, and
// checks the bounds (residentBounds).
func TestResidentBytesBERTBase2Layers(t *testing.T) {
	testutil.Long(t, "the 2-layer BERT-base memory test trains a 38.7M-parameter model 7 times (tier 1: TestResidentBytesExact checks the bytes each device holds, exactly, on the MLP at every sharding level)")
	residentBounds(t, bertBase2Layers())
}

// TestResidentBytesBERTBaseByHand is TestResidentBytesBERTBase2Layers on the full BERT-base
// (12 layers, 110M parameters, 1.8 GB of weights, accumulators and Adam state per device
// unsharded): run by hand with GOACCEL_TEST_BERT_BASE=1 on a machine with 10 GB free.
func TestResidentBytesBERTBaseByHand(t *testing.T) {
	if os.Getenv("GOACCEL_TEST_BERT_BASE") != "1" {
		t.Skip("LOUD SKIP: the full BERT-base memory measurement runs by hand: GOACCEL_TEST_BERT_BASE=1 (needs about 10 GB free)")
	}
	cfg := bertBase2Layers()
	cfg.NumHiddenLayers = 12
	residentBounds(t, cfg)
}

// residentBounds measures cfg's resident bytes on 1 device, then on 2 and 4 devices unsharded,
// under zero1 and under zero3, and checks the bounds, with N the device count and W, G
// and S the 1-device weights, gradient accumulators and optimizer state: ZeRO-1 at most
// (W + G + S/N) x 1.05, ZeRO-3 at most (W + G + S)/N x 1.1, unsharded W + G + S on every device.
func residentBounds(t *testing.T, cfg bert.Config) {
	t.Helper()
	const mib = 1 << 20
	ref, _ := residentBERT(t, cfg, 1, shardNo)
	w, g, s := float64(ref.Weights), float64(ref.Gradients), float64(ref.OptimizerState)
	t.Logf("1 device: weights %.1f MiB, gradients %.1f MiB, optimizer state %.1f MiB, total %.1f MiB",
		w/mib, g/mib, s/mib, float64(ref.Total())/mib)
	for _, n := range []int{2, 4} {
		for _, level := range []sharding{shardNo, shardZero1, shardZero3} {
			r, most := residentBERT(t, cfg, n, level)
			limit := w + g + s
			switch level {
			case shardZero1:
				limit = (w + g + s/float64(n)) * 1.05
			case shardZero3:
				limit = (w + g + s) / float64(n) * 1.1
			}
			name := fmt.Sprintf("%d devices %s", n, level)
			t.Logf("%s: device 0 weights %.1f MiB, gradients %.1f MiB, optimizer state %.1f MiB, total %.1f MiB; most on a device %.1f MiB, bound %.1f MiB",
				name, float64(r.Weights)/mib, float64(r.Gradients)/mib, float64(r.OptimizerState)/mib, float64(r.Total())/mib, float64(most)/mib, limit/mib)
			if float64(most) > limit {
				t.Errorf("%s: a device holds %.1f MiB, over the bound %.1f MiB", name, float64(most)/mib, limit/mib)
			}
		}
	}
}
