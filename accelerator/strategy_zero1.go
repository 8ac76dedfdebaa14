package accelerator

import (
	"errors"
	"fmt"
	"slices"

	"github.com/goaccel/goaccel/accelerator/internal/strategy"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/ml/model"
)

// zero1 is hostReduced with the optimizer state sharded over the processes (ZeRO stage 1,
// Config.Sharding over several processes, under every stage). The gradients graph, the
// accumulation and the loss and weight bookkeeping are hostReduced's (the same strategy.Host
// runs them); only the update's reduction differs (strategy.Zero1Reduction: a reduce-scatter,
// the update of this rank's slices of the optimizer state, an all-gather of the weights).
// The bytes crossing processes are those of hostReduced's all-reduce (a reduce-scatter and an
// all-gather are its two halves). The job's sharded state (strategy.Zero1) is shared by its
// TrainSteps and kept by the Accelerator, by Store, for CompleteStore and ResidentBytes.
type zero1 struct{ hostReduced }

func (z zero1) newStep(t *TrainStep) strategy.Runner {
	return strategy.NewHost(t.job.env(), runnerStep{t}, strategy.Zero1Reduction(t.job.zero1For))
}

// planSharding: the optimizer state over the processes, whatever the stage.
func (z zero1) planSharding(*Job) (string, int) { return shardZero1.String(), z.grp.Size() }

// zero1For returns the job's sharded state for the trainable variables vars, making it on the
// first update (or the first memory plan).
func (j *Job) zero1For(vars []*model.Variable, lossDType dtypes.DType) (*strategy.Zero1, error) {
	if st := j.acc.shardedState[j.store]; st != nil {
		if !slices.Equal(st.Vars(), vars) {
			return nil, errors.New("accelerator: with Config.Sharding over several processes every TrainStep of a job " +
				"must train the same variables (its optimizer state is sharded once)")
		}
		return st, nil
	}
	var guard strategy.Guard
	if sc := j.scaler(); sc != nil {
		// fp16's loss scaling on the host: the scaler's variables, in the job's Store as in
		// any run, read before the update and set after it by the rule of the graph's half.
		guard = func(st *strategy.Zero1) (float32, func(bool) error, error) {
			s, err := sc.Read(j.store)
			if err != nil {
				return 0, nil, fmt.Errorf("accelerator: reading the loss scale for the sharded update: %w", err)
			}
			if s.Scale <= 0 {
				return 0, nil, fmt.Errorf("accelerator: the loss scale %s is %g; it must be > 0", sc.ScalePath(), s.Scale)
			}
			return s.Scale, func(finite bool) error { return sc.Put(s.Next(finite), st.PutMain) }, nil
		}
	}
	st, err := strategy.NewZero1(j.env(), j.update(), guard, vars, lossDType)
	if err != nil {
		return nil, err
	}
	if j.acc.shardedState == nil {
		j.acc.shardedState = map[*model.Store]*strategy.Zero1{}
	}
	j.acc.shardedState[j.store] = st
	return st, nil
}

// CompleteStore gives a checkpoint the whole state of the job whose Store is store, for Save
// to write in the usual format (checkpoint.StoreCompleter). With Config.Sharding over several
// processes, each process holds only its slice of the optimizer state, outside the Store:
// every process calls CompleteStore (a collective), the slices are all-gathered, and on the
// main process the whole tensors are added to store under their usual paths; release removes
// them again after the write. For any other job it adds nothing.
//
// Loading needs no counterpart: a checkpoint's whole optimizer state, loaded into the Store,
// is sliced out of it before the next update.
//
// Kept exported: package checkpoint reaches it through its StoreCompleter interface (a method
// of another package's interface must be exported), without importing accelerator; programs
// need not call it, checkpoint.Save does.
func (a *Accelerator) CompleteStore(store *model.Store) (release func(), err error) {
	st := a.shardedState[store]
	if st == nil {
		return func() {}, nil
	}
	return st.Complete(store)
}
