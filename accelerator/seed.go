package accelerator

import (
	"fmt"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
)

// seedRNG sets the store's in-graph random state (used by dropout) from seed.
//
// It works around a GoMLX v0.28.3 bug: Store.SetRNGStateFromSeed builds the state variable
// without linking it to its Store, so the first distributed (AutoSharding) graph that reads
// it — the variable initialisers do — looks up the store's default sharding through the
// missing link and panics on a nil pointer (pinned by TestGoMLXRNGStateBug). Creating the
// variable through the Store's own constructor links it correctly, and GoMLX then finds and
// reuses it.
func seedRNG(store *model.Store, seed int64) error {
	state, err := graph.RNGStateFromSeed(seed)
	if err != nil {
		return err
	}
	path := model.JoinPath("/", model.RNGStateVariableName)
	if v := store.GetVariable(path); v != nil {
		if err := store.DeleteVariable(path); err != nil {
			return fmt.Errorf("replacing %s: %w", path, err)
		}
	}
	store.VariableWithValue(path, state).SetTrainable(false)
	return nil
}
