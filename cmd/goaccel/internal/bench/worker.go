package bench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/goaccel/goaccel/internal/envvar"
)

// The worker protocol: the benchmark starts one worker process per framework and work, and
// drives it over stdin/stdout, one JSON object per line, so that goaccel and PyTorch run
// alternating rounds in one invocation with their own memory and start-up figures:
//
//	worker -> {"event":"first_step","prepare_to_first_s":...,"cpu_s":...}  after the first update
//	worker -> {"event":"ready","cpu_s":...}                                after the warm-up steps
//	bench  -> run N        worker -> {"event":"round","steps":N,"seconds":...,"loss":...,"cpu_s":...}
//
// cpu_s is the worker process's CPU time so far (all threads).
//	bench  -> quit         worker -> {"event":"done","peak_rss_mb":...}
//
// A worker that fails prints {"event":"error","error":"..."} and exits with a non-zero status.
// scripts/bench_torch.py speaks the same protocol.

// event is one line a worker writes.
type event struct {
	Event           string         `json:"event"`
	Error           string         `json:"error,omitempty"`
	PrepareToFirstS float64        `json:"prepare_to_first_s,omitempty"`
	CPUS            float64        `json:"cpu_s,omitempty"` // process CPU time (user+system) so far
	NewS            float64        `json:"new_s,omitempty"`
	Steps           int            `json:"steps,omitempty"`
	Seconds         float64        `json:"seconds,omitempty"`
	Loss            float64        `json:"loss,omitempty"`
	PeakRSSMB       float64        `json:"peak_rss_mb,omitempty"`
	DevicePeakMB    *float64       `json:"device_peak_mb,omitempty"`
	Info            map[string]any `json:"info,omitempty"`

	cpuBefore float64 // the worker's CPU time before the round (set by worker.round)
}

// WorkerMain is goaccel's worker (the hidden `goaccel bench-worker SPEC_JSON` command): it
// prepares the spec's training job, reports the time to the first update, and then runs the
// rounds asked for on in until "quit" or the end of the input.
func WorkerMain(specJSON string, in io.Reader, out io.Writer) error {
	enc := json.NewEncoder(out)
	fail := func(err error) error {
		_ = enc.Encode(event{Event: "error", Error: err.Error()})
		return err
	}
	var spec Spec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		return fail(fmt.Errorf("bench worker: bad spec %q: %w", specJSON, err))
	}
	if err := spec.Validate(); err != nil {
		return fail(err)
	}
	start := time.Now()
	r, err := newGoaccelRun(spec)
	if err != nil {
		return fail(err)
	}
	defer r.close()
	newS := time.Since(start).Seconds()
	if _, _, err := r.steps(1); err != nil {
		return fail(err)
	}
	if err := enc.Encode(event{Event: "first_step", PrepareToFirstS: round4(time.Since(start).Seconds()),
		NewS: round4(newS), CPUS: round4(cpuSeconds()), Info: r.describe()}); err != nil {
		return err
	}
	if spec.Warmup > 0 {
		if _, _, err := r.steps(spec.Warmup); err != nil {
			return fail(err)
		}
	}
	if err := enc.Encode(event{Event: "ready", CPUS: round4(cpuSeconds())}); err != nil {
		return err
	}
	// $GOACCEL_BENCH_CPUPROFILE: a Go CPU profile of the timed rounds (the Go side only: XLA's
	// own threads show up as cgo calls), to see where a slow work spends its time.
	if path := envvar.BenchCPUProfile.Value(); path != "" {
		f, err := os.Create(path)
		if err != nil {
			return fail(err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fail(err)
		}
		defer pprof.StopCPUProfile()
	}
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "run":
			n, err := strconv.Atoi(f[len(f)-1])
			if err != nil || n <= 0 {
				return fail(fmt.Errorf("bench worker: bad command %q", sc.Text()))
			}
			el, loss, err := r.steps(n)
			if err != nil {
				return fail(err)
			}
			if err := enc.Encode(event{Event: "round", Steps: n, Seconds: el.Seconds(), Loss: loss,
				CPUS: round4(cpuSeconds())}); err != nil {
				return err
			}
		case "quit":
			return enc.Encode(event{Event: "done", PeakRSSMB: peakRSSMB()})
		}
	}
	return enc.Encode(event{Event: "done", PeakRSSMB: peakRSSMB()})
}

// peakRSSMB is this process's peak resident set size (VmHWM) in MiB, 0 where /proc is missing.
func peakRSSMB() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				kb, _ := strconv.ParseFloat(f[0], 64)
				return round1(kb / 1024)
			}
		}
	}
	return 0
}

// cpuSeconds is the CPU time (user + system, all threads) this process has used so far: under
// a loaded machine it tells compile and step costs apart from waiting for a core.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

func round1(v float64) float64 { return float64(int64(v*10+0.5)) / 10 }
func round3(v float64) float64 { return float64(int64(v*1000+0.5)) / 1000 }
func round4(v float64) float64 { return float64(int64(v*10000+0.5)) / 10000 }
