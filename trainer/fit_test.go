package trainer

import (
	"bytes"
	"encoding/xml"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// fitToy trains the toy MLP at global batch 8 on n devices with every feature on: a linear
// schedule with warm-up, clipping, accumulation over 2 batches, evaluation every epoch and
// every 4 updates, best model by accuracy.
func fitToy(t *testing.T, devices int, dir string) (*Result, *model.Store, string) {
	t.Helper()
	acc := accOn(t, devices)
	store := model.NewStore()
	tr, err := New(acc, store, optimizer.Adam().Done(), toyTask(16))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	res, err := tr.Fit(toyLoader(t, 48, 0, 8/devices, true), toyLoader(t, 21, 1000, 8/devices, false), Config{
		OutputDir: dir, Epochs: 4, LearningRate: 0.05, Schedule: "linear", WarmupSteps: 3, ClipGradNorm: 1,
		GradientAccumulation: 2, EvalEvery: 4, BestMetric: "accuracy", LogEvery: 1, Output: &out,
	})
	if err != nil {
		t.Fatalf("%d device(s): %v\noutput:\n%s", devices, err, out.String())
	}
	return res, store, out.String()
}

func TestFitEndToEnd(t *testing.T) {
	var ref []Record
	var refWeights map[string][]float32
	for _, devices := range []int{1, 4} {
		dir := filepath.Join(t.TempDir(), "run")
		res, store, out := fitToy(t, devices, dir)
		// 48 examples / global batch 8 = 6 batches per epoch, 3 updates per epoch, 12 in all.
		if res.Steps != 12 || res.StopReason != "epochs" {
			t.Errorf("%d device(s): %d steps, stop %q; want 12 and \"epochs\"", devices, res.Steps, res.StopReason)
		}
		recs := readRecords(t, dir)
		var train, evals []Record
		for _, r := range recs {
			if r.Kind == KindTrain {
				train = append(train, r)
			} else {
				evals = append(evals, r)
			}
		}
		if len(train) != 12 {
			t.Fatalf("%d device(s): %d training records, want one per update (12)", devices, len(train))
		}
		sched := refSchedule{name: "linear", peak: 0.05, warmup: 3, total: 12}
		for i, r := range train {
			if r.Step != int64(i+1) {
				t.Errorf("training record %d has step %d", i, r.Step)
			}
			if want := sched.at(r.Step - 1); math.Abs(r.LR-want) > 1e-7+1e-6*want {
				t.Errorf("step %d: lr %.9g in metrics.jsonl, schedule formula %.9g", r.Step, r.LR, want)
			}
			if math.IsNaN(r.GradNorm) || r.GradNorm <= 0 {
				t.Errorf("step %d: grad_norm %g, want the pre-clipping norm", r.Step, r.GradNorm)
			}
			if math.IsNaN(r.ExamplesPerSec) || r.ExamplesPerSec <= 0 {
				t.Errorf("step %d: examples_per_s %g", r.Step, r.ExamplesPerSec)
			}
		}
		// Evaluations at steps 4, 8 (EvalEvery) and at the epoch ends 3, 6, 9, 12 (12 once).
		var evalSteps []int64
		for _, r := range evals {
			evalSteps = append(evalSteps, r.Step)
			if _, ok := r.Eval["accuracy"]; !ok {
				t.Errorf("eval record at step %d has no accuracy: %v", r.Step, r.Eval)
			}
		}
		if want := []int64{3, 4, 6, 8, 9, 12}; !slices.Equal(evalSteps, want) {
			t.Errorf("%d device(s): evaluations at steps %v, want %v", devices, evalSteps, want)
		}
		if first, last := train[0].Loss, train[len(train)-1].Loss; !(last < first) {
			t.Errorf("%d device(s): the model did not learn: loss %.4f -> %.4f", devices, first, last)
		}
		if acc := res.LastEval["accuracy"]; acc < 0.5 {
			t.Errorf("%d device(s): final accuracy %.3f, want > 0.5 on the toy problem", devices, acc)
		}
		if res.BestCheckpoint == "" || res.LastCheckpoint == "" {
			t.Errorf("checkpoints: best %q last %q", res.BestCheckpoint, res.LastCheckpoint)
		}
		checkConfigJSON(t, dir, devices)
		checkCurves(t, res.Curves)
		if strings.Contains(out, "\x1b") || strings.Contains(out, "\r") {
			t.Errorf("output to a buffer has terminal control characters:\n%q", out)
		}
		if !strings.Contains(out, "eval step 12") || !strings.Contains(out, "epoch 4 done") {
			t.Errorf("output misses the eval or epoch lines:\n%s", out)
		}
		// The same global batch on 1 and 4 devices makes the same updates: the trainer keeps
		// the Accelerator's equivalence (float32, reduction order differs: 2e-5).
		w := weights(t, store)
		if devices == 1 {
			ref, refWeights = train, w
			continue
		}
		for i := range train {
			if d := math.Abs(train[i].Loss - ref[i].Loss); d > 2e-5 {
				t.Errorf("step %d: loss %.7f on 4 devices, %.7f on 1", train[i].Step, train[i].Loss, ref[i].Loss)
			}
		}
		if d, where := maxAbsDiff(w, refWeights); d > 2e-5 {
			t.Errorf("final weights on 4 devices differ from 1 device by %g at %s", d, where)
		}
	}
}

func checkConfigJSON(t *testing.T, dir string, devices int) {
	t.Helper()
	info, raw := readRunInfo(t, dir)
	if info.Devices != devices || info.Backend != "xla" || info.GlobalBatch != 8 || info.PerDeviceBatch != 8/devices ||
		info.Trainer.Schedule != "linear" || info.Trainer.GradientAccumulation != 2 || info.TotalSteps != 12 ||
		info.Parameters != 8*16+16+16*3+3 || info.Versions.Go == "" || info.Versions.GoMLX == "" {
		t.Errorf("config.json does not describe the run:\n%s", raw)
	}
}

// checkCurves checks that the PNG decodes and the SVG is an XML <svg> document.
func checkCurves(t *testing.T, files []string) {
	t.Helper()
	var sawPNG, sawSVG bool
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		switch filepath.Ext(f) {
		case ".png":
			cfg, err := png.DecodeConfig(bytes.NewReader(raw))
			if err != nil || cfg.Width < 400 || cfg.Height < 400 {
				t.Errorf("%s: not a usable PNG (%v, %dx%d)", f, err, cfg.Width, cfg.Height)
			}
			if _, err := png.Decode(bytes.NewReader(raw)); err != nil {
				t.Errorf("%s: %v", f, err)
			}
			sawPNG = true
		case ".svg":
			dec := xml.NewDecoder(bytes.NewReader(raw))
			root := ""
			for {
				tok, err := dec.Token()
				if err != nil {
					if root == "" {
						t.Errorf("%s: not XML: %v", f, err)
					}
					break
				}
				if se, ok := tok.(xml.StartElement); ok && root == "" {
					root = se.Name.Local
				}
			}
			if root != "svg" || !bytes.Contains(raw, []byte("step (optimizer updates)")) {
				t.Errorf("%s: root element %q, or the axis label is missing", f, root)
			}
			sawSVG = true
		}
	}
	if !sawPNG || !sawSVG {
		t.Errorf("curves %v: want a PNG and an SVG", files)
	}
}

// refSchedule is the tests' own statement of the schedule formulas (see Config.Schedule).
type refSchedule struct {
	name                 string
	peak                 float64
	warmup, total, start int64
}

func (s refSchedule) at(u int64) float64 {
	if u < s.warmup {
		return s.peak * float64(u+1) / float64(s.warmup)
	}
	progress := float64(u-s.warmup) / float64(s.total-s.warmup)
	switch s.name {
	case "linear":
		return s.peak * math.Max(0, 1-progress)
	case "cosine":
		return s.peak * (1 + math.Cos(math.Pi*math.Min(progress, 1))) / 2
	}
	return s.peak
}
