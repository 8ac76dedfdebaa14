package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/goaccel/goaccel/accelerator"
	"github.com/goaccel/goaccel/checkpoint"
	"github.com/goaccel/goaccel/internal/fsutil"
	"github.com/goaccel/goaccel/models/bert"
	"github.com/goaccel/goaccel/trainer"
)

// The hand-written loop's run directory uses the trainer's layout, so that `goaccel plot`
// and the tests read both alike:
//
//	config.json        this program's flags and plan
//	metrics.jsonl      trainer.Record lines (trainer.MetricsWriter)
//	checkpoints/       the training state (checkpoint.Manager, --save_total_limit kept)
//	best/              the best model, a Hugging Face folder (bert.SavePretrained)
//	curves.png/.svg    trainer.Plot
//	interrupted.json   while a signal-stopped run waits to be resumed
const (
	program         = "examples/bert_classify"
	interruptedFile = "interrupted.json"
	defaultRunsDir  = "runs"
)

// runConfig is config.json of a hand-written-loop run.
type runConfig struct {
	Program      string  `json:"program"`
	Created      string  `json:"created"`
	Flags        options `json:"flags"`
	LearningRate float64 `json:"learning_rate"`
	Schedule     string  `json:"schedule"`
	TotalSteps   int64   `json:"total_steps"`
	// Accelerator is what accelerator.New found (backend, plugin, devices, precision), and
	// Plan its one-line summary; GlobalBatch = per-device batch x devices x processes.
	Accelerator  accelerator.Info `json:"accelerator"`
	Plan         string           `json:"plan"`
	GlobalBatch  int              `json:"global_batch"`
	BatchesPerEp int              `json:"batches_per_epoch"`
	Model        any              `json:"model"`
	Versions     trainer.Versions `json:"versions"`
}

// loopState is the loop's part of a checkpoint: what it needs to continue exactly where the
// checkpoint was taken.
type loopState struct {
	Result         result    `json:"result"`
	EpochLosses    []float64 `json:"epoch_losses"` // batch losses of the current epoch
	Window         []float64 `json:"window"`       // batch losses since the last training record
	WindowExamples int       `json:"window_examples"`
	Records        int       `json:"records"` // metrics.jsonl lines up to the checkpoint
	BadEpochs      int       `json:"bad_epochs"`
	BestStep       int64     `json:"best_step"`
	Stopped        string    `json:"stopped,omitempty"`
	Elapsed        float64   `json:"elapsed_s"`
}

// runDir is the run directory of the hand-written loop.
type runDir struct {
	dir     string
	main    bool
	acc     *accelerator.Accelerator
	job     *accelerator.Job
	o       options
	plan    stepPlan
	metrics *trainer.MetricsWriter
	ckpt    *checkpoint.Manager
	state   loopState
	micro   int64 // batches run in this session (sessions start at a step boundary)
	savedAt int64 // step of the last checkpoint
	start   time.Time
	logAt   time.Time
}

// runDirectory resolves --output_dir. Given, it is used as is (Fit and openRun check what it
// holds). Not given: the newest interrupted run under runs/ made with the same flags is
// resumed, else a new runs/bert_classify-<time> is made. The choice is printed.
func (o options) runDirectory(acc *accelerator.Accelerator) (string, error) {
	if o.OutputDir != "" {
		acc.Printf("run directory: %s", o.OutputDir)
		return o.OutputDir, nil
	}
	prefix := "bert_classify-"
	if o.Fit {
		prefix = "bert_classify-fit-"
	}
	markers, _ := filepath.Glob(filepath.Join(defaultRunsDir, prefix+"2*", interruptedFile))
	slices.Sort(markers)
	for i := len(markers) - 1; i >= 0; i-- {
		var m interruptMarker
		raw, err := os.ReadFile(markers[i])
		if err != nil || json.Unmarshal(raw, &m) != nil {
			continue
		}
		if len(flagDifferences(m.Flags, o)) == 0 {
			dir := filepath.Dir(markers[i])
			acc.Printf("run directory: %s (the interrupted run of this command, stopped by %s at step %d; "+
				"resuming it; give --output_dir for a new run)", dir, m.Signal, m.Step)
			return dir, nil
		}
	}
	dir := filepath.Join(defaultRunsDir, prefix+time.Now().Format("20060102-150405"))
	acc.Printf("run directory: %s (after a crash, resume with --output_dir %s)", dir, dir)
	return dir, nil
}

// openRun creates the run directory, or opens the interrupted run it holds and loads its
// latest checkpoint (weights, optimizer state, random state, data position).
func openRun(acc *accelerator.Accelerator, o options, lr float64, plan stepPlan, clf *bert.Classifier,
	job *accelerator.Job) (*runDir, error) {
	r := &runDir{dir: o.OutputDir, main: acc.IsMainProcess(), acc: acc, job: job, o: o, plan: plan,
		start: time.Now(), logAt: time.Now(), savedAt: -1}
	r.state.Result.OutputDir = r.dir
	cfg := runConfig{Program: program, Created: time.Now().UTC().Format(time.RFC3339), Flags: o, LearningRate: lr,
		Schedule: plan.schedule.String(), TotalSteps: plan.total, Accelerator: acc.Info(), Plan: acc.Plan(),
		GlobalBatch: cmp.Or(o.GlobalBatchSize, o.BatchSize*acc.NumReplicas()), BatchesPerEp: plan.batchesPerEpoch,
		Model: clf.Config, Versions: trainer.BuildVersions()}
	saved, err := readRunConfig(r.dir)
	if err != nil {
		return nil, err
	}
	// Every process has read the directory before the main process writes to it.
	if err := acc.WaitForEveryone(); err != nil {
		return nil, err
	}
	if saved != nil {
		if diff := flagDifferences(saved.Flags, o); len(diff) > 0 {
			return nil, fmt.Errorf("--output_dir %s holds a run made with other flags (nothing was changed; use "+
				"another --output_dir, or the same flags to resume it):\n  - %s", r.dir, strings.Join(diff, "\n  - "))
		}
		if saved.TotalSteps != plan.total && plan.schedule.Name != trainer.ScheduleConstant {
			return nil, fmt.Errorf("--output_dir %s: the run has %d steps and this command %d, and the %q "+
				"schedule depends on it; give the same --epochs and --max_steps", r.dir, saved.TotalSteps, plan.total,
				plan.schedule.Name)
		}
		cfg.Created = saved.Created
	}
	logf := func(format string, args ...any) { acc.Printf(format, args...) }
	r.ckpt, err = checkpoint.NewManager(filepath.Join(r.dir, trainer.CheckpointsDir),
		checkpoint.Options{KeepLast: o.SaveTotalLimit, Processes: acc, Logf: logf})
	if err != nil {
		return nil, fmt.Errorf("--output_dir: %w", err)
	}
	if saved != nil {
		st := &checkpoint.State{Store: job.Store(), Metrics: &r.state}
		path, err := r.ckpt.LoadLatest(st)
		switch {
		case errors.Is(err, checkpoint.ErrNoCheckpoint):
			r.state = loopState{Result: result{OutputDir: r.dir}}
			acc.Printf("%s holds this run but no checkpoint yet: starting it from the beginning", r.dir)
		case err != nil:
			return nil, fmt.Errorf("--output_dir %s: its checkpoint does not fit this model or is unreadable "+
				"(nothing was changed): %w", r.dir, err)
		default:
			if err := job.Source().Restore(st.Progress.Loader); err != nil {
				return nil, fmt.Errorf("restoring the data position of %s: %w", path, err)
			}
			r.savedAt = st.Progress.Step
			pos := st.Progress.Loader
			acc.Printf("resuming %s from %s: step %d of %d, epoch %d after batch %d of %d", r.dir, path,
				st.Progress.Step, plan.total, pos.Epoch+1, pos.BatchesConsumed, plan.batchesPerEpoch)
		}
	}
	if !r.main {
		return r, nil
	}
	if err := os.MkdirAll(r.dir, 0o755); err != nil {
		return nil, fmt.Errorf("--output_dir: %w", err)
	}
	raw, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := fsutil.WriteFileAtomic(filepath.Join(r.dir, trainer.ConfigFile), append(raw, '\n')); err != nil {
		return nil, err
	}
	r.metrics, err = trainer.OpenMetrics(filepath.Join(r.dir, trainer.MetricsFile), r.state.Records, logf)
	return r, err
}

// readRunConfig reads config.json of a run directory: nil for a new or empty directory, an
// error for a directory that holds something else.
func readRunConfig(dir string) (*runConfig, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) || err == nil && len(entries) == 0 {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("--output_dir %s: %w", dir, err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, trainer.ConfigFile))
	var cfg runConfig
	if err != nil || json.Unmarshal(raw, &cfg) != nil || cfg.Program != program {
		return nil, fmt.Errorf("--output_dir %s already holds files that are not a run of this program's "+
			"hand-written loop; choose a new folder (nothing was overwritten)", dir)
	}
	return &cfg, nil
}

// flagNames maps options' fields to their flags.
var flagNames = map[string]string{
	"DataDir": "--data_dir", "ModelDir": "--model_dir", "OutputDir": "--output_dir", "MixedPrecision": "--mixed_precision",
	"Backend": "--backend", "Fit": "--fit", "Schedule": "--lr_scheduler_type", "WarmupSteps": "--warmup_steps",
	"SaveEvery": "--save_steps", "Epochs": "--epochs", "BatchSize": "--batch_size", "GlobalBatchSize": "--global_batch_size", "MaxLen": "--max_len",
	"Devices": "--devices", "Workers": "--workers", "MaxSteps": "--max_steps", "GradAccum": "--gradient_accumulation_steps",
	"Patience": "--patience", "SaveTotalLimit": "--save_total_limit", "LR": "--lr", "TestSize": "--test_size",
	"Dropout": "--dropout", "WarmupRatio": "--warmup_ratio", "WeightDecay": "--weight_decay",
	"MaxGradNorm": "--max_grad_norm", "Seed": "--seed",
}

// mayDiffer are the flags a resumed run may change: where it is, how fast data is read, and
// how long it runs (checked against the schedule separately).
var mayDiffer = map[string]bool{"OutputDir": true, "Workers": true, "Epochs": true, "MaxSteps": true,
	"SaveEvery": true, "SaveTotalLimit": true, "Patience": true}

// flagDifferences lists the flags in which a and b differ, except those a resume may change.
func flagDifferences(a, b options) []string {
	var out []string
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	for i := range va.NumField() {
		f := va.Type().Field(i)
		if !f.IsExported() || mayDiffer[f.Name] {
			continue
		}
		x, y := va.Field(i).Interface(), vb.Field(i).Interface()
		if !reflect.DeepEqual(x, y) {
			out = append(out, fmt.Sprintf("%s: the run has %v, this command %v", flagNames[f.Name], x, y))
		}
	}
	return out
}

// batchDone records a finished batch.
func (r *runDir) batchDone(job *accelerator.Job, loss float64, examples int) error {
	r.micro++
	s := &r.state
	s.Result.StepLoss = append(s.Result.StepLoss, loss)
	s.EpochLosses = append(s.EpochLosses, loss)
	s.Window = append(s.Window, loss)
	s.WindowExamples += examples
	if !r.atStep() {
		return nil
	}
	s.Result.Steps++
	if s.Result.Steps%10 == 0 || s.Result.Steps == 1 || r.done() { // the loss curve starts at step 1
		return r.logTrain(job)
	}
	return nil
}

// atStep reports whether the last batch completed an optimizer step.
func (r *runDir) atStep() bool { return r.micro%int64(r.o.GradAccum) == 0 }

// done reports whether the run has reached its length (or stopped early).
func (r *runDir) done() bool { return r.state.Result.Steps >= r.plan.total || r.state.Stopped != "" }

// epochEnded reports whether the data source has just finished an epoch.
func (r *runDir) epochEnded() bool { return r.job.Source().State().BatchesConsumed == 0 }

// logTrain appends a training record: mean loss since the last one, the learning rate of the
// last step, throughput.
func (r *runDir) logTrain(job *accelerator.Job) error {
	s := &r.state
	lr := math.NaN()
	if v := job.Store().GetVariable("/optimizers/learning_rate"); v != nil && v.HasValue() {
		if f, ok := v.MustValue().Value().(float32); ok {
			lr = float64(f)
		}
	}
	rate := float64(s.WindowExamples) / time.Since(r.logAt).Seconds()
	rec := trainer.Record{Kind: trainer.KindTrain, Step: s.Result.Steps, Epoch: r.epochProgress(), Loss: mean(s.Window),
		LR: lr, GradNorm: math.NaN(), ExamplesPerSec: rate}
	s.Window, s.WindowExamples, r.logAt = nil, 0, time.Now()
	return r.write(rec)
}

// epochProgress is the training progress in epochs (1.5: the middle of the second epoch).
func (r *runDir) epochProgress() float64 {
	pos := r.job.Source().State()
	return float64(pos.Epoch) + float64(pos.BatchesConsumed)/float64(r.plan.batchesPerEpoch)
}

func (r *runDir) write(rec trainer.Record) error {
	if r.metrics == nil {
		return nil
	}
	rec.Elapsed = r.state.Elapsed + time.Since(r.start).Seconds()
	if err := r.metrics.Write(rec); err != nil {
		return err
	}
	r.state.Records = r.metrics.Len()
	return nil
}

// endEpoch writes the evaluation record of an epoch and starts the next one's losses.
func (r *runDir) endEpoch(epoch int, accuracy float64) error {
	if len(r.state.Window) > 0 {
		if err := r.logTrain(r.job); err != nil {
			return err
		}
	}
	r.state.EpochLosses = nil
	return r.write(trainer.Record{Kind: trainer.KindEval, Step: r.state.Result.Steps, Epoch: float64(epoch),
		Loss: math.NaN(), LR: math.NaN(), GradNorm: math.NaN(), ExamplesPerSec: math.NaN(),
		Eval: map[string]float64{"accuracy": accuracy}})
}

// maybeSave writes a checkpoint every --save_steps steps.
func (r *runDir) maybeSave() error {
	if r.o.SaveEvery > 0 && r.state.Result.Steps%r.o.SaveEvery == 0 {
		return r.checkpoint()
	}
	return nil
}

// checkpoint saves the training state (main process; the others wait).
func (r *runDir) checkpoint() error {
	if r.savedAt == r.state.Result.Steps {
		return nil
	}
	if r.metrics != nil {
		if err := r.metrics.Sync(); err != nil {
			return err
		}
	}
	st := r.state
	st.Elapsed += time.Since(r.start).Seconds()
	pos := r.job.Source().State()
	_, err := r.ckpt.Save(&checkpoint.State{Store: r.job.Store(), Metrics: &st,
		Progress: checkpoint.Progress{Epoch: pos.Epoch, Step: r.state.Result.Steps, Loader: pos, Seed: r.acc.Seed(),
			Devices: r.acc.NumDevices(), Processes: r.acc.NumProcesses()}})
	if err != nil {
		return fmt.Errorf("saving the checkpoint at step %d: %w", r.state.Result.Steps, err)
	}
	r.savedAt = r.state.Result.Steps
	return nil
}

// saveBest writes the best model as a Hugging Face folder (main process; the others wait).
func (r *runDir) saveBest(clf *bert.Classifier, tok *bert.Tokenizer) error {
	if r.main {
		err := fsutil.ReplaceDir(filepath.Join(r.dir, trainer.BestDir), func(dir string) error {
			return bert.SavePretrained(dir, clf, tok)
		})
		if err != nil {
			return fmt.Errorf("saving the best model: %w", err)
		}
	}
	return r.acc.WaitForEveryone()
}

// interrupted saves the state after a signal, draws the curves, and says how to resume.
func (r *runDir) interrupted(sig os.Signal) (*result, error) {
	if err := r.checkpoint(); err != nil {
		return nil, err
	}
	name := trainer.SignalName(sig)
	if err := writeInterrupted(r.acc, r.o, name, r.state.Result.Steps); err != nil {
		return nil, err
	}
	if r.main && r.state.Records > 0 {
		if _, err := trainer.Plot(r.dir); err != nil {
			r.acc.Printf("warning: drawing the curves: %v", err)
		}
	}
	r.acc.Printf("%s: stopped after step %d of %d; checkpoint saved in %s", name, r.state.Result.Steps,
		r.plan.total, filepath.Join(r.dir, trainer.CheckpointsDir))
	r.acc.Printf("to resume: %s", resumeCommand(r.dir))
	res := r.state.Result
	res.Interrupted, res.Signal = true, name
	return &res, nil
}

// doneWords says in plain words how the run ended: "done after 3 epochs".
func (r *runDir) doneWords(plan stepPlan) string {
	switch {
	case r.state.Stopped != "":
		return r.state.Stopped
	case r.o.MaxSteps > 0:
		return "done after " + trainer.Count(r.state.Result.Steps, "step")
	}
	return "done after " + trainer.Count(int64(plan.epochs), "epoch")
}

// finish draws the curves and removes the interrupted marker of a resumed run.
func (r *runDir) finish() error {
	if err := r.checkpoint(); err != nil {
		return err
	}
	if err := removeInterrupted(r.acc, r.dir); err != nil {
		return err
	}
	if r.main {
		if _, err := trainer.Plot(r.dir); err != nil {
			return err
		}
	}
	return nil
}

func (r *runDir) close() {
	if r.metrics != nil {
		_ = r.metrics.Close()
	}
}

// interruptMarker is interrupted.json: which signal stopped the run, where, and the flags
// that resume it.
type interruptMarker struct {
	Signal  string  `json:"signal"`
	Step    int64   `json:"step"`
	Command string  `json:"command"`
	Flags   options `json:"flags"`
}

func writeInterrupted(acc *accelerator.Accelerator, o options, signal string, step int64) error {
	if !acc.IsMainProcess() {
		return nil
	}
	raw, err := json.MarshalIndent(interruptMarker{Signal: signal, Step: step, Command: resumeCommand(o.OutputDir),
		Flags: o}, "", "  ")
	if err != nil {
		return err
	}
	return fsutil.WriteFileAtomic(filepath.Join(o.OutputDir, interruptedFile), append(raw, '\n'))
}

func removeInterrupted(acc *accelerator.Accelerator, dir string) error {
	if !acc.IsMainProcess() {
		return nil
	}
	if err := os.Remove(filepath.Join(dir, interruptedFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// resumeCommand is the command line that resumes the run in dir: this one, with
// --output_dir dir. Under `go run` it names the package to run, relative to the working
// directory.
func resumeCommand(dir string) string {
	args := []string{os.Args[0]}
	if strings.Contains(os.Args[0], "go-build") {
		args = []string{"go", "run", goRunPackage()}
	}
	hasDir := false
	for i := 1; i < len(os.Args); i++ {
		a := os.Args[i]
		norm := strings.ReplaceAll(a, "-", "_")
		if norm == "__output_dir" && i+1 < len(os.Args) || strings.HasPrefix(norm, "__output_dir=") {
			hasDir = true
		}
		args = append(args, a)
	}
	if !hasDir {
		args = append(args, "--output_dir", dir)
	}
	for i, a := range args {
		args[i] = shellQuote(a)
	}
	return strings.Join(args, " ")
}

// goRunPackage is this program's package path relative to the working directory
// ("./examples/bert_classify" from the repository root).
func goRunPackage() string {
	wd, err := os.Getwd()
	if err != nil {
		return "./examples/bert_classify"
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			rel, err := filepath.Rel(wd, filepath.Join(dir, "examples", "bert_classify"))
			if err != nil {
				break
			}
			if rel == "." || strings.HasPrefix(rel, "..") {
				return rel
			}
			return "./" + rel
		}
		if filepath.Dir(dir) == dir {
			break
		}
	}
	return "./examples/bert_classify"
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
