package trainer

import (
	"bytes"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/accelerator"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// graphRate evaluates the in-graph schedule s (the only implementation) after u updates.
func graphRate(t *testing.T, acc *accelerator.Accelerator, s lrSchedule, u int64) float64 {
	t.Helper()
	out, err := MustNewExec(acc.Backend(), s.Graph()).Exec(float32(u))
	if err != nil {
		t.Fatal(err)
	}
	return float64(out[0].Value().(float32))
}

// TestScheduleFormulas: the in-graph schedule gives the rates worked out by hand.
func TestScheduleFormulas(t *testing.T) {
	acc := accOn(t, 1)
	cases := []struct {
		name   string
		sched  lrSchedule
		u      int64
		want   float64
		reason string
	}{
		{"warm-up first", lrSchedule{"linear", 1, 4, 10}, 0, 0.25, "(0+1)/4"},
		{"warm-up last", lrSchedule{"linear", 1, 4, 10}, 3, 1, "the 4th update reaches the peak"},
		{"linear start", lrSchedule{"linear", 1, 4, 10}, 4, 1, "(10-4)/(10-4)"},
		{"linear middle", lrSchedule{"linear", 1, 4, 10}, 7, 0.5, "(10-7)/6"},
		{"linear last", lrSchedule{"linear", 1, 4, 10}, 9, 1.0 / 6, "(10-9)/6"},
		{"linear after end", lrSchedule{"linear", 1, 4, 10}, 12, 0, "clamped at 0"},
		{"cosine start", lrSchedule{"cosine", 2, 0, 8}, 0, 2, "cos 0 = 1"},
		{"cosine half", lrSchedule{"cosine", 2, 0, 8}, 4, 1, "cos pi/2 = 0"},
		{"cosine after end", lrSchedule{"cosine", 2, 0, 8}, 9, 0, "clamped at pi"},
		{"constant warm-up", lrSchedule{"constant", 3, 3, 0}, 1, 2, "3 x 2/3"},
		{"constant", lrSchedule{"constant", 3, 3, 0}, 50, 3, "peak"},
	}
	for _, c := range cases {
		if got := graphRate(t, acc, c.sched, c.u); math.Abs(got-c.want) > 1e-7 {
			t.Errorf("%s: rate after %d updates = %g, want %g (%s)", c.name, c.u, got, c.want, c.reason)
		}
	}
}

func TestScheduleErrors(t *testing.T) {
	cases := []struct {
		name          string
		sched         string
		lr            float64
		warmup, total int64
		want          string
	}{
		{"unknown name lists the valid ones", "cosine_restarts", 1, 0, 10, `"cosine_restarts" is not a known learning-rate schedule; valid names: constant, linear, cosine`},
		{"zero rate", "linear", 0, 0, 10, "Config.LearningRate = 0"},
		{"negative warm-up", "linear", 1, -1, 10, "Config.WarmupSteps = -1"},
		{"warm-up as long as the run", "cosine", 1, 10, 10, "has 10 update(s) and Config.WarmupSteps = 10"},
	}
	for _, c := range cases {
		_, err := newSchedule(c.sched, c.lr, c.warmup, c.total)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to contain %q", c.name, err, c.want)
		}
	}
	if s, err := newSchedule(" Cosine ", 1, 0, 10); err != nil || s.Name != "cosine" {
		t.Errorf("names are matched without case and spaces: %+v %v", s, err)
	}
}

// TestScheduleGraphMatchesReference evaluates the in-graph schedule for every update count
// and compares it with the tests' own statement of it (refSchedule).
func TestScheduleGraphMatchesReference(t *testing.T) {
	acc := accOn(t, 1)
	for _, name := range scheduleNames {
		s, err := newSchedule(name, 0.3, 5, 40)
		if err != nil {
			t.Fatal(err)
		}
		ref := refSchedule{name: name, peak: 0.3, warmup: 5, total: 40}
		exec, err := NewExec(acc.Backend(), func(u *Node) *Node { return s.Graph()(u) })
		if err != nil {
			t.Fatal(err)
		}
		for u := int64(0); u < 45; u++ {
			out, err := exec.Exec(float32(u))
			if err != nil {
				t.Fatal(err)
			}
			got := float64(out[0].Value().(float32))
			if want := ref.at(u); math.Abs(got-want) > 1e-7 {
				t.Errorf("%s u=%d: graph %.9g, reference %.9g", name, u, got, want)
			}
		}
	}
}

// TestLRTraceMatchesSchedule trains with each schedule and checks that the learning rate of
// every update logged in metrics.jsonl (read from /optimizers/learning_rate) is the formula's.
func TestLRTraceMatchesSchedule(t *testing.T) {
	acc := accOn(t, 1)
	for _, name := range scheduleNames {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			tr, err := New(acc, model.NewStore(), optimizer.Adam().LearningRate(123).Done(), toyTask(4))
			if err != nil {
				t.Fatal(err)
			}
			_, err = tr.Fit(toyLoader(t, 32, 0, 4, true), nil, Config{OutputDir: dir, MaxSteps: 14, LearningRate: 0.02,
				Schedule: name, WarmupSteps: 4, LogEvery: 1, Output: &bytes.Buffer{}, DisableCheckpoints: true})
			if err != nil {
				t.Fatal(err)
			}
			recs := readRecords(t, dir)
			if len(recs) != 14 {
				t.Fatalf("%d records, want 14", len(recs))
			}
			ref := refSchedule{name: name, peak: 0.02, warmup: 4, total: 14}
			for _, r := range recs {
				if want := ref.at(r.Step - 1); math.Abs(r.LR-want) > 1e-9+1e-6*want {
					t.Errorf("step %d: lr %.9g, formula %.9g", r.Step, r.LR, want)
				}
			}
		})
	}
}

// TestFitWarmupRatio: Config.WarmupRatio warms up over ceil(ratio x total updates), as
// Hugging Face's warmup_ratio does: 0.2 of 8 updates is 2, and the learning rates in
// metrics.jsonl follow the linear schedule with 2 warm-up updates. WarmupSteps, when set,
// wins; a ratio outside [0, 1) is refused.
func TestFitWarmupRatio(t *testing.T) {
	acc := accOn(t, 1)
	tr, err := New(acc, model.NewStore(), optimizer.Adam().Done(), toyTask(4))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "run")
	_, err = tr.Fit(toyLoader(t, 32, 0, 8, true), nil, Config{OutputDir: dir, Epochs: 2, LearningRate: 0.01,
		Schedule: "linear", WarmupRatio: 0.2, LogEvery: 1, Quiet: true})
	if err != nil {
		t.Fatal(err)
	}
	sched := refSchedule{name: "linear", peak: 0.01, warmup: 2, total: 8}
	recs := readRecords(t, dir)
	if len(recs) != 8 {
		t.Fatalf("%d records, want 8", len(recs))
	}
	for _, r := range recs {
		if want := sched.at(r.Step - 1); math.Abs(r.LR-want) > 1e-9+1e-6*want {
			t.Errorf("step %d: lr %.9g, want %.9g (2 warm-up updates)", r.Step, r.LR, want)
		}
	}
	for _, ratio := range []float64{-0.1, 1, math.NaN()} {
		tr, _ := New(acc, model.NewStore(), optimizer.Adam().Done(), toyTask(4))
		_, err := tr.Fit(toyLoader(t, 32, 0, 8, true), nil, Config{OutputDir: filepath.Join(t.TempDir(), "r"), Epochs: 1,
			LearningRate: 0.01, WarmupRatio: ratio, Quiet: true})
		if err == nil || !strings.Contains(err.Error(), "Config.WarmupRatio") {
			t.Errorf("WarmupRatio %g: %v", ratio, err)
		}
	}
}
