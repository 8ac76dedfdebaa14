package accelerator

import (
	"os"
	"strings"
	"syscall"
)

// Host memory for XLA's CPU plugin.
//
// XLA's CPU runtime allocates every execution's temporaries afresh and frees them at its end.
// With glibc's default settings, large blocks come from mmap (or from per-thread heaps that
// are unmapped once empty) and go back to the kernel when freed, so every step touches that
// memory for the first time again: the MiniLM training step (B=64, L=64) took about 300,000
// page faults, and about 15% of its CPU time went to the kernel. glibc can be told to keep
// freed memory and reuse it: no mmap for large blocks, no trimming of a heap's free top, and
// two malloc arenas (fewer threads with heaps of their own; one arena made XLA's compiler
// slower, 1.3 s more to the tiny BERT's first update, and two were as fast as four).
//
// Those settings exist only as $GLIBC_TUNABLES, which glibc reads when a process starts
// (mallopt at run time cannot move the threads that already have an arena), so on a machine
// without a GPU a program that imports this package re-executes itself once at start with
// them set, before any of its own code runs. Measured on the 2-core machine side by side in
// one `goaccel bench` run: page faults per MiniLM step fell about four-fold and the step ran
// 1.11x faster (the tiny BERT 1.35x, the MLP unchanged), with the same time to the first
// update and the same peak memory. The process keeps the memory it freed until it exits.
//
// It applies on Linux with glibc only, and not when a GPU is visible (the temporaries live in
// device memory there), when $GLIBC_TUNABLES is already set (the user's own settings win), or
// when $GOACCEL_HOST_MALLOC is "system" (glibc's defaults).

// HostMallocEnv names the environment variable that turns the host-memory settings off:
// GOACCEL_HOST_MALLOC=system runs with glibc's defaults.
const HostMallocEnv = "GOACCEL_HOST_MALLOC"

// HostMallocTunables is the $GLIBC_TUNABLES value goaccel runs with on CPU (see above);
// trim_threshold is 16 GiB.
const HostMallocTunables = "glibc.malloc.arena_max=2:glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=17179869184"

func init() {
	if !needHostMallocReexec(os.Getenv, glibcVersion() != "", gpuPresent()) {
		return
	}
	exe, err := os.Executable()
	if err != nil {
		return // only speed is lost
	}
	env := append(os.Environ(), "GLIBC_TUNABLES="+HostMallocTunables)
	_ = syscall.Exec(exe, os.Args, env) // returns only on failure: run on with the defaults
}

// needHostMallocReexec says whether the process should restart itself with
// HostMallocTunables: on glibc without a GPU, unless the user set $GLIBC_TUNABLES or turned
// the settings off.
func needHostMallocReexec(getenv func(string) string, glibc, gpu bool) bool {
	if !glibc || gpu || getenv("GLIBC_TUNABLES") != "" {
		return false
	}
	return !strings.EqualFold(strings.TrimSpace(getenv(HostMallocEnv)), "system")
}

// HostMalloc describes the host-memory settings of this process, for diagnostics
// (`goaccel env`): whether goaccel's glibc settings are in effect, and why not otherwise.
func HostMalloc() string {
	v := glibcVersion()
	tunables := os.Getenv("GLIBC_TUNABLES")
	switch {
	case v == "":
		return "the C library's defaults (not glibc)"
	case tunables == HostMallocTunables:
		return "glibc " + v + ", freed memory kept for reuse (GLIBC_TUNABLES=" + HostMallocTunables + "; " +
			HostMallocEnv + "=system turns it off)"
	case tunables != "":
		return "glibc " + v + " with the user's GLIBC_TUNABLES=" + tunables
	case gpuPresent():
		return "glibc " + v + " defaults (a GPU is visible)"
	default:
		return "glibc " + v + " defaults (" + HostMallocEnv + "=" + os.Getenv(HostMallocEnv) + ")"
	}
}
