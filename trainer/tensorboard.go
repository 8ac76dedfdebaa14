package trainer

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/goaccel/goaccel/internal/fsutil"
	"github.com/goaccel/goaccel/trainer/internal/tfevent"
)

// EventFilePrefix starts the name of the TensorBoard event file in a run directory
// (events.out.tfevents.<seconds>.<host>, TensorBoard's own pattern).
const EventFilePrefix = "events.out.tfevents."

// TensorBoardLogger writes a run's records as TensorBoard scalars into one event file in the
// run directory, so that `tensorboard --logdir RUN` shows the run, and `tensorboard --logdir`
// of a folder of runs compares them by directory name. A record of kind K at step S gives a
// scalar K/<name> at step S for each number of its metrics.jsonl line, under its name there
// (K/epoch, K/loss, K/lr, K/grad_norm, K/examples_per_s, K/loss_scale, K/skipped_updates,
// K/elapsed_s, and K/<metric> for its evaluation metrics; absent numbers are left out): the
// scalars are those of the list that metrics.jsonl is written from.
// The run's config.json is written once, as the text "config" (TensorBoard's Text tab).
//
// A resumed session continues the same file: a torn last record is cut off and the events
// after the checkpoint's step are dropped, so that no step is shown twice or is missing.
// Each record is one write to the file, which TensorBoard reads while the run goes on.
type TensorBoardLogger struct{ logFile }

// NewTensorBoardLogger returns a TensorBoardLogger for Config.Loggers or Run.AddLoggers,
// which start it in the run directory.
func NewTensorBoardLogger() *TensorBoardLogger { return &TensorBoardLogger{} }

// Path is the event file (empty before Start).
func (l *TensorBoardLogger) Path() string { return l.path }

// Start opens the run directory's event file, or creates it, keeping the events up to step
// s.Step.
func (l *TensorBoardLogger) Start(s Session) error {
	if l.f != nil {
		return fmt.Errorf("trainer: TensorBoardLogger.Start: already writing %s; a logger serves one run", l.path)
	}
	files, err := filepath.Glob(filepath.Join(s.Dir, EventFilePrefix+"*"))
	if err != nil {
		return fmt.Errorf("trainer: TensorBoardLogger.Start: %w", err)
	}
	switch len(files) {
	case 0:
		return l.create(s)
	case 1:
		l.path = files[0]
	default:
		return fmt.Errorf("trainer: TensorBoardLogger.Start: %s holds %d event files (%s); a run has one: "+
			"move the others away", s.Dir, len(files), strings.Join(files, ", "))
	}
	raw, err := os.ReadFile(l.path)
	if err != nil {
		return fmt.Errorf("trainer: TensorBoardLogger.Start: %w", err)
	}
	records, end, err := tfevent.Split(raw)
	if err != nil {
		return fmt.Errorf("trainer: TensorBoardLogger.Start: %s: %w; it is not a torn write: move the file away to "+
			"start a new one", l.path, err)
	}
	kept, dropped := 0, 0
	cut := 0
	for i, rec := range records {
		e, err := tfevent.Unmarshal(rec)
		if err != nil {
			return fmt.Errorf("trainer: TensorBoardLogger.Start: %s: event %d: %w", l.path, i, err)
		}
		if e.Step > s.Step {
			dropped = len(records) - i
			break
		}
		kept++
		cut += 16 + len(rec)
	}
	if end < len(raw) {
		s.Notice("trainer: %s: cut off a torn last record (%d bytes)", l.path, len(raw)-end)
	}
	if dropped > 0 {
		s.Notice("trainer: %s: dropped %d event(s) written after the checkpoint of step %d (they will be written again)",
			l.path, dropped, s.Step)
	}
	if cut < len(raw) {
		if err := replaceFile(l.path, raw[:cut]); err != nil {
			return fmt.Errorf("trainer: TensorBoardLogger.Start: %w", err)
		}
	}
	l.f, err = os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("trainer: TensorBoardLogger.Start: %w", err)
	}
	if kept == 0 {
		return l.header(s)
	}
	return nil
}

// create makes the event file of a run that has none.
func (l *TensorBoardLogger) create(s Session) error {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	l.path = filepath.Join(s.Dir, fmt.Sprintf("%s%d.%s", EventFilePrefix, time.Now().Unix(), host))
	l.f, err = os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("trainer: TensorBoardLogger.Start: %w", err)
	}
	return l.header(s)
}

// header writes the file's first events: its version, and the run's config as text.
func (l *TensorBoardLogger) header(s Session) error {
	now := float64(time.Now().UnixNano()) / 1e9
	if err := l.write(tfevent.Event{WallTime: now, FileVersion: tfevent.FileVersion}); err != nil {
		return err
	}
	if len(s.Config) == 0 {
		return nil
	}
	// Indented by four spaces: a Markdown code block.
	text := "    " + strings.ReplaceAll(strings.TrimSpace(string(s.Config)), "\n", "\n    ")
	return l.write(tfevent.Event{WallTime: now, Step: s.Step, Texts: []tfevent.Text{{Tag: "config", Text: text}}})
}

func (l *TensorBoardLogger) write(e tfevent.Event) error {
	if _, err := l.f.Write(tfevent.Frame(e.Marshal())); err != nil {
		return wrapf(err, "writing %s", l.path)
	}
	return nil
}

// Log writes r's numbers as one event at step r.Step.
func (l *TensorBoardLogger) Log(r Record) error {
	if l.f == nil {
		return errors.New("trainer: TensorBoardLogger.Log before Start (Fit and Run.AddLoggers start it)")
	}
	e := tfevent.Event{WallTime: recordTime(r), Step: r.Step}
	for _, f := range r.fields() {
		e.Scalars = append(e.Scalars, tfevent.Scalar{Tag: f.tensorBoardTag(r.Kind), Value: float32(f.v)})
	}
	return l.write(e)
}

// replaceFile replaces path with data through a temporary file whose name TensorBoard does
// not take for an event file, and a rename.
func replaceFile(path string, data []byte) error {
	dir := filepath.Dir(path)
	f, err := fsutil.CreateTemp(dir, fsutil.TempPrefix+"tensorboard-")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return err
	}
	return fsutil.SyncDir(dir)
}

// logFile is the open file of a RunLogger.
type logFile struct {
	f    *os.File
	path string
}

// Sync flushes the file to disk.
func (l *logFile) Sync() error {
	if l.f == nil {
		return nil
	}
	if err := l.f.Sync(); err != nil {
		return wrapf(err, "syncing %s", l.path)
	}
	return nil
}

// Close closes the file (nothing to do on a process that never started the logger).
func (l *logFile) Close() error {
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}

var _ RunLogger = (*TensorBoardLogger)(nil)
