// Package bench is `goaccel bench`: it trains the same works (an MLP, BERT classifiers of
// several shapes) with goaccel and with PyTorch in one invocation, alternating timed rounds
// between the two so both see the same machine load, and reports per work the steps/s,
// examples/s, time to the first update, peak memory and the goaccel/PyTorch ratio, as JSON
// lines, a table, and a bar chart of the ratios in the run directory.
//
// Each framework runs in a worker process of its own per work (goaccel's is the hidden
// `goaccel bench-worker` command, PyTorch's is scripts/bench_torch.py), so peak memory and
// time to first step are those of a fresh process; see WorkerMain for the protocol.
package bench

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/goaccel/goaccel/hostmalloc"
	"github.com/goaccel/goaccel/internal/envvar"
)

// Options configure Run.
type Options struct {
	// Specs are the measurements, run in order.
	Specs []Spec
	// Steps is the number of timed steps per round, Rounds the number of alternating rounds.
	// With Steps 0, one untimed calibration step per worker sets Steps so that the slowest
	// framework's round lasts about RoundS seconds.
	Steps, Rounds int
	RoundS        float64
	// GoBackend also runs goaccel on the pure-Go backend for the tiny BERT (fp32, one device),
	// reported as "goaccel-go" with its ratio to goaccel on XLA; larger shapes would take
	// minutes per step there.
	GoBackend bool
	// Worker is the command line that starts goaccel's worker; the spec's JSON is appended.
	Worker []string
	// BaselineWorker, when set, starts another build of goaccel's worker (for instance one
	// built from the main branch or with another GoMLX) measured in the same alternating
	// rounds as "goaccel-baseline"; goaccel's figures then also get their ratio to it.
	BaselineWorker []string
	// Python is the Python interpreter for the PyTorch side; "" disables it.
	Python string
	// NoTorch says why Python is "" (the tables' note); "" reads as --python none.
	NoTorch string
	// TorchScript is the path of scripts/bench_torch.py.
	TorchScript string
	// TorchGoaccelMalloc runs PyTorch with the glibc malloc settings goaccel gives itself
	// (hostmalloc.Tunables); by default PyTorch runs with glibc's defaults, as its
	// users run it.
	TorchGoaccelMalloc bool
	// Threads is the number of intra-op threads PyTorch uses (XLA's CPU plugin uses one per core).
	Threads int
	// TorchChannelsLast runs PyTorch's image works in channels_last memory format (model and
	// pixels), its faster layout for convolutions on CPU; by default PyTorch keeps its
	// contiguous NCHW, as transformers' classes run unless a user asks.
	TorchChannelsLast bool
	// RunDir receives results.jsonl, table.txt, ratios.png and the workers' stderr.
	RunDir string
	// Machine names the machine in the outputs.
	Machine string
	// Out receives the JSON lines and the table; Log receives progress lines.
	Out, Log io.Writer
	// Sweep adds the sweep's outputs (SweepTable, SweepChart) to the run directory as
	// sweep.md and sweep.png, and its table to Out; SweepDropped are the points Sweep.Specs
	// dropped, and Command the command line, both named in sweep.md.
	Sweep        bool
	SweepDropped []string
	Command      string
}

// Measurement is one framework's figures for one spec.
type Measurement struct {
	Impl    string `json:"impl"`
	Label   string `json:"label"`
	Spec    Spec   `json:"spec"`
	Machine string `json:"machine,omitempty"`
	// StepsPerS and ExamplesPerS are over all timed rounds; RoundStepsPerS per round.
	StepsPerS      float64   `json:"steps_per_s"`
	ExamplesPerS   float64   `json:"examples_per_s"`
	RoundStepsPerS []float64 `json:"round_steps_per_s"`
	// StartToFirstS is from starting the worker process to its first update done;
	// PrepareToFirstS from the start of model setup (after imports) to the first update.
	StartToFirstS   float64 `json:"start_to_first_step_s"`
	PrepareToFirstS float64 `json:"prepare_to_first_step_s"`
	// FirstStepCPUS is the worker's CPU time (all threads) up to its first update done, and
	// StepCPUS the CPU time per timed step: on a loaded machine they separate the work done
	// from the waiting for a core.
	FirstStepCPUS float64        `json:"first_step_cpu_s"`
	StepCPUS      float64        `json:"step_cpu_s"`
	PeakRSSMB     float64        `json:"peak_rss_mb"`
	DevicePeakMB  *float64       `json:"device_peak_mb,omitempty"`
	LastLoss      float64        `json:"last_loss"`
	Info          map[string]any `json:"info,omitempty"`
	// Ratio is StepsPerS over the reference's (PyTorch for goaccel, goaccel on XLA for
	// goaccel-go), and RatioMin/RatioMax the range of the per-round ratios; Missing says why
	// there is no ratio.
	RatioTo  string  `json:"ratio_to,omitempty"`
	Ratio    float64 `json:"ratio,omitempty"`
	RatioMin float64 `json:"ratio_min,omitempty"`
	RatioMax float64 `json:"ratio_max,omitempty"`
	Missing  string  `json:"missing,omitempty"`
	// BaselineRatio is goaccel's StepsPerS over goaccel-baseline's, when one ran.
	BaselineRatio float64 `json:"baseline_ratio,omitempty"`
	Error         string  `json:"error,omitempty"`

	// GFLOPPerStep is Spec.FLOPsPerStep in GFLOP, GFLOPPerS the rate achieved and
	// PeakFraction that rate over the machine's measured peak (MeasurePeak); GFLOPPerCPUS is
	// per CPU-second (StepCPUS), CorePeakFraction that over one core's peak.
	GFLOPPerStep     float64 `json:"gflop_per_step,omitempty"`
	GFLOPPerS        float64 `json:"gflop_per_s,omitempty"`
	PeakFraction     float64 `json:"peak_fraction,omitempty"`
	GFLOPPerCPUS     float64 `json:"gflop_per_cpu_s,omitempty"`
	CorePeakFraction float64 `json:"core_peak_fraction,omitempty"`
}

// worker is a running worker process.
type worker struct {
	impl    string
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	lines   *bufio.Scanner
	started time.Time
	exited  chan struct{}
	m       *Measurement
	// lastCPU is the worker's CPU time at its last report; cpu and cpuSteps sum the timed rounds.
	lastCPU, cpu float64
	cpuSteps     int
}

func (w *worker) read() (event, error) {
	for w.lines.Scan() {
		line := w.lines.Bytes()
		if len(line) == 0 || line[0] != '{' {
			continue // libraries may print to stdout; only JSON objects are events
		}
		var ev event
		if err := json.Unmarshal(line, &ev); err != nil {
			continue
		}
		if ev.Event == "error" {
			return ev, errors.New(ev.Error)
		}
		return ev, nil
	}
	if err := w.lines.Err(); err != nil {
		return event{}, err
	}
	return event{}, fmt.Errorf("%s worker exited without a word (see its stderr log)", w.impl)
}

// start launches a worker and waits until it is warm.
func start(impl string, argv []string, env []string, logPath string, m *Measurement) (*worker, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(envvar.Environ(), env...)
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd.Stderr = logf
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	// An io.Pipe rather than StdoutPipe: Wait may then run while the events are still being
	// read, and the reader sees every line before EOF.
	stdout, pw := io.Pipe()
	cmd.Stdout = pw
	w := &worker{impl: impl, cmd: cmd, stdin: stdin, lines: bufio.NewScanner(stdout), started: time.Now(),
		exited: make(chan struct{}), m: m}
	w.lines.Buffer(make([]byte, 1<<16), 1<<22)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", argv[0], err)
	}
	go func() { _ = cmd.Wait(); pw.Close(); logf.Close(); close(w.exited) }()
	ev, err := w.read()
	if err != nil {
		w.kill()
		return nil, err
	}
	m.StartToFirstS = round3(time.Since(w.started).Seconds())
	m.PrepareToFirstS = round3(ev.PrepareToFirstS)
	m.FirstStepCPUS = round3(ev.CPUS)
	w.lastCPU = ev.CPUS
	m.Info = ev.Info
	if ev, err = w.read(); err == nil && ev.CPUS > 0 {
		w.lastCPU = ev.CPUS
	}
	if err != nil || ev.Event != "ready" {
		w.kill()
		if err == nil {
			err = fmt.Errorf("%s worker: expected ready, got %q", impl, ev.Event)
		}
		return nil, err
	}
	return w, nil
}

func (w *worker) round(steps int) (event, error) {
	if _, err := fmt.Fprintf(w.stdin, "run %d\n", steps); err != nil {
		return event{}, err
	}
	before := w.lastCPU
	ev, err := w.read()
	if err == nil && ev.CPUS > 0 {
		w.lastCPU = ev.CPUS
		ev.cpuBefore = before
	}
	return ev, err
}

func (w *worker) quit() {
	if _, err := fmt.Fprintln(w.stdin, "quit"); err == nil {
		if ev, err := w.read(); err == nil && ev.Event == "done" {
			w.m.PeakRSSMB = ev.PeakRSSMB
			if ev.DevicePeakMB != nil && w.m.DevicePeakMB == nil {
				w.m.DevicePeakMB = ev.DevicePeakMB
			}
		}
	}
	w.stdin.Close()
	select {
	case <-w.exited:
	case <-time.After(30 * time.Second):
		w.kill()
		<-w.exited
	}
}

func (w *worker) kill() {
	if w.cmd.Process != nil {
		_ = w.cmd.Process.Kill()
	}
	go func() { // drain what is left, so that the process's output copy (and Wait) can end
		for w.lines.Scan() {
		}
	}()
}

// TorchStatus says whether python can run the PyTorch side: its torch version, or why not.
// BERT works also need transformers; bertMissing says why they cannot run ("" when they can).
func TorchStatus(python string) (version, missing, bertMissing string) {
	if python == "" {
		return "", "PyTorch comparison disabled (--python none)", ""
	}
	out, err := exec.Command(python, "-c", "import torch; print(torch.__version__)").CombinedOutput()
	if err != nil {
		return "", fmt.Sprintf("%s cannot import torch (%s): install PyTorch, or pass --python PATH", python,
			lastLine(string(out), err)), ""
	}
	version = strings.TrimSpace(lastLine(string(out), nil))
	if out, err := exec.Command(python, "-c", "import transformers").CombinedOutput(); err != nil {
		bertMissing = fmt.Sprintf("%s cannot import transformers (%s): pip install transformers", python,
			lastLine(string(out), err))
	}
	return version, "", bertMissing
}

func lastLine(s string, err error) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if l := lines[len(lines)-1]; l != "" {
		return l
	}
	if err != nil {
		return err.Error()
	}
	return ""
}

// Run measures every spec and writes the results; it returns them in order.
func Run(o Options) ([]*Measurement, error) {
	if err := os.MkdirAll(o.RunDir, 0o755); err != nil {
		return nil, err
	}
	jsonl, err := os.Create(filepath.Join(o.RunDir, "results.jsonl"))
	if err != nil {
		return nil, err
	}
	defer jsonl.Close()
	torchVersion, torchMissing, bertMissing := TorchStatus(o.Python)
	if o.Python == "" && o.NoTorch != "" {
		torchMissing = o.NoTorch
	}
	if torchMissing != "" {
		fmt.Fprintln(o.Log, "bench: no PyTorch comparison:", torchMissing)
	} else {
		fmt.Fprintf(o.Log, "bench: PyTorch %s from %s, %d threads\n", torchVersion, o.Python, o.Threads)
	}
	began, loadStart := time.Now(), loadAverage()
	peak := MeasurePeak(runtime.NumCPU(), 300*time.Millisecond)
	fmt.Fprintf(o.Log, "bench: peak %.0f GFLOP/s fp32 (%s; %.0f by the clock)\n", peak.GFLOPPerS, peak.Method, peak.WallGFLOPPerS)
	var all []*Measurement
	emit := func(m *Measurement) {
		setCompute(m, peak)
		m.Machine = o.Machine
		b, _ := json.Marshal(m)
		fmt.Fprintln(o.Out, string(b))
		fmt.Fprintln(jsonl, string(b))
		all = append(all, m)
	}
	for i, spec := range o.Specs { // spec.Warmup as given: goaccel bench's --warmup defaults to 2, and 0 means none
		tag := fmt.Sprintf("%02d-%s", i, strings.ReplaceAll(spec.Label(), " ", "_"))
		fmt.Fprintf(o.Log, "bench: %s: starting workers\n", spec.Label())
		specJSON, _ := json.Marshal(spec)
		var workers []*worker
		var ms []*Measurement
		add := func(impl string, argv, env []string, missing string) {
			m := &Measurement{Impl: impl, Label: spec.Label(), Spec: spec}
			ms = append(ms, m)
			if missing != "" {
				m.Error = missing
				return
			}
			w, err := start(impl, argv, env, filepath.Join(o.RunDir, tag+"."+impl+".log"), m)
			if err != nil {
				m.Error = err.Error()
				fmt.Fprintf(o.Log, "bench: %s: %s failed: %v\n", spec.Label(), impl, err)
				return
			}
			workers = append(workers, w)
		}
		add("goaccel", append(append([]string{}, o.Worker...), string(specJSON)), nil, "")
		if len(o.BaselineWorker) > 0 {
			add("goaccel-baseline", append(append([]string{}, o.BaselineWorker...), string(specJSON)), nil, "")
		}
		if o.GoBackend && spec.Work == "tiny" && spec.Devices == 1 && spec.Precision == "fp32" {
			goSpec := spec
			goSpec.Backend = "go"
			b, _ := json.Marshal(goSpec)
			add("goaccel-go", append(append([]string{}, o.Worker...), string(b)), nil, "")
		}
		torchWhy := torchMissing
		if torchWhy == "" && spec.IsBERT() {
			torchWhy = bertMissing
		}
		if torchWhy == "" && spec.Devices != 1 {
			torchWhy = "the PyTorch side drives one device (multi-device DDP is not implemented)"
		}
		torchArgs, err := spec.torchArgs()
		if torchWhy == "" && err != nil {
			torchWhy = err.Error()
		}
		if torchWhy == "" {
			argv := append([]string{o.Python, o.TorchScript}, torchArgs...)
			argv = append(argv, "--threads", strconv.Itoa(o.Threads))
			if o.TorchChannelsLast && spec.imageFamily() {
				argv = append(argv, "--channels_last")
			}
			env := []string{envvar.OMPNumThreads.KV(strconv.Itoa(o.Threads))}
			if !o.TorchGoaccelMalloc && envvar.GlibcTunables.Value() == hostmalloc.Tunables {
				env = append(env, envvar.GlibcTunables.KV("")) // glibc's defaults, as PyTorch users run it
			}
			add("pytorch", argv, env, "")
		} else {
			m := &Measurement{Impl: "pytorch", Label: spec.Label(), Spec: spec, Missing: torchWhy}
			ms = append(ms, m)
		}
		steps := o.Steps
		if steps == 0 {
			slowest := 0.0
			for _, w := range workers {
				ev, err := w.round(1)
				if err != nil {
					w.m.Error = err.Error()
					continue
				}
				slowest = max(slowest, ev.Seconds)
			}
			steps = 1
			if slowest > 0 {
				steps = min(200, max(1, int(o.RoundS/slowest+0.5)))
			}
		}
		for r := range o.Rounds {
			for _, w := range workers {
				if w.m.Error != "" {
					continue
				}
				ev, err := w.round(steps)
				if err != nil {
					w.m.Error = err.Error()
					continue
				}
				if ev.cpuBefore > 0 && ev.CPUS > 0 {
					w.cpu += ev.CPUS - ev.cpuBefore
					w.cpuSteps += ev.Steps
					w.m.StepCPUS = round3(w.cpu / float64(w.cpuSteps))
				}
				sps := float64(ev.Steps) / ev.Seconds
				w.m.RoundStepsPerS = append(w.m.RoundStepsPerS, round3(sps))
				w.m.LastLoss = round4(ev.Loss)
				fmt.Fprintf(o.Log, "bench: %s: round %d: %s %.3f steps/s\n", spec.Label(), r, w.impl, sps)
			}
		}
		for _, w := range workers {
			if mb, ok := gpuMemoryMB(w.cmd.Process.Pid); ok {
				w.m.DevicePeakMB = &mb
			}
			w.quit()
		}
		finish(ms, spec)
		for _, m := range ms {
			emit(m)
		}
	}
	table := Header(o.Machine, began, loadStart, loadAverage()) + Table(all) + PrecisionNotes(all) + ShardingNotes(all) + ComputeTable(all, peak)
	fmt.Fprint(o.Out, table)
	if err := os.WriteFile(filepath.Join(o.RunDir, "table.txt"), []byte(table), 0o644); err != nil {
		return all, err
	}
	if err := Chart(all, filepath.Join(o.RunDir, "ratios.png"), o.Machine); err != nil {
		return all, fmt.Errorf("bench: chart: %w", err)
	}
	fmt.Fprintln(o.Log, "bench: wrote", filepath.Join(o.RunDir, "results.jsonl"), "table.txt", "ratios.png")
	if o.Sweep {
		md := Header(o.Machine, began, loadStart, loadAverage())
		if o.Command != "" {
			md += "\n`" + o.Command + "`\n"
		}
		md += "\n" + SweepTable(all, o.SweepDropped)
		fmt.Fprint(o.Out, md)
		if err := os.WriteFile(filepath.Join(o.RunDir, "sweep.md"), []byte(md), 0o644); err != nil {
			return all, err
		}
		title := fmt.Sprintf("goaccel bench --sweep, %s, %s (load %s)", began.UTC().Format("2006-01-02"), o.Machine, loadStart)
		if err := SweepChart(all, filepath.Join(o.RunDir, "sweep.png"), title); err != nil {
			return all, fmt.Errorf("bench: sweep chart: %w", err)
		}
		fmt.Fprintln(o.Log, "bench: wrote", filepath.Join(o.RunDir, "sweep.md"), "sweep.png")
	}
	return all, nil
}

// finish computes the throughputs and ratios of one spec's measurements.
func finish(ms []*Measurement, spec Spec) {
	byImpl := map[string]*Measurement{}
	for _, m := range ms {
		byImpl[m.Impl] = m
		if m.Error != "" || len(m.RoundStepsPerS) == 0 {
			continue
		}
		// Mean of the per-round rates (rounds have the same number of steps: the harmonic
		// mean is the total-time rate).
		inv := 0.0
		for _, s := range m.RoundStepsPerS {
			inv += 1 / s
		}
		m.StepsPerS = round3(float64(len(m.RoundStepsPerS)) / inv)
		m.ExamplesPerS = round1(m.StepsPerS * float64(spec.Batch))
	}
	ratio := func(m, ref *Measurement, refName string) {
		if m == nil || m.Error != "" || m.StepsPerS == 0 {
			return
		}
		m.RatioTo = refName
		switch {
		case ref == nil:
			m.Missing = "no " + refName + " measurement"
		case ref.Missing != "" && ref.StepsPerS == 0: // a ref with steps has its own ref missing, not itself
			m.Missing = ref.Missing
		case ref.Error != "" || ref.StepsPerS == 0:
			m.Missing = refName + " failed: " + ref.Error
		default:
			m.Ratio = round3(m.StepsPerS / ref.StepsPerS)
			m.RatioMin, m.RatioMax = 0, 0
			for i := range min(len(m.RoundStepsPerS), len(ref.RoundStepsPerS)) {
				r := round3(m.RoundStepsPerS[i] / ref.RoundStepsPerS[i])
				if i == 0 || r < m.RatioMin {
					m.RatioMin = r
				}
				if r > m.RatioMax {
					m.RatioMax = r
				}
			}
		}
	}
	ratio(byImpl["goaccel"], byImpl["pytorch"], "pytorch")
	ratio(byImpl["goaccel-go"], byImpl["goaccel"], "goaccel")
	if g, b := byImpl["goaccel"], byImpl["goaccel-baseline"]; g != nil && b != nil && b.Error == "" && b.StepsPerS > 0 {
		g.BaselineRatio = round3(g.StepsPerS / b.StepsPerS)
	}
}

// gpuMemoryMB is the GPU memory nvidia-smi reports for the process (what it holds, including
// any preallocated pool), when nvidia-smi is there.
func gpuMemoryMB(pid int) (float64, bool) {
	out, err := exec.Command("nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits").Output()
	if err != nil {
		return 0, false
	}
	total, found := 0.0, false
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Split(line, ",")
		if len(f) == 2 && strings.TrimSpace(f[0]) == strconv.Itoa(pid) {
			v, err := strconv.ParseFloat(strings.TrimSpace(f[1]), 64)
			if err == nil {
				total, found = total+v, true
			}
		}
	}
	return total, found
}
