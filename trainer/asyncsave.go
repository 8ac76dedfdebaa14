package trainer

import "github.com/goaccel/goaccel/checkpoint"

// saveWith saves the run's state with m (the last or the best checkpoints): in the background
// when Config.AsyncSave is set, so that the time spent here is only the host copy.
func (f *fit) saveWith(m *checkpoint.Manager) (string, error) {
	if f.cfg.AsyncSave {
		return m.SaveAsync(f.state())
	}
	return m.Save(f.state())
}

// waitSaves waits for the asynchronous saves in flight and returns the first error. Every
// process calls it at the same point (see checkpoint.Manager.Wait).
func (f *fit) waitSaves() error {
	var first error
	for _, m := range []*checkpoint.Manager{f.last, f.best} {
		if m == nil {
			continue
		}
		if err := m.Wait(); err != nil && first == nil {
			first = wrapf(err, "saving a checkpoint in the background")
		}
	}
	return first
}

// endSaves, deferred by Fit, waits for an asynchronous save still in flight when Fit fails,
// so that it is complete (or reported) when Fit returns. Over several processes a failed Fit
// cannot count on the others reaching the barrier of Wait: the save may then be cut short
// when the program exits, leaving the checkpoint before it as the latest.
func (f *fit) endSaves(err *error) {
	if *err == nil || !f.cfg.AsyncSave || f.t.acc.NumProcesses() > 1 {
		return
	}
	if werr := f.waitSaves(); werr != nil {
		f.notice("trainer: %v", werr)
	}
}
