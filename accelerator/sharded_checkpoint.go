package accelerator

import (
	"fmt"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

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
	if err := st.pull(); err != nil { // a Load since the last update
		return nil, err
	}
	var n int
	offs := make([]int, len(st.state))
	for k, v := range st.state {
		offs[k] = n
		n += st.layout[st.stateOf[v]].c
	}
	mine, all := make([]float32, n), make([]float32, st.size*n)
	for k, v := range st.state {
		t, err := v.Value()
		if err == nil {
			err = t.ConstFlatData(func(flat any) { copy(mine[offs[k]:], flat.([]float32)) })
		}
		if err != nil {
			return nil, fmt.Errorf("accelerator: reading this rank's slice of %s: %w", v.Path(), err)
		}
	}
	if err := st.grp.AllgatherFloat32(mine, all); err != nil {
		return nil, fmt.Errorf("accelerator: gathering the sharded optimizer state for a checkpoint: %w", err)
	}
	if st.rank != 0 {
		return func() {}, nil
	}
	var added []string
	release = func() {
		for _, path := range added {
			_ = store.DeleteVariable(path)
			delete(st.put, path)
		}
	}
	for k, v := range st.state {
		i := st.stateOf[v]
		t := tensors.FromShape(shapes.Make(dtypes.Float32, st.vars[i].Shape().Dimensions...))
		st.whole(t, i, all, n, offs[k])
		nv, err := store.CreateVariable(v.Path(), t)
		if err != nil {
			release()
			return nil, fmt.Errorf("accelerator: adding the whole %s for a checkpoint: %w", v.Path(), err)
		}
		nv.SetTrainable(false)
		added = append(added, v.Path())
		st.put[v.Path()] = t // not to be pulled back in
	}
	return release, nil
}
