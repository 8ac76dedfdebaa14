package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/goaccel/goaccel/cmd/goaccel/internal/bench"
	"github.com/goaccel/goaccel/internal/envvar"
	"github.com/goaccel/goaccel/internal/plugins"
	"github.com/goaccel/goaccel/models/auto"
	flag "github.com/spf13/pflag"
)

const benchUsage = `usage: goaccel bench [flags]

Trains the same works with goaccel and, in the same invocation, with PyTorch (when --python can
import torch), alternating timed rounds, and prints per work: steps/s, examples/s, time to the
first update, peak memory and the goaccel/PyTorch ratio (JSON lines, then a table). The run
directory gets results.jsonl, table.txt, ratios.png and each worker's stderr.

Works (--work, repeatable): mlp, tiny, minilm, base (the default run), and one per model family
models/auto has (%s), the classifier of the family's reference model (%s),
goaccel through models/auto against transformers' class for the family; optionally with shape
overrides, e.g.
  --work mlp:hidden=4096:batch=4096 --work minilm:batch=32:seq=128 --work deberta:layers=2
Defaults are the CPU shapes (mlp h1024 B256, tiny/minilm B64 L64, base B8 L64, the families B8
L128, an image family B8 at 224 pixels a side: seq is the side), or the GPU shapes when a GPU and XLA's CUDA plugin are found (mlp h4096 B4096, minilm
B64 L128, base and the families B32 L128).
goaccel runs with its block cache for large host blocks (the default); GOACCEL_HOST_MALLOC=system
goaccel bench ... measures it with glibc's defaults, =keep with glibc's keep settings (PyTorch keeps
glibc's defaults unless --torch_goaccel_malloc). PyTorch's image works run in contiguous NCHW
unless --torch_channels_last (results.jsonl's info says which). The compute table gives each work's GFLOP/s
against the fp32 peak an FMA loop measures in this binary.

--sweep measures how the cost grows with the work: the first --work (default minilm) at the
first --precision, at every --sweep_seq x --sweep_batch on one device, then over --sweep_devices
XLA devices in one process at --sweep_global_batch examples of the smallest --sweep_seq; writes sweep.md (a Markdown
table: steps/s, tokens/s, peak RSS and the ratio to PyTorch per point) and sweep.png (steps/s,
peak RSS and the ratio against tokens per step) to the run directory, e.g.
  goaccel bench --sweep --rounds 2 --round_s 3 --warmup 1
Points above --sweep_max_tokens tokens per step are dropped, and named in sweep.md.

Flags:
`

// benchCmd runs the benchmark.
func benchCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("goaccel bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	works := fs.StringArray("work", nil, "work to measure, NAME[:key=value]... (repeatable; default: mlp, tiny, minilm, base; also "+strings.Join(bench.Families(), ", ")+")")
	precisions := fs.StringSlice("precision", nil, "precisions: fp32, tf32 (GPU), bf16, fp16 (default: fp32 on CPU, tf32,bf16 on a GPU)")
	shardings := fs.StringSlice("sharding", nil, "goaccel's Config.Sharding values to run each work under: no, zero1, zero2, zero3 (default: the accelerator's)")
	devices := fs.IntSlice("devices", nil, "device counts to run goaccel on (default: 1, plus all GPUs when there are several; with --sharding: 4 CPU devices, or all GPUs)")
	backend := fs.String("backend", "", "goaccel's backend (see accelerator.Config.Backend); empty: discover")
	goBackend := fs.Bool("go_backend", false, "also run the tiny BERT on goaccel's pure-Go backend (ratio to XLA)")
	steps := fs.Int("steps", 0, "timed steps per round (0: enough for about --round_s seconds, from a calibration step)")
	roundS := fs.Float64("round_s", 4, "target seconds per round when --steps is 0")
	rounds := fs.Int("rounds", 3, "alternating rounds (goaccel, PyTorch, goaccel, ...)")
	warmup := fs.Int("warmup", 2, "untimed steps after the first one")
	python := fs.String("python", defaultPython(), `Python with torch (and transformers for BERT) for the comparison; "none" disables it`)
	torchScript := fs.String("torch_script", "", "PyTorch worker script (default: scripts/bench_torch.py, or bench_torch.py next to this binary)")
	threads := fs.Int("threads", runtime.NumCPU(), "PyTorch's intra-op threads (XLA's CPU plugin uses one thread per core)")
	channelsLast := fs.Bool("torch_channels_last", false, "run PyTorch's image works in torch.channels_last (its faster convolution layout on CPU; default: contiguous NCHW, transformers' own)")
	torchMalloc := fs.Bool("torch_goaccel_malloc", false, "run PyTorch with goaccel's glibc malloc settings too (default: glibc's defaults, as PyTorch users run it; see the hostmalloc package)")
	baseline := fs.String("baseline", "", "another goaccel binary whose bench-worker is measured alongside as goaccel-baseline (A/B of a change)")
	runDir := fs.String("run_dir", "", "run directory (default: runs/bench-YYYYMMDD-HHMMSS)")
	sweep := fs.Bool("sweep", false, "sweep the first --work (default minilm) over --sweep_seq x --sweep_batch and --sweep_devices (writes sweep.md and sweep.png)")
	sweepSeqs := fs.IntSlice("sweep_seq", []int{64, 128, 256}, "the sweep's sequence lengths")
	sweepBatches := fs.IntSlice("sweep_batch", []int{8, 32, 64}, "the sweep's per-device batches (on one device)")
	sweepDevices := fs.IntSlice("sweep_devices", []int{1, 2, 4}, "the sweep's device counts, at --sweep_global_batch examples of the smallest --sweep_seq")
	sweepGlobal := fs.Int("sweep_global_batch", 32, "the global batch of the device sweep")
	sweepMaxTokens := fs.Int("sweep_max_tokens", 0, "drop the sweep's points with more tokens per step than this (0: keep all)")
	sweepRedraw := fs.String("sweep_redraw", "", "with --sweep: measure nothing, write sweep.md and sweep.png again from this finished sweep's run directory (the other --sweep flags as in its run)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, benchUsage, strings.Join(bench.Families(), ", "), familyReferences())
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args, stderr, true); !ok {
		return code
	}
	gpus := gpuCount(*backend)
	if *sweep && len(*works) == 0 {
		*works = []string{"minilm"}
	}
	if len(*works) == 0 {
		*works = bench.DefaultWorks
	}
	if len(*precisions) == 0 {
		*precisions = []string{"fp32"}
		if gpus > 0 {
			*precisions = []string{"tf32", "bf16"}
		}
	}
	if len(*devices) == 0 && len(*shardings) > 0 {
		*devices = []int{bench.ShardingDevices(gpus)}
	}
	if len(*devices) == 0 {
		*devices = []int{1}
		if gpus > 1 {
			*devices = append(*devices, gpus)
		}
	}
	o := bench.Options{Steps: *steps, RoundS: *roundS, Rounds: *rounds, GoBackend: *goBackend, Threads: *threads,
		TorchGoaccelMalloc: *torchMalloc, TorchChannelsLast: *channelsLast,
		Out: stdout, Log: stderr, Machine: machineName(gpus)}
	for _, w := range *works {
		spec, err := bench.ParseWork(w, gpus > 0)
		if err != nil {
			fmt.Fprintln(stderr, "goaccel", err)
			return 2
		}
		for _, p := range *precisions {
			for _, d := range *devices {
				s := spec
				s.Precision, s.Devices, s.Backend, s.Warmup = p, d, *backend, *warmup
				if err := s.Validate(); err != nil {
					fmt.Fprintf(stderr, "goaccel bench: --work %s, --precision %s, --devices %d: %s\n", w, p, d,
						strings.TrimPrefix(err.Error(), "bench: "))
					return 2
				}
				o.Specs = append(o.Specs, s)
			}
		}
	}
	specs, err := bench.WithShardings(o.Specs, *shardings)
	if err != nil {
		fmt.Fprintln(stderr, "goaccel bench: --sharding:", strings.TrimPrefix(err.Error(), "bench: "))
		return 2
	}
	o.Specs = specs
	if *sweepRedraw != "" && !*sweep {
		fmt.Fprintln(stderr, "goaccel bench: --sweep_redraw redraws a sweep: give it with --sweep (and the sweep's other flags as in its run)")
		return 2
	}
	if *sweepMaxTokens < 0 {
		fmt.Fprintf(stderr, "goaccel bench: --sweep_max_tokens %d: want a number of tokens per step >= 0 (0: keep every point)\n", *sweepMaxTokens)
		return 2
	}
	if *sweep {
		sw := bench.Sweep{Seqs: *sweepSeqs, Batches: *sweepBatches, Devices: *sweepDevices, GlobalBatch: *sweepGlobal,
			MaxTokens: *sweepMaxTokens}
		if o.Specs, o.SweepDropped, err = sw.Specs(o.Specs[0]); err != nil {
			fmt.Fprintln(stderr, "goaccel bench: --sweep:", strings.TrimPrefix(err.Error(), "bench: "))
			return 2
		}
		o.Sweep, o.Command = true, "goaccel bench "+strings.Join(args, " ")
		if *sweepRedraw != "" {
			var kept []string
			for i := 0; i < len(args); i++ {
				switch {
				case args[i] == "--sweep_redraw":
					i++
				case strings.HasPrefix(args[i], "--sweep_redraw="):
				default:
					kept = append(kept, args[i])
				}
			}
			if err := bench.RedrawSweep(*sweepRedraw, "goaccel bench "+strings.Join(kept, " "), o.SweepDropped, stdout); err != nil {
				fmt.Fprintln(stderr, "goaccel bench: --sweep_redraw:", err)
				return 1
			}
			return 0
		}
		fmt.Fprintf(stderr, "goaccel bench: the sweep: %d points of %s\n", len(o.Specs), o.Specs[0].Work)
		for _, d := range o.SweepDropped {
			fmt.Fprintln(stderr, "goaccel bench: dropped", d)
		}
	}
	if *rounds < 1 || *steps < 0 || *warmup < 0 {
		fmt.Fprintln(stderr, "goaccel bench: --rounds must be >= 1, --steps and --warmup >= 0")
		return 2
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(stderr, "goaccel bench: finding this executable:", err)
		return 1
	}
	o.Worker = []string{self, "bench-worker"}
	if *baseline != "" {
		o.BaselineWorker = []string{*baseline, "bench-worker"}
	}
	if *python != "none" {
		o.Python = *python
		o.TorchScript = *torchScript
		if o.TorchScript == "" {
			o.TorchScript = findTorchScript(self)
		}
		if o.TorchScript == "" {
			o.NoTorch = "scripts/bench_torch.py not found (run from the repository root, or pass --torch_script)"
			fmt.Fprintf(stderr, "goaccel bench: %s; measuring goaccel only\n", o.NoTorch)
			o.Python = ""
		}
	}
	o.RunDir = *runDir
	if o.RunDir == "" {
		o.RunDir = filepath.Join("runs", "bench-"+time.Now().UTC().Format("20060102-150405"))
	}
	if _, err := bench.Run(o); err != nil {
		fmt.Fprintln(stderr, "goaccel bench:", err)
		return 1
	}
	return 0
}

// benchWorkerCmd is the hidden `goaccel bench-worker SPEC_JSON` that bench starts per work.
func benchWorkerCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) != 1 {
		fmt.Fprintln(stderr, "usage: goaccel bench-worker SPEC_JSON (started by goaccel bench)")
		return 2
	}
	if err := bench.WorkerMain(args[0], os.Stdin, stdout); err != nil {
		fmt.Fprintln(stderr, "goaccel bench-worker:", err)
		return 1
	}
	return 0
}

// defaultPython is $GOACCEL_BENCH_PYTHON, else python3.
func defaultPython() string {
	if p := envvar.BenchPython.Value(); p != "" {
		return p
	}
	return "python3"
}

// findTorchScript looks for the PyTorch worker in the repository (from the working
// directory) and next to the executable (the GPU bundle).
func findTorchScript(self string) string {
	for _, p := range []string{filepath.Join("scripts", "bench_torch.py"), filepath.Join(filepath.Dir(self), "bench_torch.py")} {
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			abs, _ := filepath.Abs(p)
			return abs
		}
	}
	return ""
}

// gpuCount is the number of NVIDIA GPUs goaccel would use: 0 unless XLA's CUDA plugin is
// found (or named by backend) and /dev/nvidia<N> device files exist.
func gpuCount(backend string) int {
	b := strings.ToLower(backend)
	if b == "go" || strings.HasPrefix(b, "go:") || strings.Contains(b, "cpu") {
		return 0
	}
	cuda := strings.Contains(b, "cuda")
	for _, p := range plugins.Find() {
		cuda = cuda || p.Kind == plugins.CUDA
	}
	if !cuda {
		return 0
	}
	files, _ := filepath.Glob("/dev/nvidia[0-9]*")
	return len(files)
}

// machineName describes the machine for the outputs: the GPU's name, or the CPU model and
// core count.
func machineName(gpus int) string {
	if gpus > 0 {
		if out, err := exec.Command("nvidia-smi", "--query-gpu=name", "--format=csv,noheader").Output(); err == nil {
			names := strings.Split(strings.TrimSpace(string(out)), "\n")
			return fmt.Sprintf("%d x %s", len(names), strings.TrimSpace(names[0]))
		}
		return fmt.Sprintf("%d GPU(s)", gpus)
	}
	model := runtime.GOARCH
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	return fmt.Sprintf("%s, %d cores", model, runtime.NumCPU())
}

// familyReferences lists the registered families' reference models.
func familyReferences() string {
	var refs []string
	for _, f := range auto.Registered() {
		if ref := f.Reference(); ref.Config != nil {
			refs = append(refs, ref.Name)
		}
	}
	return strings.Join(refs, ", ")
}
