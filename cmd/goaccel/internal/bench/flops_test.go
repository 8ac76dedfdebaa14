package bench

import (
	"math"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestFLOPsPerStep checks the count against the products written out by hand for the
// default CPU shapes (docs/performance.md has the same numbers).
func TestFLOPsPerStep(t *testing.T) {
	for work, want := range map[string]float64{
		// 256 examples x (512x1024 + 3 x 1024x1024 + 1024x10) multiply-adds, x 2 x 3.
		"mlp": 6 * 256 * (512*1024 + 3*1024*1024 + 1024*10),
		// 4096 tokens x 6 layers x (4 x 384^2 + 2 x 384 x 1536 + 2 x 64 x 384), + the pooler.
		"minilm": 6 * (4096*6*(4*384*384+2*384*1536+2*64*384) + 64*(384*384+2*384)),
		"tiny":   6 * (4096*2*(4*128*128+2*128*512+2*64*128) + 64*(128*128+2*128)),
		"base":   6 * (512*12*(4*768*768+2*768*3072+2*64*768) + 8*(768*768+2*768)),
		// 1024 tokens x 22 layers x (Wqkv and Wo 4 x 768^2, GeGLU's Wi 768 x 2304 and Wo
		// 1152 x 768, 2 x 128 x 768 of attention), + the head's dense and classifier.
		"modernbert": 6 * (1024*22*(4*768*768+768*2304+1152*768+2*128*768) + 8*(768*768+2*768)),
		// 1024 tokens x 6 layers x (4 x 768^2, 2 x 768 x 3072, 2 x 128 x 768, and c2p and p2c
		// against 512 relative embeddings 2 x 512 x 768), + 6 layers x the 512 relative
		// embeddings through key_proj and query_proj 2 x 512 x 768^2, + the pooler.
		"deberta": 6 * (1024*6*(4*768*768+2*768*3072+2*128*768+2*512*768) + 6*2*512*768*768 + 8*(768*768+2*768)),
	} {
		if got := Works[work].CPU.FLOPsPerStep(); got != want {
			t.Errorf("%s: FLOPsPerStep = %.6g, want %.6g", work, got, want)
		}
	}
	for work, want := range map[string]float64{"minilm": 268.2, "modernbert": 704.3, "deberta": 318.9} {
		if got := Works[work].CPU.FLOPsPerStep() / 1e9; math.Abs(got-want) > 0.1 {
			t.Errorf("%s: %.1f GFLOP a step, want %.1f (docs/performance.md)", Works[work].CPU.Label(), got, want)
		}
	}
}

// TestMeasurePeak runs the FMA loop briefly: a positive rate, below what one core could
// possibly do (6 GHz x 2 FMA units x 16 lanes x 2 FLOPs = 384 GFLOP/s a thread), which
// catches a wrong FLOPs-per-iteration count.
func TestMeasurePeak(t *testing.T) {
	if loop, _, _ := fmaKernel(); loop == nil {
		t.Skipf("SKIPPED: no FMA loop for %s or this CPU: bench reports no peak here", runtime.GOARCH)
	}
	p := MeasurePeak(1, 20*time.Millisecond)
	if p.GFLOPPerS <= 1 || p.GFLOPPerS > 384 || !strings.Contains(p.Method, "FMA loop, 12 accumulators, 1 threads") {
		t.Errorf("MeasurePeak(1) = %+v", p)
	}
	t.Logf("%+v", p)
}

func TestComputeTable(t *testing.T) {
	m := &Measurement{Impl: "goaccel", Label: "minilm B64 L64 fp32 1dev", Spec: Works["minilm"].CPU, StepsPerS: 1.5,
		StepCPUS: 1.0}
	peak := Peak{GFLOPPerS: 800, WallGFLOPPerS: 700, Method: "AVX-512 FMA loop", Threads: 2}
	setCompute(m, peak)
	if m.GFLOPPerS != 402.3 || m.PeakFraction != 0.503 || m.GFLOPPerCPUS != 268.2 || m.CorePeakFraction != 0.671 {
		t.Errorf("setCompute: %+v", m)
	}
	table := ComputeTable([]*Measurement{m}, peak)
	for _, want := range []string{"peak 800 GFLOP/s fp32 measured here (AVX-512 FMA loop; 700 by the clock", "268.22",
		"402.3", "50%", "268.2", "67%"} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
}

func TestHeader(t *testing.T) {
	h := Header("AMD EPYC, 2 cores", time.Date(2026, 12, 1, 11, 30, 0, 0, time.UTC), "1.00 2.00 3.00", "4.00 5.00 6.00")
	for _, want := range []string{"goaccel bench 2026-12-01 11:30 to ", "UTC on AMD EPYC, 2 cores; load average 1.00 2.00 3.00 at the start, 4.00 5.00 6.00 at the end"} {
		if !strings.Contains(h, want) {
			t.Errorf("Header = %q, want it to contain %q", h, want)
		}
	}
	if l := loadAverage(); len(strings.Fields(l)) != 3 && l != "unknown" {
		t.Errorf("loadAverage() = %q", l)
	}
}
