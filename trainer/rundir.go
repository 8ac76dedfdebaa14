package trainer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/goaccel/goaccel/checkpoint"
	"github.com/goaccel/goaccel/internal/fsutil"
)

// Names inside a run directory.
const (
	// configFile holds the hyperparameters, backend, devices, versions.
	configFile = "config.json"
	// MetricsFile holds one Record per line.
	MetricsFile = "metrics.jsonl"
	// checkpointsDir holds the last checkpoints (checkpoint.Manager layout).
	checkpointsDir = "checkpoints"
	// BestDir holds the checkpoint of the best model by Config.BestMetric.
	BestDir = "best"
	// CurvesPNG and CurvesSVG are the training curves drawn at the end of Fit and by Plot.
	CurvesPNG = "curves.png"
	CurvesSVG = "curves.svg"

	runFormat  = "goaccel-run"
	runVersion = 1
)

// runFile is the content of config.json: everything needed to know how a run was made.
type runFile struct {
	Format  string `json:"format"`
	Version int    `json:"version"`
	Created string `json:"created"`
	// Trainer holds the hyperparameters (Config's JSON fields).
	Trainer Config `json:"trainer"`
	// Schedule describes the learning-rate schedule; TotalSteps is the run's update count.
	Schedule   string `json:"schedule"`
	TotalSteps int64  `json:"total_steps"`
	// Backend, Plugin, Devices, Processes and Plan describe where the run executes.
	Backend   string `json:"backend"`
	Plugin    string `json:"plugin,omitempty"`
	Devices   int    `json:"devices"`
	Processes int    `json:"processes"`
	Plan      string `json:"plan"`
	Seed      int64  `json:"seed"`
	// PerDeviceBatch x Devices x Processes = GlobalBatch examples per batch (with a fixed
	// global batch, GlobalBatch is GlobalBatchSize and the product is larger by the masked
	// slots); BatchesPerEpoch batches per epoch (an update takes GradientAccumulation batches).
	PerDeviceBatch int `json:"per_device_batch"`
	GlobalBatch    int `json:"global_batch"`
	// GlobalBatchSize is the training source's fixed global batch (data.Source's
	// FixedGlobalBatchSize, set by data.LoaderConfig.GlobalBatchSize), 0 for per-device
	// batches; a resume must have the same. -1 when the saved file did not record it.
	GlobalBatchSize int    `json:"global_batch_size"`
	BatchesPerEpoch int    `json:"batches_per_epoch"`
	Optimizer       string `json:"optimizer"`
	// Parameters is the number of trainable parameters of the model.
	Parameters int      `json:"parameters"`
	Versions   Versions `json:"versions"`
	// Resumes lists the sessions that continued the run.
	Resumes []resumeEntry `json:"resumes,omitempty"`
	// Topologies lists the devices x processes the run has had, one entry per change, from
	// the step it began at (the same list as the checkpoints' Progress.Topologies).
	Topologies []checkpoint.Topology `json:"topologies,omitempty"`
}

// Resume records one continuation of a run.
type resumeEntry struct {
	Time       string   `json:"time"`
	Step       int64    `json:"step"`
	Checkpoint string   `json:"checkpoint,omitempty"`
	Changed    []string `json:"changed,omitempty"`
}

// readRunDir looks at an output directory before a run: nil for a new or empty directory,
// the RunInfo of a goaccel run to resume, or an error for anything else (nothing is touched).
func readRunDir(dir string) (*runFile, error) {
	st, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, wrapf(err, "Config.OutputDir %s", dir)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("trainer: Config.OutputDir %s is a file, not a directory", dir)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, wrapf(err, "Config.OutputDir %s", dir)
	}
	if len(entries) == 0 {
		return nil, nil
	}
	raw, err := os.ReadFile(filepath.Join(dir, configFile))
	if errors.Is(err, fs.ErrNotExist) {
		var names []string
		for _, e := range entries[:min(len(entries), 4)] {
			names = append(names, e.Name())
		}
		return nil, fmt.Errorf("trainer: Config.OutputDir %s is not empty (%s...) and holds no %s: it is not a goaccel "+
			"run directory, and nothing in it will be overwritten; choose a new or empty directory",
			dir, strings.Join(names, ", "), configFile)
	}
	if err != nil {
		return nil, wrapf(err, "reading %s", filepath.Join(dir, configFile))
	}
	var info runFile
	if err := json.Unmarshal(raw, &info); err != nil || info.Format != runFormat {
		why := fmt.Sprintf("format %q, want %q", info.Format, runFormat)
		if err != nil {
			why = err.Error()
		}
		return nil, fmt.Errorf("trainer: %s is not a goaccel run's config (%s); nothing in %s will be overwritten: "+
			"choose a new or empty directory", filepath.Join(dir, configFile), why, dir)
	}
	if info.Version > runVersion {
		return nil, fmt.Errorf("trainer: %s has version %d; this goaccel reads up to version %d",
			filepath.Join(dir, configFile), info.Version, runVersion)
	}
	info.GlobalBatchSize = savedGlobalBatchSize(raw)
	return &info, nil
}

// savedGlobalBatchSize reads the fixed global batch from a config.json: its global_batch_size,
// or in a file written before that existed, trainer.global_batch_size (Config.GlobalBatchSize
// then, 0 when not given); -1 (not recorded, not compared) when neither is there.
func savedGlobalBatchSize(raw []byte) int {
	var probe struct {
		Global  *int `json:"global_batch_size"`
		Trainer struct {
			Global *int `json:"global_batch_size"`
		} `json:"trainer"`
	}
	switch {
	case json.Unmarshal(raw, &probe) != nil:
		return -1
	case probe.Global != nil:
		return *probe.Global
	case probe.Trainer.Global != nil:
		return *probe.Trainer.Global
	}
	return -1
}

// compareRuns lists how the run about to start differs from the one saved in a run directory:
// problems make resuming wrong (an error), changes are allowed and recorded.
func compareRuns(saved, now *runFile) (problems, changes []string) {
	savedCfg, nowCfg := jsonObject(saved.Trainer), jsonObject(now.Trainer)
	keys := map[string]bool{}
	for k := range savedCfg {
		keys[k] = true
	}
	for k := range nowCfg {
		keys[k] = true
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	slices.Sort(sorted)
	for _, k := range sorted {
		a, b := savedCfg[k], nowCfg[k]
		if reflect.DeepEqual(a, b) {
			continue
		}
		line := fmt.Sprintf("trainer.%s: %s has %s, this run %s", k, configFile, jsonText(a), jsonText(b))
		if mayChangeOnResume[k] {
			changes = append(changes, line)
		} else {
			problems = append(problems, line)
		}
	}
	if saved.TotalSteps != now.TotalSteps && now.Trainer.Schedule != scheduleConstant {
		problems = append(problems, fmt.Sprintf("total_steps: %s has %d, this run %d, and the %q schedule depends "+
			"on it (only a constant schedule lets a run be lengthened)", configFile, saved.TotalSteps, now.TotalSteps,
			now.Trainer.Schedule))
	}
	savedGlobal := saved.GlobalBatchSize
	if savedGlobal < 0 { // not recorded (a config.json of a run without Config.GlobalBatchSize then): not compared
		savedGlobal = now.GlobalBatchSize
	}
	for _, c := range []struct {
		name     string
		old, new any
	}{
		{"seed", saved.Seed, now.Seed},
		{"global_batch", saved.GlobalBatch, now.GlobalBatch},
		{"global_batch_size", savedGlobal, now.GlobalBatchSize},
		{"optimizer", saved.Optimizer, now.Optimizer},
	} {
		if !reflect.DeepEqual(c.old, c.new) {
			problems = append(problems, fmt.Sprintf("%s: %s has %v, this run %v", c.name, configFile, c.old, c.new))
		}
	}
	// Another topology (with the same global batch) is allowed and recorded.
	for _, c := range []struct {
		name     string
		old, new int
	}{{"devices", saved.Devices, now.Devices}, {"processes", saved.Processes, now.Processes},
		{"per_device_batch", saved.PerDeviceBatch, now.PerDeviceBatch}} {
		if c.old != c.new {
			changes = append(changes, fmt.Sprintf("%s: %s has %d, this run %d", c.name, configFile, c.old, c.new))
		}
	}
	return problems, changes
}

// jsonObject turns v into its generic JSON form (numbers as float64), so that values read
// back from a file compare equal to values in memory.
func jsonObject(v any) map[string]any {
	raw, _ := json.Marshal(v)
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	return out
}

func jsonText(v any) string {
	if v == nil {
		return "nothing"
	}
	raw, _ := json.Marshal(v)
	return string(raw)
}

// writeJSONAtomic writes v as indented JSON to path through a temporary file and a rename.
func writeJSONAtomic(path string, v any) error {
	raw, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return wrapf(err, "encoding %s", path)
	}
	if err := fsutil.WriteFileAtomic(path, append(raw, '\n')); err != nil {
		return fmt.Errorf("trainer: %w", err)
	}
	return nil
}

// metricsWriter is the default Logger: it appends Records to a run's metrics.jsonl (one JSON
// object per line), for Fit and for Run.
type metricsWriter struct {
	f    *os.File
	path string
	n    int // records in the file
}

// openMetrics opens metrics.jsonl at path for appending (creating it), keeping exactly its
// first keep records: those written up to the checkpoint the run continues from (0 for a
// new run). Records logged after that checkpoint (by a session that was interrupted) are
// dropped, so that the resumed run continues the file without gaps or repeats; notice (nil:
// silent) reports what was done.
func openMetrics(path string, keep int, notice func(format string, args ...any)) (*metricsWriter, error) {
	if notice == nil {
		notice = func(string, ...any) {}
	}
	raw, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, wrapf(err, "reading %s", path)
	}
	complete := bytes.Count(raw, []byte("\n")) // a last line without its newline is a torn write
	torn := 0
	if len(raw) > 0 && raw[len(raw)-1] != '\n' {
		torn = 1
	}
	kept := min(complete, keep)
	cut := 0
	for range kept {
		cut += bytes.IndexByte(raw[cut:], '\n') + 1
	}
	if cut < len(raw) {
		if err := fsutil.WriteFileAtomic(path, raw[:cut]); err != nil {
			return nil, fmt.Errorf("trainer: %w", err)
		}
		notice("trainer: %s: dropped %d record(s) written after the checkpoint (they will be written again)",
			path, complete+torn-kept)
	}
	switch {
	case raw == nil && keep > 0:
		notice("trainer: %s is missing; the checkpoint follows %d record(s): the new file starts after them", path, keep)
	case complete < keep:
		notice("trainer: %s has %d record(s), the checkpoint follows %d: the file has lost some", path, complete, keep)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("trainer: %w", err)
	}
	return &metricsWriter{f: f, path: path, n: kept}, nil
}

// Log appends one record; its Time is set to now when empty.
func (l *metricsWriter) Log(r Record) error {
	if r.Time == "" {
		r.Time = time.Now().UTC().Format(time.RFC3339Nano)
	}
	raw, err := json.Marshal(r)
	if err != nil {
		return wrapf(err, "encoding a record for %s", l.path)
	}
	if _, err := l.f.Write(append(raw, '\n')); err != nil {
		return wrapf(err, "writing %s", l.path)
	}
	l.n++
	return nil
}

// Len is the number of records in the file: what a checkpoint stores, to give OpenMetrics
// as keep on resume.
func (l *metricsWriter) Len() int { return l.n }

// Sync flushes the file to disk (before a checkpoint records its length).
func (l *metricsWriter) Sync() error {
	if err := l.f.Sync(); err != nil {
		return wrapf(err, "syncing %s", l.path)
	}
	return nil
}

// Close closes the file.
func (l *metricsWriter) Close() error { return l.f.Close() }
