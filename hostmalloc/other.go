//go:build !linux || !cgo

package hostmalloc

// glibcVersion is "": without cgo on Linux, the process's C library is not known to be glibc.
func glibcVersion() string { return "" }
