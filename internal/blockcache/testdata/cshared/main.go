// Command cshared is TestOffInSharedLibrary's library: built with -buildmode=c-shared, it
// holds the block cache in a shared library that a C program loads after glibc.
package main

/*
#include <stdlib.h>
*/
import "C"

import "github.com/goaccel/goaccel/internal/blockcache"

// BlockCacheState makes one large request and says whether the cache served it (1) or not
// (0); why receives the cache's reason.
//
//export BlockCacheState
func BlockCacheState() *C.char {
	p := C.malloc(8 << 20)
	defer C.free(p)
	st := blockcache.Read()
	s := "off: " + st.Why
	if st.On {
		s = "on"
	}
	return C.CString(s)
}

func main() {}
