package trainer

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/goaccel/goaccel/accelerator"
	"github.com/goaccel/goaccel/checkpoint"
	"github.com/goaccel/goaccel/data"
	"github.com/goaccel/goaccel/trainer/progress"
)

// loop runs epochs until the run's length is reached or something stops it.
func (f *fit) loop() error {
	acc := f.t.acc
	k := int64(f.cfg.GradientAccumulation)
	f.logAt = time.Now()
	var updLoss float64
	var updExamples int
	for f.stop == "" && !f.finished() {
		pos := f.train.State()
		epoch := pos.Epoch
		f.prog.StartEpoch(epoch, pos.BatchesConsumed, f.step)
		ranSteps := false
		var wait time.Duration // the last batch's wait, set by timedBatches
		for st, err := range timedBatches(f.job.Batches(), &wait) {
			if err != nil {
				f.prog.EndEpoch("")
				return wrapf(err, "reading the training data of epoch %d", epoch+1)
			}
			ran := time.Now()
			l, err := f.trainStep.Run(st)
			if err != nil {
				f.prog.EndEpoch("")
				return wrapf(err, "training step %d", f.step+1)
			}
			lv, err := l.Value()
			if err != nil {
				f.prog.EndEpoch("")
				return wrapf(err, "reading the loss of step %d", f.step+1)
			}
			f.waits.add(wait, time.Since(ran))
			if math.IsNaN(lv) || math.IsInf(lv, 0) {
				f.prog.EndEpoch("")
				return fmt.Errorf("trainer: the training loss is %g at epoch %d, batch %d (update %d): training diverged; "+
					"lower Config.LearningRate, add warm-up or set Config.ClipGradNorm", lv, epoch+1, st.Index+1, f.step+1)
			}
			ranSteps = true
			f.micro++
			examples := st.NumReal() * acc.NumProcesses()
			f.examplesAtLog += examples
			f.rs.LossSum += lv
			f.rs.LossCount++
			f.rs.EpochLossSum += lv
			f.rs.EpochLossCount++
			updLoss += lv
			updExamples += examples
			if f.micro%k != 0 {
				f.prog.Batch(lv, examples, f.step)
				continue
			}
			f.step++
			f.showSkippedUpdates()
			f.prog.Batch(lv, examples, f.step)
			epochF := float64(st.Epoch) + float64(st.Index+1)/float64(f.spe)
			ev := StepEvent{Step: f.step, Epoch: epochF, Loss: updLoss / float64(k), Examples: updExamples}
			updLoss, updExamples = 0, 0
			if err := f.afterUpdate(ev); err != nil {
				f.prog.EndEpoch("")
				return err
			}
			if f.stop == "" && f.cfg.Interrupt != nil {
				requested, err := f.interruptRequested()
				if err != nil {
					f.prog.EndEpoch("")
					return err
				}
				if requested {
					f.interrupted = f.cfg.Interrupt.Signal()
					f.stop = "interrupted by " + signalName(f.interrupted)
				}
			}
			if f.stop != "" || f.finished() {
				break
			}
		}
		if f.train.State().Epoch > epoch {
			if err := f.endOfEpoch(epoch); err != nil {
				return err
			}
			continue
		}
		f.prog.EndEpoch("")
		if f.stop == "" && !f.finished() {
			return fmt.Errorf("trainer: the training data ended epoch %d early (ran batches: %v; %d batches per epoch "+
				"expected): is the data source's BatchesPerEpoch right?", epoch+1, ranSteps, f.spe)
		}
	}
	if f.stop == "" {
		f.stop = "epochs"
		if f.cfg.MaxSteps > 0 && f.step >= f.cfg.MaxSteps {
			f.stop = "max steps"
		}
	}
	return f.finish()
}

// afterUpdate does what follows an optimizer update: callbacks, records, evaluation,
// checkpoint, stop conditions.
func (f *fit) afterUpdate(ev StepEvent) error {
	if cb := f.cfg.Callbacks.OnStep; cb != nil {
		if err := f.callback("OnStep", cb(ev)); err != nil {
			return err
		}
	}
	// The first update is logged too, so that the loss curve starts at step 1.
	if f.cfg.LogEvery > 0 && (f.step%f.cfg.LogEvery == 0 || f.step == 1) {
		if err := f.trainRecord(ev.Epoch); err != nil {
			return err
		}
	}
	if err := f.ranksRecord(ev.Epoch); err != nil {
		return err
	}
	if f.eval != nil && f.cfg.EvalEvery > 0 && f.step%f.cfg.EvalEvery == 0 {
		if err := f.evaluate(ev.Epoch); err != nil {
			return err
		}
	}
	if f.cfg.SaveEvery > 0 && f.step%f.cfg.SaveEvery == 0 {
		if err := f.saveLast(); err != nil {
			return err
		}
	}
	return nil
}

// callback interprets a callback's error: ErrStop ends the run cleanly, others abort it.
// Over several processes the decision is agreed: a stop or a failure on any process stops
// every process, so that none is left waiting for the others in a collective.
func (f *fit) callback(name string, err error) error {
	if f.t.acc.NumProcesses() > 1 {
		err = f.agree(name, err)
	}
	if err == nil {
		return nil
	}
	if errors.Is(err, ErrStop) {
		if f.stop == "" {
			f.stop = "callback"
			f.rs.Stopped = "stopped by a callback at step " + fmt.Sprint(f.step)
		}
		return nil
	}
	return wrapf(err, "Callbacks.%s at step %d", name, f.step)
}

// interruptRequested reports whether a signal asked the run to stop, agreed by all processes.
func (f *fit) interruptRequested() (bool, error) {
	stop, err := f.cfg.Interrupt.RequestedAnywhere(f.t.acc)
	if err != nil {
		return false, wrapf(err, "at step %d", f.step)
	}
	return stop, nil
}

// agree combines a callback's outcome over the processes: this process's own error, else
// another process's failure, else a stop (ErrStop) if any process stopped.
func (f *fit) agree(name string, err error) error {
	code := 0.0
	switch {
	case errors.Is(err, ErrStop):
		code = 1
	case err != nil:
		code = 2
	}
	all, rerr := f.t.acc.Reduce(code, accelerator.OpMax)
	switch {
	case rerr != nil:
		return wrapf(rerr, "Callbacks.%s at step %d: agreeing with the other processes", name, f.step)
	case code == 2:
		return err
	case all == 2:
		return fmt.Errorf("trainer: Callbacks.%s failed on another process at step %d", name, f.step)
	case all == 1:
		return ErrStop
	}
	return nil
}

// elapsed is the run's wall time so far, over all its sessions.
func (f *fit) elapsed() float64 { return f.elapsed0 + time.Since(f.start).Seconds() }

func (f *fit) now() string { return time.Now().UTC().Format(time.RFC3339Nano) }

// trainRecord writes the training record of the updates since the last one.
func (f *fit) trainRecord(epoch float64) error {
	if f.rs.LossCount == 0 {
		return nil
	}
	r := Record{Kind: KindTrain, Step: f.step, Epoch: epoch, Loss: f.rs.LossSum / float64(f.rs.LossCount),
		LR: orNaN(f.job.LearningRate()), GradNorm: nan, ExamplesPerSec: nan, Time: f.now(), Elapsed: f.elapsed()}
	if f.cfg.ClipGradNorm > 0 {
		r.GradNorm = orNaN(f.job.GradNorm())
	}
	f.lossScaleRecord(&r)
	r.DataWait, f.waits.sinceRecord = f.waits.sinceRecord.Seconds(), 0
	var bad []data.SkippedExample
	if r.BadExamples, bad = f.badTrain.since(); r.BadExamples > 0 {
		f.notice("trainer: step %d: the loader left out %d broken training example(s): %s", f.step, r.BadExamples,
			namedExamples(bad, r.BadExamples, 5))
	}
	if dt := time.Since(f.logAt).Seconds(); dt > 0 {
		r.ExamplesPerSec = float64(f.examplesAtLog) / dt
	}
	f.rs.LossSum, f.rs.LossCount = 0, 0
	f.logAt, f.examplesAtLog = time.Now(), 0
	return f.record(r)
}

// record appends r to metrics.jsonl and gives it to Config.Loggers (main process).
func (f *fit) record(r Record) error {
	if f.log == nil {
		return nil
	}
	if err := f.log.Log(r); err != nil {
		return err
	}
	f.rs.Records = f.log.Len()
	for i, l := range f.cfg.Loggers {
		if err := l.Log(r); err != nil {
			return wrapf(err, "Config.Loggers[%d] at step %d", i, f.step)
		}
	}
	return nil
}

// orNaN is a value read for a record, NaN ("not measured") when it could not be read.
func orNaN(v float64, err error) float64 {
	if err != nil {
		return nan
	}
	return v
}

// endOfEpoch evaluates, saves and calls OnEpochEnd after a complete epoch.
func (f *fit) endOfEpoch(epoch int) error {
	epochF := float64(epoch + 1)
	summary := fmt.Sprintf("epoch %d done: step %d, mean loss %s", epoch+1, f.step,
		progress.FormatLoss(f.rs.EpochLossSum/math.Max(1, float64(f.rs.EpochLossCount))))
	f.prog.EndEpoch(summary)
	ev := EpochEvent{Epoch: epoch, Step: f.step, Loss: f.rs.EpochLossSum / math.Max(1, float64(f.rs.EpochLossCount))}
	f.rs.EpochLossSum, f.rs.EpochLossCount = 0, 0
	if f.eval != nil && !f.cfg.SkipEpochEval && f.rs.LastEvalStep != f.step {
		if err := f.evaluate(epochF); err != nil {
			return err
		}
		ev.Metrics = f.lastEval
	} else if f.rs.LastEvalStep == f.step {
		ev.Metrics = f.lastEval
	}
	if f.savedAt != f.step && f.stop == "" {
		if err := f.saveLast(); err != nil {
			return err
		}
	}
	if cb := f.cfg.Callbacks.OnEpochEnd; cb != nil {
		if err := f.callback("OnEpochEnd", cb(ev)); err != nil {
			return err
		}
	}
	return nil
}

// evaluate runs the task's evaluation, records it, tracks the best model and early stopping.
func (f *fit) evaluate(epoch float64) error {
	start := time.Now()
	g, err := f.job.Evaluate(f.prog.Evaluating(f.eval), f.evalStep)
	if err != nil {
		return wrapf(err, "evaluation at step %d", f.step)
	}
	m, err := f.t.task.Metrics(g)
	if err != nil {
		return wrapf(err, "Task.Metrics at step %d", f.step)
	}
	f.lastEval = m
	f.rs.LastEvalStep = f.step
	ev := EvalEvent{Step: f.step, Epoch: epoch, Metrics: m, Best: nan}
	headline := f.cfg.BestMetric
	if name := f.cfg.BestMetric; name != "" {
		v, ok := m[name]
		if !ok {
			return fmt.Errorf("trainer: Config.BestMetric = %q, but the evaluation at step %d produced only %s",
				name, f.step, formatMetrics(m))
		}
		ev.Improved = f.improves(v)
		if ev.Improved {
			f.rs.Best, f.rs.BestStep, f.rs.BadEvals = &v, f.step, 0
		} else {
			f.rs.BadEvals++
		}
		ev.Best, ev.BestStep, ev.BadEvals = *f.rs.Best, f.rs.BestStep, f.rs.BadEvals
	}
	line := progress.EvalLine(progress.EvalSummary{Step: f.step, Epoch: epoch, Metrics: m, Headline: headline, Improved: ev.Improved,
		Best: ev.Best, BestStep: ev.BestStep, Examples: g.Len(), Duration: time.Since(start)})
	if name := f.cfg.BestMetric; name != "" && f.cfg.Patience > 0 && f.rs.BadEvals >= f.cfg.Patience {
		f.stop = fmt.Sprintf("early stopping: %s did not improve for %d evaluation(s) (best %.4g at step %d)",
			name, f.rs.BadEvals, *f.rs.Best, f.rs.BestStep)
		f.rs.Stopped = f.stop
	}
	f.prog.Println("%s", line)
	if strings.HasPrefix(f.stop, "early stopping") {
		f.prog.Println("trainer: %s", f.stop)
	}
	if err := f.record(Record{Kind: KindEval, Step: f.step, Epoch: epoch, Loss: nan, LR: nan, GradNorm: nan,
		ExamplesPerSec: nan, Eval: m, Time: f.now(), Elapsed: f.elapsed()}); err != nil {
		return err
	}
	if ev.Improved && f.best != nil {
		end := f.t.acc.TimelineSpan("checkpoint save (best)", "checkpoint")
		path, err := f.saveWith(f.best)
		end()
		if err != nil {
			return wrapf(err, "saving the best model at step %d", f.step)
		}
		f.bestCheckpoint = path
	}
	if ev.Improved && f.cfg.SaveBest != nil {
		path, err := f.saveBestFolder()
		if err != nil {
			return err
		}
		f.bestCheckpoint = path
	}
	if cb := f.cfg.Callbacks.OnEval; cb != nil {
		if err := f.callback("OnEval", cb(ev)); err != nil {
			return err
		}
	}
	return nil
}

// improves reports whether v beats the best value so far by more than MinDelta.
func (f *fit) improves(v float64) bool {
	if math.IsNaN(v) {
		return false
	}
	if f.rs.Best == nil {
		return true
	}
	if f.cfg.BestMode == "min" {
		return v < *f.rs.Best-f.cfg.MinDelta
	}
	return v > *f.rs.Best+f.cfg.MinDelta
}

// state is the checkpoint of the run as it is now.
func (f *fit) state() *checkpoint.State {
	rs := f.rs
	rs.Elapsed = f.elapsed()
	acc := f.t.acc
	return &checkpoint.State{
		Store: f.job.Store(),
		Progress: checkpoint.Progress{Epoch: f.train.State().Epoch, Step: f.step, Loader: f.train.State(),
			Seed: acc.Seed(), Devices: acc.NumDevices(), Processes: acc.NumProcesses(), Topologies: f.info.Topologies},
		Config:  f.info,
		Metrics: &rs,
	}
}

// saveLast writes the last checkpoint. It is only called right after an update, so that no
// gradient accumulation is half done in it.
func (f *fit) saveLast() error {
	if f.last == nil || f.micro%int64(f.cfg.GradientAccumulation) != 0 {
		return nil
	}
	if f.log != nil {
		if err := f.log.Sync(); err != nil {
			return err
		}
		if err := syncLoggers(f.cfg.Loggers, "Config.Loggers"); err != nil {
			return err
		}
	}
	end := f.t.acc.TimelineSpan("checkpoint save", "checkpoint")
	path, err := f.saveWith(f.last)
	end("step", f.step)
	if err != nil {
		return wrapf(err, "saving the checkpoint at step %d", f.step)
	}
	f.savedAt, f.lastCheckpoint = f.step, path
	return nil
}

// finish writes the last training record and the last checkpoint. After an interrupt it
// only saves the checkpoint: the resumed session evaluates and records where an
// uninterrupted run would.
func (f *fit) finish() error {
	if line := f.waits.summary(); line != "" {
		f.notice("trainer: %s", line)
	}
	if line := f.badTrain.summary("training data"); line != "" {
		f.notice("trainer: %s", line)
	}
	if line := f.badEval.summary("evaluation data"); line != "" {
		f.notice("trainer: %s", line)
	}
	if f.interrupted != nil {
		if f.savedAt != f.step {
			if err := f.saveLast(); err != nil {
				return err
			}
		}
		if err := f.waitSaves(); err != nil {
			return err
		}
		if f.lastCheckpoint == "" {
			return nil
		}
		f.notice("trainer: %s: stopped after step %d of %d; checkpoint %s", signalName(f.interrupted), f.step,
			f.sched.Total, f.lastCheckpoint)
		return markInterrupted(f.t.acc, f.dir, f.interrupted, f.step)
	}
	if f.eval != nil && !f.cfg.SkipEpochEval && f.rs.LastEvalStep != f.step {
		pos := f.train.State()
		if err := f.evaluate(float64(pos.Epoch) + float64(pos.BatchesConsumed)/float64(f.spe)); err != nil {
			return err
		}
	}
	if f.rs.LossCount > 0 && f.micro%int64(f.cfg.GradientAccumulation) == 0 {
		pos := f.train.State()
		epoch := float64(pos.Epoch) + float64(pos.BatchesConsumed)/float64(f.spe)
		if err := f.trainRecord(epoch); err != nil {
			return err
		}
	}
	if f.savedAt != f.step {
		if err := f.saveLast(); err != nil {
			return err
		}
	}
	if err := f.waitSaves(); err != nil {
		return err
	}
	if err := clearInterrupted(f.t.acc, f.dir); err != nil {
		return err
	}
	f.notice("trainer: %s (step %d, %s)", f.doneWords(), f.step, progress.FormatDuration(time.Duration(f.elapsed()*float64(time.Second))))
	return nil
}

// doneWords says in plain words why the run ended: "done after 3 epochs".
func (f *fit) doneWords() string {
	switch {
	case f.stop == "epochs":
		return "done after " + count(int64(f.cfg.Epochs), "epoch")
	case f.stop == "max steps":
		return "done after " + count(f.step, "step") + " (the maximum)"
	case strings.HasPrefix(f.stop, "early stopping"):
		return "stopped early: " + strings.TrimPrefix(f.stop, "early stopping: ")
	}
	return "stopped: " + f.stop
}

// count is "1 step", "3 steps": n and the unit, plural when n is not 1.
func count(n int64, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return fmt.Sprintf("%d %ss", n, unit)
}

// saveBestFolder writes the best model with Config.SaveBest in place of best/.
func (f *fit) saveBestFolder() (string, error) {
	dst := filepath.Join(f.dir, BestDir)
	if err := saveFolder(f.t.acc, dst, f.cfg.SaveBest); err != nil {
		return "", wrapf(err, "saving the best model at step %d", f.step)
	}
	return dst, nil
}

// formatMetrics is "accuracy 0.8123 | f1 0.8012 | loss 0.4321", names sorted.
func formatMetrics(m map[string]float64) string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	out := ""
	for i, k := range names {
		if i > 0 {
			out += " | "
		}
		out += fmt.Sprintf("%s %.4f", k, m[k])
	}
	return out
}
