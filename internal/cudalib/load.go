package cudalib

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdlib.h>

// cudalib_load opens path for the whole process (RTLD_GLOBAL) and keeps it open; it returns
// NULL or dlerror's message.
static const char *cudalib_load(const char *path) {
	if (dlopen(path, RTLD_NOW | RTLD_GLOBAL) == NULL) {
		return dlerror();
	}
	return NULL;
}
*/
import "C"

import (
	"errors"
	"unsafe"
)

// load opens the shared library at path for the rest of the process, so that a later open of
// its soname (by XLA) finds it loaded.
func load(path string) error {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	if msg := C.cudalib_load(cpath); msg != nil {
		return errors.New(C.GoString(msg))
	}
	return nil
}
