package accelerator

import (
	"fmt"
	"os"
	"strconv"

	"github.com/pkg/errors"
)

// processInfo is this process's place in the (torchrun-style) process group.
type processInfo struct {
	rank, worldSize, localRank, localWorldSize int
}

// readProcessEnv reads RANK, WORLD_SIZE, LOCAL_RANK and LOCAL_WORLD_SIZE as torchrun sets
// them. Unset variables mean a single process.
func readProcessEnv() (processInfo, error) {
	p := processInfo{rank: 0, worldSize: 1, localRank: 0, localWorldSize: 1}
	read := func(name string, dst *int, min int) error {
		v, ok := os.LookupEnv(name)
		if !ok || v == "" {
			return nil
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < min {
			return errors.Errorf("accelerator: $%s=%q is not an integer >= %d", name, v, min)
		}
		*dst = n
		return nil
	}
	for _, r := range []struct {
		name string
		dst  *int
		min  int
	}{{"RANK", &p.rank, 0}, {"WORLD_SIZE", &p.worldSize, 1}, {"LOCAL_RANK", &p.localRank, 0}, {"LOCAL_WORLD_SIZE", &p.localWorldSize, 1}} {
		if err := read(r.name, r.dst, r.min); err != nil {
			return p, err
		}
	}
	if p.rank >= p.worldSize {
		return p, errors.Errorf("accelerator: RANK=%d is not below WORLD_SIZE=%d", p.rank, p.worldSize)
	}
	if p.worldSize > 1 {
		return p, errors.Errorf("accelerator: WORLD_SIZE=%d: runs over several processes are not implemented yet "+
			"(one process drives all local devices); unset WORLD_SIZE/RANK to run on this machine's devices", p.worldSize)
	}
	return p, nil
}

// ProcessIndex is this process's rank among all processes (RANK), 0 for a single process.
func (a *Accelerator) ProcessIndex() int { return a.proc.rank }

// NumProcesses is the number of processes (WORLD_SIZE), 1 for a single process.
func (a *Accelerator) NumProcesses() int { return a.proc.worldSize }

// LocalProcessIndex is this process's rank on its machine (LOCAL_RANK).
func (a *Accelerator) LocalProcessIndex() int { return a.proc.localRank }

// IsMainProcess reports whether this is the process that writes checkpoints and prints.
func (a *Accelerator) IsMainProcess() bool { return a.proc.rank == 0 }

// IsLocalMainProcess reports whether this is the first process on its machine (for work
// done once per machine, such as downloading or unpacking data).
func (a *Accelerator) IsLocalMainProcess() bool { return a.proc.localRank == 0 }

// WaitForEveryone is a barrier across processes. With a single process it returns at once.
func (a *Accelerator) WaitForEveryone() error {
	if a.proc.worldSize == 1 {
		return nil
	}
	return errors.New("accelerator: WaitForEveryone across processes is not implemented yet")
}

// MainProcessFirst runs fn on the main process first and then, after a barrier, on the
// others — for work such as preparing a dataset cache that the others then read.
func (a *Accelerator) MainProcessFirst(fn func() error) error {
	if a.IsMainProcess() {
		if err := fn(); err != nil {
			return err
		}
		return a.WaitForEveryone()
	}
	if err := a.WaitForEveryone(); err != nil {
		return err
	}
	return fn()
}

// Print writes its arguments, space separated, as one line on the main process only.
func (a *Accelerator) Print(args ...any) {
	if !a.IsMainProcess() {
		return
	}
	a.muOut.Lock()
	defer a.muOut.Unlock()
	fmt.Fprintln(a.out, args...)
}

// Printf is Print with a format; a newline is added when missing.
func (a *Accelerator) Printf(format string, args ...any) {
	if !a.IsMainProcess() {
		return
	}
	s := fmt.Sprintf(format, args...)
	if len(s) == 0 || s[len(s)-1] != '\n' {
		s += "\n"
	}
	a.muOut.Lock()
	defer a.muOut.Unlock()
	fmt.Fprint(a.out, s)
}

// plan prints a line of the run's plan unless the Accelerator is quiet.
func (a *Accelerator) plan(format string, args ...any) {
	if !a.cfg.Quiet {
		a.Printf(format, args...)
	}
}
