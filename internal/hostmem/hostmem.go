// Package hostmem records whether the program opted in to goaccel's host-memory settings by
// importing package hostmalloc for its effect. The accelerator reads it to say, on XLA's CPU
// plugin, what the program runs with, without linking those settings in itself: importing a
// library must not change how the whole process allocates.
package hostmem

import "sync/atomic"

var optedIn atomic.Bool

// OptIn records that the program imports hostmalloc (hostmalloc's init calls it).
func OptIn() { optedIn.Store(true) }

// OptedIn reports whether the program imports hostmalloc.
func OptedIn() bool { return optedIn.Load() }
