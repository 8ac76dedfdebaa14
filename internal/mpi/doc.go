// Package mpi is goaccel's engine between processes: a small binding to an MPI library that is
// loaded at run time (dlopen through a small cgo C shim), so that building goaccel, running its
// tests, and every program that runs as one process never need MPI.
//
// A process started by an MPI launcher (mpiexec, srun, or goaccel launch) uses it as:
//
//	lib, err := mpi.Find()          // GOACCEL_MPI_LIB, $GOACCEL_HOME/mpich, LD_LIBRARY_PATH, system
//	comm, err := mpi.Init(lib)       // MPI_Init_thread on a dedicated OS thread
//	err = comm.Broadcast(weightBytes, 0) // rank 0's initial variables everywhere
//	for step := range steps {
//		err = comm.AllreduceFused(grads, true, 0) // mean gradient, 25 MiB buckets
//	}
//	err = comm.Barrier(0)
//	mpi.Exit(0) // not os.Exit, and do not return from main
//
// # Libraries
//
// Find prefers the MPI-5 standard ABI (libmpi_abi.so.1, shipped by recent MPICH such as the
// mpich 5.0.2 wheel that `goaccel setup` installs into $GOACCEL_HOME/mpich), then MPICH's own
// ABI (libmpi.so.12: MPICH, Intel MPI, MVAPICH), then Open MPI's (libmpi.so.40); in a process
// started by Open MPI's mpirun (OMPI_COMM_WORLD_SIZE is set) it looks for Open MPI's alone. All
// three are supported by the C shim; only the handle constants and types differ. On a cluster
// set GOACCEL_MPI_LIB to the libmpi of the mpiexec/srun that starts the job: a library that
// does not match its launcher either fails inside MPI_Init (MPICH under Open MPI's launcher:
// "unsupported PMI version PMIx") or sees every rank as a job of size 1, which Init reports as
// an error.
//
// # Threads
//
// Go moves goroutines between OS threads, and MPI wants its calls from the thread that
// initialized it. Every MPI call of the package therefore runs on one goroutine locked to its OS
// thread (runtime.LockOSThread), which calls MPI_Init_thread with MPI_THREAD_FUNNELED and then
// serves the calls of all goroutines one at a time. Comm's methods can be called from any
// goroutine; collectives must still be called in the same order on every rank.
//
// # Ending a process
//
// MPICH tells its launcher that a rank ended cleanly from a C atexit handler, which Go's
// os.Exit (and returning from main) never run: the launcher takes the exit for a crash and kills
// the other ranks, with exit status 0 or 9 at random. End every MPI process with Exit, which
// finalizes MPI and calls the C library's exit(). After a failed or timed-out collective, Exit
// aborts the job instead (it cannot finalize cleanly).
//
// # Timeouts
//
// A collective never waits forever: each is a non-blocking MPI call (MPI_Iallreduce,
// MPI_Ibcast, MPI_Iallgatherv, MPI_Ibarrier) polled with MPI_Test until a deadline (Timeout:
// DefaultTimeout, 30 minutes, or $GOACCEL_TIMEOUT, or SetTimeout's; Barrier takes its own).
// Alongside each collective every rank sends every other one a zero-byte "arrived" message (only to rank 0
// in jobs of more than 64 ranks), so a timeout is a *TimeoutError that names the ranks that
// never arrived. While some rank is missing the polling backs off (sleeps up to 1 ms), so a rank
// waiting at a barrier does not steal the CPU of the rank it waits for; once all arrived it
// polls flat out, as a blocking MPI call does. A consequence: every collective returns only
// after every rank has arrived at it, as a barrier does (a broadcast's receivers wait for each
// other, not only for the root).
//
// # Hang reports
//
// Every collective is recorded in a ring of the Comm's last 64 (sequence number, operation,
// bytes, caller, start, state): one runtime.Callers per collective (a fused gradient all-reduce
// is one, its buckets under it), resolved to a file:line only when needed. The caller is the
// frame just outside the outermost of goaccel's own frames: the module's internal packages and
// the module package that called into them (the accelerator), recognised by their place in the
// stack, not by name (package trainer and _test.go files count as callers). The arrival messages' tags encode the
// operation as well as the sequence number, so ranks that call different collectives at the
// same point (one skipped an Evaluate) both time out there, even when MPI matched the two
// operations. A rank whose collective times out writes its hang report (the ring, then every
// goroutine's stack; WriteHangReport) to $GOACCEL_LOG_DIR/hang.txt under goaccel launch, else
// to $GOACCEL_HANG_DIR or the working folder as goaccel-hang-rank<R>.txt, prints its first line
// on stderr, and then sends every other rank an alarm (jobs of at most 64 ranks): a rank
// waiting in a collective looks for one every half second and writes its own report, and the
// rank that timed out waits up to 1 s for their answers before its error returns (after which
// Exit aborts the job, which ends every rank). goaccel launch then prints one verdict line from
// the reports of its ranks, at most 1 s after the first appeared.
//
// $GOACCEL_DEBUG=1 adds a check before each collective: the ranks exchange (sequence,
// operation, bytes, caller) in a 512-byte all-gather, and a difference fails at once with an
// error that wraps ErrMismatch and names every rank's call site. It costs one small collective
// per collective: a debugging mode.
//
// # Environment
//
// Init sets, unless already set, MPIR_CVAR_BCAST_POSIX_INTRA_ALGORITHM,
// MPIR_CVAR_ALLREDUCE_POSIX_INTRA_ALGORITHM and MPIR_CVAR_BARRIER_POSIX_INTRA_ALGORITHM to
// "mpir": MPICH's default shared-memory ("posix") blocking collectives spin so hard when ranks
// outnumber cores that a 440 MB MPI_Bcast on 4 ranks / 2 cores did not finish in 120 s, and on
// this 2-core machine even 2 ranks' raw MPI_Allreduce of 44 MB ran at half the speed. The
// package's own collectives are non-blocking and do not take that path (its 440 MB Broadcast on
// 4 ranks / 2 cores took 0.3-0.4 s with or without the variables); the settings protect blocking
// calls (MPI_Finalize's, the benchmark's reference, another MPI user's in the process). Other MPI
// libraries ignore them.
// Read by the package: GOACCEL_MPI_LIB (a library file or directory), GOACCEL_MPI_ABI (standard,
// mpich or openmpi: overrides detection), GOACCEL_TIMEOUT (TimeoutEnv; its former name
// GOACCEL_COLLECTIVE_TIMEOUT is an error), GOACCEL_DEBUG, GOACCEL_LOG_DIR and GOACCEL_HANG_DIR
// (hang reports).
//
// MPICH jobs killed from outside leave /dev/shm/mpich_shm_* files behind; the launcher is
// expected to remove them.
package mpi
