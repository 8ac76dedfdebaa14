//go:build !linux || !cgo

package blockcache

// Stats is the cache's state; without cgo on Linux there is no cache.
type Stats struct {
	On                               bool
	Why                              string
	Live, PeakLive, Cached, Released int64
	Fresh, Reused, Fallback          uint64
}

// Read returns the cache's state: off, since this build has none.
func Read() Stats { return Stats{Why: "not built in (Linux with cgo only)"} }

// Linked reports whether this build has the cache: not without cgo on Linux.
const Linked = false

// MinBytes is the smallest request the cache would serve.
var MinBytes int64 = 256 << 10
