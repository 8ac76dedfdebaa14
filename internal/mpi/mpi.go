package mpi

/*
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"
	"unsafe"

	"github.com/goaccel/goaccel/internal/envvar"
)

// DefaultTimeout bounds every collective unless $GOACCEL_TIMEOUT (TimeoutEnv) or SetTimeout says
// otherwise. It is long because a rank may legitimately arrive late (rank 0 writing a
// checkpoint, a slow first compilation); its purpose is to turn a hang into an error, not to
// police stragglers.
const DefaultTimeout = 30 * time.Minute

// TimeoutEnv names the variable that bounds every wait on other processes, read by
// TimeoutFromEnv: a Go duration ("90s", "30m") or a number of seconds ("90").
const TimeoutEnv = "GOACCEL_TIMEOUT"

// ParseTimeout reads a timeout as $GOACCEL_TIMEOUT gives it: a positive Go duration such as
// "90s" or "30m", or a positive number of seconds such as "90" or "2.5" (goaccel's one
// duration parser, envvar.ParseDuration).
func ParseTimeout(v string) (time.Duration, error) { return envvar.ParseDuration(v) }

// TimeoutFromEnv is $GOACCEL_TIMEOUT (see ParseTimeout), or DefaultTimeout when it is unset or
// empty. $GOACCEL_COLLECTIVE_TIMEOUT, its former name, is an error that names the new one. The
// errors name the variable and have no package prefix: callers add theirs.
func TimeoutFromEnv() (time.Duration, error) {
	if v := envvar.CollectiveTimeout.Value(); v != "" {
		return 0, fmt.Errorf("$%s=%q is no longer read: set $%s (the same values) instead", envvar.CollectiveTimeout.Name, v, TimeoutEnv)
	}
	d, set, err := envvar.Timeout.Duration()
	if err != nil {
		return 0, err
	}
	if !set {
		return DefaultTimeout, nil
	}
	return d, nil
}

// ABI's values are shim.h's GS_ABI_*: these fail to compile otherwise.
var (
	_ [ABIStandard - C.GS_ABI_STANDARD]struct{}
	_ [C.GS_ABI_STANDARD - ABIStandard]struct{}
	_ [ABIMPICH - C.GS_ABI_MPICH]struct{}
	_ [C.GS_ABI_MPICH - ABIMPICH]struct{}
	_ [ABIOpenMPI - C.GS_ABI_OPENMPI]struct{}
	_ [C.GS_ABI_OPENMPI - ABIOpenMPI]struct{}
)

// intraNodeCVars are MPICH settings Init puts in the environment before MPI_Init unless the user
// set them: MPICH's shared-memory ("posix") collectives spin so hard when ranks outnumber
// cores that a 440 MB broadcast on 4 ranks / 2 cores did not finish in 120 s; its generic
// ("mpir") algorithms did. Other MPI libraries ignore them.
var intraNodeCVars = []envvar.String{envvar.BcastAlgorithm, envvar.AllreduceAlgorithm, envvar.BarrierAlgorithm}

// Comm is the world communicator of an initialized MPI job (a private duplicate of
// MPI_COMM_WORLD, so goaccel's messages never mix with another MPI user's in the process).
//
// Its methods are safe for concurrent use: every MPI call of the package runs on one locked OS
// thread, the one that called MPI_Init_thread (MPI_THREAD_FUNNELED), and calls are served one at
// a time in the order they arrive. Collectives must still be called in the same order on every
// rank, as with any MPI program.
type Comm struct {
	lib       Library
	version   string
	rank      int
	size      int
	localRank int
	localSize int
	comm      C.gs_handle

	calls chan func()
	fused []float32 // AllreduceFused's bucket buffer, reused; MPI thread only
	// onBuckets is OnBuckets's observer (nil: none).
	onBuckets func(buckets string, bytes int64, start, end time.Time)

	mu        sync.Mutex
	timeout   time.Duration
	broken    error // set by a collective that timed out or failed; every later one fails with it
	finalized bool
	seq       uint32 // collectives so far; tags the arrival messages
	ring      [ringSize]*call
	ringN     int  // collectives recorded in ring so far
	debug     bool // $GOACCEL_DEBUG: verify every collective with the other ranks first
	trackAll  int  // trackAllLimit (tests lower it)

	// The alarm (alarm.go), MPI thread only.
	alarmsArmed bool
	alarms      []C.gs_handle // receives of another rank's alarm, one per peer
	alarmFrom   []int
	alarmDone   []C.int
	acks        []C.gs_handle
}

var (
	initMu sync.Mutex
	world  *Comm // the Comm of this process, once Init succeeded
)

// Init opens lib with dlopen and initializes MPI (MPI_Init_thread with MPI_THREAD_FUNNELED)
// on a dedicated, locked OS thread. It may succeed once per process: MPI cannot be initialized
// again, even after Finalize. The MPI launcher (mpiexec, srun, or goaccel launch through PMI)
// must have started the process; one started alone becomes a job of size 1.
//
// Before MPI_Init it sets MPIR_CVAR_{BCAST,ALLREDUCE,BARRIER}_POSIX_INTRA_ALGORITHM=mpir
// unless they are set (see the package documentation).
func Init(lib Library) (*Comm, error) {
	initMu.Lock()
	defer initMu.Unlock()
	if world != nil {
		return nil, fmt.Errorf("mpi: init: MPI is already initialized in this process (%s)", world.lib.Path)
	}
	timeout, err := TimeoutFromEnv()
	if err != nil {
		return nil, fmt.Errorf("mpi: init: %w", err)
	}
	for _, k := range intraNodeCVars {
		if _, ok := k.Lookup(); !ok {
			if err := k.Set("mpir"); err != nil {
				return nil, fmt.Errorf("mpi: init: %w", err)
			}
		}
	}
	debug, err := envvar.Debug.Bool()
	if err != nil {
		return nil, fmt.Errorf("mpi: init: %w", err)
	}
	c := &Comm{lib: lib, timeout: timeout, calls: make(chan func()), debug: debug, trackAll: trackAllLimit}
	ready := make(chan error, 1)
	go c.serve(ready)
	if err := <-ready; err != nil {
		return nil, err
	}
	if err := c.checkLauncher(); err != nil {
		return nil, err
	}
	world = c
	return c, nil
}

// serve is the MPI thread: it initializes MPI, then runs the calls sent to c.calls, forever.
// The goroutine keeps its OS thread locked and never unlocks it, so the thread dies with it.
func (c *Comm) serve(ready chan<- error) {
	runtime.LockOSThread()
	if err := c.open(); err != nil {
		ready <- err
		return
	}
	ready <- nil
	for f := range c.calls {
		f()
	}
}

// open runs on the MPI thread: dlopen, MPI_Init_thread, the private communicator, rank/size.
func (c *Comm) open() error {
	cpath := C.CString(c.lib.Path)
	defer C.free(unsafe.Pointer(cpath))
	var errbuf [512]C.char
	std := C.int(0)
	if c.lib.ABI == ABIStandard || (c.lib.ABI == ABIUnknown && abiOfName(baseName(c.lib.Path)) == ABIStandard) {
		std = 1
	}
	abi := C.int(0)
	switch c.lib.ABI {
	case ABIStandard:
		abi = C.GS_ABI_STANDARD
	case ABIMPICH:
		abi = C.GS_ABI_MPICH
	case ABIOpenMPI:
		abi = C.GS_ABI_OPENMPI
	}
	if C.gs_open(cpath, abi, std, &errbuf[0], C.int(len(errbuf))) != 0 {
		return fmt.Errorf("mpi: init: open %s: %s", c.lib.Path, C.GoString(&errbuf[0]))
	}
	c.lib.ABI = ABI(C.gs_abi())
	var ok C.int
	if rc := C.gs_init_thread_funneled(&ok); rc != 0 {
		return c.mpiErr("init", "MPI_Init_thread", rc)
	}
	if ok == 0 {
		return fmt.Errorf("mpi: init: MPI_Init_thread: %s does not provide MPI_THREAD_FUNNELED", c.lib.Path)
	}
	var vbuf [1024]C.char
	C.gs_library_version(&vbuf[0], C.int(len(vbuf)))
	c.version = firstLine(C.GoString(&vbuf[0]))
	if rc := C.gs_comm_dup_world(&c.comm); rc != 0 {
		return c.mpiErr("init", "MPI_Comm_dup", rc)
	}
	var r, s, lr, ls C.int
	if rc := C.gs_comm_rank(c.comm, &r); rc != 0 {
		return c.mpiErr("init", "MPI_Comm_rank", rc)
	}
	if rc := C.gs_comm_size(c.comm, &s); rc != 0 {
		return c.mpiErr("init", "MPI_Comm_size", rc)
	}
	if rc := C.gs_local(c.comm, &lr, &ls); rc != 0 {
		return c.mpiErr("init", "MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)", rc)
	}
	c.rank, c.size, c.localRank, c.localSize = int(r), int(s), int(lr), int(ls)
	return nil
}

// checkLauncher catches a library that does not match the launcher (for example Open MPI's
// mpirun starting a program that loaded MPICH): each rank then sees a job of size 1.
func (c *Comm) checkLauncher() error {
	for _, v := range []envvar.Int{envvar.OMPISize, envvar.PMISize, envvar.PMIxSize} {
		if n, _, err := v.Int(); err == nil && n > 1 && c.size == 1 {
			k := v.Name
			return fmt.Errorf("mpi: init: the launcher started %d processes (%s=%d) but %s (%s ABI) sees a job of 1: "+
				"the MPI library does not match the launcher; set GOACCEL_MPI_LIB to the libmpi of the mpiexec you use",
				n, k, n, c.lib.Path, c.lib.ABI)
		}
	}
	return nil
}

// Broken is the error of the collective that failed (timed out) in this process, after which
// MPI_Finalize would wait for a rank that never comes; nil when none did.
func (c *Comm) Broken() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.broken
}

// do runs f on the MPI thread and returns its error.
func (c *Comm) do(f func() error) error {
	done := make(chan error, 1)
	c.calls <- func() { done <- f() }
	return <-done
}

// Rank is this process's index in the job, 0 <= Rank < Size.
func (c *Comm) Rank() int { return c.rank }

// Size is the number of processes in the job.
func (c *Comm) Size() int { return c.size }

// LocalRank is this process's index among the processes of its machine (MPI_COMM_TYPE_SHARED).
func (c *Comm) LocalRank() int { return c.localRank }

// LocalSize is the number of processes of the job on this machine.
func (c *Comm) LocalSize() int { return c.localSize }

// Library is the MPI library in use, with its ABI as detected when it was opened.
func (c *Comm) Library() Library { return c.lib }

// Version is the first line of MPI_Get_library_version, e.g. "MPICH Version: 5.0.2".
func (c *Comm) Version() string { return c.version }

// Timeout is the time a collective may wait for the other ranks before it fails.
func (c *Comm) Timeout() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.timeout
}

// SetTimeout changes Timeout; d <= 0 restores DefaultTimeout.
func (c *Comm) SetTimeout(d time.Duration) {
	if d <= 0 {
		d = DefaultTimeout
	}
	c.mu.Lock()
	c.timeout = d
	c.mu.Unlock()
}

// Finalize ends MPI (MPI_Finalize). No MPI call may follow, and MPI cannot be initialized
// again. After a failed or timed-out collective it does nothing and returns an error: the
// missing rank would keep MPI_Finalize waiting; Exit then aborts the job. A process that used MPI should end with Exit rather than return from main (see Exit).
func (c *Comm) Finalize() error {
	e := begin("finalize", 0, false)
	return c.do(func() error {
		c.mu.Lock()
		if c.finalized {
			c.mu.Unlock()
			return nil
		}
		if c.broken != nil {
			c.mu.Unlock()
			// MPI_Finalize would wait for the rank that never came: leave MPI to Exit, which
			// aborts the job.
			return fmt.Errorf("mpi: finalize: skipped after a failed collective (%v); end the process with mpi.Exit, which aborts the job", c.broken)
		}
		c.finalized = true
		// MPI_Finalize waits for the other ranks: the ring shows it, and a hang report
		// (which takes c.mu) can be written meanwhile.
		c.push(e, c.seq)
		c.mu.Unlock()
		c.disarm()
		rc := C.gs_finalize()
		var err error
		if rc != 0 {
			err = c.mpiErr("finalize", "MPI_Finalize", rc)
		}
		c.mu.Lock()
		c.finish(e, err)
		c.mu.Unlock()
		return err
	})
}

// Exit ends the process with code, the way MPI launchers expect: it finalizes MPI (when Init
// succeeded and Finalize was not called) and calls the C library's exit(), which runs MPICH's
// atexit handler that tells the launcher the rank ended cleanly. Go's os.Exit, and returning from
// main, skip that handler: the launcher then takes the exit for a crash and kills the other ranks.
// After a collective failed or timed out the job cannot finalize cleanly, so Exit aborts it
// instead (MPI_Abort with code, or 1 when code is 0). A collective in progress on another
// goroutine is let finish (or time out) first; use Abort to end at once. Exit can be called
// without Init.
func Exit(code int) {
	c := initialized()
	if c == nil {
		C.gs_exit(C.int(code))
		return
	}
	c.calls <- func() {
		c.mu.Lock()
		broken, finalized := c.broken, c.finalized
		c.finalized = true
		c.mu.Unlock()
		if broken != nil {
			if code == 0 {
				code = 1
			}
			C.gs_abort(c.comm, C.int(code))
		} else if !finalized {
			c.disarm()
			C.gs_finalize()
		}
		C.gs_exit(C.int(code))
	}
	select {} // the MPI thread ends the process
}

// Abort ends every process of the job with code (MPI_Abort). It may be called from any
// goroutine, also while another goroutine waits in a collective: that wait is interrupted first.
// Without Init it exits the process.
func Abort(code int) {
	c := initialized()
	if c == nil {
		C.gs_exit(C.int(code))
		return
	}
	C.gs_request_abort() // a gs_wait in progress returns, freeing the MPI thread
	c.calls <- func() {
		C.gs_abort(c.comm, C.int(code))
		C.gs_exit(C.int(code))
	}
	select {}
}

// initialized returns the process's Comm, or nil before Init.
func initialized() *Comm {
	initMu.Lock()
	defer initMu.Unlock()
	return world
}

// mpiErr formats an MPI error code once: "mpi: op: call failed: <MPI_Error_string> (MPI error
// N, library path)".
func (c *Comm) mpiErr(op, call string, rc C.int) error {
	switch rc {
	case C.GS_ABORTED:
		return fmt.Errorf("mpi: %s: %w", op, ErrAborted)
	case C.GS_NOT_OPEN:
		return fmt.Errorf("mpi: %s: %s: the MPI library is not open", op, call)
	}
	var buf [1024]C.char
	C.gs_error_string(rc, &buf[0], C.int(len(buf)))
	msg := C.GoString(&buf[0])
	if msg == "" {
		msg = "unknown error"
	}
	return fmt.Errorf("mpi: %s: %s failed: %s (MPI error %d, library %s)", op, call, msg, int(rc), c.lib.Path)
}

// ErrAborted is wrapped by the error of a collective interrupted by Abort.
var ErrAborted = errors.New("the job is being aborted")

func baseName(p string) string {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' {
			return p[i+1:]
		}
	}
	return p
}

func firstLine(s string) string {
	for i, r := range s {
		if r == '\n' || r == '\r' {
			return s[:i]
		}
	}
	return s
}
