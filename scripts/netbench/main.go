// Command netbench is scripts/netbench.sh's helper: it reads the timelines (GOACCEL_TIMELINE)
// of the runs the script makes and the raw MPI figures of scripts/netbench_mpi.py, and writes
// the tables of docs/performance.md's network section, with the ring all-reduce model that
// extends the measured link to more nodes.
//
//	netbench summary --name NAME --setup S --link L --compression C --skip 2 TIMELINE_DIR [VETH_BYTES]
//	    one JSON line: the step's parts over the timed steps of every rank
//	netbench report RESULTS.jsonl
//	    the Markdown tables (setups, links, model) from the summary and MPI lines
//
// It is a benchmark's tool, not part of goaccel.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/goaccel/goaccel/internal/timeline"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: netbench summary|report ...")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "summary":
		err = summaryCmd(os.Args[2:], os.Stdout)
	case "report":
		err = reportCmd(os.Args[2:], os.Stdout)
	default:
		err = fmt.Errorf("unknown command %q (summary, report)", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "netbench:", err)
		os.Exit(1)
	}
}

// Summary is one run's step, averaged over its timed steps and its ranks, in milliseconds.
type Summary struct {
	Kind        string `json:"kind"` // "run"
	Name        string `json:"name"`
	Setup       string `json:"setup"`
	Link        string `json:"link"`
	Compression string `json:"compression"`
	Ranks       int    `json:"ranks"`
	Steps       int    `json:"steps"` // timed steps per rank
	// StepMS is the step span; GradientsMS the gradients execution (the whole execution on
	// one process); DeviceToHostMS the read of the outputs; AllReduceMS the gradients'
	// all-reduce (with the 16-bit encoding and decoding under compression); SyncMS the wall
	// time from the end of the gradients execution to the start of the apply execution;
	// ApplyMS the apply execution.
	StepMS, GradientsMS, DeviceToHostMS, AllReduceMS, SyncMS, ApplyMS float64
	// StepMinMS and StepMaxMS are the range of the ranks' step times.
	StepMinMS, StepMaxMS float64
	// BytesPerUpdate is the all-reduce's bytes (each process's contribution).
	BytesPerUpdate int64 `json:"bytes_per_update"`
	// VethBytes is what crossed the veth (node 0's transmitted plus received) during the run,
	// when measured.
	VethBytes int64 `json:"veth_bytes,omitempty"`
}

// MPI is one link's raw MPI figures (scripts/netbench_mpi.py's line).
type MPI struct {
	Kind string `json:"kind"` // "mpi"
	Link string `json:"link"`
	// SmallS is an 8-byte all-reduce's time; AllreduceS a float32 all-reduce of Bytes;
	// A2AGatherS an all-to-all then an all-gather of the same elements in 16 bits (the
	// compressed path's collectives).
	SmallS     float64 `json:"small_s"`
	Bytes      float64 `json:"bytes"`
	AllreduceS float64 `json:"allreduce_s"`
	A2AGatherS float64 `json:"a2a_gather_s"`
	Ranks      int     `json:"ranks"`
	VethBytes  int64   `json:"veth_bytes,omitempty"`
}

// summarize reads the rank files of a timeline folder and averages the step's parts over the
// steps after the first skip, on every rank.
func summarize(dir string, skip int) (Summary, error) {
	files, _ := filepath.Glob(filepath.Join(dir, "rank_*.json"))
	if len(files) == 0 {
		return Summary{}, fmt.Errorf("no rank_*.json in %s (was GOACCEL_TIMELINE set, and did the run end?)", dir)
	}
	var s Summary
	var n float64
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return s, err
		}
		var tf timeline.File
		if err := json.Unmarshal(b, &tf); err != nil {
			return s, fmt.Errorf("%s: %w", f, err)
		}
		ev := tf.TraceEvents
		sort.Slice(ev, func(i, j int) bool { return ev[i].TS < ev[j].TS })
		var steps []timeline.Event
		for _, e := range ev {
			if e.Name == "step" {
				steps = append(steps, e)
			}
		}
		if len(steps) <= skip {
			return s, fmt.Errorf("%s: %d steps, fewer than the %d skipped + 1", f, len(steps), skip)
		}
		s.Ranks++
		for _, st := range steps[skip:] {
			end := st.TS + st.Dur
			var gradEnd, applyStart float64
			for _, e := range ev {
				if e.TS < st.TS || e.TS+e.Dur > end+1 || e.Name == "step" {
					continue
				}
				switch e.Name {
				case "gradients", "execute":
					s.GradientsMS += e.Dur / 1e3
					gradEnd = e.TS + e.Dur
				case "device-to-host":
					s.DeviceToHostMS += e.Dur / 1e3
				case "all-reduce gradients":
					s.AllReduceMS += e.Dur / 1e3
					if v, ok := e.Args["bytes"].(float64); ok {
						s.BytesPerUpdate = int64(v)
					}
				case "apply":
					s.ApplyMS += e.Dur / 1e3
					applyStart = e.TS
				}
			}
			if gradEnd > 0 && applyStart > gradEnd {
				s.SyncMS += (applyStart - gradEnd) / 1e3
			}
			ms := st.Dur / 1e3
			s.StepMS += ms
			if s.StepMinMS == 0 || ms < s.StepMinMS {
				s.StepMinMS = ms
			}
			s.StepMaxMS = max(s.StepMaxMS, ms)
			n++
		}
		s.Steps = len(steps) - skip
	}
	for _, p := range []*float64{&s.StepMS, &s.GradientsMS, &s.DeviceToHostMS, &s.AllReduceMS, &s.SyncMS, &s.ApplyMS} {
		*p /= n
	}
	return s, nil
}

func summaryCmd(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("summary", flag.ContinueOnError)
	s := Summary{Kind: "run"}
	fs.StringVar(&s.Name, "name", "", "the run's name")
	fs.StringVar(&s.Setup, "setup", "", "1 process, 1 node, 2 hosts")
	fs.StringVar(&s.Link, "link", "-", "the link between the hosts")
	fs.StringVar(&s.Compression, "compression", "no", "GOACCEL_GRADIENT_COMPRESSION")
	skip := fs.Int("skip", 2, "untimed steps at the start")
	veth := fs.Int64("veth_bytes", 0, "bytes that crossed the veth during the run")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("summary: one timeline folder expected")
	}
	got, err := summarize(fs.Arg(0), *skip)
	if err != nil {
		return err
	}
	got.Kind, got.Name, got.Setup, got.Link, got.Compression, got.VethBytes = s.Kind, s.Name, s.Setup, s.Link, s.Compression, *veth
	b, _ := json.Marshal(got)
	_, err = fmt.Fprintln(out, string(b))
	return err
}

// ringS is the ring all-reduce's time on n nodes of bytes at bw bytes/s with lat seconds per
// message: 2(n-1)/n x bytes / bw + 2(n-1) x lat.
func ringS(n int, bytes, bw, lat float64) float64 {
	return 2*float64(n-1)/float64(n)*bytes/bw + 2*float64(n-1)*lat
}

// link is a link's bandwidth (bytes/s) and latency (s) from its raw MPI figures at 2 ranks:
// the 8-byte all-reduce is one message each way (the latency), the large one bytes / bw + 2
// latencies.
func (m MPI) link() (bw, lat float64) {
	lat = m.SmallS
	bw = m.Bytes / max(m.AllreduceS-2*lat, 1e-9)
	return bw, lat
}

func reportCmd(args []string, out io.Writer) error {
	if len(args) != 1 {
		return errors.New("report: one results.jsonl expected")
	}
	f, err := os.Open(args[0])
	if err != nil {
		return err
	}
	defer f.Close()
	var runs []Summary
	mpis := map[string]MPI{}
	var links []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Bytes()
		var k struct{ Kind string }
		if json.Unmarshal(line, &k) != nil {
			continue
		}
		switch k.Kind {
		case "run":
			var s Summary
			if err := json.Unmarshal(line, &s); err != nil {
				return err
			}
			runs = append(runs, s)
		case "mpi":
			var m MPI
			if err := json.Unmarshal(line, &m); err != nil {
				return err
			}
			if _, seen := mpis[m.Link]; !seen {
				links = append(links, m.Link)
			}
			mpis[m.Link] = m
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	mb := func(b float64) string { return fmt.Sprintf("%.1f", b/1e6) }
	fmt.Fprintln(out, "| setup | link | compression | step ms (ranks' range) | gradients ms | device-to-host ms | all-reduce ms | sync ms (share of step) | apply ms | MB per update | MB across the veth |")
	fmt.Fprintln(out, "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, s := range runs {
		share, veth, ar := "-", "-", "-"
		if s.SyncMS > 0 {
			share = fmt.Sprintf("%.0f (%.0f%%)", s.SyncMS, 100*s.SyncMS/s.StepMS)
			ar = fmt.Sprintf("%.0f", s.AllReduceMS)
		}
		if s.VethBytes > 0 {
			veth = mb(float64(s.VethBytes))
		}
		bytes := "-"
		if s.BytesPerUpdate > 0 {
			bytes = mb(float64(s.BytesPerUpdate))
		}
		fmt.Fprintf(out, "| %s | %s | %s | %.0f (%.0f-%.0f) | %.0f | %.0f | %s | %s | %.0f | %s | %s |\n", s.Setup, s.Link,
			s.Compression, s.StepMS, s.StepMinMS, s.StepMaxMS, s.GradientsMS, s.DeviceToHostMS, ar, share, s.ApplyMS, bytes, veth)
	}
	if len(links) == 0 {
		return nil
	}
	fmt.Fprintln(out, "\nRaw MPI between the two hosts (2 ranks, mpi4py over goaccel launch):")
	fmt.Fprintln(out, "\n| link | 8-byte all-reduce (latency) | all-reduce of MB float32 | bandwidth | all-to-all + all-gather, 16-bit | MB across the veth |")
	fmt.Fprintln(out, "|---|---:|---:|---:|---:|---:|")
	for _, l := range links {
		m := mpis[l]
		bw, lat := m.link()
		veth := "-"
		if m.VethBytes > 0 {
			veth = mb(float64(m.VethBytes))
		}
		fmt.Fprintf(out, "| %s | %.0f µs | %s MB: %.0f ms | %.2f Gb/s | %.0f ms | %s |\n", l, lat*1e6, mb(m.Bytes), m.AllreduceS*1e3,
			bw*8/1e9, m.A2AGatherS*1e3, veth)
	}
	// The model: each link's measured bandwidth and latency, the runs' bytes, and the host
	// costs of the compressed path (its all-reduce span minus the wire time of its collectives
	// on the same link) taken as constant per node.
	byKey := map[string]Summary{}
	for _, s := range runs {
		byKey[s.Setup+"|"+s.Link+"|"+s.Compression] = s
	}
	fmt.Fprintln(out, "\nModel: ring all-reduce time 2(n-1)/n x bytes / bandwidth + 2(n-1) x latency on each link's measured figures; "+
		"compressed: half the bytes plus the measured host encoding/decoding; sync share = all-reduce / (compute + all-reduce), "+
		"compute = the measured 2-host step less its sync (CPU) or 30 ms (GPU), with nothing overlapped (as today's code).")
	fmt.Fprintln(out, "\n| link | compression | codec ms | n=2 model ms (measured) | n=8 ms | n=64 ms | CPU sync share n=2 / 8 / 64 | GPU 30 ms sync share n=2 / 8 / 64 |")
	fmt.Fprintln(out, "|---|---|---:|---:|---:|---:|---|---|")
	for _, l := range links {
		m := mpis[l]
		bw, lat := m.link()
		for _, c := range []string{"no", "bf16"} {
			s, ok := byKey["2 hosts|"+l+"|"+c]
			if !ok {
				continue
			}
			bytes := float64(s.BytesPerUpdate)
			codec := 0.0
			if c != "no" {
				wire := m.A2AGatherS * (bytes / (m.Bytes / 2)) // the 16-bit collectives at the run's bytes
				codec = max(0, s.AllReduceMS/1e3-wire)
			}
			compute := (s.StepMS - s.SyncMS) / 1e3
			var cells [3]string
			var cpu, gpu [3]string
			for i, n := range []int{2, 8, 64} {
				t := ringS(n, bytes, bw, lat) + codec
				cells[i] = fmt.Sprintf("%.0f", t*1e3)
				cpu[i] = fmt.Sprintf("%.0f%%", 100*t/(compute+t))
				gpu[i] = fmt.Sprintf("%.0f%%", 100*t/(0.030+t))
			}
			fmt.Fprintf(out, "| %s | %s | %.0f | %s (%.0f) | %s | %s | %s | %s |\n", l, c, codec*1e3, cells[0], s.AllReduceMS, cells[1], cells[2],
				strings.Join(cpu[:], " / "), strings.Join(gpu[:], " / "))
		}
	}
	nominal(out, runs, mpis)
	return nil
}

// nominal models the links, 10 and 1 Gb/s, where the veth cannot carry them (a
// loaded VM's veth tops out below 10 Gb/s): each at the efficiency the 1 Gb/s shaping achieved
// (its measured bandwidth over 1 Gb/s) and the lowest latency measured, with the runs' bytes;
// compressed with the host encoding/decoding measured at 1 Gb/s, and with none (what a
// pipelined or faster codec approaches). The share is of a step of the measured CPU compute
// and of a 30 ms GPU step.
func nominal(out io.Writer, runs []Summary, mpis map[string]MPI) {
	ref, ok := mpis["1gbit"]
	if !ok {
		return
	}
	var exact, comp *Summary
	for i := range runs {
		if runs[i].Setup == "2 hosts" && runs[i].Link == "1gbit" {
			if runs[i].Compression == "no" {
				exact = &runs[i]
			} else {
				comp = &runs[i]
			}
		}
	}
	if exact == nil || comp == nil {
		return
	}
	bw1, _ := ref.link()
	eff := bw1 / (1e9 / 8)
	lat := ref.SmallS
	for _, m := range mpis {
		lat = min(lat, m.SmallS)
	}
	wire := ref.A2AGatherS * (float64(comp.BytesPerUpdate) / (ref.Bytes / 2))
	codec := max(0, comp.AllReduceMS/1e3-wire)
	compute := (exact.StepMS - exact.SyncMS) / 1e3
	fmt.Fprintf(out, "\nModel at the nominal rates x %.2f (the 1 Gb/s shaping's efficiency), latency %.0f µs, exact %.1f MB, compressed %.1f MB "+
		"(+ the %.0f ms host encoding/decoding measured at 1 Gb/s, or none); nothing overlapped:\n", eff, lat*1e6,
		float64(exact.BytesPerUpdate)/1e6, float64(comp.BytesPerUpdate)/1e6, codec*1e3)
	fmt.Fprintln(out, "\n| link | all-reduce | n=2 ms | n=8 ms | n=64 ms | compressed / exact (n=2, 8, 64) | CPU step share n=2 / 8 / 64 | GPU 30 ms share n=2 / 8 / 64 |")
	fmt.Fprintln(out, "|---|---|---:|---:|---:|---|---|---|")
	for _, gbps := range []float64{10, 1} {
		bw := gbps * 1e9 / 8 * eff
		for _, c := range []struct {
			name  string
			bytes float64
			codec float64
		}{{"exact", float64(exact.BytesPerUpdate), 0}, {"bf16, measured codec", float64(comp.BytesPerUpdate), codec},
			{"bf16, no codec cost", float64(comp.BytesPerUpdate), 0}} {
			var t, ratio, cpu, gpu [3]string
			for i, n := range []int{2, 8, 64} {
				v := ringS(n, c.bytes, bw, lat) + c.codec
				t[i] = fmt.Sprintf("%.0f", v*1e3)
				ratio[i] = fmt.Sprintf("%.2f", v/ringS(n, float64(exact.BytesPerUpdate), bw, lat))
				cpu[i] = fmt.Sprintf("%.0f%%", 100*v/(compute+v))
				gpu[i] = fmt.Sprintf("%.0f%%", 100*v/(0.030+v))
			}
			fmt.Fprintf(out, "| %g Gb/s | %s | %s | %s | %s | %s | %s | %s |\n", gbps, c.name, t[0], t[1], t[2],
				strings.Join(ratio[:], " / "), strings.Join(cpu[:], " / "), strings.Join(gpu[:], " / "))
		}
	}
}
