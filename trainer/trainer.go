package trainer

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/goaccel/goaccel/accelerator"
	"github.com/goaccel/goaccel/checkpoint"
	"github.com/goaccel/goaccel/data"
	"github.com/goaccel/goaccel/trainer/progress"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// Trainer runs the training loop of one model on an Accelerator: the Fit of Keras, the
// Trainer of Hugging Face. It is a convenience on top of accelerator.Job, which a program
// can always drive by hand instead.
type Trainer struct {
	acc   *accelerator.Accelerator
	model model.StoreProvider
	opt   optimizer.Interface
	task  Task
	job   *accelerator.Job
	used  bool
}

// New binds an Accelerator, a model (anything with a model.Store), an optimizer and a task.
// Config.LearningRate, with its schedule, is the rate: build the optimizer without one
// (optim.Adam(optim.AdamConfig{})); a rate it was built with is replaced.
func New(acc *accelerator.Accelerator, m model.StoreProvider, opt optimizer.Interface, task Task) (*Trainer, error) {
	switch {
	case acc == nil:
		return nil, errors.New("trainer: New: the Accelerator is nil (accelerator.New creates one)")
	case m == nil || m.Store() == nil:
		return nil, errors.New("trainer: New: the model has no model.Store")
	case opt == nil:
		return nil, errors.New("trainer: New: the optimizer is nil (e.g. optim.Adam(optim.AdamConfig{}))")
	case task.Loss == nil:
		return nil, errors.New("trainer: New: Task.Loss is nil: Fit needs the training loss of a batch")
	}
	return &Trainer{acc: acc, model: m, opt: opt, task: task}, nil
}

// Job returns the prepared job once Fit has started (nil before): callbacks can use it to
// reach the Store or to run their own evaluations.
func (t *Trainer) Job() *accelerator.Job { return t.job }

// Result summarises a finished Fit.
type Result struct {
	// RunDir is the run directory.
	RunDir string
	// Steps is the number of optimizer updates done in total (over all sessions of the run).
	Steps int64
	// Epoch is the training progress in epochs at the end.
	Epoch float64
	// Resumed is the checkpoint this session continued from ("" for a new run).
	Resumed string
	// StopReason says why the run ended: "epochs", "max steps", "early stopping: ...",
	// "callback", or "already complete" when a finished run was given again.
	StopReason string
	// LastEval holds the metrics of the last evaluation (nil if none ran).
	LastEval map[string]float64
	// BestMetric, Best and BestStep describe the best model (Best is NaN without
	// Config.BestMetric); BestCheckpoint is its checkpoint directory.
	BestMetric     string
	Best           float64
	BestStep       int64
	BestCheckpoint string
	// LastCheckpoint is the last checkpoint written ("" with DisableCheckpoints).
	LastCheckpoint string
	// Curves are the picture files drawn at the end (PNG and SVG).
	Curves []string
	// Interrupted reports that Config.Interrupt stopped the run (Signal is the signal): the
	// last checkpoint holds the step where it stopped, and Fit on the same OutputDir resumes.
	Interrupted bool
	Signal      os.Signal
}

// runState is the trainer's part of a checkpoint (checkpoint.State.Metrics): what the loop
// needs to continue exactly where the checkpoint was taken.
type runState struct {
	// Records is the number of metrics.jsonl lines written up to the checkpoint.
	Records int `json:"records"`
	// LossSum and LossCount accumulate the batch losses since the last training record.
	LossSum   float64 `json:"loss_sum"`
	LossCount int     `json:"loss_count"`
	// EpochLossSum and EpochLossCount accumulate the batch losses of the current epoch.
	EpochLossSum   float64 `json:"epoch_loss_sum"`
	EpochLossCount int     `json:"epoch_loss_count"`
	// Best is the best value of Config.BestMetric (nil before the first evaluation).
	Best     *float64 `json:"best,omitempty"`
	BestStep int64    `json:"best_step"`
	BadEvals int      `json:"bad_evals"`
	// LastEvalStep is the step of the last evaluation (-1: none).
	LastEvalStep int64 `json:"last_eval_step"`
	// Elapsed is the wall time of the run in seconds at the checkpoint.
	Elapsed float64 `json:"elapsed_s"`
	// Stopped is the reason the run ended early ("" while it may go on).
	Stopped string `json:"stopped,omitempty"`
}

// fit is the state of one Fit call.
type fit struct {
	t     *Trainer
	cfg   Config
	train data.Source
	eval  data.Source
	job   *accelerator.Job
	// trainStep and evalStep are the task's loss and evaluation compiled for the job.
	trainStep *accelerator.TrainStep
	evalStep  *accelerator.EvalStep
	sched     lrSchedule
	info      *runFile
	rs        runState
	main      bool

	dir    string
	log    *metricsWriter
	out    io.Writer // the main process's Config.Output; io.Discard elsewhere
	prog   Display
	last   *checkpoint.Manager
	best   *checkpoint.Manager
	notice func(format string, args ...any)

	waits          dataWaits   // the training steps' waits for data (datawait.go)
	badTrain       badExamples // the examples the sources left out as broken (badexamples.go)
	badEval        badExamples
	ranksThrough   int   // the updates of the last ranks record (ranks.go)
	step           int64 // optimizer updates done
	micro          int64 // batches run by this job (the job was created at an update boundary)
	spe            int   // steps (batches) per epoch
	start          time.Time
	elapsed0       float64
	logAt          time.Time // time of the last training record
	examplesAtLog  int       // real examples since the last training record
	savedAt        int64     // step of the last "last" checkpoint (-1: none)
	stop           string
	lastEval       map[string]float64
	interrupted    os.Signal // the signal that stopped this session (nil: none)
	lastCheckpoint string
	bestCheckpoint string
}

// Fit trains on train and evaluates on eval (nil: no evaluation) as cfg says, writing the
// run directory cfg.OutputDir:
//
//	config.json      hyperparameters, backend, devices, versions
//	metrics.jsonl    one Record per training log step and per evaluation
//	checkpoints/     the last checkpoints (every SaveEvery updates and at each epoch end)
//	best/            the best model by Config.BestMetric
//	curves.png/.svg  loss, evaluation metrics and learning rate against step
//
// If cfg.OutputDir already holds a run, Fit resumes it: the hyperparameters must match
// config.json (Epochs and MaxSteps may change with a constant schedule), the latest intact
// checkpoint is loaded (weights, optimizer state, random state, loader position) and training
// continues with the batches an uninterrupted run would have seen next; metrics.jsonl keeps
// the records written up to that checkpoint and goes on from there. A directory that is not
// a goaccel run, a config that differs, or a checkpoint that does not fit the model (other
// shapes) is an error before any training, and nothing in the directory is changed.
//
// Every check of cfg, of the task and of the directory happens before the first training
// step. Fit may be called once per Trainer.
func (t *Trainer) Fit(train, eval data.Source, cfg Config) (res *Result, err error) {
	if t.used {
		return nil, errors.New("trainer: Fit was already called on this Trainer; create a new one (trainer.New)")
	}
	t.used = true
	defer func() {
		for i, l := range cfg.Loggers {
			if cerr := l.Close(); err == nil && cerr != nil {
				err = wrapf(cerr, "closing Config.Loggers[%d]", i)
			}
		}
	}()
	if train == nil {
		return nil, errors.New("trainer: Fit needs a training data source")
	}
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if err := t.task.check(cfg, eval != nil); err != nil {
		return nil, err
	}
	f := &fit{t: t, cfg: cfg, train: train, eval: eval, main: t.acc.IsMainProcess(), dir: cfg.OutputDir,
		savedAt: -1, start: time.Now(), badTrain: newBadExamples(train)}
	if eval != nil {
		f.badEval = newBadExamples(eval)
	}
	f.rs.LastEvalStep = -1
	out := cfg.Output
	if out == nil {
		out = os.Stdout
	}
	if !f.main || cfg.Quiet {
		out = io.Discard
	}
	f.out = out
	f.notice = func(format string, args ...any) {
		if f.prog == nil {
			fmt.Fprintf(out, format+"\n", args...)
			return
		}
		f.prog.Println(format, args...)
	}

	saved, err := readRunDir(f.dir)
	if err != nil {
		return nil, err
	}
	// Every process has read the directory before the main process writes to it.
	if err := t.acc.WaitForEveryone(); err != nil {
		return nil, fmt.Errorf("trainer: %w", err)
	}
	if err := f.prepare(); err != nil {
		return nil, err
	}
	f.info = f.runInfo()
	var changes []string
	if saved != nil {
		problems, ch := compareRuns(saved, f.info)
		if len(problems) > 0 {
			return nil, fmt.Errorf("trainer: %s holds a run with another configuration; resuming it would mix two "+
				"trainings (nothing was changed; use another Config.OutputDir):\n  - %s",
				f.dir, joinLines(problems))
		}
		changes = ch
		f.info.Created, f.info.Resumes = saved.Created, saved.Resumes
	}
	if err := f.buildModel(); err != nil {
		return nil, err
	}
	for v := range f.job.Store().IterVariables() {
		if v.Trainable {
			f.info.Parameters += v.Shape().Size()
		}
	}
	resumed, err := f.restore(saved != nil)
	if err != nil {
		return nil, err
	}
	defer f.endSaves(&err)
	if saved != nil { // config.json and the checkpoints list each change of topology
		p := checkpoint.Progress{Step: f.step, Devices: saved.Devices, Processes: saved.Processes, Topologies: saved.Topologies}
		p.RecordTopology(t.acc.NumDevices(), t.acc.NumProcesses())
		f.info.Topologies = p.Topologies
	}
	res = &Result{RunDir: f.dir, Resumed: resumed, BestMetric: cfg.BestMetric, Best: math.NaN()}
	if f.rs.Stopped != "" || f.finished() {
		res.StopReason = "already complete"
		f.notice("trainer: the run in %s is already complete at step %d (%s); nothing to do", f.dir, f.step,
			firstNonEmpty(f.rs.Stopped, "its length was reached"))
		f.fillResult(res)
		return res, nil
	}
	if err := f.openFiles(saved != nil, resumed, changes); err != nil {
		return nil, err
	}
	defer func() {
		if f.log != nil {
			if cerr := f.log.Close(); err == nil && cerr != nil {
				err = cerr
			}
		}
	}()
	if cb := cfg.Callbacks.OnTrainBegin; cb != nil {
		if err := f.callback("OnTrainBegin", cb(TrainBeginEvent{Step: f.step, Resumed: resumed})); err != nil {
			return nil, err
		}
	}
	if err := f.loop(); err != nil {
		return nil, err
	}
	f.fillResult(res)
	if f.main {
		files, perr := Plot(f.dir)
		if perr != nil {
			f.notice("trainer: warning: drawing the training curves failed: %v", perr)
		}
		res.Curves = files
	}
	return res, nil
}

// prepare checks the length of the run and prepares the job (data split over the replicas,
// schedule, clipping, accumulation).
func (f *fit) prepare() error {
	cfg := f.cfg
	// The schedule is read when the step graph is built, after its length is known.
	job, err := f.t.acc.Prepare(f.t.model, f.t.opt, f.train, cfg.prepareOptions(func() lrSchedule { return f.sched })...)
	if err != nil {
		return wrapf(err, "preparing the job")
	}
	f.job, f.t.job = job, job
	acc, loss, weight := f.t.acc, f.t.task.Loss, f.t.task.LossWeight
	f.trainStep = job.TrainStep(func(s *model.Scope, b accelerator.GraphBatch) *Node {
		l := loss(s, b)
		if weight != nil {
			acc.BackwardWeighted(s, l, weight(s, b))
		} else {
			acc.Backward(s, l)
		}
		return l
	})
	if f.t.task.Eval != nil {
		f.evalStep = job.EvalStep(f.t.task.Eval)
	}
	f.spe = f.train.BatchesPerEpoch()
	if f.spe <= 0 {
		return fmt.Errorf("trainer: the training data has %d steps per epoch", f.spe)
	}
	k := int64(cfg.GradientAccumulation)
	total := cfg.MaxSteps
	if cfg.Epochs > 0 {
		byEpochs := int64(cfg.Epochs) * int64(f.spe) / k
		if byEpochs == 0 {
			return fmt.Errorf("trainer: %d epoch(s) of %d batch(es) make no update with Config.GradientAccumulation = %d",
				cfg.Epochs, f.spe, cfg.GradientAccumulation)
		}
		if total == 0 || byEpochs < total {
			total = byEpochs
		}
		if rest := int64(cfg.Epochs) * int64(f.spe) % k; rest != 0 && (cfg.MaxSteps == 0 || cfg.MaxSteps >= byEpochs) {
			f.notice("trainer: note: the last %d batch(es) of the run complete no accumulation of %d and make no update",
				rest, k)
		}
	}
	warmup := cfg.WarmupSteps
	if warmup == 0 && cfg.WarmupRatio > 0 {
		warmup = int64(math.Ceil(cfg.WarmupRatio * float64(total)))
	}
	f.sched, err = newSchedule(cfg.Schedule, cfg.LearningRate, warmup, total)
	if err != nil {
		return err
	}
	f.prog = cfg.Display
	if f.prog == nil {
		f.prog = progress.New(f.out, progress.Config{Epochs: cfg.Epochs, BatchesPerEpoch: f.spe, TotalSteps: total,
			GradientAccumulation: cfg.GradientAccumulation, PlainInterval: cfg.PlainInterval})
	}
	return nil
}

// globalBatch is the number of examples of a global batch of src over replicas: its fixed
// global batch, or BatchSize x replicas with per-device batches.
func globalBatch(src data.Source, replicas int) int {
	if g := src.FixedGlobalBatchSize(); g > 0 {
		return g
	}
	return src.BatchSize() * replicas
}

// runInfo describes this run for config.json.
func (f *fit) runInfo() *runFile {
	acc := f.t.acc
	info := acc.Info()
	hyper := f.cfg
	hyper.Output, hyper.Callbacks = nil, Callbacks{}
	ri := &runFile{
		Format: runFormat, Version: runVersion, Created: time.Now().UTC().Format(time.RFC3339),
		Trainer: hyper, Schedule: f.sched.String(), TotalSteps: f.sched.Total,
		Backend: info.Backend, Plugin: info.Plugin.Path, Devices: acc.NumDevices(), Processes: acc.NumProcesses(),
		Plan: acc.Plan(), Seed: acc.Seed(),
		PerDeviceBatch: f.train.BatchSize(), GlobalBatch: globalBatch(f.train, acc.NumReplicas()),
		GlobalBatchSize: f.train.FixedGlobalBatchSize(),
		Topologies:      []checkpoint.Topology{{Step: 0, Devices: acc.NumDevices(), Processes: acc.NumProcesses()}},
		BatchesPerEpoch: f.spe, Optimizer: fmt.Sprintf("%T", f.t.opt), Versions: BuildVersions(),
	}
	return ri
}

// buildModel runs the evaluation function once on the first training batch (without
// consuming it), so that the model's variables exist before a checkpoint is checked against
// them, and so that a broken evaluation function fails before training.
func (f *fit) buildModel() error {
	if f.t.task.Eval == nil {
		return nil
	}
	pos := f.train.State()
	var first *data.GlobalBatch
	for st, err := range f.train.Epoch() {
		if err != nil {
			return wrapf(err, "reading the first training batch")
		}
		first = st
		break
	}
	if err := f.train.Restore(pos); err != nil {
		return wrapf(err, "rewinding the training data after reading its first batch")
	}
	f.badTrain.forget() // the batches read for this are read again by the training
	if first == nil {
		return errors.New("trainer: the training data yields no batch")
	}
	if _, err := f.evalStep.Run(first); err != nil {
		return wrapf(err, "running Task.Eval on the first training batch")
	}
	return nil
}

// restore loads the latest checkpoint of a resumed run, if there is one, and returns its path.
func (f *fit) restore(resuming bool) (string, error) {
	if f.cfg.DisableCheckpoints {
		if resuming {
			return "", fmt.Errorf("trainer: %s holds a run, but Config.DisableCheckpoints is set: it can be neither "+
				"resumed nor overwritten; use another Config.OutputDir", f.dir)
		}
		return "", nil
	}
	logf := func(format string, args ...any) { f.notice(format, args...) }
	var err error
	f.last, err = checkpoint.NewManager(filepath.Join(f.dir, checkpointsDir), checkpoint.Options{
		KeepLast: f.cfg.KeepLast, Processes: f.t.acc, Logf: logf})
	if err != nil {
		return "", err
	}
	if f.cfg.BestMetric != "" && f.cfg.SaveBest == nil {
		f.best, err = checkpoint.NewManager(filepath.Join(f.dir, BestDir), checkpoint.Options{KeepLast: 1, Processes: f.t.acc, Logf: logf})
		if err != nil {
			return "", err
		}
	}
	if !resuming {
		return "", nil
	}
	var saved runFile
	st := &checkpoint.State{Store: f.job.Store(), Config: &saved, Metrics: &f.rs}
	path, err := f.last.LoadLatest(st)
	if errors.Is(err, checkpoint.ErrNoCheckpoint) {
		f.rs = runState{LastEvalStep: -1}
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("trainer: %s holds a checkpoint that does not fit this model or is unreadable (nothing "+
			"was changed; use another Config.OutputDir): %w", f.dir, err)
	}
	if err := f.train.Restore(st.Progress.Loader); err != nil {
		return "", wrapf(err, "restoring the training data position of %s", path)
	}
	f.step, f.savedAt, f.lastCheckpoint = st.Progress.Step, st.Progress.Step, path
	f.elapsed0 = f.rs.Elapsed
	if f.best != nil {
		if paths, err := f.best.List(); err == nil && len(paths) > 0 {
			f.bestCheckpoint = paths[len(paths)-1]
		}
	} else if f.cfg.SaveBest != nil && f.rs.Best != nil {
		f.bestCheckpoint = filepath.Join(f.dir, BestDir)
	}
	return path, nil
}

// finished reports whether the run has reached its length.
func (f *fit) finished() bool {
	if f.cfg.MaxSteps > 0 && f.step >= f.cfg.MaxSteps {
		return true
	}
	if f.cfg.Epochs > 0 {
		pos := f.train.State()
		return pos.Epoch >= f.cfg.Epochs || f.step >= f.sched.Total
	}
	return false
}

// openFiles writes config.json and opens metrics.jsonl (truncated to the checkpoint).
func (f *fit) openFiles(resuming bool, from string, changes []string) error {
	if !f.main {
		return nil
	}
	if err := os.MkdirAll(f.dir, 0o755); err != nil {
		return wrapf(err, "creating Config.OutputDir")
	}
	if resuming {
		f.info.Resumes = append(f.info.Resumes, resumeEntry{Time: time.Now().UTC().Format(time.RFC3339), Step: f.step,
			Checkpoint: from, Changed: changes})
		for _, c := range changes {
			f.notice("trainer: resuming with a change: %s", c)
		}
		if from != "" {
			pos := f.train.State()
			f.notice("trainer: resuming %s from %s (step %d; epoch %d after batch %d of %d)", f.dir, from, f.step,
				pos.Epoch+1, pos.BatchesConsumed, f.spe)
		} else {
			f.notice("trainer: %s holds this run's config but no checkpoint yet: starting from the beginning", f.dir)
		}
	}
	if err := writeJSONAtomic(filepath.Join(f.dir, configFile), f.info); err != nil {
		return err
	}
	var err error
	f.log, err = openMetrics(filepath.Join(f.dir, MetricsFile), f.rs.Records, f.notice)
	if err != nil {
		return err
	}
	if err := startLoggers(f.cfg.Loggers, f.dir, f.step, f.notice, "Config.Loggers"); err != nil {
		_ = f.log.Close()
		f.log = nil
		return err
	}
	return nil
}

func (f *fit) fillResult(res *Result) {
	res.Steps = f.step
	pos := f.train.State()
	res.Epoch = float64(pos.Epoch) + float64(pos.BatchesConsumed)/float64(f.spe)
	res.StopReason = firstNonEmpty(res.StopReason, f.stop, f.rs.Stopped)
	res.LastEval = f.lastEval
	if f.rs.Best != nil {
		res.Best, res.BestStep = *f.rs.Best, f.rs.BestStep
	}
	res.BestCheckpoint = f.bestCheckpoint
	res.LastCheckpoint = f.lastCheckpoint
	if f.interrupted != nil {
		res.Interrupted, res.Signal = true, f.interrupted
	}
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

func joinLines(lines []string) string {
	out := ""
	for i, l := range lines {
		if i > 0 {
			out += "\n  - "
		}
		out += l
	}
	return out
}
