package launch

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goaccel/goaccel/internal/envvar"
)

func TestExpandHostList(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{in: "vm", want: "vm"},
		{in: "gpu[01-04,07]", want: "gpu01 gpu02 gpu03 gpu04 gpu07"},
		{in: "a1,b[2-3]", want: "a1 b2 b3"},
		{in: "rack[1-2]-n[1-2]", want: "rack1-n1 rack1-n2 rack2-n1 rack2-n2"},
		{in: "n[8-10]", want: "n8 n9 n10"},
		{in: "n[098-101],login", want: "n098 n099 n100 n101 login"},
		{in: "gpu[01-04", err: `host list "gpu[01-04": a [ without its ]`},
		{in: "gpu01]", err: "a ] without its ["},
		{in: "gpu[04-01]", err: `the range "04-01" in [04-01] runs backwards`},
		{in: "gpu[a-b]", err: `"a-b" in [a-b] is not a number`},
		{in: "gpu[1,,2]", err: "an empty range"},
		{in: "a,,b", err: "an empty name"},
		{in: "", err: "an empty name"},
		{in: "n[[1]]", err: "a bracket inside a bracket"},
		{in: "n[0-99999999]", err: "more than 65536 names"},
	} {
		got, err := ExpandHostList(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ExpandHostList(%q) = %q, %v; want an error with %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || strings.Join(got, " ") != tc.want {
			t.Errorf("ExpandHostList(%q) = %q, %v; want %s", tc.in, got, err, tc.want)
		}
	}
	if h, err := FirstHost("gpu[01-04,07]"); h != "gpu01" || err != nil {
		t.Errorf("FirstHost = %q, %v", h, err)
	}
}

func TestEnvPlace(t *testing.T) {
	torch := []string{"MASTER_ADDR=10.0.0.5", "MASTER_PORT=23456", "WORLD_SIZE=4", "RANK=3", "LOCAL_RANK=1", "LOCAL_WORLD_SIZE=2"}
	// What srun -n 2 gives a task on Slurm 22.05 (printed on the cluster of scripts/slurm_cluster.sh).
	slurm := []string{"SLURM_JOB_ID=1234", "SLURM_STEP_ID=0", "SLURM_PROCID=1", "SLURM_NTASKS=8", "SLURM_LOCALID=1",
		"SLURM_NTASKS_PER_NODE=2(x4)", "SLURM_NODEID=0", "SLURM_STEP_NODELIST=gpu[01-04]", "SLURM_JOB_NODELIST=gpu[01-04,07]"}
	with := func(base []string, kv ...string) []string { return append(append([]string{}, base...), kv...) }
	for _, tc := range []struct {
		name string
		env  []string
		ok   bool
		want string // Rank/World/Local/LocalWorld@Addr:Port
		err  string
	}{
		{name: "nothing", env: nil},
		{name: "torch", env: torch, ok: true, want: "3/4/1/2@10.0.0.5:23456"},
		{name: "Kubeflow (no LOCAL_*)", env: []string{"MASTER_ADDR=job-master-0", "MASTER_PORT=23456", "WORLD_SIZE=2", "RANK=1"},
			ok: true, want: "1/2/0/1@job-master-0:23456"},
		{name: "one process", env: []string{"RANK=0", "WORLD_SIZE=1"}},
		{name: "goaccel launch's ranks", env: with(torch, "PMI_FD=3")},
		{name: "srun --mpi=pmi2", env: with(slurm, "PMI_FD=11", "PMI_RANK=1", "PMI_SIZE=8")},
		{name: "srun --mpi=pmix", env: with(slurm, "PMIX_RANK=1")},
		{name: "mpirun", env: with(torch, "OMPI_COMM_WORLD_RANK=3")},
		{name: "srun", env: slurm, ok: true, want: fmt.Sprintf("1/8/1/2@gpu01:%d", SlurmPort(1234, 0))},
		{name: "srun, MASTER_*", env: with(slurm, "MASTER_ADDR=10.1.1.1", "MASTER_PORT=29500"), ok: true, want: "1/8/1/2@10.1.1.1:29500"},
		{name: "srun, job list", env: with(slurm, "SLURM_STEP_NODELIST="), ok: true, want: fmt.Sprintf("1/8/1/2@gpu01:%d", SlurmPort(1234, 0))},
		{name: "sbatch script", env: []string{"SLURM_JOB_ID=7", "SLURM_PROCID=0", "SLURM_NTASKS=2", "SLURM_JOB_NODELIST=vm"}},
		{name: "salloc shell", env: []string{"SLURM_JOB_ID=7", "SLURM_NTASKS=2", "SLURM_JOB_NAME=interactive"}},
		{name: "bad host list", env: with(slurm, "SLURM_STEP_NODELIST=gpu[01-"), err: `$SLURM_STEP_NODELIST: host list "gpu[01-": a [ without its ]: set $MASTER_ADDR`},
		{name: "no MASTER_PORT", env: []string{"MASTER_ADDR=h", "WORLD_SIZE=2", "RANK=0"}, err: "$MASTER_PORT, the port where rank 0 serves"},
		{name: "no MASTER_ADDR", env: []string{"MASTER_PORT=1", "WORLD_SIZE=2", "RANK=0"}, err: "$MASTER_ADDR, the host of rank 0, is not set"},
		{name: "bad port", env: with(torch, "MASTER_PORT=70000"), err: `$MASTER_PORT="70000" is not a port`},
		{name: "bad WORLD_SIZE", env: with(torch, "WORLD_SIZE=two"), err: `$WORLD_SIZE="two" (torch's env:// variables) is not a number`},
		{name: "rank too big", env: with(torch, "RANK=4"), err: "$RANK=4 is not below $WORLD_SIZE=4"},
		{name: "RANK alone", env: []string{"RANK=1"}, err: "$RANK is set but $WORLD_SIZE is not"},
		{name: "bad SLURM_NTASKS", env: with(slurm, "SLURM_NTASKS=x"), err: `$SLURM_NTASKS="x"`},
	} {
		p, ok, err := EnvPlace(tc.env)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: EnvPlace = %+v, %v, %v; want an error with %q", tc.name, p, ok, err, tc.err)
			}
			continue
		}
		if err != nil || ok != tc.ok {
			t.Errorf("%s: EnvPlace = %+v, %v, %v; want ok=%v", tc.name, p, ok, err, tc.ok)
			continue
		}
		if got := fmt.Sprintf("%d/%d/%d/%d@%s:%d", p.Rank, p.WorldSize, p.LocalRank, p.LocalWorldSize, p.Addr, p.Port); ok && got != tc.want {
			t.Errorf("%s: EnvPlace = %s, want %s", tc.name, got, tc.want)
		}
	}
	if a, b := SlurmPort(1234, 0), SlurmPort(1234, 1); a == b || a < 10000 || a >= 30000 || b < 10000 || b >= 30000 {
		t.Errorf("SlurmPort(1234, 0|1) = %d, %d: want two ports in [10000, 30000)", a, b)
	}
}

// joinAll runs Join for each place at once and returns the members and errors, in rank order.
func joinAll(places []Place, cfg func(rank int) JoinConfig) ([]*Member, []error) {
	ms, errs := make([]*Member, len(places)), make([]error, len(places))
	var wg sync.WaitGroup
	for i, p := range places {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ms[i], errs[i] = Join(context.Background(), p, cfg(p.Rank))
		}()
	}
	wg.Wait()
	return ms, errs
}

func places(n, port int, size ...int) []Place {
	var ps []Place
	for r := range n {
		w := n
		if r < len(size) {
			w = size[r]
		}
		ps = append(ps, Place{Rank: r, WorldSize: w, LocalWorldSize: 1, Addr: "127.0.0.1", Port: port, Source: "the test",
			RankVar: "RANK", SizeVar: "WORLD_SIZE", AddrVar: "MASTER_ADDR", PortVar: "MASTER_PORT"})
	}
	return ps
}

// TestJoinInProcess: processes that meet by themselves (here goroutines, each with its own
// connection) get their PMI socket, end together, and every refusal is named on every process
// that came, before any trains.
func TestJoinInProcess(t *testing.T) {
	quiet := func(int) JoinConfig {
		return JoinConfig{Timeout: 5 * time.Second, Stderr: &syncBuffer{}, Env: []string{}, Lost: func(string) {}}
	}
	t.Run("three meet and end", func(t *testing.T) {
		ms, errs := joinAll(places(3, freePort(t)), quiet)
		for r, err := range errs {
			if err != nil {
				t.Fatalf("rank %d: %v", r, err)
			}
		}
		for r, m := range ms {
			env := m.PMIEnv()
			if env[envvar.PMIRank.Var] != strconv.Itoa(r) || env[envvar.PMISize.Var] != "3" || env[envvar.PMIFD.Var] == "" {
				t.Errorf("rank %d's PMI variables: %v", r, env)
			}
		}
		var wg sync.WaitGroup
		for r, m := range ms {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := m.End(0); err != nil {
					t.Errorf("rank %d: End: %v", r, err)
				}
			}()
		}
		wg.Wait()
	})
	t.Run("WORLD_SIZE differs", func(t *testing.T) {
		// Many times: whether rank 1's join reaches the rendezvous before rank 0's own is a
		// race, and rank 0 coming second was told only "the job is already over".
		for range 40 {
			_, errs := joinAll(places(2, freePort(t), 2, 3), quiet)
			for r, err := range errs {
				if err == nil || !strings.Contains(err.Error(), "rank 1 says $WORLD_SIZE=3 but rank 0 says $WORLD_SIZE=2") {
					t.Fatalf("rank %d: %v; want the sizes named", r, err)
				}
			}
		}
	})
	t.Run("a rank never comes", func(t *testing.T) {
		cfg := func(int) JoinConfig {
			c := quiet(0)
			c.Timeout = time.Second
			return c
		}
		_, errs := joinAll(places(3, freePort(t))[:2], cfg)
		for r, err := range errs {
			if err == nil || !strings.Contains(err.Error(), "rank 2 of 3 ($WORLD_SIZE=3) did not reach rank 0's rendezvous within 1s") {
				t.Errorf("rank %d: %v; want rank 2 named", r, err)
			}
		}
	})
	t.Run("rank 0 never comes", func(t *testing.T) {
		c := quiet(1)
		c.Timeout = time.Second
		_, err := Join(context.Background(), places(2, freePort(t))[1], c)
		if err == nil || !strings.Contains(err.Error(), "rank 1 cannot reach rank 0's rendezvous at 127.0.0.1:") ||
			!strings.Contains(err.Error(), "within 1s ($GOACCEL_TIMEOUT)") || !strings.Contains(err.Error(), "the same MASTER_ADDR and MASTER_PORT") {
			t.Errorf("Join = %v", err)
		}
	})
	t.Run("two rank 1", func(t *testing.T) {
		ps := places(3, freePort(t))
		ps[2].Rank = 1
		_, errs := joinAll(ps, quiet)
		for r, err := range errs {
			if err == nil || !strings.Contains(err.Error(), "two processes say they are rank 1 ($RANK)") {
				t.Errorf("process %d: %v", r, err)
			}
		}
	})
	t.Run("MASTER_PORT in use", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		_, err = Join(context.Background(), places(2, ln.Addr().(*net.TCPAddr).Port)[0], quiet(0))
		if err == nil || !strings.Contains(err.Error(), "rank 0 cannot serve the other processes at 127.0.0.1:") ||
			!strings.Contains(err.Error(), "address already in use: another program (or a previous run) holds it") {
			t.Errorf("Join = %v", err)
		}
	})
	t.Run("wrong secret", func(t *testing.T) {
		ps := places(2, freePort(t))
		ms, errs := joinAll(ps, func(r int) JoinConfig {
			c := quiet(r)
			c.Timeout = time.Second
			c.Secret = strings.Repeat(strconv.Itoa(r), 20)
			return c
		})
		if errs[1] == nil || !strings.Contains(errs[1].Error(), "rank 0 refused rank 1: its job secret differs ($GOACCEL_JOB_SECRET must be the same in every process)") {
			t.Errorf("rank 1: %v", errs[1])
		}
		if errs[0] == nil || !strings.Contains(errs[0].Error(), "rank 1 of 2") {
			t.Errorf("rank 0: %v (%v)", errs[0], ms[0])
		}
	})
	t.Run("a process goes away", func(t *testing.T) {
		lost := make(chan string, 2)
		ms, errs := joinAll(places(2, freePort(t)), func(r int) JoinConfig {
			c := quiet(r)
			c.Lost = func(why string) { lost <- fmt.Sprintf("rank %d: %s", r, why) }
			return c
		})
		if errs[0] != nil || errs[1] != nil {
			t.Fatal(errs)
		}
		ms[1].mu.Lock()
		ms[1].ended = true // its process died: nothing of it is left to be told
		ms[1].mu.Unlock()
		ms[1].close()
		select {
		case why := <-lost:
			if !strings.HasPrefix(why, "rank 0: rank 1, ") || !strings.Contains(why, "went away before the job ended") {
				t.Errorf("Lost: %s", why)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("rank 0 was not told that rank 1 went away")
		}
		ms[0].close()
	})
}

// startEnvRanks starts n copies of this test binary as envrdzv workers that meet on port with
// torch's variables alone, extra added to each one's environment.
func startEnvRanks(t *testing.T, ctx context.Context, n, port int, extra ...string) ([]*exec.Cmd, []*syncBuffer) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var base []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(k, "PMI") && !strings.HasPrefix(k, "SLURM_") && !strings.HasPrefix(k, "OMPI_") &&
			k != "RANK" && k != "WORLD_SIZE" && k != "GOACCEL_JOB_SECRET" {
			base = append(base, kv)
		}
	}
	cmds, outs := make([]*exec.Cmd, n), make([]*syncBuffer, n)
	for r := range n {
		c := exec.CommandContext(ctx, exe)
		c.Env = append(append(base, workerSwitch+"=envrdzv", "MASTER_ADDR=127.0.0.1", "MASTER_PORT="+strconv.Itoa(port),
			"RANK="+strconv.Itoa(r), "WORLD_SIZE="+strconv.Itoa(n), "LOCAL_RANK="+strconv.Itoa(r),
			"LOCAL_WORLD_SIZE="+strconv.Itoa(n), "GOACCEL_TIMEOUT=30s"), extra...)
		outs[r] = &syncBuffer{}
		c.Stdout, c.Stderr = outs[r], outs[r]
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[r] = c
	}
	return cmds, outs
}

// TestEnvRendezvousRankDies: a process of an env:// job that dies mid-job (SIGKILL, after the
// first all-reduce) makes the others end at once, naming it, instead of waiting in a collective
// for GOACCEL_TIMEOUT: no process is left behind.
func TestEnvRendezvousRankDies(t *testing.T) {
	needMPI(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	start := time.Now()
	cmds, outs := startEnvRanks(t, ctx, 2, freePort(t), "KILL_RANK=1")
	for r, c := range cmds {
		_ = c.Wait()
		if r == 0 && (c.ProcessState.ExitCode() != 1 || !strings.Contains(outs[0].String(), "the job stops: rank 1, ") ||
			!strings.Contains(outs[0].String(), "went away before the job ended")) {
			t.Errorf("rank 0: %v\n%s", c.ProcessState, outs[0])
		}
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("the job took %s to end after rank 1 died (GOACCEL_TIMEOUT is 30s)", took)
	}
	t.Logf("rank 1 SIGKILLed mid-job: rank 0 ended in %s:\n%s", time.Since(start).Round(time.Millisecond), outs[0])
}

// TestEnvRendezvousMPI: two processes started with torch's variables alone (no launcher, no
// PMI) meet, MPI_Init finds both, an all-reduce sums right, and both exit 0 after MPI_Finalize.
func TestEnvRendezvousMPI(t *testing.T) {
	needMPI(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	start := time.Now()
	cmds, outs := startEnvRanks(t, ctx, 2, freePort(t))
	for r, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Errorf("rank %d: %v\n%s", r, err, outs[r].String())
		}
	}
	for r := range 2 {
		if want := fmt.Sprintf("rank %d of 2: allreduce 3", r); !strings.Contains(outs[r].String(), want) {
			t.Errorf("rank %d printed %q, want %q", r, outs[r].String(), want)
		}
	}
	t.Logf("2 processes met by env:// and ran MPI in %s:\n%s%s", time.Since(start).Round(time.Millisecond), outs[0].String(), outs[1].String())
}
