//go:build linux && cgo

package blockcache

/*
#include <stdlib.h>
#include <string.h>
#include <malloc.h>
*/
import "C"

import "unsafe"

// The C library calls the tests make (cgo is not allowed in _test.go files). They go through
// the program's symbols, as any C or C++ code's calls do.

func cMalloc(n int) unsafe.Pointer       { return C.malloc(C.size_t(n)) }
func cCalloc(n, m int) unsafe.Pointer    { return C.calloc(C.size_t(n), C.size_t(m)) }
func cFree(p unsafe.Pointer)             { C.free(p) }
func cUsable(p unsafe.Pointer) int       { return int(C.malloc_usable_size(p)) }
func cMemset(p unsafe.Pointer, b, n int) { C.memset(p, C.int(b), C.size_t(n)) }

func cRealloc(p unsafe.Pointer, n int) unsafe.Pointer { return C.realloc(p, C.size_t(n)) }

func cPosixMemalign(align, n int) (unsafe.Pointer, int) {
	var p unsafe.Pointer
	rc := C.posix_memalign(&p, C.size_t(align), C.size_t(n))
	return p, int(rc)
}

// cStrdup copies s with glibc's strdup, whose own call to malloc is interposed too.
func cStrdup(s string) unsafe.Pointer {
	cs := C.CString(s)
	defer C.free(unsafe.Pointer(cs))
	return unsafe.Pointer(C.strdup(cs))
}
