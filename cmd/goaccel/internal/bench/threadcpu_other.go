//go:build !linux

package bench

import "time"

// threadCPU: a thread's CPU time is not read on this system (the peak uses wall time).
func threadCPU() (time.Duration, bool) { return 0, false }
