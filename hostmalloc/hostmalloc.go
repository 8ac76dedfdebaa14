// Package hostmalloc, imported for its effect, keeps the memory XLA's CPU plugin frees for
// reuse: it links in the block cache, and with $GOACCEL_HOST_MALLOC=keep it gives the
// program glibc's own malloc settings that keep freed memory instead:
//
//	import _ "github.com/goaccel/goaccel/hostmalloc"
//
// XLA's CPU runtime allocates each execution's temporaries afresh, in blocks too large for
// glibc's default settings to keep, so with glibc alone every training step faults that
// memory in again. A program that imports this package does not pay that: the block cache
// linked into it (internal/blockcache, its own malloc for requests of 256 KiB or more) keeps
// the freed blocks, at about glibc's defaults' peak memory. Importing accelerator alone
// links none of this in (a library does not change how the whole process allocates); its
// plan line on the CPU plugin says so. GOACCEL_HOST_MALLOC picks another way:
//
//   - unset: the block cache (the default with this package imported).
//   - "system": glibc's defaults, nothing kept (the block cache passes every call to glibc).
//   - "keep": with this package imported, the program re-executes itself once at start,
//     before any of its own code runs, with glibc's settings that keep everything freed
//     (Tunables: one arena, no mmap for large blocks, no trimming; glibc reads them only
//     when a process starts, hence the re-execution), and the block cache stays off. Steps
//     about as fast as with the cache, compiling slower (XLA's compiler threads share the
//     one arena) and more memory (the heap keeps everything freed until the process exits).
//     The re-execution runs in this package's initialisation, before main, so it comes
//     before spawn.Ranks starts a program's ranks; they inherit GLIBC_TUNABLES and do not
//     re-execute again.
//
// A $GLIBC_TUNABLES of the user's own wins over both: keep does not re-execute and the block
// cache stays off. A value it cannot honour prints one "goaccel: WARNING:" line on stderr and
// the program runs on (the setting changes speed and memory, never results); a value that is
// none of the three is also an error from accelerator.New. It applies on
// Linux with glibc (cgo on) only. `goaccel env` shows what is in effect (Describe).
// docs/hostmalloc.md has the measurements.
package hostmalloc

import (
	"fmt"
	"os"
	"syscall"

	"github.com/goaccel/goaccel/internal/blockcache"
	"github.com/goaccel/goaccel/internal/envvar"
	"github.com/goaccel/goaccel/internal/hostmem"
)

// Env names the environment variable that picks the host-memory settings: unset for the
// block cache, "keep" for glibc's settings that keep freed memory (with this package
// imported), "system" for glibc's defaults.
const Env = "GOACCEL_HOST_MALLOC" // envvar.HostMalloc

// Tunables is the $GLIBC_TUNABLES value that GOACCEL_HOST_MALLOC=keep runs the program with:
// one malloc arena, no mmap for large blocks, a trim threshold of 16 GiB.
const Tunables = "glibc.malloc.arena_max=1:glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=17179869184"

func init() {
	hostmem.OptIn()
	reexec, warning := plan(envvar.Getenv, glibcVersion() != "")
	if reexec {
		exe, err := os.Executable()
		if err == nil {
			env := append(envvar.Environ(), envvar.GlibcTunables.KV(Tunables))
			err = syscall.Exec(exe, os.Args, env) // returns only on failure
		}
		warning = Env + "=keep: re-executing this program with GLIBC_TUNABLES=" + Tunables + " failed (" +
			err.Error() + "); running without keep's settings"
	}
	if warning != "" {
		fmt.Fprintf(os.Stderr, "goaccel: WARNING: %s\n", warning)
	}
}

// plan says whether the process should restart itself with Tunables ($GOACCEL_HOST_MALLOC is
// "keep", on glibc, and $GLIBC_TUNABLES is unset), and what to warn about when the variable
// asks for something that cannot be done. A value that is not valid (envvar.HostMalloc, the
// check accelerator.New fails on) is warned about and changes nothing.
func plan(getenv func(string) string, glibc bool) (reexec bool, warning string) {
	v, err := envvar.HostMalloc.Parse(getenv(Env))
	if err != nil {
		return false, err.Error() + "; accelerator.New refuses it"
	}
	if v != "keep" { // unset or system: nothing to do here
		return false, ""
	}
	switch t := getenv(envvar.GlibcTunables.Name); {
	case t == Tunables:
		return false, "" // already re-executed
	case t != "":
		return false, Env + "=keep: ignored: GLIBC_TUNABLES is already set (" + t + "), and the user's own settings win"
	case !glibc:
		return false, Env + "=keep: ignored: the C library is not glibc (or the program was built without cgo)"
	}
	return true, ""
}

// hostMallocWord is $GOACCEL_HOST_MALLOC's word, "" when unset or not valid.
func hostMallocWord() string {
	w, _ := envvar.HostMalloc.Choice()
	return w
}

// Describe says which host-memory settings this process runs with, for diagnostics (`goaccel
// env`): goaccel's block cache, goaccel's glibc settings, the user's own, or the C library's
// defaults.
func Describe() string {
	v := glibcVersion()
	tunables := envvar.GlibcTunables.Value()
	switch {
	case v == "":
		return "the C library's defaults (not glibc)"
	case tunables == Tunables:
		return "glibc " + v + ", freed memory kept for reuse (" + Env + "=keep: GLIBC_TUNABLES=" + Tunables + ")"
	case tunables != "":
		return "glibc " + v + " with the user's GLIBC_TUNABLES=" + tunables
	case hostMallocWord() == "system":
		return "glibc " + v + " defaults (" + Env + "=system)"
	case !blockcache.Linked:
		return "glibc " + v + " defaults"
	}
	return fmt.Sprintf("glibc %s with goaccel's block cache: requests of %d KiB or more are kept for reuse when freed, "+
		"holding at most 1.25 x the most in use at once (%s=system: glibc's defaults)", v, blockcache.MinBytes>>10, Env)
}
