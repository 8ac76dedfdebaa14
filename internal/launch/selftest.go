package launch

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/goaccel/goaccel/internal/envvar"
	"github.com/goaccel/goaccel/internal/mpi"
)

// goaccel launch --selftest runs, instead of a program, the launcher's own executable as every
// rank, started with SelfTestCommand and $GOACCEL_LAUNCH_SELFTEST=1 (an explicit dispatch, as the
// guardian's). cmd/goaccel hands that command to RunSelfTestRank with accelerator.New as the way
// to join: each rank reports what discovery picked, passes a barrier, all-reduces 64 MiB and
// times it, and rank 0 prints one table of every rank.

// SelfTestCommand is the first argument with which goaccel launch --selftest starts its own
// executable as a rank; cmd/goaccel dispatches it to RunSelfTestRank.
const SelfTestCommand = "__goaccel_launch_selftest__"

// selfTestBytes is the size of the self-test's all-reduce: 64 MiB of float32.
const selfTestBytes = 64 << 20

// selfTestDial is how long a node_rank > 0 launcher of a self-test tries to reach the master
// before it fails naming host:port (a normal launch keeps trying for --join_timeout); tests
// shorten it with Config.selfTestDial.
const selfTestDial = 8 * time.Second

// selfTestProgram makes c run the self-test ranks: this executable with SelfTestCommand.
func (c *Config) selfTestProgram() error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("--selftest: cannot find this program, which runs the self-test ranks: %w", err)
	}
	c.Program, c.Args, c.SelfTest = self, []string{SelfTestCommand}, true
	c.Env = setEnv(c.Env, envvar.LaunchSelfTest.Name, "1")
	return nil
}

// SelfTestJob is what a self-test rank needs of the job it joined; *accelerator.Accelerator
// has it.
type SelfTestJob interface {
	WaitForEveryone() error
	AllGather(b []byte) ([][]byte, error)
}

// SelfTestDiscovery is what a rank's discovery found and chose (accelerator.New's Info).
type SelfTestDiscovery struct {
	Backend string `json:"backend"` // "xla:cpu", "xla:cuda", "go"
	Plugin  string `json:"plugin,omitempty"`
	Devices int    `json:"devices"`
	Reason  string `json:"reason"`
}

// selfTestRow is one rank's findings, gathered by rank 0 for the table.
type selfTestRow struct {
	Rank       int               `json:"rank"`
	Node       int               `json:"node"`
	Local      int               `json:"local"`
	Host       string            `json:"host"`
	PID        int               `json:"pid"`
	CPUs       string            `json:"cpus,omitempty"`
	Interfaces string            `json:"interfaces"`
	Discovery  SelfTestDiscovery `json:"discovery"`
	MPI        string            `json:"mpi"`
	Barrier    time.Duration     `json:"barrier_ns"`
	Allreduce  time.Duration     `json:"allreduce_ns"` // best of selfTestRounds; 0 with one rank
	Failed     string            `json:"failed,omitempty"`
}

// selfTestRounds is how many all-reduces are timed, after one that warms up.
const selfTestRounds = 3

// RunSelfTestRank is one rank of goaccel launch --selftest: open joins the job and says what
// discovery chose (cmd/goaccel: accelerator.New); then a barrier, the 64 MiB all-reduce
// (checked element by element) and the gather of every rank's findings, which rank 0 prints
// as one table on stdout. It returns the exit status: 0 when every rank passed. The caller ends
// the process with it through accelerator.Exit (MPI's clean exit).
func RunSelfTestRank(open func() (SelfTestJob, SelfTestDiscovery, error), stdout, stderr io.Writer) int {
	if envvar.LaunchSelfTest.Value() != "1" {
		fmt.Fprintf(stderr, "goaccel %s: only goaccel launch --selftest starts this; run that\n", SelfTestCommand)
		return 2
	}
	row := selfTestRow{PID: os.Getpid(), Host: hostname(), CPUs: envvar.CPUs.Value(), Interfaces: interfaces()}
	row.Rank, _, _ = envvar.Rank.Int()
	row.Node, _, _ = envvar.NodeRank.Int()
	row.Local, _, _ = envvar.LocalRank.Int()
	where := fmt.Sprintf("goaccel launch --selftest: rank %d (node_rank %d on %s)", row.Rank, row.Node, row.Host)
	job, disc, err := open()
	if err != nil {
		fmt.Fprintf(stderr, "%s: discovery and joining the job failed: %v\n", where, err)
		return 1
	}
	row.Discovery = disc
	start := time.Now()
	if err := job.WaitForEveryone(); err != nil {
		fmt.Fprintf(stderr, "%s: the barrier failed: %v\n", where, err)
		return 1
	}
	row.Barrier = time.Since(start)
	row.MPI = "none (one process)"
	if comm := mpi.World(); comm != nil {
		lib := comm.Library()
		row.MPI = fmt.Sprintf("%s (%s ABI, %s)", lib.Path, lib.ABI, strings.Join(strings.Fields(comm.Version()), " "))
		if comm.Size() > 1 {
			if row.Allreduce, err = timeAllreduce(comm); err != nil {
				row.Failed = "all-reduce: " + err.Error()
				fmt.Fprintf(stderr, "%s: the all-reduce failed: %v\n", where, err)
			}
		}
	}
	raw, err := json.Marshal(row)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", where, err)
		return 1
	}
	all, err := job.AllGather(raw)
	if err != nil {
		fmt.Fprintf(stderr, "%s: gathering the ranks' findings failed: %v\n", where, err)
		return 1
	}
	rows := make([]selfTestRow, len(all))
	for i, b := range all {
		if err := json.Unmarshal(b, &rows[i]); err != nil {
			fmt.Fprintf(stderr, "%s: rank %d's findings: %v\n", where, i, err)
			return 1
		}
	}
	if row.Rank == 0 {
		fmt.Fprint(stdout, selfTestTable(rows))
	}
	for _, r := range rows {
		if r.Failed != "" {
			return 1
		}
	}
	return 0
}

// timeAllreduce sums 64 MiB of float32 over every rank selfTestRounds+1 times (the first warms
// up), checks every element, and returns the fastest of the timed rounds.
func timeAllreduce(comm *mpi.Comm) (time.Duration, error) {
	buf := make([]float32, selfTestBytes/4)
	n := comm.Size()
	want := float32(n * (n + 1) / 2)
	var best time.Duration
	for round := 0; round <= selfTestRounds; round++ {
		for i := range buf {
			buf[i] = float32(comm.Rank() + 1)
		}
		start := time.Now()
		if err := comm.AllreduceFloat32(buf, mpi.Sum); err != nil {
			return 0, err
		}
		d := time.Since(start)
		for i, v := range buf {
			if v != want {
				return 0, fmt.Errorf("element %d is %g after summing rank+1 over %d ranks, want %g", i, v, n, want)
			}
		}
		if round > 0 && (best == 0 || d < best) {
			best = d
		}
	}
	return best, nil
}

// interfaces lists this machine's network interfaces that are up, with their addresses
// (IPv6 link-local ones left out): "lo 127.0.0.1/8 ::1/128; eth0 10.0.0.5/24".
func interfaces() string {
	ifs, err := net.Interfaces()
	if err != nil {
		return "unknown: " + err.Error()
	}
	var out []string
	for _, ifc := range ifs {
		if ifc.Flags&net.FlagUp == 0 {
			continue
		}
		item := ifc.Name
		addrs, _ := ifc.Addrs()
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && !n.IP.IsLinkLocalUnicast() {
				item += " " + n.String()
			}
		}
		out = append(out, item)
	}
	return strings.Join(out, "; ")
}

// selfTestTable is rank 0's report: a line on the job, one table row per rank, the all-reduce's
// bandwidth, and the values that are the same on many ranks (discovery, MPI, interfaces) once,
// with the ranks they hold for.
func selfTestTable(rows []selfTestRow) string {
	sort.Slice(rows, func(i, j int) bool { return rows[i].Rank < rows[j].Rank })
	var b strings.Builder
	n := len(rows)
	hosts, nodes := map[string]bool{}, map[int]bool{}
	var failed []string
	var slowest time.Duration
	for _, r := range rows {
		hosts[r.Host], nodes[r.Node] = true, true
		slowest = max(slowest, r.Allreduce)
		if r.Failed != "" {
			failed = append(failed, fmt.Sprintf("rank %d: %s", r.Rank, r.Failed))
		}
	}
	verdict := "every rank joined, passed the barrier and summed 64 MiB correctly"
	if n == 1 {
		verdict = "one rank: discovery only, no barrier or all-reduce to test"
	}
	if len(failed) > 0 {
		verdict = "FAILED: " + strings.Join(failed, "; ")
	}
	fmt.Fprintf(&b, "goaccel launch --selftest: %d rank(s) on %d node(s), %d host(s): %s\n\n", n, len(nodes), len(hosts), verdict)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  rank\tnode\tlocal\thost\tpid\tcpus\tbackend\tdevices\tbarrier\tall-reduce 64 MiB\tGB/s")
	for _, r := range rows {
		ar, bw := "-", "-"
		if r.Allreduce > 0 {
			ar, bw = millis(r.Allreduce), fmt.Sprintf("%.2f", gbps(r.Allreduce))
		}
		cpus := r.CPUs
		if cpus == "" {
			cpus = "all"
		}
		fmt.Fprintf(tw, "  %d\t%d\t%d\t%s\t%d\t%s\t%s\t%d\t%s\t%s\t%s\n", r.Rank, r.Node, r.Local, r.Host, r.PID, cpus,
			r.Discovery.Backend, r.Discovery.Devices, millis(r.Barrier), ar, bw)
	}
	_ = tw.Flush()
	b.WriteString("\n")
	if slowest > 0 {
		fmt.Fprintf(&b, "all-reduce: sum of 64 MiB of float32 over %d ranks, best of %d after a warm-up; the slowest rank's "+
			"%s is %.2f GB/s of data (64 MiB / time), %.2f GB/s on the bus (x 2(n-1)/n, as nccl-tests reports)\n",
			n, selfTestRounds, millis(slowest), gbps(slowest), gbps(slowest)*2*float64(n-1)/float64(n))
	}
	section := func(title string, key func(selfTestRow) string) {
		fmt.Fprintf(&b, "%s:\n", title)
		for _, g := range groupRanks(rows, key) {
			fmt.Fprintf(&b, "  %s: %s\n", g.ranks, g.value)
		}
	}
	section("discovery (accelerator.New)", func(r selfTestRow) string {
		d := r.Discovery
		s := d.Backend
		if d.Plugin != "" {
			s += " (" + d.Plugin + ")"
		}
		return fmt.Sprintf("%s, %d device(s): %s", s, d.Devices, d.Reason)
	})
	section("MPI library", func(r selfTestRow) string { return r.MPI })
	section("network interfaces", func(r selfTestRow) string { return r.Host + ": " + r.Interfaces })
	return b.String()
}

// rankGroup is a value and the ranks that have it ("ranks 0-3").
type rankGroup struct{ ranks, value string }

// groupRanks groups rows by key, in the order of each value's first rank.
func groupRanks(rows []selfTestRow, key func(selfTestRow) string) []rankGroup {
	var order []string
	ranks := map[string][]int{}
	for _, r := range rows {
		k := key(r)
		if ranks[k] == nil {
			order = append(order, k)
		}
		ranks[k] = append(ranks[k], r.Rank)
	}
	out := make([]rankGroup, len(order))
	for i, k := range order {
		word := "ranks "
		if len(ranks[k]) == 1 {
			word = "rank "
		}
		out[i] = rankGroup{ranks: word + cpuList(ranks[k]), value: k}
	}
	return out
}

func millis(d time.Duration) string {
	return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
}

// gbps is the all-reduce's data rate: 64 MiB over d, in GB/s (10^9 bytes a second).
func gbps(d time.Duration) float64 { return float64(selfTestBytes) / d.Seconds() / 1e9 }
