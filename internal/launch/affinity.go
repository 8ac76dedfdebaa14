package launch

import (
	"os/exec"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// cpuShares divides the CPUs this launcher may run on among n local ranks: rank i gets a
// contiguous block of len/n of them. nil (no binding) with one rank, with more ranks than
// CPUs (two MPICH ranks bound to one CPU spin-wait on each other: a 3-rank all-reduce on 2
// CPUs did not end in 9 minutes), or when the mask cannot be read.
func cpuShares(n int) [][]int {
	if n < 2 {
		return nil
	}
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil
	}
	var cpus []int
	for c := 0; c < len(set)*64; c++ {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	c := len(cpus)
	if n > c {
		return nil
	}
	out := make([][]int, n)
	for i := range out {
		out[i] = cpus[i*c/n : (i+1)*c/n]
	}
	return out
}

// startPinned starts cmd bound to cpus (none: unbound). The child inherits the CPU mask of
// the thread that forks it, so this thread is bound for the time of Start and then restored:
// XLA's CPU client and the Go runtime size their thread pools from that mask.
func startPinned(cmd *exec.Cmd, cpus []int) error {
	if len(cpus) == 0 {
		return cmd.Start()
	}
	runtime.LockOSThread()
	var old, set unix.CPUSet
	if unix.SchedGetaffinity(0, &old) != nil {
		runtime.UnlockOSThread()
		return cmd.Start()
	}
	for _, c := range cpus {
		set.Set(c)
	}
	if unix.SchedSetaffinity(0, &set) != nil {
		runtime.UnlockOSThread()
		return cmd.Start()
	}
	err := cmd.Start()
	if unix.SchedSetaffinity(0, &old) == nil {
		runtime.UnlockOSThread() // else the bound thread ends with this goroutine's lock
	}
	return err
}

// cpuList writes cpus as "0-3,8".
func cpuList(cpus []int) string {
	var parts []string
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if i == j {
			parts = append(parts, strconv.Itoa(cpus[i]))
		} else {
			parts = append(parts, strconv.Itoa(cpus[i])+"-"+strconv.Itoa(cpus[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}
