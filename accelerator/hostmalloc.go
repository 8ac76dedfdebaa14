package accelerator

import (
	"fmt"
	"os"
	"strings"
	"syscall"
)

// Host memory for XLA's CPU plugin.
//
// XLA's CPU runtime allocates every execution's temporaries afresh, in blocks of over 100 MB
// allocated on the plugin's own threads, and frees them at its end. With glibc's default
// settings such blocks come from mmap and go back to the kernel when freed, so every step
// touches that memory for the first time again: the MiniLM training step (B=64, L=64) took
// about 330,000 page faults per step, and about 15% of its CPU time went to the kernel. Only
// glibc's main arena (the brk heap) can keep a block that large for reuse, so the settings
// are: one malloc arena, no mmap for large blocks, no trimming of the heap's free top. With
// two arenas the plugin's threads sometimes landed on the other one and the faults (and
// 1.2 GB more resident memory) came back in the middle of a run; with one, the page-fault
// count stays flat from the second step on.
//
// Those settings exist only as $GLIBC_TUNABLES, which glibc reads when a process starts
// (mallopt at run time cannot move the threads that already have an arena), so with
// $GOACCEL_HOST_MALLOC=keep a program that imports this package re-executes itself once at
// start with them set, before any of its own code runs. Measured on the 2-core machine, side
// by side in one `goaccel bench` run against glibc's defaults: MiniLM steps 1.15x faster, the
// tiny BERT's 1.22x, the MLP's 1.04x. The prices are memory (the MiniLM fine-tuning
// example's peak RSS went from 2.7 to 5.2 GB: the heap keeps both the training and the
// evaluation steps' temporaries) and time to the first update (+1.8 s for MiniLM, +1.2 s for
// the tiny BERT, as XLA's compiler threads contend for the one arena; the built-in example,
// `make run`, 36 short steps on 4 devices, took 9.8 s instead of 6.9 s). That is why it is not
// the default: it pays on long CPU training runs with memory to spare, not on short ones. The
// process keeps the memory it freed until it exits.
//
// It applies on Linux with glibc only, and not when $GLIBC_TUNABLES is already set (the
// user's own settings win).

// HostMallocEnv names the environment variable that turns the host-memory settings on:
// GOACCEL_HOST_MALLOC=keep (see above); unset or "system" keeps glibc's defaults.
const HostMallocEnv = "GOACCEL_HOST_MALLOC"

// HostMallocTunables is the $GLIBC_TUNABLES value of GOACCEL_HOST_MALLOC=keep (see above);
// trim_threshold is 16 GiB.
const HostMallocTunables = "glibc.malloc.arena_max=1:glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=17179869184"

func init() {
	reexec, warning := hostMallocPlan(os.Getenv, glibcVersion() != "")
	if reexec {
		exe, err := os.Executable()
		if err == nil {
			env := append(os.Environ(), "GLIBC_TUNABLES="+HostMallocTunables)
			err = syscall.Exec(exe, os.Args, env) // returns only on failure
		}
		warning = "re-executing this program with GLIBC_TUNABLES=" + HostMallocTunables + " failed (" +
			err.Error() + "); running with glibc's defaults"
	}
	if warning != "" {
		fmt.Fprintf(os.Stderr, "goaccel: WARNING: %s=%s: %s\n", HostMallocEnv, os.Getenv(HostMallocEnv), warning)
	}
}

// hostMallocPlan says whether the process should restart itself with HostMallocTunables
// (when $GOACCEL_HOST_MALLOC is "keep", on glibc, unless $GLIBC_TUNABLES is set), and what to
// warn about when the variable asks for something that cannot be done.
func hostMallocPlan(getenv func(string) string, glibc bool) (reexec bool, warning string) {
	switch v := strings.ToLower(strings.TrimSpace(getenv(HostMallocEnv))); v {
	case "", "system":
		return false, ""
	case "keep":
		switch t := getenv("GLIBC_TUNABLES"); {
		case t == HostMallocTunables:
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

// HostMalloc describes the host-memory settings of this process, for diagnostics
// (`goaccel env`): whether goaccel's glibc settings are in effect, and why not otherwise.
func HostMalloc() string {
	v := glibcVersion()
	tunables := os.Getenv("GLIBC_TUNABLES")
	switch {
	case v == "":
		return "the C library's defaults (not glibc)"
	case tunables == HostMallocTunables:
		return "glibc " + v + ", freed memory kept for reuse (" + HostMallocEnv + "=keep: GLIBC_TUNABLES=" +
			HostMallocTunables + ")"
	case tunables != "":
		return "glibc " + v + " with the user's GLIBC_TUNABLES=" + tunables
	default:
		return "glibc " + v + " defaults (" + HostMallocEnv + "=keep keeps freed memory for reuse: " +
			"faster steps on XLA's CPU plugin, slower compiling)"
	}
}
