package checkpoint

import (
	"fmt"

	"github.com/gomlx/gomlx/ml/model"
)

// StoreCompleter is the optional part of Processes for a Store that does not hold all of a
// run's state between steps: with the optimizer state sharded over the processes
// (accelerator.Config.Sharding), each process keeps only its slice of it, outside the Store.
// *accelerator.Accelerator satisfies it. Save calls CompleteStore on every process before
// writing (it may be a collective): on the main process, the missing variables are added to
// store whole, so that the checkpoint has today's format and loads on any topology and any
// sharding; Save calls release once the files are written. Load needs no counterpart: the
// whole tensors it puts into the Store are the owner's to slice before the next step.
type StoreCompleter interface {
	CompleteStore(store *model.Store) (release func(), err error)
}

// completeStore calls Processes' CompleteStore when it has one. release is never nil.
func (m *Manager) completeStore(store *model.Store) (release func(), err error) {
	c, ok := m.opts.Processes.(StoreCompleter)
	if !ok {
		return func() {}, nil
	}
	release, err = c.CompleteStore(store)
	if release == nil {
		release = func() {}
	}
	if err != nil {
		return release, fmt.Errorf("checkpoint: completing the Store: %w", err)
	}
	return release, nil
}
