package accelerator

import "fmt"

// This process's place in the run (read from its process group, the one source of the rank
// and the number of processes) and printing on the main process.

// ProcessIndex is this process's rank among all processes (RANK, or the MPI launcher's
// equivalent), 0 for a single process.
func (a *Accelerator) ProcessIndex() int { return a.grp.Rank() }

// NumProcesses is the number of processes (WORLD_SIZE), 1 for a single process.
func (a *Accelerator) NumProcesses() int { return a.grp.Size() }

// LocalProcessIndex is this process's rank on its machine (LOCAL_RANK).
func (a *Accelerator) LocalProcessIndex() int { return a.proc.localRank }

// NumLocalProcesses is the number of processes on this machine (LOCAL_WORLD_SIZE).
func (a *Accelerator) NumLocalProcesses() int { return a.proc.localWorldSize }

// IsMainProcess reports whether this is the process that writes checkpoints and prints.
func (a *Accelerator) IsMainProcess() bool { return a.grp.Rank() == 0 }

// IsLocalMainProcess reports whether this is the first process on its machine (for work
// done once per machine, such as downloading or unpacking data).
func (a *Accelerator) IsLocalMainProcess() bool { return a.proc.localRank == 0 }

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
