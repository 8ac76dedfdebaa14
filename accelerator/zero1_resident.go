package accelerator

import (
	"fmt"

	"github.com/goaccel/goaccel/accelerator/internal/memplan"
	"github.com/gomlx/compute"
)

// addResident adds to out the on-device buffers of the state a job sharded over processes
// keeps outside its Store (Config.Sharding over several processes, strategy_zero1.go), on
// the device each lives on: this rank's slices of the optimizer state and the values
// mirrored from the job's Store (step counters, learning rate) as OptimizerState, and the
// weights' slices, which hold a value during an update only, as Weights.
func (st *zero1State) addResident(out []memplan.Resident, backend compute.Backend) error {
	weight := map[string]bool{}
	for _, v := range st.slices {
		weight[v.Path()] = true
	}
	for v := range st.sliceStore.IterVariables() {
		held, err := memplan.HeldTensors(v)
		if err != nil {
			return err
		}
		k := memplan.KindOptimizer
		if weight[v.Path()] {
			k = memplan.KindWeights
		}
		for _, t := range held {
			if err := memplan.AddOnDevice(out, backend, t, k); err != nil {
				return fmt.Errorf("accelerator: the sharded optimizer state's %s: %w", v.Path(), err)
			}
		}
	}
	return nil
}
