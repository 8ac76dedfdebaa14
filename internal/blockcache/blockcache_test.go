//go:build linux && cgo

package blockcache

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/goaccel/goaccel/internal/testutil"
)

const mib = 1 << 20

// childRole, set to "owns", makes the test binary print whether an 8 MiB malloc comes from
// the cache, and exit (TestOffByEnvironment's child).
const childRole = "GOACCEL_TEST_BLOCKCACHE_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childRole) == "owns" {
		p := cMalloc(8 * mib)
		fmt.Printf("owns=%v\n", owns(p))
		cFree(p)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func faults() int64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Minflt
}

// TestFreedBlockIsReused: a large block, freed, serves the next request of its size with
// its pages still resident (no page faults when it is written again).
func TestFreedBlockIsReused(t *testing.T) {
	n := 64 * mib
	p := cMalloc(n)
	if !owns(p) {
		t.Fatalf("malloc(%d) = %p, not a cache block (%+v)", n, p, Read())
	}
	cMemset(p, 1, n)
	cFree(p)
	before := Read()
	q := cMalloc(n)
	f := faults()
	cMemset(q, 2, n)
	f = faults() - f
	cFree(q)
	if q != p {
		t.Errorf("second malloc(%d) = %p, want the freed block %p", n, q, p)
	}
	if after := Read(); after.Reused != before.Reused+1 {
		t.Errorf("Reused went from %d to %d, want one more", before.Reused, after.Reused)
	}
	if f > 100 {
		t.Errorf("writing the reused block faulted %d pages in, want none (it has %d)", f, n/4096)
	}
}

// TestSmallRequestsGoToGlibc: under MinBytes, and pointers glibc handed out, are glibc's.
func TestSmallRequestsGoToGlibc(t *testing.T) {
	p := cMalloc(int(MinBytes) - 1)
	defer cFree(p)
	if owns(p) {
		t.Errorf("malloc(%d) came from the cache; want glibc's", MinBytes-1)
	}
	if u := cUsable(p); u < int(MinBytes)-1 {
		t.Errorf("malloc_usable_size of glibc's block = %d, want >= %d", u, MinBytes-1)
	}
	big := cMalloc(int(MinBytes))
	defer cFree(big)
	if !owns(big) {
		t.Errorf("malloc(%d) did not come from the cache", MinBytes)
	}
	if u := cUsable(big); u < int(MinBytes) {
		t.Errorf("malloc_usable_size of a block = %d, want >= %d", u, MinBytes)
	}
}

// TestMostRecentlyFreedFirst: of the free blocks that fit best, a request gets the one
// freed last (its lines may still be in the CPU's caches), then the one before it.
func TestMostRecentlyFreedFirst(t *testing.T) {
	n := int(MinBytes) // every block below is one 2 MiB grain
	a, b := cMalloc(n), cMalloc(n)
	if !owns(a) || !owns(b) {
		t.Fatalf("malloc(%d) did not come from the cache", n)
	}
	cFree(a)
	cFree(b)
	first, second := cMalloc(n), cMalloc(n)
	defer cFree(first)
	defer cFree(second)
	if first != b || second != a {
		t.Errorf("after freeing %p then %p, two malloc(%d) gave %p and %p; want the last freed first", a, b, n, first, second)
	}
}

// TestCallocZeroesReusedBlock: calloc on a block that held data returns zeros.
func TestCallocZeroesReusedBlock(t *testing.T) {
	n := 6 * mib
	p := cMalloc(n)
	cMemset(p, 0xff, n)
	cFree(p)
	q := cCalloc(n/8, 8)
	defer cFree(q)
	if !owns(q) {
		t.Fatal("calloc did not come from the cache")
	}
	b := unsafe.Slice((*byte)(q), n)
	for i, v := range b {
		if v != 0 {
			t.Fatalf("calloc'd byte %d = %#x, want 0", i, v)
		}
	}
	if cCalloc(1<<62, 8) != nil {
		t.Error("calloc(2^62, 8) did not fail on the overflow")
	}
}

// TestReallocKeepsContents: realloc between glibc's and the cache's blocks, growing and
// shrinking, keeps the bytes.
func TestReallocKeepsContents(t *testing.T) {
	p := cMalloc(1000)
	s := unsafe.Slice((*byte)(p), 1000)
	for i := range s {
		s[i] = byte(i)
	}
	p = cRealloc(p, 10*mib) // glibc's block grows: glibc moves it
	p = cRealloc(p, 1)      // stays
	q := cMalloc(20 * mib)
	s = unsafe.Slice((*byte)(q), 1000)
	for i := range s {
		s[i] = byte(i * 3)
	}
	q = cRealloc(q, 30*mib) // a block grows into another block
	if !owns(q) {
		t.Fatal("realloc to 30 MiB did not give a cache block")
	}
	q = cRealloc(q, 500) // and shrinks into glibc's
	if owns(q) {
		t.Error("realloc to 500 bytes kept a cache block")
	}
	for i, v := range unsafe.Slice((*byte)(q), 500) {
		if v != byte(i*3) {
			t.Fatalf("byte %d after realloc = %d, want %d", i, v, byte(i*3))
		}
	}
	cFree(q)
	cFree(p)
}

// TestGlibcOwnCallersUseIt: glibc's functions that allocate (strdup here) call this
// program's malloc, as XLA's plugin and the C++ runtime do.
func TestGlibcOwnCallersUseIt(t *testing.T) {
	p := cStrdup(strings.Repeat("x", 5*mib))
	defer cFree(p)
	if !owns(p) {
		t.Error("strdup of 5 MiB did not come from the cache: malloc is not interposed for the C library's own calls")
	}
}

// TestAligned: posix_memalign serves large aligned requests and refuses bad alignments.
func TestAligned(t *testing.T) {
	p, rc := cPosixMemalign(4096, 16*mib)
	if rc != 0 || !owns(p) || uintptr(p)%4096 != 0 {
		t.Errorf("posix_memalign(4096, 16 MiB) = %p, %d: want an aligned cache block", p, rc)
	}
	cFree(p)
	if _, rc := cPosixMemalign(24, 16*mib); rc != int(syscall.EINVAL) {
		t.Errorf("posix_memalign(24, ...) = %d, want EINVAL", rc)
	}
}

// TestCachedBytesBounded: the bytes in blocks, in use and cached, never exceed 1.25 times
// the most ever in use at once; a request that needs new pages gives the least recently
// freed cached blocks back to the kernel first.
func TestCachedBytesBounded(t *testing.T) {
	a := cMalloc(int(max(Read().PeakLive, 200*mib)))
	cFree(a)
	before := Read()
	b := cMalloc(int(before.PeakLive) + 100*mib) // larger than any cached block: new pages, and a new peak
	st := Read()
	cFree(b)
	limit := st.PeakLive + st.PeakLive/4
	if st.Live+st.Cached > limit {
		t.Errorf("in use %d + cached %d bytes exceed 1.25 x the peak in use %d", st.Live, st.Cached, st.PeakLive)
	}
	if st.Released < before.Released+before.Cached-(limit-st.Live) {
		t.Errorf("released %d bytes before, %d after the larger request: want at least the cached %d over the limit",
			before.Released, st.Released, before.Cached)
	}
	if after := Read(); after.Live+after.Cached > after.PeakLive+after.PeakLive/4 {
		t.Errorf("after the free: in use %d + cached %d exceed 1.25 x the peak %d", after.Live, after.Cached, after.PeakLive)
	}
}

// TestOffByEnvironment: GOACCEL_HOST_MALLOC=system, or any GLIBC_TUNABLES, leaves every
// request to glibc.
func TestOffByEnvironment(t *testing.T) {
	for _, tc := range []struct {
		env  []string
		want string
	}{
		{nil, "owns=true"},
		{[]string{"GOACCEL_HOST_MALLOC=system"}, "owns=false"},
		{[]string{"GOACCEL_HOST_MALLOC= System"}, "owns=false"},
		{[]string{"GOACCEL_HOST_MALLOC=SYSTEM\t"}, "owns=false"},
		{[]string{"GOACCEL_HOST_MALLOC=keep"}, "owns=true"},
		// Not "system": a value that only starts with it is refused by accelerator.New
		// (envvar.Choice), so the cache must not read it as "system" either.
		{[]string{"GOACCEL_HOST_MALLOC=systemd"}, "owns=true"},
		{[]string{"GOACCEL_HOST_MALLOC=system keep"}, "owns=true"},
		{[]string{"GLIBC_TUNABLES=glibc.malloc.arena_max=2"}, "owns=false"},
	} {
		cmd := exec.Command(os.Args[0])
		var env []string
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "GLIBC_TUNABLES=") && !strings.HasPrefix(kv, "GOACCEL_HOST_MALLOC=") {
				env = append(env, kv)
			}
		}
		cmd.Env = append(append(env, childRole+"=owns"), tc.env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v: child: %v\n%s", tc.env, err, out)
		}
		if !strings.Contains(string(out), tc.want) {
			t.Errorf("%v: child printed %q, want %q", tc.env, out, tc.want)
		}
	}
}

// TestOffInSharedLibrary: built into a shared library that a program loads after glibc
// (-buildmode=c-shared), the cache's malloc is not the process's, and libraries bound to
// glibc's free would be handed its blocks: it stays off.
func TestOffInSharedLibrary(t *testing.T) {
	testutil.Long(t, "builds a c-shared library and a C loader (about a minute)")
	cc, err := exec.LookPath("gcc")
	if err != nil {
		testutil.Missing(t, "no gcc to build the C loader", "apt-get install gcc")
	}
	dir := t.TempDir()
	lib := dir + "/libcshared.so"
	build := exec.Command("go", "build", "-buildmode=c-shared", "-o", lib, "./testdata/cshared")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -buildmode=c-shared: %v\n%s", err, out)
	}
	loader := dir + "/loader"
	if out, err := exec.Command(cc, "-o", loader, "testdata/cshared/loader.c", "-ldl").CombinedOutput(); err != nil {
		t.Fatalf("gcc loader.c: %v\n%s", err, out)
	}
	cmd := exec.Command(loader, lib)
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GLIBC_TUNABLES=") && !strings.HasPrefix(kv, "GOACCEL_HOST_MALLOC=") {
			env = append(env, kv)
		}
	}
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("loader: %v\n%s", err, out)
	}
	if want := "off: this code's malloc is not the process's"; !strings.Contains(string(out), want) {
		t.Errorf("the library printed %q, want %q", out, want)
	}
}
