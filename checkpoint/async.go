package checkpoint

import (
	"cmp"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/gomlx/gomlx/core/tensors"
)

// asyncSave is a Manager's state for SaveAsync.
type asyncSave struct {
	done chan struct{} // Closed when the save in flight has ended; nil when none is.
	step int64         // The step of the save in flight, or of the one whose error is kept.
	err  error         // The result of the last asynchronous save, until it is reported.
	owed bool          // Every process still owes the barrier that ends the last SaveAsync.
	// spare holds the snapshot of the last save once written, by file and tensor name, for
	// the next snapshot to reuse.
	spare map[string]*tensors.Tensor
}

// SaveAsync is Save in the background. It returns once it has taken a host copy of st (the
// Store's values, Progress, Config and Metrics) and started a goroutine that writes it, with
// the same guarantees as Save: a temporary directory, the size and SHA-256 of every file in
// the manifest, fsync of the files and directories, the rename, then "latest". A crash, or a
// SIGKILL, at any moment leaves "latest" naming a complete checkpoint: the previous one while
// this one is being written. So the training goes on with the next steps while the files are
// written, and what those steps change in the Store does not reach the checkpoint. It returns
// the directory the checkpoint will have.
//
// At most one save is in flight: SaveAsync and Save first wait for the previous asynchronous
// save and, if it failed, return its error without starting a new one. Wait waits for it and
// returns its error: call Wait before the program exits (an unfinished save is lost, and the
// checkpoint before it stays the latest). Load and LoadLatest wait for it too, and keep its
// error for the next SaveAsync, Save or Wait, so that no error is lost.
//
// In a multi-process run every process calls SaveAsync at the same steps, as with Save: the
// random states (see Ranks) are gathered during the call and the main process writes. The
// barrier Save ends with is taken by the next SaveAsync, Save or Wait, which every process
// calls: when those return, the previous checkpoint is complete for every process, and
// "latest" names the same checkpoint for all of them.
//
// The copy costs host memory for one more copy of the state, while it is written and after:
// it is kept for the next SaveAsync (memory already mapped copies several times faster than
// fresh memory) as long as the Manager is in use. A Manager is used by one goroutine.
func (m *Manager) SaveAsync(st *State) (string, error) {
	b, err := m.begin("SaveAsync", st)
	if err != nil {
		return "", err
	}
	defer b.release()
	// From here on every process owes the barrier, whatever happens on the main process.
	m.async.owed = m.opts.Processes != nil
	if err := cmp.Or(b.prev, b.cerr, b.gatherErr); err != nil { // the first that is not nil
		return "", err
	}
	path := b.path
	if !m.isMain() {
		return path, nil
	}
	job, err := m.prepare(path, st, b.states)
	if err == nil {
		err = m.snapshot(job)
	}
	if err != nil {
		return "", err
	}
	done := make(chan struct{})
	m.async.done, m.async.step = done, job.step
	go func() {
		defer close(done)
		m.async.err = m.write(job)
		if m.async.err != nil {
			m.async.err = fmt.Errorf("checkpoint: the asynchronous save of step %d failed: %w", job.step, m.async.err)
		}
		m.async.spare = job.tensors()
	}()
	return path, nil
}

// Wait waits for the asynchronous save in flight (SaveAsync), if any, and returns its error,
// or the error of one that ended during Load or LoadLatest; after a failed save, the
// checkpoint before it is the latest. In a multi-process run every process calls Wait, at the same point: it
// takes the barrier that ends the last SaveAsync, so that on return the checkpoint is
// complete for all of them; on the other processes the error reports only that barrier.
// Wait without a save in flight returns nil at once.
func (m *Manager) Wait() error { return m.endPrevious() }

// settle waits for the save in flight, keeping its error in m.async.err.
func (m *Manager) settle() {
	if m.async.done != nil {
		<-m.async.done
		m.async.done = nil
	}
}

// endPrevious ends the last asynchronous save: it waits for it, takes the barrier it owes
// (every process), and returns its error, once.
func (m *Manager) endPrevious() error {
	m.settle()
	err := m.async.err
	m.async.err = nil
	if m.async.owed {
		m.async.owed = false
		if werr := m.wait(); err == nil {
			err = werr
		}
	}
	return err
}

// tensors returns the tensors of job by file and tensor name.
func (job *saveJob) tensors() map[string]*tensors.Tensor {
	out := map[string]*tensors.Tensor{}
	for _, f := range job.vars {
		for _, nt := range f.vf.tensors {
			out[f.name+"\x00"+nt.Name] = nt.Tensor
		}
	}
	return out
}

// snapshot replaces the tensors of job by host copies, in the tensors of the last snapshot
// where their shapes still fit. The copies are made by as many goroutines as there are CPUs.
func (m *Manager) snapshot(job *saveJob) error {
	spare := m.async.spare
	m.async.spare = nil
	type copyTask struct {
		name     string
		src, dst *tensors.Tensor
	}
	var tasks []copyTask
	for _, f := range job.vars {
		for i, nt := range f.vf.tensors {
			key := f.name + "\x00" + nt.Name
			dst := spare[key]
			if dst != nil && dst.Shape().Equal(nt.Tensor.Shape()) {
				delete(spare, key)
			} else {
				dst = tensors.FromShape(nt.Tensor.Shape())
			}
			tasks = append(tasks, copyTask{nt.Name, nt.Tensor, dst})
			f.vf.tensors[i].Tensor = dst
		}
	}
	for _, t := range spare {
		_ = t.FinalizeAll()
	}
	var next atomic.Int64
	errs := make([]error, len(tasks))
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(tasks)) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(tasks); i = int(next.Add(1) - 1) {
				t := tasks[i]
				var merr error
				err := t.src.ConstBytes(func(src []byte) {
					merr = t.dst.MutableBytes(func(dst []byte) { copy(dst, src) })
				})
				if err == nil {
					err = merr
				}
				if err != nil {
					errs[i] = fmt.Errorf("checkpoint: SaveAsync: copying %q: %w", t.name, err)
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
