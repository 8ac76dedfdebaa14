package trainer

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/goaccel/goaccel/internal/fsutil"
)

// CSVFile is the CSV logger's file in a run directory.
const CSVFile = "metrics.csv"

// csvFixed are the first columns of metrics.csv; the numbers of the records follow.
var csvFixed = []string{"step", "kind", "time", "elapsed_s"}

// CSVLogger writes a run's records to metrics.csv in the run directory, one row per record:
// step, kind, time, elapsed_s, then a column per number of metrics.jsonl, under its name
// there (epoch, loss, lr, grad_norm, examples_per_s, loss_scale and skipped_updates under
// fp16; an evaluation's metrics as eval_<name>): the columns are those of the list that
// metrics.jsonl is written from. A cell is empty where the record has no such number;
// infinities are "inf" and "-inf", a measured NaN is "nan". A record that brings a new
// column (the first evaluation, the first fp16 record) rewrites the file with the wider
// header.
//
// A resumed session continues the file: a torn last line is cut off and the rows after the
// checkpoint's step are dropped.
type CSVLogger struct {
	logFile
	header []string
}

// NewCSVLogger returns a CSVLogger for Config.Loggers or Run.AddLoggers, which start it in the
// run directory.
func NewCSVLogger() *CSVLogger { return &CSVLogger{} }

// Start opens metrics.csv in s.Dir, or creates it, keeping the rows up to step s.Step.
func (l *CSVLogger) Start(s Session) error {
	if l.f != nil {
		return fmt.Errorf("trainer: CSVLogger.Start: already writing %s; a logger serves one run", l.path)
	}
	l.path = filepath.Join(s.Dir, CSVFile)
	raw, err := os.ReadFile(l.path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("trainer: CSVLogger.Start: %w", err)
	}
	complete := raw[:bytes.LastIndexByte(raw, '\n')+1]
	if len(complete) < len(raw) {
		s.Notice("trainer: %s: cut off a torn last line", l.path)
	}
	rows, err := readCSV(complete)
	if err != nil {
		return fmt.Errorf("trainer: CSVLogger.Start: %s: %w", l.path, err)
	}
	if len(rows) > 0 {
		if !slices.Equal(rows[0][:min(len(rows[0]), len(csvFixed))], csvFixed) {
			return fmt.Errorf("trainer: CSVLogger.Start: %s does not start with the columns %v: it is not this "+
				"logger's; move it away", l.path, csvFixed)
		}
		l.header = rows[0]
		rows = rows[1:]
	}
	keep := len(rows)
	for i, row := range rows {
		step, err := strconv.ParseInt(row[0], 10, 64)
		if err != nil {
			return fmt.Errorf("trainer: CSVLogger.Start: %s: row %d: step %q: %w", l.path, i+2, row[0], err)
		}
		if step > s.Step {
			keep = i
			s.Notice("trainer: %s: dropped %d row(s) written after the checkpoint of step %d (they will be written again)",
				l.path, len(rows)-i, s.Step)
			break
		}
	}
	if keep < len(rows) || len(complete) < len(raw) {
		if err := l.rewrite(rows[:keep]); err != nil {
			return err
		}
	}
	return l.open()
}

func (l *CSVLogger) open() error {
	var err error
	l.f, err = os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("trainer: CSVLogger: %w", err)
	}
	return nil
}

// rewrite replaces the file with l.header and rows, each padded to the header's width.
func (l *CSVLogger) rewrite(rows [][]string) error {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	if len(l.header) > 0 {
		_ = w.Write(l.header)
	}
	for _, row := range rows {
		for len(row) < len(l.header) {
			row = append(row, "")
		}
		_ = w.Write(row)
	}
	w.Flush()
	if err := fsutil.WriteFileAtomic(l.path, b.Bytes()); err != nil {
		return fmt.Errorf("trainer: CSVLogger: %w", err)
	}
	return nil
}

// Log appends r as one row.
func (l *CSVLogger) Log(r Record) error {
	if l.f == nil {
		return errors.New("trainer: CSVLogger.Log before Start (Fit and Run.AddLoggers start it)")
	}
	if r.Time == "" {
		r.Time = time.Now().UTC().Format(time.RFC3339Nano)
	}
	cells := map[string]string{"step": strconv.FormatInt(r.Step, 10), "kind": r.Kind, "time": r.Time}
	var names []string
	for _, f := range r.fields() {
		name := f.csvColumn()
		names = append(names, name)
		cells[name] = csvNumber(f.v)
	}
	if len(l.header) == 0 {
		l.header = slices.Clone(csvFixed)
	}
	wider := false
	for _, n := range names {
		if !slices.Contains(l.header, n) {
			l.header, wider = append(l.header, n), true
		}
	}
	if wider {
		if err := l.widen(); err != nil {
			return err
		}
	}
	row := make([]string, len(l.header))
	for i, h := range l.header {
		row[i] = cells[h]
	}
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	_ = w.Write(row)
	w.Flush()
	if _, err := l.f.Write(b.Bytes()); err != nil {
		return wrapf(err, "writing %s", l.path)
	}
	return nil
}

// widen rewrites the file with the (wider) header and reopens it.
func (l *CSVLogger) widen() error {
	raw, err := os.ReadFile(l.path)
	if err != nil {
		return fmt.Errorf("trainer: CSVLogger: %w", err)
	}
	rows, err := readCSV(raw)
	if err != nil {
		return fmt.Errorf("trainer: CSVLogger: %s: %w", l.path, err)
	}
	if len(rows) > 0 {
		rows = rows[1:]
	}
	if err := l.f.Close(); err != nil {
		return fmt.Errorf("trainer: CSVLogger: %w", err)
	}
	l.f = nil
	if err := l.rewrite(rows); err != nil {
		return err
	}
	return l.open()
}

// readCSV parses raw, whose rows may have fewer cells than the header.
func readCSV(raw []byte) ([][]string, error) {
	r := csv.NewReader(bytes.NewReader(raw))
	r.FieldsPerRecord = -1
	return r.ReadAll()
}

func csvNumber(v float64) string {
	switch {
	case math.IsNaN(v):
		return "nan"
	case math.IsInf(v, 1):
		return "inf"
	case math.IsInf(v, -1):
		return "-inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

var _ RunLogger = (*CSVLogger)(nil)
