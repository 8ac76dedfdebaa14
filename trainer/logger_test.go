package trainer

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// memLogger keeps the records it is given, as a TensorBoard or CSV logger would write them.
type memLogger struct {
	recs   []Record
	closed int
	fail   error
}

func (l *memLogger) Log(r Record) error {
	l.recs = append(l.recs, r)
	return l.fail
}

func (l *memLogger) Close() error { l.closed++; return nil }

// TestFitLoggers: every record Fit writes to metrics.jsonl (the default JSONL logger) also
// goes, in the same order, to each of Config.Loggers, which Fit closes once when it returns;
// a logger's error stops the run and names the logger.
func TestFitLoggers(t *testing.T) {
	acc := accOn(t, 1)
	dir := filepath.Join(t.TempDir(), "run")
	extra := &memLogger{}
	tr, err := New(acc, model.NewStore(), optimizer.Adam().Done(), toyTask(8))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	_, err = tr.Fit(toyLoader(t, 32, 0, 8, true), toyLoader(t, 16, 1000, 8, false), Config{
		OutputDir: dir, Epochs: 2, LearningRate: 0.05, LogEvery: 1, Output: &out, Loggers: []Logger{extra}})
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	file := readRecords(t, dir)
	kinds := func(rs []Record) []string {
		var s []string
		for _, r := range rs {
			s = append(s, fmt.Sprintf("%s@%d", r.Kind, r.Step))
		}
		return s
	}
	if len(file) == 0 || !slices.Equal(kinds(file), kinds(extra.recs)) {
		t.Errorf("metrics.jsonl has %v, the extra logger got %v", kinds(file), kinds(extra.recs))
	}
	if extra.closed != 1 {
		t.Errorf("the extra logger was closed %d times, want once", extra.closed)
	}

	failing := &memLogger{fail: errors.New("disk full")}
	tr, err = New(acc, model.NewStore(), optimizer.Adam().Done(), toyTask(8))
	if err != nil {
		t.Fatal(err)
	}
	_, err = tr.Fit(toyLoader(t, 32, 0, 8, true), nil, Config{OutputDir: filepath.Join(t.TempDir(), "run"), Epochs: 1,
		LearningRate: 0.05, Output: &out, Loggers: []Logger{failing}})
	if err == nil || !strings.Contains(err.Error(), "Config.Loggers[0]") || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("a failing logger: %v, want an error naming Config.Loggers[0] and its cause", err)
	}
	if failing.closed != 1 {
		t.Errorf("the failing logger was closed %d times, want once", failing.closed)
	}
}
