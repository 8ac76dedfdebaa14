//go:build linux && cgo

package hostmalloc

/*
#include <features.h>
#ifdef __GLIBC__
#include <gnu/libc-version.h>
static const char *goaccel_glibc_version(void) { return gnu_get_libc_version(); }
#else
static const char *goaccel_glibc_version(void) { return ""; }
#endif
*/
import "C"

// glibcVersion is the running glibc's version, or "" when the C library is another one.
func glibcVersion() string { return C.GoString(C.goaccel_glibc_version()) }
