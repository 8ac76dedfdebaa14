package bench

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseWork(t *testing.T) {
	s, err := ParseWork("minilm:batch=32:seq=128", false)
	if err != nil {
		t.Fatal(err)
	}
	if s.Batch != 32 || s.Seq != 128 || s.Hidden != 384 || s.Heads != 12 {
		t.Errorf("minilm:batch=32:seq=128 = %+v", s)
	}
	if g, _ := ParseWork("mlp", true); g.Hidden != 4096 || g.Batch != 4096 {
		t.Errorf("GPU mlp defaults = %+v", g)
	}
	for arg, want := range map[string]string{
		"alexnet":       "valid works are mlp, tiny, minilm, base",
		"mlp:batch":     "not KEY=POSITIVE_INTEGER",
		"mlp:batch=-1":  "not KEY=POSITIVE_INTEGER",
		"mlp:colour=2":  `unknown key "colour"`,
		"tiny:heads=3x": "not KEY=POSITIVE_INTEGER",
	} {
		if _, err := ParseWork(arg, false); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseWork(%q) error = %v, want it to contain %q", arg, err, want)
		}
	}
	half := Works["tiny"].CPU
	half.Precision, half.Devices = "fp16", 1
	if err := half.Validate(); err != nil {
		t.Errorf("Validate of fp16: %v", err)
	}
	half.Precision = "fp8"
	if err := half.Validate(); err == nil || !strings.Contains(err.Error(), `precision "fp8": valid values are fp32, tf32, bf16, fp16`) {
		t.Errorf("Validate of fp8: %v", err)
	}
	bad := Works["tiny"].CPU
	bad.Precision, bad.Devices, bad.Batch = "fp32", 3, 64
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "does not split evenly over 3 devices") {
		t.Errorf("Validate of batch 64 over 3 devices: %v", err)
	}
}

func TestFinishRatiosAndTable(t *testing.T) {
	spec := Spec{Work: "mlp", Batch: 10, Hidden: 8, Layers: 1, Precision: "fp32", Devices: 1}
	g := &Measurement{Impl: "goaccel", Label: spec.Label(), RoundStepsPerS: []float64{2, 4}}
	p := &Measurement{Impl: "pytorch", Label: spec.Label(), RoundStepsPerS: []float64{1, 4}}
	finish([]*Measurement{g, p}, spec)
	// Harmonic mean: 2 rounds of equal steps at 2 and 4 steps/s run at 2.667 steps/s overall.
	if g.StepsPerS != 2.667 || p.StepsPerS != 1.6 || g.ExamplesPerS != 26.7 {
		t.Errorf("steps/s goaccel %v pytorch %v, examples/s %v", g.StepsPerS, p.StepsPerS, g.ExamplesPerS)
	}
	if g.Ratio != 1.667 || g.RatioMin != 1 || g.RatioMax != 2 || g.RatioTo != "pytorch" {
		t.Errorf("ratio %v (%v-%v) to %q", g.Ratio, g.RatioMin, g.RatioMax, g.RatioTo)
	}
	missing := &Measurement{Impl: "pytorch", Label: "x", Missing: "python3 cannot import torch"}
	alone := &Measurement{Impl: "goaccel", Label: "x", RoundStepsPerS: []float64{3}}
	finish([]*Measurement{alone, missing}, spec)
	if alone.Ratio != 0 || alone.Missing != "python3 cannot import torch" {
		t.Errorf("without PyTorch: ratio %v, missing %q", alone.Ratio, alone.Missing)
	}
	table := Table([]*Measurement{g, p, alone, missing})
	for _, want := range []string{"1.67x pytorch", "1.00-2.00", "n/a", "note: x pytorch: python3 cannot import torch"} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
	if err := Chart([]*Measurement{g, p}, filepath.Join(t.TempDir(), "ratios.png"), "test"); err != nil {
		t.Fatal(err)
	}
}

// TestWorkerProtocol drives goaccel's worker on the pure-Go backend with a small MLP, as
// the benchmark does.
func TestWorkerProtocol(t *testing.T) {
	for _, p := range []string{"fp32", "bf16", "fp16"} {
		t.Run(p, func(t *testing.T) { checkWorkerProtocol(t, p) })
	}
}

// checkWorkerProtocol runs goaccel's bench worker on a small MLP at the precision on the pure-Go
// backend and checks its events.
func checkWorkerProtocol(t *testing.T, precision string) {
	spec := Spec{Work: "mlp", Batch: 8, Hidden: 16, Layers: 2, Precision: precision, Devices: 1, Backend: "go", Warmup: 1}
	raw, _ := json.Marshal(spec)
	var out bytes.Buffer
	if err := WorkerMain(string(raw), strings.NewReader("run 3\nquit\n"), &out); err != nil {
		t.Fatal(err, out.String())
	}
	var events []string
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var ev event
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		events = append(events, ev.Event)
		if ev.Event == "round" && (ev.Steps != 3 || ev.Seconds <= 0) {
			t.Errorf("round event %+v", ev)
		}
	}
	if strings.Join(events, ",") != "first_step,ready,round,done" {
		t.Errorf("events %v", events)
	}
	var errOut bytes.Buffer
	if err := WorkerMain(`{"work":"mlp","batch":0}`, strings.NewReader(""), &errOut); err == nil ||
		!strings.Contains(errOut.String(), `"event":"error"`) {
		t.Errorf("bad spec: err %v, output %q", err, errOut.String())
	}
}
