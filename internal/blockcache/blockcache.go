//go:build linux && cgo

// Package blockcache replaces this program's malloc with one that keeps the large blocks
// XLA's CPU plugin frees, for its next step: linked into every program that imports the
// accelerator package, it needs no setting, no re-execution and nothing installed.
//
// XLA's CPU runtime allocates each execution's temporaries afresh, in blocks of tens to
// hundreds of megabytes, on its own threads, and frees them at the end of the execution.
// glibc serves blocks that large from fresh mmaps on the threads' own arenas and unmaps
// them when they are freed, so every training step faults all of that memory in again
// (about 330,000 page faults per MiniLM step on the development machine). glibc's settings
// that would keep them (GLIBC_TUNABLES, the hostmalloc package's re-execution) are read
// only when a process starts, and mallopt at run time cannot move the threads that already
// hold their own arenas (docs/hostmalloc.md has the measurements).
//
// So the program defines malloc, free, calloc, realloc and the aligned variants itself (C
// code in this package; ELF symbol interposition makes glibc, the C++ runtime and every
// library loaded later, the XLA plugin included, call them): a request of 256 KiB or more
// gets a block of a reserved address range, and a freed block stays mapped, its pages
// resident, for the next request of a similar size (of the smallest blocks that fit, the
// most recently freed). Everything smaller, and every pointer glibc handed out, goes to
// glibc's own functions unchanged.
//
// Why as small as 256 KiB: besides its temporaries, each step's execution allocates its
// outputs afresh (the new parameters and optimizer states, a few hundred KiB to a few MiB
// each) on whichever thread runs it, and they are freed a step later from another. In
// glibc's per-thread arenas that freed memory piles up: with a 4 MiB threshold an XLM-R
// training process held 1.0 GiB free in glibc's arenas after 60 steps (0.3 GiB in use),
// and its resident memory grew through the whole epoch (docs/hostmalloc.md). Blocks start
// on 2 MiB boundaries; a smaller request leaves the rest of its block's pages untouched, so
// they cost address space, not memory. The cache keeps at most as
// many freed bytes as were ever in use in blocks at once (the least recently freed are
// given back to the kernel first), so a program's resident memory stays near what it is
// with glibc's defaults, instead of the whole heap that keep holds.
//
// It is off (every call goes to glibc) when $GOACCEL_HOST_MALLOC is "system", or when
// $GLIBC_TUNABLES is set (the user's own glibc settings, or the hostmalloc package's
// re-execution with keep), read once at the first large request; and when its malloc is not
// the one the process uses (the package built into a shared library, -buildmode=c-shared).
// Limits: a statically linked program (-extldflags -static) or one that links another
// malloc fails to link (two definitions of malloc), and an allocator preloaded with
// LD_PRELOAD is not used (the program's own definitions come first).
package blockcache

/*
#include "blockcache.h"
*/
import "C"

import "unsafe"

// Stats is the cache's state.
type Stats struct {
	// On says whether large requests are served from the cache; Why says why not.
	On  bool
	Why string
	// Live is the bytes in blocks in use, PeakLive the most ever at once, Cached the bytes of
	// freed blocks kept resident, Released those given back to the kernel over the limit.
	Live, PeakLive, Cached, Released int64
	// Fresh and Reused count the large requests served with new pages and with a cached
	// block's; Fallback those passed to glibc.
	Fresh, Reused, Fallback uint64
}

// Read returns the cache's state; before the first large request it reads as off with
// an empty Why.
func Read() Stats {
	var s C.struct_bc_stats
	C.bc_stats(&s)
	st := Stats{On: s.on != 0, Live: int64(s.live), PeakLive: int64(s.peak_live), Cached: int64(s.cached),
		Released: int64(s.released), Fresh: uint64(s.fresh), Reused: uint64(s.reused), Fallback: uint64(s.fallback)}
	switch s.off {
	case 1:
		st.Why = "GOACCEL_HOST_MALLOC=system or GLIBC_TUNABLES is set"
	case 2:
		st.Why = "its address range could not be reserved"
	case 3:
		st.Why = "this code's malloc is not the process's (a shared library loaded after glibc)"
	}
	return st
}

// Linked reports whether this build has the cache (Linux with cgo).
const Linked = true

// MinBytes is the smallest request the cache serves.
var MinBytes = int64(C.bc_min())

// owns reports whether p is one of the cache's blocks (for the tests).
func owns(p unsafe.Pointer) bool { return C.bc_owns(p) != 0 }
