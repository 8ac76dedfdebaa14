package bench

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"text/tabwriter"
	"time"
)

// FLOPsPerStep is the floating-point operations of one training step of the spec (the
// global batch, all devices), counted from the model's matrix products only (by the family,
// models/auto's Config.ForwardFLOPs, for a classifier): 2 FLOPs per
// multiply-add, and the backward pass as twice the forward (forward + backward = 3 x
// forward). Element-wise work, softmax, layer norm, embedding gathers, the loss and the
// optimizer update are not counted. docs/performance.md states the formulas:
//
//	MLP:        6 B (512 H + (L-1) H^2 + 10 H)
//	BERT:       6 [B S L (4 d^2 + 2 d f + 2 S d) + B (d^2 + 2 d)]
//	ModernBERT: 6 [B S L (4 d^2 + 3 d f + 2 S d) + B (d^2 + 2 d)]
//	DeBERTa:    6 [B S L (4 d^2 + 2 d f + 2 S d + 4 P d) + L 4 P d^2 + B (d^2 + 2 d)]
//
// (B batch, H/d hidden, L layers, S sequence, f feed-forward width; for BERT per token and
// layer: the Q, K, V and output projections 4 d^2, the feed-forward 2 d f, the attention's
// scores and weighted sum 2 S d; per example the pooler d^2 and the 2-class head 2 d).
// ModernBERT's GeGLU feed-forward is 3 d f (Wi to 2 f, Wo from f), its head's dense d^2;
// its local layers' scores are counted over all S keys, as both implementations compute
// them (a mask on the full product, not a band). DeBERTa adds per token and layer the c2p
// and p2c scores against the 2 P relative embeddings (P = position_buckets = 256), 2 x 2 P
// d, and per layer the projection of those 2 P embeddings by key_proj and query_proj,
// 2 x 2 P d^2; its ContextPooler's dense is the d^2.
func (s Spec) FLOPsPerStep() float64 {
	b, h, l := float64(s.Batch), float64(s.Hidden), float64(s.Layers)
	if !s.IsBERT() {
		return 6 * b * (512*h + (l-1)*h*h + 10*h)
	}
	cfg, err := s.config() // the family's count (auto.Config.ForwardFLOPs); Validate reports its error
	if err != nil {
		return 0
	}
	return 3 * cfg.ForwardFLOPs(s.Batch, s.Seq)
}

// Peak is the machine's fp32 multiply-add rate, measured by this binary: a loop of 12
// independent FMAs on the widest vector registers the CPU has, on every core at once.
// GFLOPPerS is the rate per CPU-second of one loop thread (its own CPU time, so that other
// processes taking turns on the cores do not lower it) times the threads: what the cores
// can do. WallGFLOPPerS is what the threads got by the clock, under the machine's load.
type Peak struct {
	GFLOPPerS     float64 `json:"gflop_per_s"`
	WallGFLOPPerS float64 `json:"wall_gflop_per_s"`
	Method        string  `json:"method"`
	Threads       int     `json:"threads"`
}

// MeasurePeak runs the FMA loop on threads OS threads at once for about d, three times,
// and returns the best rates. Method is "" where there is no loop for this CPU.
func MeasurePeak(threads int, d time.Duration) Peak {
	loop, perIter, name := fmaKernel()
	if loop == nil || threads < 1 {
		return Peak{}
	}
	// Calibrate one call to about 10 ms.
	n := int64(1 << 16)
	for {
		t := time.Now()
		loop(n)
		if el := time.Since(t); el > 5*time.Millisecond || n > 1<<34 {
			n = max(1, int64(float64(n)*float64(10*time.Millisecond)/float64(el)))
			break
		}
		n *= 4
	}
	perCPU, wall := 0.0, 0.0
	for range 3 {
		var wg sync.WaitGroup
		iters := make([]int64, threads)
		cpus := make([]time.Duration, threads)
		start := make(chan struct{})
		for i := range threads {
			wg.Add(1)
			go func() {
				defer wg.Done()
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				<-start
				c0, ok := threadCPU()
				t0 := time.Now()
				for end := t0.Add(d); time.Now().Before(end); {
					loop(n)
					iters[i] += n
				}
				c1, _ := threadCPU()
				if cpus[i] = c1 - c0; !ok {
					cpus[i] = time.Since(t0)
				}
			}()
		}
		t := time.Now()
		close(start)
		wg.Wait()
		el := time.Since(t).Seconds()
		total, best := 0.0, 0.0
		for i, it := range iters {
			total += float64(it) * perIter
			if cpus[i] > 0 {
				best = max(best, float64(it)*perIter/cpus[i].Seconds())
			}
		}
		wall = max(wall, total/el/1e9)
		perCPU = max(perCPU, best*float64(threads)/1e9)
	}
	return Peak{GFLOPPerS: round1(perCPU), WallGFLOPPerS: round1(wall), Threads: threads,
		Method: fmt.Sprintf("%s loop, 12 accumulators, %d threads", name, threads)}
}

// setCompute fills m's FLOP figures from its steps/s, its CPU time per step and the peak.
func setCompute(m *Measurement, peak Peak) {
	if m.StepsPerS <= 0 {
		return
	}
	m.GFLOPPerStep = round3(m.Spec.FLOPsPerStep() / 1e9)
	m.GFLOPPerS = round1(m.GFLOPPerStep * m.StepsPerS)
	if m.StepCPUS > 0 {
		m.GFLOPPerCPUS = round1(m.GFLOPPerStep / m.StepCPUS)
	}
	if peak.GFLOPPerS > 0 && peak.Threads > 0 {
		m.PeakFraction = round3(m.GFLOPPerS / peak.GFLOPPerS)
		m.CorePeakFraction = round3(m.GFLOPPerCPUS / (peak.GFLOPPerS / float64(peak.Threads)))
	}
}

// ComputeTable lists each measurement's GFLOP per step, the GFLOP/s achieved by the clock
// and its fraction of the measured peak, and the GFLOP per CPU-second (every thread's time
// counted) with its fraction of one core's peak: under a load from other processes, the
// first fraction falls with the share of the cores the work got; the second does not.
func ComputeTable(ms []*Measurement, peak Peak) string {
	var b strings.Builder
	if peak.GFLOPPerS > 0 {
		fmt.Fprintf(&b, "compute: peak %.0f GFLOP/s fp32 measured here (%s; %.0f by the clock under this load); FLOPs counted as in docs/performance.md\n",
			peak.GFLOPPerS, peak.Method, peak.WallGFLOPPerS)
	} else {
		fmt.Fprintln(&b, "compute: no FMA loop for this CPU, peak not measured; FLOPs counted as in docs/performance.md")
	}
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "work\timpl\tGFLOP/step\tGFLOP/s\tof peak\tGFLOP/CPU-s\tof a core's peak\t")
	pct := func(f float64) string {
		if f <= 0 {
			return "-"
		}
		return fmt.Sprintf("%.0f%%", 100*f)
	}
	for _, m := range ms {
		if m.GFLOPPerS <= 0 {
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%.2f\t%.1f\t%s\t%.1f\t%s\t\n", m.Label, m.Impl, m.GFLOPPerStep, m.GFLOPPerS,
			pct(m.PeakFraction), m.GFLOPPerCPUS, pct(m.CorePeakFraction))
	}
	tw.Flush()
	return b.String()
}
