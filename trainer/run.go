package trainer

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/goaccel/goaccel/accelerator"
	"github.com/goaccel/goaccel/checkpoint"
)

// loopFormat is the format of a hand-written loop's config.json (Fit's is runFormat).
const loopFormat = "goaccel-loop"

// Run is the run directory of a hand-written training loop, laid out as Fit's, so that the
// same tools read both (Plot, `goaccel plot`):
//
//	config.json      the program's configuration, where it runs, versions
//	metrics.jsonl    the Records given to Log
//	checkpoints/     the newest checkpoint: weights, optimizer state, data position, loop state
//	best/            the folder SaveBest writes (a Hugging Face model, say)
//	curves.png/.svg  drawn by Finish and Interrupted
//
// Every process opens the Run and calls its methods at the same points of the loop; only the
// main process writes.
type Run struct {
	// Dir is the run directory.
	Dir string
	// Resumed is the checkpoint the run continues from ("" for a new run).
	Resumed string
	// Step is the optimizer step of that checkpoint (0 for a new run).
	Step int64

	acc     *accelerator.Accelerator
	job     *accelerator.Job
	state   any
	ckpt    *checkpoint.Manager
	log     *metricsWriter // main process only
	loggers []Logger       // AddLoggers'
	records int
	savedAt int64
}

// loopConfig is a hand-written loop's config.json.
type loopConfig struct {
	Format      string           `json:"format"`
	Created     string           `json:"created"`
	Config      any              `json:"config"`
	Plan        string           `json:"plan"`
	Accelerator accelerator.Info `json:"accelerator"`
	Versions    Versions         `json:"versions"`
}

// loopState is what a Run adds to a checkpoint: the loop's own state and the length of
// metrics.jsonl at the checkpoint.
type loopState struct {
	Records int             `json:"records"`
	Loop    json.RawMessage `json:"loop"`
}

// OpenRun opens the run directory dir of a loop over job. config (the program's flags, say:
// any JSON value) is written to config.json; when dir already holds a run, its config must be
// the same (leave out of config what a resumed run may change), and its newest checkpoint is
// loaded: the weights and optimizer state into job's Store, the data position into job's
// source, and the loop's own state (a pointer to a JSON value, such as the losses and the
// best accuracy so far) into state. metrics.jsonl is cut to the records logged before that
// checkpoint. A directory that holds something else, or another configuration, is an error
// and is left unchanged.
func OpenRun(acc *accelerator.Accelerator, dir string, config any, job *accelerator.Job, state any) (*Run, error) {
	if acc == nil || job == nil || dir == "" {
		return nil, errors.New("trainer: OpenRun: needs an Accelerator, a Job and a directory")
	}
	r := &Run{Dir: dir, acc: acc, job: job, state: state, savedAt: -1}
	cfg := loopConfig{Format: loopFormat, Created: time.Now().UTC().Format(time.RFC3339), Config: config,
		Plan: acc.Plan(), Accelerator: acc.Info(), Versions: BuildVersions()}
	raw, err := os.ReadFile(filepath.Join(dir, configFile))
	entries, _ := os.ReadDir(dir)
	var saved loopConfig
	switch {
	case err == nil && (json.Unmarshal(raw, &saved) != nil || saved.Format != loopFormat):
		return nil, fmt.Errorf("trainer: OpenRun: %s is not the config of a hand-written loop's run; nothing in %s "+
			"was changed: choose another directory", filepath.Join(dir, configFile), dir)
	case err == nil:
		if diff := jsonDifferences(saved.Config, config); len(diff) > 0 {
			return nil, fmt.Errorf("trainer: OpenRun: %s holds a run with another configuration (nothing was changed; "+
				"give the same one to resume it, or another directory):\n  - %s", dir, strings.Join(diff, "\n  - "))
		}
		cfg.Created = saved.Created
	case len(entries) > 0:
		return nil, fmt.Errorf("trainer: OpenRun: %s is not empty and holds no %s: it is not a run directory, and "+
			"nothing in it will be overwritten; choose a new or empty directory", dir, configFile)
	}
	// Every process has read the directory before the main process writes to it.
	if err := acc.WaitForEveryone(); err != nil {
		return nil, fmt.Errorf("trainer: OpenRun: %w", err)
	}
	r.ckpt, err = checkpoint.NewManager(filepath.Join(dir, checkpointsDir), checkpoint.Options{KeepLast: 1, Processes: acc,
		Logf: func(format string, args ...any) { acc.Printf(format, args...) }})
	if err != nil {
		return nil, fmt.Errorf("trainer: OpenRun: %w", err)
	}
	var ls loopState
	st := &checkpoint.State{Store: job.Store(), Metrics: &ls}
	path, err := r.ckpt.LoadLatest(st)
	switch {
	case errors.Is(err, checkpoint.ErrNoCheckpoint):
	case err != nil:
		return nil, fmt.Errorf("trainer: OpenRun: %s holds a checkpoint that does not fit this model or is unreadable "+
			"(nothing was changed): %w", dir, err)
	default:
		if state != nil && len(ls.Loop) > 0 {
			if err := json.Unmarshal(ls.Loop, state); err != nil {
				return nil, fmt.Errorf("trainer: OpenRun: the loop state of %s: %w", path, err)
			}
		}
		if err := job.Source().Restore(st.Progress.Loader); err != nil {
			return nil, fmt.Errorf("trainer: OpenRun: restoring the data position of %s: %w", path, err)
		}
		r.Resumed, r.Step, r.records, r.savedAt = path, st.Progress.Step, ls.Records, st.Progress.Step
		pos := st.Progress.Loader
		acc.Printf("resuming %s from %s: step %d, epoch %d after batch %d", dir, path, r.Step, pos.Epoch+1,
			pos.BatchesConsumed)
	}
	if !acc.IsMainProcess() {
		return r, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("trainer: OpenRun: %w", err)
	}
	if err := writeJSONAtomic(filepath.Join(dir, configFile), cfg); err != nil {
		return nil, err
	}
	r.log, err = openMetrics(filepath.Join(dir, MetricsFile), r.records, func(format string, args ...any) {
		acc.Printf(format, args...)
	})
	return r, err
}

// jsonDifferences lists the top-level fields in which a and b differ as JSON.
func jsonDifferences(a, b any) []string {
	x, y := jsonObject(map[string]any{"config": a}), jsonObject(map[string]any{"config": b})
	ox, _ := x["config"].(map[string]any)
	oy, _ := y["config"].(map[string]any)
	if ox == nil || oy == nil {
		if jsonText(x["config"]) != jsonText(y["config"]) {
			return []string{fmt.Sprintf("the run has %s, this one %s", jsonText(x["config"]), jsonText(y["config"]))}
		}
		return nil
	}
	var keys []string
	for k := range ox {
		keys = append(keys, k)
	}
	for k := range oy {
		if _, ok := ox[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var out []string
	for _, k := range keys {
		if jsonText(ox[k]) != jsonText(oy[k]) {
			out = append(out, fmt.Sprintf("%s: the run has %s, this one %s", k, jsonText(ox[k]), jsonText(oy[k])))
		}
	}
	return out
}

// AddLoggers gives the loop's records to more loggers (ReportTo's, say) besides metrics.jsonl:
// Log writes each record to all of them, Save syncs them and Close closes them. On the main
// process, those that keep a file in the run directory (RunLogger: TensorBoard, CSV) are
// started there first, keeping what they hold up to the checkpoint's step (Step); on the
// others nothing is written. Call it on every process, after OpenRun and before the first Log.
func (r *Run) AddLoggers(ls ...Logger) error {
	r.loggers = append(r.loggers, ls...)
	if r.log == nil {
		return nil
	}
	return startLoggers(ls, r.Dir, r.Step, func(format string, args ...any) { r.acc.Printf(format, args...) },
		"Run.AddLoggers")
}

// Log appends a record to metrics.jsonl and gives it to the loggers of AddLoggers (main
// process; a no-op elsewhere): Run is a Logger.
func (r *Run) Log(rec Record) error {
	if r.log == nil {
		return nil
	}
	if err := r.log.Log(rec); err != nil {
		return err
	}
	r.records = r.log.Len()
	for i, l := range r.loggers {
		if err := l.Log(rec); err != nil {
			return wrapf(err, "Run.AddLoggers[%d] at step %d", i, rec.Step)
		}
	}
	return nil
}

// Save writes the checkpoint of step: the Store, the data position and the loop's state as it
// is now. Saving the same step again is a no-op.
func (r *Run) Save(step int64) error {
	if step == r.savedAt {
		return nil
	}
	raw, err := json.Marshal(r.state)
	if err != nil {
		return fmt.Errorf("trainer: Run.Save: the loop state: %w", err)
	}
	if r.log != nil {
		if err := r.log.Sync(); err != nil {
			return err
		}
		if err := syncLoggers(r.loggers, "Run.AddLoggers"); err != nil {
			return err
		}
	}
	pos := r.job.Source().State()
	end := r.acc.TimelineSpan("checkpoint save", "checkpoint")
	_, err = r.ckpt.Save(&checkpoint.State{Store: r.job.Store(), Metrics: loopState{Records: r.records, Loop: raw},
		Progress: checkpoint.Progress{Epoch: pos.Epoch, Step: step, Loader: pos, Seed: r.acc.Seed(),
			Devices: r.acc.NumDevices(), Processes: r.acc.NumProcesses()}})
	end("step", step)
	if err != nil {
		return fmt.Errorf("trainer: saving the checkpoint of step %d: %w", step, err)
	}
	r.savedAt = step
	return nil
}

// SaveBest writes best/ with save (bert.SavePretrained, say), whole: the main process fills a new folder beside it and renames it into place, so that best/ is never half written; the others wait.
func (r *Run) SaveBest(save func(dir string) error) error {
	return saveFolder(r.acc, filepath.Join(r.Dir, BestDir), save)
}

// Interrupted ends a session that sig stopped after step: it saves the checkpoint, draws the
// curves and marks the run so that the same command resumes it (interrupted.json), printing
// that command.
func (r *Run) Interrupted(sig os.Signal, step int64) error {
	if err := r.Save(step); err != nil {
		return err
	}
	r.acc.Printf("%s: stopped after step %d; checkpoint saved in %s", signalName(sig), step, r.ckpt.Dir())
	r.plot()
	return markInterrupted(r.acc, r.Dir, sig, step)
}

// Finish ends a run that is complete at step: the last checkpoint, the curves, and the
// interruption mark of an earlier session removed.
func (r *Run) Finish(step int64) error {
	if err := r.Save(step); err != nil {
		return err
	}
	r.plot()
	return clearInterrupted(r.acc, r.Dir)
}

// plot draws the curves on the main process; a failure is a warning (the records are safe).
func (r *Run) plot() {
	if r.log == nil || r.records == 0 {
		return
	}
	if _, err := Plot(r.Dir); err != nil {
		r.acc.Printf("trainer: warning: drawing the curves: %v", err)
	}
}

// Close closes metrics.jsonl and the loggers of AddLoggers.
func (r *Run) Close() error {
	var err error
	for i, l := range r.loggers {
		if cerr := l.Close(); cerr != nil && err == nil {
			err = wrapf(cerr, "closing Run.AddLoggers[%d]", i)
		}
	}
	r.loggers = nil
	if r.log == nil {
		return err
	}
	if cerr := r.log.Close(); err == nil {
		err = cerr
	}
	return err
}

var _ Logger = (*Run)(nil)
