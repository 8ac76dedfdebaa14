package launch

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/goaccel/goaccel/internal/mpi"
)

// The test binary is also the worker and, for the command-line tests, the launcher:
//   - "$TEST_BINARY launch ARGS" with $GOACCEL_LAUNCH_TEST_LAUNCHER set runs Main(ARGS);
//   - with $GOACCEL_LAUNCH_TEST_WORKER set it is a worker that behaves as the value says
//     (see testWorker), writing what the test checks into $GOACCEL_LAUNCH_TEST_DIR.
const (
	launcherSwitch = "GOACCEL_LAUNCH_TEST_LAUNCHER"
	workerSwitch   = "GOACCEL_LAUNCH_TEST_WORKER"
	dirVar         = "GOACCEL_LAUNCH_TEST_DIR"
	// noGuardianSwitch=1 makes the test launcher start no guardian (the parent-death signal alone).
	noGuardianSwitch = "GOACCEL_LAUNCH_TEST_NO_GUARDIAN"
	// graceSwitch, a duration, is the test launcher's default StopGrace.
	graceSwitch = "GOACCEL_LAUNCH_TEST_STOP_GRACE"
	// workerSleep is how long the exit3 survivors and the sleep workers sleep: a test whose job
	// ends well before it knows that the launcher stopped them.
	workerSleep = 60 * time.Second
)

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "launch" && os.Getenv(launcherSwitch) != "" {
		os.Exit(mainWith(os.Args[2:], os.Stdout, os.Stderr, func(cfg *Config) {
			cfg.noGuardian = os.Getenv(noGuardianSwitch) == "1"
			if d, err := time.ParseDuration(os.Getenv(graceSwitch)); err == nil && cfg.StopGrace == 0 {
				cfg.StopGrace = d
			}
		}))
	}
	if mode := os.Getenv(workerSwitch); mode != "" {
		os.Exit(testWorker(mode))
	}
	os.Exit(m.Run())
}

// envKeys are the variables a worker records for the tests.
var envKeys = []string{"RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "NODE_RANK", "GROUP_RANK",
	"MASTER_ADDR", "MASTER_PORT", "GOACCEL_DEVICES", "GOMAXPROCS", "OMP_NUM_THREADS", "PMI_PORT", "PMI_ID",
	"PMI_FD", "PMI_RANK", "GOACCEL_JOB_SECRET", "PMI_SIZE", "MPI_LOCALRANKID", "MPIR_CVAR_BCAST_POSIX_INTRA_ALGORITHM", "GOACCEL_RESTART_COUNT",
	"CUDA_VISIBLE_DEVICES", "GOACCEL_CPUS"}

// testWorker is one rank of a test job. Modes:
//
//	env       write RANK's environment to DIR/env_RANK and exit 0
//	exit3     rank $FAIL_RANK exits 3 after 200 ms; the others sleep (until stopped)
//	sleep     write DIR/pid_RANK and sleep; rank $STUBBORN_RANK ignores SIGTERM
//	shm       map one file under /dev/shm, leave another, write DIR/pid_RANK and sleep 60 s;
//	          with $TICKS, print a line every 50 ms instead and exit 0 after $TICKS lines (only
//	          rank $TICK_RANK when it is set)
//	gompi     internal/mpi: all-reduce rank+1, barrier, check, mpi.Exit(0); with $GATE_FILE, once
//	          that file exists
//	gohang    internal/mpi: a barrier, then rank 1 writes DIR/hang_start (Unix ns) and waits in a
//	          second barrier for $GOACCEL_TIMEOUT, which rank 0 never calls: with $HANG_OTHER=busy
//	          it sleeps outside any collective, else it waits in an all-reduce 1 s later
//	envrdzv   started without a launcher (torch's variables only): meet through Join, then
//	          MPI: all-reduce rank+1, print it, MPI_Finalize, Member.End(0), exit 0; rank
//	          $KILL_RANK SIGKILLs itself after the all-reduce while the others wait in a barrier
//	failonce  rank 1 exits 7 unless DIR/marker exists (it creates it); then all exit 0
//	store     rank 0 listens on MASTER_ADDR:MASTER_PORT (as PyTorch's TCPStore does) and reads
//	          one line from every other rank, which connects there; DIR/store_0 lists them
func testWorker(mode string) int {
	dir := os.Getenv(dirVar)
	rank := os.Getenv("RANK")
	fmt.Printf("worker %s of %s starting (%s)\n", rank, os.Getenv("WORLD_SIZE"), mode)
	fmt.Fprintf(os.Stderr, "worker %s stderr line\n", rank)
	switch mode {
	case "env":
		f, err := os.Create(filepath.Join(dir, "env_"+rank))
		if err != nil {
			return 10
		}
		defer f.Close()
		if status, err := os.ReadFile("/proc/self/status"); err == nil {
			for _, line := range strings.Split(string(status), "\n") {
				if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
					fmt.Fprintf(f, "allowed_cpus=%s\n", strings.TrimSpace(v))
				}
			}
		}
		for _, k := range envKeys {
			v, ok := os.LookupEnv(k)
			if !ok {
				v = "<unset>"
			}
			fmt.Fprintf(f, "%s=%s\n", k, v)
		}
		return 0
	case "exit3":
		if rank == os.Getenv("FAIL_RANK") {
			time.Sleep(200 * time.Millisecond)
			fmt.Fprintln(os.Stderr, "worker failing on purpose with exit code 3")
			return 3
		}
		time.Sleep(workerSleep)
		return 0
	case "sleep":
		if rank == os.Getenv("STUBBORN_RANK") {
			signal.Ignore(syscall.SIGTERM)
		}
		if err := os.WriteFile(filepath.Join(dir, "pid_"+rank), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
			return 10
		}
		time.Sleep(workerSleep)
		return 0
	case "shm":
		pid := strconv.Itoa(os.Getpid())
		f, err := os.Create(filepath.Join(shmDir, "mpich_shm_goaccel_test_mapped_"+pid))
		if err != nil || f.Truncate(4096) != nil {
			return 10
		}
		if _, err := syscall.Mmap(int(f.Fd()), 0, 4096, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED); err != nil {
			return 11
		}
		if err := os.WriteFile(filepath.Join(shmDir, "mpich_shm_goaccel_test_loose_"+pid), nil, 0o600); err != nil {
			return 12
		}
		if err := os.WriteFile(filepath.Join(dir, "pid_"+rank), []byte(pid), 0o644); err != nil {
			return 10
		}
		ticks, err := strconv.Atoi(os.Getenv("TICKS"))
		if err != nil || os.Getenv("TICK_RANK") != "" && os.Getenv("TICK_RANK") != rank {
			time.Sleep(workerSleep)
			return 0
		}
		for i := 1; i <= ticks; i++ {
			fmt.Printf("rank %s tick %d\n", rank, i)
			time.Sleep(50 * time.Millisecond)
		}
		return 0
	case "gompi":
		for gate := os.Getenv("GATE_FILE"); gate != ""; time.Sleep(20 * time.Millisecond) {
			if _, err := os.Stat(gate); err == nil {
				break // the test opened the gate
			}
		}
		lib, comm, code := joinMPI()
		if comm == nil {
			return code
		}
		buf := []float64{float64(comm.Rank() + 1)}
		if err := comm.AllreduceFloat64(buf, mpi.Sum); err != nil {
			fmt.Fprintln(os.Stderr, err)
			mpi.Exit(22)
		}
		if err := comm.Barrier(30 * time.Second); err != nil {
			fmt.Fprintln(os.Stderr, err)
			mpi.Exit(23)
		}
		n := comm.Size()
		fmt.Printf("go rank %d of %d (%s): allreduce %g\n", comm.Rank(), n, lib.ABI, buf[0])
		if buf[0] != float64(n*(n+1)/2) || strconv.Itoa(comm.Rank()) != rank || strconv.Itoa(n) != os.Getenv("WORLD_SIZE") {
			mpi.Exit(24)
		}
		mpi.Exit(0)
	case "gohang":
		return hangWorker(dir, rank)
	case "envrdzv":
		return envRendezvousWorker()
	case "failonce":
		marker := filepath.Join(dir, "marker")
		if rank == "1" {
			if _, err := os.Stat(marker); err != nil {
				_ = os.WriteFile(marker, nil, 0o644)
				time.Sleep(100 * time.Millisecond)
				return 7
			}
		}
		_ = os.WriteFile(filepath.Join(dir, "ok_"+rank+"_"+os.Getenv("GOACCEL_RESTART_COUNT")), nil, 0o644)
		return 0
	case "store":
		return storeWorker(dir, rank)
	}
	fmt.Fprintln(os.Stderr, "unknown worker mode", mode)
	return 10
}

// storeWorker is the "store" mode: what PyTorch's init_process_group does first with
// MASTER_ADDR and MASTER_PORT (rank 0 binds there, the others connect).
func storeWorker(dir, rank string) int {
	addr := net.JoinHostPort(os.Getenv("MASTER_ADDR"), os.Getenv("MASTER_PORT"))
	world, _ := strconv.Atoi(os.Getenv("WORLD_SIZE"))
	if rank == "0" {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			fmt.Fprintf(os.Stderr, "rank 0 cannot bind its store: %v\n", err)
			return 30
		}
		defer ln.Close()
		var got []string
		for len(got) < world-1 {
			c, err := ln.Accept()
			if err != nil {
				return 31
			}
			line, err := bufio.NewReader(c).ReadString('\n')
			c.Close()
			if err != nil {
				return 32
			}
			got = append(got, strings.TrimSpace(line))
		}
		if err := os.WriteFile(filepath.Join(dir, "store_0"), []byte(strings.Join(got, "\n")), 0o644); err != nil {
			return 10
		}
		return 0
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			_, err = fmt.Fprintf(c, "hello from rank %s\n", rank)
			c.Close()
			if err != nil {
				return 33
			}
			return 0
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(os.Stderr, "rank %s cannot reach rank 0's store at %s: %v\n", rank, addr, err)
			return 34
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// hangWorker is the "gohang" mode (see testWorker).
func hangWorker(dir, rank string) int {
	_, comm, code := joinMPI()
	if comm == nil {
		return code
	}
	err := comm.Barrier(30 * time.Second)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		mpi.Exit(23)
	}
	switch {
	case rank == "1":
		now := strconv.FormatInt(time.Now().UnixNano(), 10)
		if err := os.WriteFile(filepath.Join(dir, "hang_start"), []byte(now), 0o644); err != nil {
			return 10
		}
		err = comm.Barrier(0)
	case os.Getenv("HANG_OTHER") == "busy":
		time.Sleep(time.Minute)
	default:
		time.Sleep(time.Second)
		err = comm.AllreduceFloat64([]float64{1}, mpi.Sum)
	}
	fmt.Fprintln(os.Stderr, "rank", rank, "hang worker:", err)
	mpi.Exit(1)
	return 1
}

// joinMPI finds MPI and joins the job; without a Comm, the exit code says which step failed.
func joinMPI() (mpi.Library, *mpi.Comm, int) {
	lib, err := mpi.Find()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return lib, nil, 20
	}
	comm, err := mpi.Init(lib)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return lib, nil, 21
	}
	return lib, comm, 0
}

// envRendezvousWorker is the envrdzv mode: a process that meets the others by itself.
func envRendezvousWorker() int {
	place, ok, err := EnvPlace(os.Environ())
	if err != nil || !ok {
		fmt.Fprintln(os.Stderr, "EnvPlace:", ok, err)
		return 30
	}
	m, err := Join(context.Background(), place, JoinConfig{Timeout: 30 * time.Second})
	if err != nil {
		fmt.Fprintln(os.Stderr, "Join:", err)
		return 31
	}
	for v, val := range m.PMIEnv() {
		_ = v.Set(val)
	}
	_, comm, code := joinMPI()
	if comm == nil {
		_ = m.End(1)
		return code
	}
	buf := []float64{float64(comm.Rank() + 1)}
	if err := comm.AllreduceFloat64(buf, mpi.Sum); err != nil {
		fmt.Fprintln(os.Stderr, err)
		_ = m.End(1)
		return 32
	}
	fmt.Printf("rank %d of %d: allreduce %g\n", comm.Rank(), comm.Size(), buf[0])
	if os.Getenv("KILL_RANK") == strconv.Itoa(comm.Rank()) {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL) // dies mid-job: the others are told
	}
	if os.Getenv("KILL_RANK") != "" {
		_ = comm.Barrier(30 * time.Second) // waits for the dead rank, until rank 0's rendezvous says it went away
	}
	if err := comm.Finalize(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		_ = m.End(1)
		return 33
	}
	if err := m.End(0); err != nil {
		fmt.Fprintln(os.Stderr, "End:", err)
		return 34
	}
	return 0
}
