package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/goaccel/goaccel/accelerator"
	"github.com/goaccel/goaccel/models/bert"
	"github.com/goaccel/goaccel/trainer"
)

// runDir is the run directory of the hand-written loop, in the trainer's layout:
// config.json, metrics.jsonl (trainer.Record lines), best/ and curves.png/svg.
type runDir struct {
	dir     string
	metrics *os.File
	start   time.Time
	steps   int64
	epoch   float64
	stepsPE int
	main    bool
}

// newRunDir creates the run directory (a new one: an existing non-empty folder is refused,
// never overwritten) and writes config.json.
func newRunDir(acc *accelerator.Accelerator, o options, lr float64, clf *bert.Classifier, job *accelerator.Job) (*runDir, error) {
	dir := o.OutputDir
	if dir == "" {
		dir = filepath.Join("runs", "bert_classify-"+time.Now().Format("20060102-150405"))
	}
	r := &runDir{dir: dir, start: time.Now(), stepsPE: job.Source().BatchesPerEpoch(), main: acc.IsMainProcess()}
	if !r.main {
		return r, nil
	}
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return nil, fmt.Errorf("--output_dir %s already holds files; choose a new folder (nothing was overwritten)", dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("--output_dir: %w", err)
	}
	info := acc.Info()
	cfg := map[string]any{
		"program":          "examples/bert_classify",
		"created":          time.Now().Format(time.RFC3339),
		"flags":            o,
		"learning_rate":    lr,
		"backend":          info.Backend,
		"plugin":           info.Plugin.Path,
		"devices":          acc.NumDevices(),
		"processes":        acc.NumProcesses(),
		"plan":             acc.Plan(),
		"per_device_batch": o.BatchSize,
		"global_batch":     o.BatchSize * acc.NumReplicas(),
		"steps_per_epoch":  r.stepsPE,
		"model":            clf.Config,
		"versions":         trainer.BuildVersions(),
	}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, trainer.ConfigFile), append(b, '\n'), 0o644); err != nil {
		return nil, err
	}
	r.metrics, err = os.OpenFile(filepath.Join(dir, trainer.MetricsFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	return r, err
}

func (r *runDir) write(rec trainer.Record) error {
	if !r.main {
		return nil
	}
	rec.Time = time.Now().Format(time.RFC3339Nano)
	rec.Elapsed = time.Since(r.start).Seconds()
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	_, err = r.metrics.Write(append(b, '\n'))
	return err
}

// logTrain appends a training record: mean loss of the last steps, the learning rate of the
// last update, throughput.
func (r *runDir) logTrain(job *accelerator.Job, epoch int, loss, examplesPerS float64) error {
	step, err := job.GlobalStep()
	if err != nil {
		return err
	}
	lr := math.NaN()
	if v := job.Store().GetVariable("/optimizers/learning_rate"); v != nil && v.HasValue() {
		if f, ok := v.MustValue().Value().(float32); ok {
			lr = float64(f)
		}
	}
	done := float64(epoch-1) + float64(step-r.steps)/float64(max(r.stepsPE, 1))
	return r.write(trainer.Record{Kind: "train", Step: step, Epoch: math.Min(done, float64(epoch)), Loss: loss, LR: lr,
		GradNorm: math.NaN(), ExamplesPerSec: examplesPerS})
}

// logEval appends an evaluation record at the end of an epoch.
func (r *runDir) logEval(job *accelerator.Job, epoch int, accuracy float64) error {
	var err error
	if r.steps, err = job.GlobalStep(); err != nil {
		return err
	}
	return r.write(trainer.Record{Kind: "eval", Step: r.steps, Epoch: float64(epoch), Loss: math.NaN(), LR: math.NaN(),
		GradNorm: math.NaN(), ExamplesPerSec: math.NaN(), Eval: map[string]float64{"accuracy": accuracy}})
}
