package trainer

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/data"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// TestBadInputFailsBeforeTraining checks that every kind of bad input is reported before the
// first training step, with an error that names the problem, and that an existing directory
// is left exactly as it was.
func TestBadInputFailsBeforeTraining(t *testing.T) {
	acc := accOn(t, 1)
	base := Config{Epochs: 2, LearningRate: 0.01, Output: &bytes.Buffer{}}

	// A finished run (hidden size 8) to point other runs at.
	runDir := filepath.Join(t.TempDir(), "run")
	{
		cfg := base
		cfg.OutputDir = runDir
		tr, _ := New(acc, model.NewStore(), optimizer.Adam().Done(), toyTask(8))
		if _, err := tr.Fit(toyLoader(t, 16, 0, 4, true), toyLoader(t, 8, 100, 4, false), cfg); err != nil {
			t.Fatal(err)
		}
	}
	// A directory with somebody else's files.
	foreign := t.TempDir()
	if err := os.WriteFile(filepath.Join(foreign, "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A run directory whose config.json is not a goaccel run's.
	otherTool := t.TempDir()
	if err := os.WriteFile(filepath.Join(otherTool, configFile), []byte(`{"model_type": "bert"}`), 0o644); err != nil {
		t.Fatal(err)
	}

	type setup struct {
		hidden int
		eval   bool
		task   func(Task) Task
	}
	cases := []struct {
		name  string
		dir   string // "" : a new directory
		edit  func(*Config)
		setup setup
		want  []string
	}{
		{"unknown schedule", "", func(c *Config) { c.Schedule = "cosine_restarts" }, setup{8, true, nil},
			[]string{`Config.Schedule = "cosine_restarts"`, "valid names: constant, linear, cosine"}},
		{"unknown best metric", "", func(c *Config) { c.BestMetric = "acuracy" }, setup{8, true, nil},
			[]string{`Config.BestMetric = "acuracy" is not a metric of this task`, "its evaluation produces: accuracy, macro_precision, macro_recall, macro_f1, loss"}},
		{"best metric without evaluation data", "", func(c *Config) { c.BestMetric = "accuracy" }, setup{8, false, nil},
			[]string{"no evaluation source", "never be computed"}},
		{"best metric when no eval ever runs", "", func(c *Config) { c.BestMetric = "accuracy"; c.SkipEpochEval = true },
			setup{8, true, nil}, []string{"no evaluation ever runs"}},
		{"best metric of a task that lists none", "", func(c *Config) { c.BestMetric = "f1" },
			setup{8, true, func(t Task) Task { t.MetricNames = nil; return t }}, []string{"Task.MetricNames is empty"}},
		{"bad best mode", "", func(c *Config) { c.BestMetric = "loss"; c.BestMode = "lowest" }, setup{8, true, nil},
			[]string{`Config.BestMode = "lowest"`}},
		{"patience without metric", "", func(c *Config) { c.Patience = 2 }, setup{8, true, nil},
			[]string{"Config.Patience = 2 needs Config.BestMetric"}},
		{"no length", "", func(c *Config) { c.Epochs = 0 }, setup{8, true, nil},
			[]string{"Config.Epochs and Config.MaxSteps are both 0"}},
		{"no learning rate", "", func(c *Config) { c.LearningRate = 0 }, setup{8, true, nil},
			[]string{"Config.LearningRate = 0"}},
		{"no output dir", "-", func(c *Config) { c.OutputDir = "" }, setup{8, true, nil},
			[]string{"Config.OutputDir is empty"}},
		{"accumulation larger than the run", "", func(c *Config) { c.GradientAccumulation = 100 }, setup{8, true, nil},
			[]string{"make no update with Config.GradientAccumulation = 100"}},
		{"directory of other files", foreign, nil, setup{8, true, nil},
			[]string{"is not empty (notes.txt...)", "not a goaccel run directory"}},
		{"other tool's config.json", otherTool, nil, setup{8, true, nil},
			[]string{"is not a goaccel run's config"}},
		{"run with other hyperparameters", runDir, func(c *Config) { c.LearningRate = 0.02; c.Schedule = "linear" },
			setup{8, true, nil}, []string{"holds a run with another configuration", "trainer.learning_rate: config.json has 0.01, this run 0.02",
				`trainer.schedule: config.json has "constant", this run "linear"`}},
		{"checkpoint of another model shape", runDir, nil, setup{16, true, nil},
			[]string{"holds a checkpoint that does not fit this model", `variable "/hidden/dense/weights": checkpoint has (Float32)[8, 8], Store has (Float32)[8, 16]`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := base
			dir := c.dir
			if dir == "" {
				dir = filepath.Join(t.TempDir(), "new")
			}
			cfg.OutputDir = dir
			if c.edit != nil {
				c.edit(&cfg)
			}
			before := snapshot(t, dir)
			steps := 0
			cfg.Callbacks.OnStep = func(StepEvent) error { steps++; return nil }
			task := toyTask(c.setup.hidden)
			if c.setup.task != nil {
				task = c.setup.task(task)
			}
			tr, err := New(acc, model.NewStore(), optimizer.Adam().Done(), task)
			if err != nil {
				t.Fatal(err)
			}
			var eval data.Source
			if c.setup.eval {
				eval = toyLoader(t, 8, 100, 4, false)
			}
			_, err = tr.Fit(toyLoader(t, 16, 0, 4, true), eval, cfg)
			if err == nil {
				t.Fatal("Fit succeeded, want an error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not contain %q:\n%v", w, err)
				}
			}
			if steps != 0 {
				t.Errorf("%d training steps ran before the error", steps)
			}
			if c.dir == "" {
				if _, err := os.Stat(dir); !os.IsNotExist(err) {
					t.Errorf("the new output directory was created although the run failed its checks")
				}
			} else if c.dir != "-" && !sameFiles(before, snapshot(t, dir)) {
				t.Errorf("the existing directory %s was changed", dir)
			}
		})
	}
}
