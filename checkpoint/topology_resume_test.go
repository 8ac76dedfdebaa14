package checkpoint

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/goaccel/goaccel/accelerator"
	"github.com/goaccel/goaccel/data"
	"github.com/goaccel/goaccel/internal/launch"
	"github.com/goaccel/goaccel/internal/testutil"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/layers"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// The test binary doubles as the ranks of a 2 x 2 run (see TestMain): topoWorkerEnv sends a
// process to topoWorker with the run directory.
const (
	topoWorkerEnv = "GOACCEL_CHECKPOINT_TOPO_WORKER"
	topoPluginEnv = "GOACCEL_CHECKPOINT_TOPO_PLUGIN"
)

// The run: 100 examples, a global batch of 16 (7 global batches per epoch, the last with 4
// real examples), shuffled, 2 epochs = 14 updates, a checkpoint after update 10 (epoch 2,
// after 3 of its global batches: 48 of its examples).
const (
	topoExamples   = 100
	topoGlobal     = 16
	topoSeed       = 3
	topoUpdates    = 14
	topoCheckpoint = 10
)

// topoSlot is one real example a run trained on.
type topoSlot struct{ Epoch, Position, Index int }

// topoResult is what a rank of the run writes: the real examples it trained on after the
// checkpoint, its final trainable variables and, after a resume, the topologies.
type topoResult struct {
	Seen       []topoSlot
	Vars       map[string][]float32
	Topologies []Topology
}

type topoExample struct {
	x []float32
	y int32
}

func collateTopo(b []topoExample) ([]*tensors.Tensor, *tensors.Tensor, error) {
	xs, ys := make([][]float32, len(b)), make([]int32, len(b))
	for i, e := range b {
		xs[i], ys[i] = e.x, e.y
	}
	return []*tensors.Tensor{tensors.FromValue(xs)}, tensors.FromValue(ys), nil
}

// topoRun trains the run on acc: from the start, saving the checkpoint in dir, or (resume)
// from the checkpoint in dir, saving nothing. No dropout: the comparison is exact.
func topoRun(acc *accelerator.Accelerator, dir string, resume bool) (*topoResult, error) {
	examples := make(data.Slice[topoExample], topoExamples)
	for i := range examples {
		x := make([]float32, 6)
		for j := range x {
			x[j] = float32((i*7+j*11)%19)/19 - 0.5
		}
		y := int32(i % 3)
		x[y] += 0.8
		examples[i] = topoExample{x, y}
	}
	loader, err := data.NewLoader(examples, data.LoaderConfig[topoExample]{
		GlobalBatchSize: topoGlobal, Shuffle: true, Seed: topoSeed, Collate: collateTopo})
	if err != nil {
		return nil, err
	}
	job, err := acc.Prepare(model.NewStore(), optimizer.Adam().LearningRate(0.02).Done(), loader)
	if err != nil {
		return nil, err
	}
	train := job.TrainStep(func(s *model.Scope, b accelerator.GraphBatch) *Node {
		h := Tanh(layers.Dense(s.In("hidden"), b.Inputs[0], true, 12))
		loss := accelerator.CrossEntropy(layers.Dense(s.In("out"), h, true, 3), b.Labels, b.Mask)
		acc.Backward(s, loss)
		return loss
	})
	mgr, err := NewManager(dir, Options{KeepLast: 1, Processes: acc})
	if err != nil {
		return nil, err
	}
	st := &State{Store: job.Store()}
	if resume {
		if _, err := mgr.LoadLatest(st); err != nil {
			return nil, err
		}
		if err := loader.Restore(st.Progress.Loader); err != nil {
			return nil, err
		}
	}
	st.Progress.RecordTopology(acc.NumDevices(), acc.NumProcesses())
	res := &topoResult{Topologies: st.Progress.Topologies}
	step := st.Progress.Step
	for step < topoUpdates {
		for gb, err := range job.Batches() {
			if err != nil {
				return nil, err
			}
			if step >= topoCheckpoint {
				for _, b := range gb.Shards {
					for k, real := range b.Real {
						if real {
							res.Seen = append(res.Seen, topoSlot{gb.Epoch, b.Positions[k], b.Indices[k]})
						}
					}
				}
			}
			loss, err := train.Run(gb)
			if err != nil {
				return nil, err
			}
			if _, err := loss.Value(); err != nil {
				return nil, err
			}
			if step++; step == topoCheckpoint && !resume {
				pos := loader.State()
				st.Progress.Epoch, st.Progress.Step, st.Progress.Loader = pos.Epoch, step, pos
				if _, err := mgr.Save(st); err != nil {
					return nil, err
				}
			}
			if step == topoUpdates {
				break
			}
		}
	}
	res.Vars = map[string][]float32{}
	for v := range job.Store().IterVariables() {
		if !v.Trainable {
			continue
		}
		t, err := v.Value()
		if err != nil {
			return nil, err
		}
		if err := t.ConstFlatData(func(a any) { res.Vars[v.Path()] = slices.Clone(a.([]float32)) }); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// topoWorker is one rank of the uninterrupted 2 x 2 run; it writes rank_<r>.json in dir.
func topoWorker(dir string) error {
	acc, err := accelerator.New(accelerator.Config{Backend: os.Getenv(topoPluginEnv), Quiet: true, Seed: 7})
	if err != nil {
		return err
	}
	defer acc.Close()
	res, err := topoRun(acc, filepath.Join(dir, "checkpoints"), false)
	if err != nil {
		return err
	}
	b, err := json.Marshal(res)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, fmt.Sprintf("rank_%d.json", acc.ProcessIndex())), b, 0o644)
}

// TestResumeOnAnotherTopology: a run with a global batch of 16 checkpointed mid-epoch on 2
// processes x 2 devices resumes on 1 x 1 and on 1 x 3 (shuffle on): the remaining real
// examples are each trained on once, the ones the uninterrupted run trained on, and the final
// variables are within 2e-5 of the uninterrupted 2 x 2 run's.
func TestResumeOnAnotherTopology(t *testing.T) {
	testutil.NeedMPI(t)
	plugin := testutil.CPUPlugin(t, os.Getenv(xlaPluginEnv))
	dir := t.TempDir()
	start := time.Now()
	out, err := testutil.LaunchSelf(t, launch.Config{NprocPerNode: 2,
		Env: append(os.Environ(), topoWorkerEnv+"="+dir, topoPluginEnv+"="+plugin, "GOACCEL_DEVICES=4", "GOACCEL_TIMEOUT=3m")})
	if err != nil {
		t.Fatalf("the 2 x 2 run: %v\n%s", err, out)
	}
	t.Logf("2 x 2 run in %s", time.Since(start).Round(time.Millisecond))
	var ref, ref1 topoResult
	for r, res := range []*topoResult{&ref, &ref1} {
		b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("rank_%d.json", r)))
		if err != nil {
			t.Fatalf("rank %d wrote no result: %v\n%s", r, err, out)
		}
		if err := json.Unmarshal(b, res); err != nil {
			t.Fatal(err)
		}
	}
	if want := []Topology{{0, 2, 2}}; !reflect.DeepEqual(ref.Topologies, want) {
		t.Errorf("2 x 2 run: topologies %v, want %v", ref.Topologies, want)
	}
	refSeen := append(ref.Seen, ref1.Seen...)
	sortSlots(refSeen)
	// The rest of epoch 2 (0-based 1) after 3 global batches: positions 48..99 of its order.
	order := data.DistributedSampler{Len: topoExamples, Shuffle: true, Seed: topoSeed}.Order(1)
	var want []topoSlot
	for p := 3 * topoGlobal; p < topoExamples; p++ {
		want = append(want, topoSlot{1, p, order[p]})
	}
	if !slices.Equal(refSeen, want) {
		t.Fatalf("the uninterrupted run trained after the checkpoint on\n%v\nwant\n%v", refSeen, want)
	}
	// Resumed on 1 x 1 and 1 x 3; and, for the same updates on any topology, run whole on 1 x 1
	// and 1 x 4.
	for _, c := range []struct {
		devices int
		resume  bool
	}{{1, true}, {3, true}, {1, false}, {4, false}} {
		name := fmt.Sprintf("resumed on 1x%d", c.devices)
		if !c.resume {
			name = fmt.Sprintf("uninterrupted on 1x%d", c.devices)
		}
		t.Run(name, func(t *testing.T) {
			acc, err := accelerator.New(accelerator.Config{Backend: plugin, Devices: c.devices, Quiet: true, Seed: 7})
			if err != nil {
				t.Fatal(err)
			}
			defer acc.Close()
			ckpt := filepath.Join(dir, "checkpoints")
			if !c.resume {
				ckpt = t.TempDir()
			}
			res, err := topoRun(acc, ckpt, c.resume)
			if err != nil {
				t.Fatal(err)
			}
			sortSlots(res.Seen)
			if !slices.Equal(res.Seen, want) {
				t.Errorf("%s, trained after the checkpoint on\n%v\nwant each remaining example once:\n%v", name, res.Seen, want)
			}
			wantTopo := []Topology{{0, c.devices, 1}}
			if c.resume {
				wantTopo = []Topology{{0, 2, 2}, {topoCheckpoint, c.devices, 1}}
			}
			if !reflect.DeepEqual(res.Topologies, wantTopo) {
				t.Errorf("topologies %v, want %v", res.Topologies, wantTopo)
			}
			worst := 0.0
			for path, w := range ref.Vars {
				g := res.Vars[path]
				if len(g) != len(w) {
					t.Fatalf("%s: %d values, the 2 x 2 run %d", path, len(g), len(w))
				}
				for i := range w {
					worst = max(worst, math.Abs(float64(g[i]-w[i])))
				}
			}
			if len(res.Vars) != len(ref.Vars) || worst > 2e-5 {
				t.Errorf("%s: final variables differ from the uninterrupted 2 x 2 run by up to %g (want <= 2e-5; %d variables, %d)",
					name, worst, len(res.Vars), len(ref.Vars))
			}
			t.Logf("%s: largest difference of the final variables from the uninterrupted 2 x 2 run %.3g", name, worst)
		})
	}
}

func sortSlots(s []topoSlot) {
	slices.SortFunc(s, func(a, b topoSlot) int {
		if a.Epoch != b.Epoch {
			return a.Epoch - b.Epoch
		}
		return a.Position - b.Position
	})
}
