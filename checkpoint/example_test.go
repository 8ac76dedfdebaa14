package checkpoint_test

import (
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/goaccel/goaccel/accelerator"
	"github.com/goaccel/goaccel/checkpoint"
	"github.com/goaccel/goaccel/data"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/layers"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// sample is one example of a small regression: y = 3a - 2b.
type sample struct{ a, b float32 }

func collateSamples(batch []sample) ([]*tensors.Tensor, *tensors.Tensor, error) {
	x, y := make([][]float32, len(batch)), make([]float32, len(batch))
	for i, s := range batch {
		x[i], y[i] = []float32{s.a, s.b}, 3*s.a-2*s.b
	}
	return []*tensors.Tensor{tensors.FromValue(x)}, tensors.FromValue(y), nil
}

// trainUpTo trains until the global step reaches steps, saving a checkpoint in dir after every
// step. If dir already holds a checkpoint, it resumes from it first: the model and optimizer
// variables (and the global step) come back through the Store, and the loader's position
// through Progress.Loader, so the run continues with the very global batch it would have
// taken next. It returns the last loss.
func trainUpTo(dir string, steps int64) (float64, error) {
	examples := make(data.Slice[sample], 40)
	for i := range examples {
		examples[i] = sample{float32(i%7) / 7, float32(i%5) / 5}
	}
	acc, err := accelerator.New(accelerator.Config{Backend: "go", Seed: 1, Quiet: true})
	if err != nil {
		return 0, err
	}
	defer acc.Close()
	loader, err := data.NewLoader(examples, data.LoaderConfig[sample]{BatchSize: 8, Shuffle: true, Seed: 1, Collate: collateSamples})
	if err != nil {
		return 0, err
	}
	job, err := acc.Prepare(model.NewStore(), optimizer.Adam().LearningRate(0.05).Done(), loader)
	if err != nil {
		return 0, err
	}
	trainStep := job.TrainStep(func(s *model.Scope, b accelerator.GraphBatch) *Node {
		pred := Squeeze(layers.Dense(s.In("linear"), b.Inputs[0], true, 1), -1)
		l := ReduceAllMean(Square(Sub(pred, b.Labels)))
		acc.Backward(s, l)
		return l
	})

	mgr, err := checkpoint.NewManager(dir, checkpoint.Options{KeepLast: 2, Processes: acc})
	if err != nil {
		return 0, err
	}
	st := &checkpoint.State{Store: job.Store()}
	if path, err := mgr.LoadLatest(st); err == nil {
		// The step restores the variables; the loader must be restored too, or the run would
		// start the data order again from the beginning of the first epoch.
		if err := loader.Restore(st.Progress.Loader); err != nil {
			return 0, err
		}
		fmt.Printf("resumed from %s: step %d, epoch %d after %d of its %d global batches\n", filepath.Base(path),
			st.Progress.Step, st.Progress.Loader.Epoch+1, st.Progress.Loader.BatchesConsumed, loader.BatchesPerEpoch())
	} else if !errors.Is(err, checkpoint.ErrNoCheckpoint) {
		return 0, err
	}

	var last float64
	for {
		for gb, err := range job.Batches() {
			if err != nil {
				return 0, err
			}
			loss, err := trainStep.Run(gb)
			if err != nil {
				return 0, err
			}
			if last, err = loss.Value(); err != nil {
				return 0, err
			}
			step, err := job.GlobalStep()
			if err != nil {
				return 0, err
			}
			pos := loader.State() // taken after the global batch was handed out
			st.Progress = checkpoint.Progress{Epoch: pos.Epoch, Step: step, Loader: pos, Seed: 1}
			if _, err := mgr.Save(st); err != nil { // the main process writes, the others wait
				return 0, err
			}
			if step >= steps {
				return last, nil
			}
		}
	}
}

// Example saves a checkpoint after every step and resumes a run from it: the resumed run
// ends exactly where an uninterrupted one does, because the checkpoint holds the model and
// optimizer variables (in the Store) and the loader's position (Progress.Loader).
func Example() {
	base, err := os.MkdirTemp("", "checkpoint-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(base)

	uninterrupted, err := trainUpTo(base+"/a", 8)
	if err != nil {
		log.Fatal(err)
	}
	// The same run, stopped after 6 steps and started again.
	if _, err := trainUpTo(base+"/b", 6); err != nil {
		log.Fatal(err)
	}
	resumed, err := trainUpTo(base+"/b", 8)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("last loss equal to the uninterrupted run's:", resumed == uninterrupted)
	// Output:
	// resumed from ckpt-000000006: step 6, epoch 2 after 1 of its 5 global batches
	// last loss equal to the uninterrupted run's: true
}
