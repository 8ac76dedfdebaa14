// Package hostmalloc, imported for its effect, gives XLA's CPU plugin a glibc malloc that keeps
// freed memory for reuse, when $GOACCEL_HOST_MALLOC=keep asks for it:
//
//	import _ "github.com/goaccel/goaccel/hostmalloc"
//
// XLA's CPU runtime allocates each execution's temporaries afresh, in blocks too large for
// glibc's default settings to keep, so every training step faults that memory in again. Only
// glibc's main arena can keep blocks that large, and glibc reads the settings that make it do
// so ($GLIBC_TUNABLES: one arena, no mmap for large blocks, no trimming) only when a process
// starts. So with GOACCEL_HOST_MALLOC=keep, a program that imports this package re-executes
// itself once at start, before any of its own code runs, with those settings (Tunables).
// Steps run faster, compiling is slower (XLA's compiler threads share the one arena) and the
// process keeps the memory it freed until it exits: it pays on long CPU training runs with
// memory to spare. docs/hostmalloc.md has the measurements.
//
// Unset or "system" keeps glibc's defaults. It applies on Linux with glibc (cgo on) only, and
// not when $GLIBC_TUNABLES is already set: the user's own settings win. A value it cannot
// honour prints one "goaccel: WARNING:" line on stderr and the program runs on with glibc's
// defaults (the setting changes speed, never results). `goaccel env` shows what is in effect
// (Describe). The goaccel command and the examples import this package; the accelerator
// package does not, so a program that leaves it out never re-executes.
package hostmalloc

import (
	"fmt"
	"os"
	"strings"
	"syscall"

	"github.com/goaccel/goaccel/internal/envvar"
)

// Env names the environment variable that turns the settings on: GOACCEL_HOST_MALLOC=keep;
// unset or "system" keeps glibc's defaults.
const Env = "GOACCEL_HOST_MALLOC" // envvar.HostMalloc

// Tunables is the $GLIBC_TUNABLES value that GOACCEL_HOST_MALLOC=keep runs the program with:
// one malloc arena, no mmap for large blocks, a trim threshold of 16 GiB.
const Tunables = "glibc.malloc.arena_max=1:glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=17179869184"

func init() {
	reexec, warning := plan(envvar.Getenv, glibcVersion() != "")
	if reexec {
		exe, err := os.Executable()
		if err == nil {
			env := append(envvar.Environ(), envvar.GlibcTunables.KV(Tunables))
			err = syscall.Exec(exe, os.Args, env) // returns only on failure
		}
		warning = "re-executing this program with GLIBC_TUNABLES=" + Tunables + " failed (" +
			err.Error() + "); running with glibc's defaults"
	}
	if warning != "" {
		fmt.Fprintf(os.Stderr, "goaccel: WARNING: %s=%s: %s\n", Env, envvar.HostMalloc.Value(), warning)
	}
}

// plan says whether the process should restart itself with Tunables ($GOACCEL_HOST_MALLOC is
// "keep", on glibc, and $GLIBC_TUNABLES is unset), and what to warn about when the variable
// asks for something that cannot be done.
func plan(getenv func(string) string, glibc bool) (reexec bool, warning string) {
	switch v := strings.ToLower(strings.TrimSpace(getenv(Env))); v {
	case "", "system":
		return false, ""
	case "keep":
		switch t := getenv(envvar.GlibcTunables.Name); {
		case t == Tunables:
			return false, "" // already re-executed
		case t != "":
			return false, "ignored: GLIBC_TUNABLES is already set (" + t + "), and the user's own settings win"
		case !glibc:
			return false, "ignored: the C library is not glibc (or the program was built without cgo)"
		}
		return true, ""
	default:
		return false, "unknown value (use keep or system); running with glibc's defaults"
	}
}

// Describe says which host-memory settings this process runs with, for diagnostics (`goaccel
// env`): goaccel's glibc settings, the user's own, or the C library's defaults.
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
	default:
		return "glibc " + v + " defaults (" + Env + "=keep, with the hostmalloc package imported, keeps freed " +
			"memory for reuse: faster steps on XLA's CPU plugin, slower compiling)"
	}
}
