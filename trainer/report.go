package trainer

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Session is what a RunLogger is told when a session of a run starts: by Fit, and by a
// hand-written loop's Run.AddLoggers, on the main process only.
type Session struct {
	// Dir is the run directory.
	Dir string
	// Step is the step of the checkpoint the session continues from (0 for a new run). What
	// the logger's file holds about later steps was logged by an interrupted session after
	// that checkpoint and is logged again: the logger drops it.
	Step int64
	// Config is the run's config.json (the hyperparameters), for loggers that record it.
	Config json.RawMessage
	// Notice prints what the logger did to its file (never nil).
	Notice func(format string, args ...any)
}

// RunLogger is a Logger that keeps its own file in the run directory, as metrics.jsonl does:
// NewTensorBoardLogger and NewCSVLogger. Given to Config.Loggers or Run.AddLoggers, it is
// started on the main process only (so only rank 0 writes), before the first record, and
// synced before each checkpoint; on the other processes it is only closed.
type RunLogger interface {
	Logger
	// Start opens the logger's file in s.Dir, keeping what it holds up to step s.Step.
	Start(s Session) error
	// Sync flushes the file to disk, so that a checkpoint never follows records that a crash
	// loses.
	Sync() error
}

// ReportJSONL is ReportTo's name for metrics.jsonl, which every run writes: the default value
// of a --report_to flag (the examples'). ReportTo's godoc lists the other names.
const ReportJSONL = "jsonl"

// ReportTo's other names: the loggers, and Hugging Face's "all" and "none".
const (
	reportTensorBoard = "tensorboard"
	reportCSV         = "csv"
	reportAll         = "all"
	reportNone        = "none"
)

// ReportTo returns the loggers that list names, comma-separated, as the examples'
// --report_to flag (Hugging Face's report_to): "tensorboard" (NewTensorBoardLogger), "csv"
// (NewCSVLogger), "all" (every one of them), "none" (no logger) and "jsonl", which is
// metrics.jsonl: every run writes it, whatever the list says, so it adds no logger (the list
// may be just "jsonl"). An unknown or repeated name, or "all" or "none" with other names, is
// an error that says so.
func ReportTo(names string) ([]Logger, error) {
	loggers := []string{reportTensorBoard, reportCSV}
	known := append([]string{ReportJSONL}, append(loggers, reportAll, reportNone)...)
	var list []string
	seen := map[string]bool{}
	for _, n := range strings.Split(names, ",") {
		n = strings.ToLower(strings.TrimSpace(n))
		switch {
		case n == "":
			continue
		case !slices.Contains(known, n):
			return nil, fmt.Errorf("trainer: ReportTo: unknown logger %q in %q (known: %s)", n, names,
				strings.Join(known, ", "))
		case seen[n]:
			return nil, fmt.Errorf("trainer: ReportTo: %q is named twice in %q", n, names)
		}
		seen[n] = true
		list = append(list, n)
	}
	for n, what := range map[string]string{reportAll: "every logger", reportNone: "no logger"} {
		if seen[n] && len(list) > 1 {
			return nil, fmt.Errorf("trainer: ReportTo: %q means %s but %q names others too: give it alone", n, what, names)
		}
	}
	if seen[reportAll] {
		list = loggers
	}
	var out []Logger
	for _, n := range list {
		switch n {
		case reportTensorBoard:
			out = append(out, NewTensorBoardLogger())
		case reportCSV:
			out = append(out, NewCSVLogger())
		}
	}
	return out, nil
}

// startLoggers starts the RunLoggers of ls on the main process of a run in dir at step.
func startLoggers(ls []Logger, dir string, step int64, notice func(string, ...any), what string) error {
	var config json.RawMessage
	for i, l := range ls {
		rl, ok := l.(RunLogger)
		if !ok {
			continue
		}
		if config == nil {
			raw, err := os.ReadFile(filepath.Join(dir, configFile))
			if err != nil {
				return wrapf(err, "reading the config for %s", what)
			}
			config = raw
		}
		if err := rl.Start(Session{Dir: dir, Step: step, Config: config, Notice: notice}); err != nil {
			return wrapf(err, "starting %s[%d]", what, i)
		}
	}
	return nil
}

// syncLoggers syncs the RunLoggers of ls before a checkpoint.
func syncLoggers(ls []Logger, what string) error {
	for i, l := range ls {
		if rl, ok := l.(RunLogger); ok {
			if err := rl.Sync(); err != nil {
				return wrapf(err, "syncing %s[%d]", what, i)
			}
		}
	}
	return nil
}

// recordTime is r's Time in seconds since 1970 (now when it has none or it does not parse).
func recordTime(r Record) float64 {
	t, err := time.Parse(time.RFC3339Nano, r.Time)
	if err != nil {
		t = time.Now()
	}
	return float64(t.UnixNano()) / 1e9
}
