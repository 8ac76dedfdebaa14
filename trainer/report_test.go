package trainer

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goaccel/goaccel/accelerator"
	"github.com/goaccel/goaccel/internal/envvar"
	"github.com/goaccel/goaccel/internal/testutil"
	"github.com/goaccel/goaccel/trainer/internal/tfevent"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// tbPoint is one scalar of an event file or of metrics.jsonl: its tag and step.
type tbPoint struct {
	tag  string
	step int64
}

// readEventFile returns the run's only event file's scalars in file order, failing the test
// when the run has no event file or more than one.
func readEventFile(t *testing.T, dir string) (tags []tbPoint, values []float32, texts []string) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, EventFilePrefix+"*"))
	if len(files) != 1 {
		t.Fatalf("%s holds %d event files %v, want 1", dir, len(files), files)
	}
	raw, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	recs, end, err := tfevent.Split(raw)
	if err != nil || end != len(raw) {
		t.Fatalf("%s: %v (intact %d of %d bytes)", files[0], err, end, len(raw))
	}
	for i, rec := range recs {
		e, err := tfevent.Unmarshal(rec)
		if err != nil {
			t.Fatalf("%s: event %d: %v", files[0], i, err)
		}
		if i == 0 && e.FileVersion != tfevent.FileVersion {
			t.Errorf("%s: the first event has file_version %q, want %q", files[0], e.FileVersion, tfevent.FileVersion)
		}
		for _, s := range e.Scalars {
			tags, values = append(tags, tbPoint{s.Tag, e.Step}), append(values, s.Value)
		}
		for _, x := range e.Texts {
			texts = append(texts, x.Tag)
		}
	}
	return tags, values, texts
}

// jsonlPoints lists the scalars that metrics.jsonl's records give TensorBoard.
func jsonlPoints(recs []Record) (tags []tbPoint, values []float64) {
	for _, r := range recs {
		for _, f := range r.fields() {
			tags, values = append(tags, tbPoint{f.tensorBoardTag(r.Kind), r.Step}), append(values, f.v)
		}
	}
	return tags, values
}

// checkSteps fails the test unless every tag's steps strictly increase.
func checkSteps(t *testing.T, what string, tags []tbPoint) {
	t.Helper()
	last := map[string]int64{}
	for _, p := range tags {
		if s, ok := last[p.tag]; ok && p.step <= s {
			t.Errorf("%s: %s at step %d after step %d: steps must strictly increase", what, p.tag, p.step, s)
		}
		last[p.tag] = p.step
	}
}

// fitWithReports runs a 2-epoch Fit of the toy model on one device with the TensorBoard and
// CSV loggers, logging every update, clipping (so that gradient norms are recorded) and
// evaluating every 3 updates.
func fitWithReports(t *testing.T, dir string) {
	t.Helper()
	loggers, err := ReportTo("jsonl, tensorboard,csv")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := New(accOn(t, 1), model.NewStore(), optimizer.Adam().Done(), toyTask(8))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if _, err := tr.Fit(toyLoader(t, 32, 0, 8, true), toyLoader(t, 16, 1000, 8, false), Config{OutputDir: dir,
		Epochs: 2, LearningRate: 0.05, LogEvery: 1, EvalEvery: 3, ClipGradNorm: 1, Output: &out,
		Loggers: loggers}); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
}

// TestTensorBoardAndCSVLoggers: with --report_to's loggers, the run directory holds one event
// file with every number of metrics.jsonl as a scalar at the same step (float32), the config
// as text, and metrics.csv with one row per record and the same numbers.
func TestTensorBoardAndCSVLoggers(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	fitWithReports(t, dir)
	recs := readRecords(t, dir)
	wantTags, wantValues := jsonlPoints(recs)
	tags, values, texts := readEventFile(t, dir)
	if !slices.Equal(tags, wantTags) {
		t.Fatalf("the event file has the scalars\n%v\nmetrics.jsonl\n%v", tags, wantTags)
	}
	for i, v := range values {
		if float64(v) != float64(float32(wantValues[i])) {
			t.Errorf("%s at step %d: %g in the event file, %g in metrics.jsonl", tags[i].tag, tags[i].step, v, wantValues[i])
		}
	}
	for _, tag := range []string{"train/loss", "train/lr", "train/grad_norm", "train/examples_per_s", "eval/accuracy", "eval/loss"} {
		if !slices.ContainsFunc(tags, func(p tbPoint) bool { return p.tag == tag }) {
			t.Errorf("the event file has no %s", tag)
		}
	}
	if !slices.Equal(texts, []string{"config"}) {
		t.Errorf("the event file's texts: %v, want [config]", texts)
	}
	checkSteps(t, "event file", tags)

	rows := readCSVFile(t, dir)
	if len(rows) != len(recs) {
		t.Fatalf("metrics.csv has %d rows, metrics.jsonl %d records", len(rows), len(recs))
	}
	for i, r := range recs {
		row := rows[i]
		if row["step"] != fmt.Sprint(r.Step) || row["kind"] != r.Kind {
			t.Errorf("metrics.csv row %d: step %s kind %s, want %d %s", i+1, row["step"], row["kind"], r.Step, r.Kind)
		}
		for _, f := range r.fields() {
			name := f.csvColumn()
			if got, err := strconv.ParseFloat(row[name], 64); err != nil || got != f.v {
				t.Errorf("metrics.csv row %d: %s = %q, metrics.jsonl %g", i+1, name, row[name], f.v)
			}
		}
	}
}

// readCSVFile reads metrics.csv as maps from column to cell.
func readCSVFile(t *testing.T, dir string) []map[string]string {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, CSVFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	all, err := csv.NewReader(f).ReadAll()
	if err != nil || len(all) == 0 {
		t.Fatalf("metrics.csv: %v (%d lines)", err, len(all))
	}
	var out []map[string]string
	for _, row := range all[1:] {
		m := map[string]string{}
		for i, h := range all[0] {
			m[h] = row[i]
		}
		out = append(out, m)
	}
	return out
}

// TestLoggersResumeRule: a torn last record and what was logged after the checkpoint's step
// are cut from the event file and metrics.csv when a session starts at that step; a Start
// after another logger's file, or twice, is an error.
func TestLoggersResumeRule(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, configFile), []byte(`{"format":"goaccel-run"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	var notices []string
	notice := func(format string, args ...any) { notices = append(notices, fmt.Sprintf(format, args...)) }
	session := func(l RunLogger, step int64) {
		t.Helper()
		if err := l.Start(Session{Dir: dir, Step: step, Config: []byte(`{}`), Notice: notice}); err != nil {
			t.Fatal(err)
		}
	}
	rec := func(step int64) Record {
		return Record{Kind: KindTrain, Step: step, Epoch: float64(step) / 10, Loss: 1 / float64(step), LR: 0.1,
			GradNorm: nan, ExamplesPerSec: 100, Time: time.Now().UTC().Format(time.RFC3339Nano)}
	}
	tb, cs := NewTensorBoardLogger(), NewCSVLogger()
	for _, l := range []RunLogger{tb, cs} {
		session(l, 0)
		for s := int64(1); s <= 8; s++ {
			if err := l.Log(rec(s)); err != nil {
				t.Fatal(err)
			}
		}
		if err := l.Start(Session{Dir: dir, Notice: notice}); err == nil || !strings.Contains(err.Error(), "already") {
			t.Errorf("a second Start: %v, want an error", err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// A crash in the middle of the next record.
	appendBytes(t, tb.Path(), tfevent.Frame(tfevent.Event{Step: 9, Scalars: []tfevent.Scalar{{Tag: "train/loss", Value: 1}}}.Marshal())[:20])
	appendBytes(t, filepath.Join(dir, CSVFile), []byte("9,train,2026"))
	// The checkpoint is at step 5: the session logs from step 6 again.
	tb, cs = NewTensorBoardLogger(), NewCSVLogger()
	for _, l := range []RunLogger{tb, cs} {
		session(l, 5)
		for s := int64(6); s <= 10; s++ {
			if err := l.Log(rec(s)); err != nil {
				t.Fatal(err)
			}
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	tags, _, _ := readEventFile(t, dir)
	checkSteps(t, "event file", tags)
	var steps []int64
	for _, p := range tags {
		if p.tag == "train/loss" {
			steps = append(steps, p.step)
		}
	}
	if !slices.Equal(steps, []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}) {
		t.Errorf("train/loss at steps %v after the resume at 5, want 1 to 10 once each", steps)
	}
	rows := readCSVFile(t, dir)
	var csvSteps []string
	for _, r := range rows {
		csvSteps = append(csvSteps, r["step"])
	}
	if strings.Join(csvSteps, " ") != "1 2 3 4 5 6 7 8 9 10" {
		t.Errorf("metrics.csv steps %v after the resume at 5, want 1 to 10 once each", csvSteps)
	}
	joined := strings.Join(notices, "\n")
	for _, want := range []string{"torn last record", "dropped 3 event(s)", "torn last line", "dropped 3 row(s)"} {
		if !strings.Contains(joined, want) {
			t.Errorf("the notices do not say %q:\n%s", want, joined)
		}
	}
	// A second event file: which one is the run's is not guessed.
	if err := os.WriteFile(filepath.Join(dir, EventFilePrefix+"1.other"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := NewTensorBoardLogger().Start(Session{Dir: dir, Notice: notice}); err == nil ||
		!strings.Contains(err.Error(), "2 event files") {
		t.Errorf("Start with 2 event files: %v, want an error naming them", err)
	}
	if _, err := ReportTo("jsonl,wandb"); err == nil || !strings.Contains(err.Error(), `"wandb"`) {
		t.Errorf(`ReportTo("jsonl,wandb"): %v, want an error naming wandb`, err)
	}
}

func appendBytes(t *testing.T, path string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// needTensorBoard returns a python3 that imports pip's tensorboard (`make deps` installs it
// into .deps/python, on the PYTHONPATH that the Makefile exports). Without it the test is
// skipped with a line that starts with SKIPPING, except under CI, where it fails.
func needTensorBoard(t *testing.T) string {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err == nil {
		var out []byte
		out, err = exec.Command(py, "-c", "import tensorboard").CombinedOutput()
		if err != nil {
			err = fmt.Errorf("%s cannot import tensorboard: %s", py, strings.TrimSpace(string(out)))
		}
	}
	if err == nil {
		return py
	}
	msg := "SKIPPING TensorBoard test: needs python3 with pip's tensorboard (make deps; the test with " +
		"PYTHONPATH=$PWD/.deps/python): " + err.Error()
	if envvar.CI.Value() != "" {
		t.Fatal("CI is set but " + msg)
	}
	t.Skip(msg)
	return ""
}

// readerScript prints, as JSON, every scalar that TensorBoard's EventAccumulator finds in the
// run directory argv[1]: {tag: [[step, value], ...]}, and the text tags.
const readerScript = `
import json, sys
from tensorboard.backend.event_processing import event_accumulator as ea
acc = ea.EventAccumulator(sys.argv[1], size_guidance={ea.SCALARS: 0, ea.TENSORS: 0})
acc.Reload()
tags = acc.Tags()
out = {"scalars": {t: [[e.step, e.value] for e in acc.Scalars(t)] for t in tags["scalars"]}, "tensors": tags["tensors"]}
print(json.dumps(out))
`

// TestTensorBoardReadsTheEventFile: pip's TensorBoard reads the event file of a run: its
// EventAccumulator finds every scalar of metrics.jsonl at the same steps, and `tensorboard
// --logdir RUN`, started on 127.0.0.1, serves them through its HTTP scalars API, and the
// config through its text plugin.
func TestTensorBoardReadsTheEventFile(t *testing.T) {
	testutil.Long(t, "starts TensorBoard's own reader and server (tier 1: TestTensorBoardAndCSVLoggers checks the event file's records)")
	py := needTensorBoard(t)
	dir := filepath.Join(t.TempDir(), "run")
	fitWithReports(t, dir)
	wantTags, wantValues := jsonlPoints(readRecords(t, dir))
	want := map[string][][2]float64{}
	for i, p := range wantTags {
		want[p.tag] = append(want[p.tag], [2]float64{float64(p.step), wantValues[i]})
	}
	script := filepath.Join(t.TempDir(), "read.py")
	if err := os.WriteFile(script, []byte(readerScript), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(py, script, dir).Output()
	if err != nil {
		t.Fatalf("EventAccumulator: %v\n%s", err, out)
	}
	var got struct {
		Scalars map[string][][2]float64
		Tensors []string
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	compareSeries(t, "EventAccumulator", got.Scalars, want)
	if !slices.Contains(got.Tensors, "config") {
		t.Errorf("EventAccumulator finds the tensors %v, want the text \"config\"", got.Tensors)
	}

	// The server, with its Python reader and with its Rust data server (the default when
	// tensorboard-data-server is installed, as pip installs it).
	for _, fast := range []string{"false", "true"} {
		served := serveScalars(t, py, dir, fast, want)
		compareSeries(t, "tensorboard --load_fast="+fast+"'s HTTP scalars API", served, want)
	}
}

// serveScalars starts `tensorboard --logdir dir` on 127.0.0.1 with --load_fast fast, and returns
// every scalar series that its HTTP API serves once it serves as many points as want has (or
// after 4 minutes, a margin for a machine at load 8: it usually takes seconds); it also checks that the text plugin serves the config.
func serveScalars(t *testing.T, py, dir, fast string, want map[string][][2]float64) map[string][][2]float64 {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	var log bytes.Buffer
	cmd := exec.CommandContext(ctx, py, "-m", "tensorboard.main", "--logdir", dir, "--host", "127.0.0.1",
		"--port", fmt.Sprint(port), "--load_fast", fast)
	cmd.Stdout, cmd.Stderr = &log, &log
	// TensorBoard writes its server's record under $TMPDIR/.tensorboard-info and removes it on a
	// clean exit, which the kill below is not: the record goes to the test's own folder.
	cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	get := func(path string) ([]byte, error) {
		resp, err := http.Get(base + path)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("GET %s: %s: %s", path, resp.Status, b)
		}
		return b, err
	}
	// The server answers once it has started; it reads the logdir shortly after.
	served := map[string][][2]float64{}
	for deadline := time.Now().Add(4 * time.Minute); ; time.Sleep(500 * time.Millisecond) {
		served, err = fetchScalars(get)
		complete := err == nil
		for tag, w := range want {
			complete = complete && len(served[tag]) >= len(w)
		}
		if complete {
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Errorf("tensorboard --load_fast=%s serves not all the scalars after 4 minutes (last: %v); its log:\n%s", fast, err,
				log.String())
			return served
		}
	}
	text, err := get("/data/plugin/text/text?" + url.Values{"run": {"."}, "tag": {"config"}}.Encode())
	if err != nil || !bytes.Contains(text, []byte("learning_rate")) {
		t.Errorf("tensorboard --load_fast=%s: the text plugin's config: %v: %.200s", fast, err, text)
	}
	return served
}

// fetchScalars reads every scalar series of the only run in the logdir through TensorBoard's
// HTTP scalars API (get is a GET of a path of the server).
func fetchScalars(get func(path string) ([]byte, error)) (map[string][][2]float64, error) {
	tagsJSON, err := get("/data/plugin/scalars/tags")
	if err != nil {
		return nil, err
	}
	var tagsByRun map[string]map[string]any
	if err := json.Unmarshal(tagsJSON, &tagsByRun); err != nil {
		return nil, fmt.Errorf("/data/plugin/scalars/tags: %v: %s", err, tagsJSON)
	}
	if len(tagsByRun) != 1 || tagsByRun["."] == nil {
		return nil, fmt.Errorf("/data/plugin/scalars/tags: %s, want the one run \".\"", tagsJSON)
	}
	served := map[string][][2]float64{}
	for tag := range tagsByRun["."] {
		b, err := get("/data/plugin/scalars/scalars?" + url.Values{"run": {"."}, "tag": {tag}}.Encode())
		if err != nil {
			return nil, err
		}
		var points [][3]float64 // wall time, step, value
		if err := json.Unmarshal(b, &points); err != nil {
			return nil, fmt.Errorf("%s: %v: %s", tag, err, b)
		}
		for _, p := range points {
			served[tag] = append(served[tag], [2]float64{p[1], p[2]})
		}
	}
	return served, nil
}

// compareSeries compares tag -> [step, value] series, values as float32.
func compareSeries(t *testing.T, what string, got, want map[string][][2]float64) {
	t.Helper()
	for tag, w := range want {
		g := got[tag]
		if len(g) != len(w) {
			t.Errorf("%s: %s has %d points, metrics.jsonl %d", what, tag, len(g), len(w))
			continue
		}
		for i := range w {
			if g[i][0] != w[i][0] || float32(g[i][1]) != float32(w[i][1]) && !(math.IsNaN(g[i][1]) && math.IsNaN(w[i][1])) {
				t.Errorf("%s: %s point %d is (step %g, %g), metrics.jsonl (step %g, %g)", what, tag, i, g[i][0], g[i][1],
					w[i][0], w[i][1])
			}
		}
	}
	for tag := range got {
		if _, ok := want[tag]; !ok {
			t.Errorf("%s: %s is not in metrics.jsonl", what, tag)
		}
	}
}

// TestLoggersTwoProcessesAndKill: a 2-process Fit with the TensorBoard and CSV loggers writes
// one event file (rank 0's). A run whose rank 0 is SIGKILLed after the record of update 7
// (its last checkpoint is of update 6), whose files then get a torn last record, resumes
// with the same command: every tag's steps strictly increase, none is missing, and every
// scalar but the throughput equals the uninterrupted run's.
func TestLoggersTwoProcessesAndKill(t *testing.T) {
	testutil.Long(t, "two 2-process runs, one killed and resumed, with the TensorBoard and CSV loggers (tier 1: TestRestartAfterKillEqualsUninterrupted resumes a killed 2-process Fit, TestTensorBoardAndCSVLoggers checks the loggers' files)")
	testutil.NeedMPI(t)
	report := fitReport + "=tensorboard,csv"
	clean, killed := t.TempDir(), t.TempDir()
	if out, err := launchFit(t, clean, 0, report); err != nil {
		t.Fatalf("uninterrupted run: %v\n%s", err, out)
	}
	if out, err := launchFit(t, killed, 0, report, fitKillEnv+"=0:8"); err == nil || !strings.Contains(err.Error(), "signal: killed") {
		t.Fatalf("the run whose rank 0 is killed at update 8 ended with %v:\n%s", err, out)
	}
	files, _ := filepath.Glob(filepath.Join(killed, EventFilePrefix+"*"))
	if len(files) != 1 {
		t.Fatalf("the killed run left the event files %v, want 1", files)
	}
	// The killed session logged update 7, after the checkpoint of update 6: the resumed one
	// logs it again.
	if before, _, _ := readEventFile(t, killed); len(before) == 0 || before[len(before)-1] != (tbPoint{"train/elapsed_s", 7}) {
		t.Fatalf("the killed run's event file ends with %v, want the record of update 7", before[max(0, len(before)-3):])
	}
	appendBytes(t, files[0], tfevent.Frame(tfevent.Event{Step: 8}.Marshal())[:10])
	appendBytes(t, filepath.Join(killed, CSVFile), []byte("8,tra"))
	if out, err := launchFit(t, killed, 0, report); err != nil {
		t.Fatalf("resuming the killed run: %v\n%s", err, out)
	}
	cleanTags, cleanValues, _ := readEventFile(t, clean)
	tags, values, _ := readEventFile(t, killed)
	checkSteps(t, "the resumed run's event file", tags)
	var steps []int64
	for _, p := range tags {
		if p.tag == "train/loss" {
			steps = append(steps, p.step)
		}
	}
	if len(steps) != 24 || steps[0] != 1 || steps[23] != 24 {
		t.Errorf("train/loss at steps %v, want 1 to 24", steps)
	}
	if !slices.Equal(tags, cleanTags) {
		t.Fatalf("the resumed run's scalars\n%v\nthe uninterrupted run's\n%v", tags, cleanTags)
	}
	for i, p := range tags {
		timed := p.tag == "train/examples_per_s" || strings.HasSuffix(p.tag, "/elapsed_s") || strings.HasSuffix(p.tag, "/data_wait_s")
		if !timed && values[i] != cleanValues[i] {
			t.Errorf("%s at step %d: %g after the kill and resume, %g uninterrupted", p.tag, p.step, values[i], cleanValues[i])
		}
	}
	rowKeys := func(dir string) (keys []string) {
		for _, r := range readCSVFile(t, dir) {
			keys = append(keys, r["kind"]+"@"+r["step"])
		}
		return keys
	}
	if got, want := rowKeys(killed), rowKeys(clean); !slices.Equal(got, want) {
		t.Errorf("metrics.csv after the kill and resume has the rows\n%v\nuninterrupted\n%v", got, want)
	}
}

// numbersScript prints, as JSON, every scalar that TensorBoard's EventAccumulator finds in the
// run directory argv[1]: {tag: [[step, "value"], ...]}, the value as Python's repr, so that
// NaN and infinities pass through JSON.
const numbersScript = `
import json, sys
from tensorboard.backend.event_processing import event_accumulator as ea
acc = ea.EventAccumulator(sys.argv[1], size_guidance={ea.SCALARS: 0})
acc.Reload()
print(json.dumps({t: [[e.step, repr(e.value)] for e in acc.Scalars(t)] for t in acc.Tags()["scalars"]}))
`

// TestFP16RecordsReachEveryLogger: for each record of an fp16 Fit run whose first updates
// are skipped, the numbers of its metrics.jsonl line (read as plain JSON, not through
// Record), its metrics.csv row (read as plain CSV) and the scalars that pip's TensorBoard
// reads from the event file are the same names with the same values at the same step:
// loss_scale and skipped_updates included.
func TestFP16RecordsReachEveryLogger(t *testing.T) {
	py := needTensorBoard(t)
	acc, err := accelerator.New(accelerator.Config{Backend: cpuPlugin(t), Devices: 1, Quiet: true, Seed: 7,
		MixedPrecision: "fp16"})
	if err != nil {
		t.Fatal(err)
	}
	defer acc.Close()
	task := toyTask(4)
	ce := task.Loss
	// A loss 1000 times the cross-entropy overflows the scaled float16 gradients of the first
	// updates, so that some records count skipped updates.
	task.Loss = func(s *model.Scope, b accelerator.GraphBatch) *graph.Node { return graph.MulScalar(ce(s, b), 1000) }
	tr, err := New(acc, model.NewStore(), optimizer.Adam().Done(), task)
	if err != nil {
		t.Fatal(err)
	}
	loggers, err := ReportTo("tensorboard,csv")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "run")
	var out bytes.Buffer
	if _, err := tr.Fit(toyLoader(t, 32, 0, 4, true), toyLoader(t, 16, 1000, 4, false), Config{OutputDir: dir,
		Epochs: 2, LearningRate: 0.01, LogEvery: 2, EvalEvery: 5, ClipGradNorm: 1, Output: &out, Loggers: loggers,
		DisableCheckpoints: true}); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}

	// metrics.jsonl: each record's numbers but the step, by their metrics.csv name
	// (eval_<name> inside "eval").
	type record struct {
		kind    string
		step    int64
		numbers map[string]float64 // by CSV column
		tags    map[string]float64 // by TensorBoard tag
	}
	var recs []record
	raw, err := os.ReadFile(filepath.Join(dir, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	number := func(v any) (float64, bool) {
		switch x := v.(type) {
		case float64:
			return x, true
		case string: // metrics.jsonl's non-finite numbers
			f, err := strconv.ParseFloat(x, 64)
			return f, err == nil && (math.IsNaN(f) || math.IsInf(f, 0))
		}
		return 0, false
	}
	fp16Keys := map[string]bool{}
	for i, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("metrics.jsonl line %d: %v", i+1, err)
		}
		r := record{kind: m["kind"].(string), step: int64(m["step"].(float64)), numbers: map[string]float64{},
			tags: map[string]float64{}}
		for k, v := range m {
			if k == "eval" {
				for ek, ev := range v.(map[string]any) {
					x, ok := number(ev)
					if !ok {
						t.Fatalf("metrics.jsonl line %d: eval.%s = %v is not a number", i+1, ek, ev)
					}
					r.numbers["eval_"+ek], r.tags[r.kind+"/"+ek] = x, x
				}
				continue
			}
			if x, ok := number(v); ok && k != "step" {
				r.numbers[k], r.tags[r.kind+"/"+k] = x, x
				if k == "loss_scale" || k == "skipped_updates" {
					fp16Keys[k] = true
				}
			}
		}
		recs = append(recs, r)
	}
	if !fp16Keys["loss_scale"] || !fp16Keys["skipped_updates"] {
		t.Fatalf("metrics.jsonl of the fp16 run has the fp16 keys %v, want loss_scale and skipped_updates:\n%s", fp16Keys, raw)
	}
	if !slices.ContainsFunc(recs, func(r record) bool { return r.kind == KindEval }) {
		t.Fatalf("metrics.jsonl has no evaluation record:\n%s", raw)
	}
	sameNumbers := func(what string, i int, got, want map[string]float64) {
		t.Helper()
		names := func(m map[string]float64) []string { return slices.Sorted(maps.Keys(m)) }
		if !slices.Equal(names(got), names(want)) {
			t.Errorf("record %d (%s at step %d): %s has %v, metrics.jsonl %v", i+1, recs[i].kind, recs[i].step, what,
				names(got), names(want))
			return
		}
		for k, w := range want {
			g := got[k]
			if float32(g) != float32(w) && !(math.IsNaN(g) && math.IsNaN(w)) {
				t.Errorf("record %d (%s at step %d): %s %s = %g, metrics.jsonl %g", i+1, recs[i].kind, recs[i].step,
					what, k, g, w)
			}
		}
	}

	// metrics.csv: each row's non-empty cells but step, kind and time.
	f, err := os.Open(filepath.Join(dir, CSVFile))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(f).ReadAll()
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows)-1 != len(recs) {
		t.Fatalf("metrics.csv has %d rows, metrics.jsonl %d records", len(rows)-1, len(recs))
	}
	header := rows[0]
	for i, row := range rows[1:] {
		got := map[string]float64{}
		for j, cell := range row {
			switch header[j] {
			case "step":
				if cell != fmt.Sprint(recs[i].step) {
					t.Errorf("metrics.csv row %d: step %s, metrics.jsonl %d", i+1, cell, recs[i].step)
				}
			case "kind", "time":
			default:
				if cell == "" {
					continue
				}
				x, err := strconv.ParseFloat(cell, 64)
				if err != nil {
					t.Errorf("metrics.csv row %d: %s = %q: %v", i+1, header[j], cell, err)
				}
				got[header[j]] = x
			}
		}
		sameNumbers("metrics.csv", i, got, recs[i].numbers)
	}

	// The event file, read by TensorBoard: the scalars at each record's step whose tag
	// starts with the record's kind.
	script := filepath.Join(t.TempDir(), "read.py")
	if err := os.WriteFile(script, []byte(numbersScript), 0o644); err != nil {
		t.Fatal(err)
	}
	tbOut, err := exec.Command(py, script, dir).Output()
	if err != nil {
		t.Fatalf("EventAccumulator: %v\n%s", err, tbOut)
	}
	var series map[string][][2]any
	if err := json.Unmarshal(tbOut, &series); err != nil {
		t.Fatalf("%v: %s", err, tbOut)
	}
	type at struct {
		kind string
		step int64
	}
	scalars := map[at]map[string]float64{}
	for tag, points := range series {
		kind, _, _ := strings.Cut(tag, "/")
		for _, p := range points {
			k := at{kind, int64(p[0].(float64))}
			x, err := strconv.ParseFloat(p[1].(string), 64)
			if err != nil {
				t.Fatalf("TensorBoard's %s: %v", tag, err)
			}
			if scalars[k] == nil {
				scalars[k] = map[string]float64{}
			}
			if _, twice := scalars[k][tag]; twice {
				t.Errorf("TensorBoard has %s twice at step %d", tag, k.step)
			}
			scalars[k][tag] = x
		}
	}
	for i, r := range recs {
		k := at{r.kind, r.step}
		sameNumbers("TensorBoard", i, scalars[k], r.tags)
		delete(scalars, k)
	}
	for k, tags := range scalars {
		t.Errorf("TensorBoard has scalars %v at step %d that no %s record of metrics.jsonl has", tags, k.step, k.kind)
	}
}

// TestRanksRecordsToLoggers: a 2-process Fit with GOACCEL_STRAGGLER_EVERY=4 gives its loggers
// a "ranks" record every 4 updates, with each rank's compute and data wait per update and
// slow_rank; metrics.jsonl stays without them.
func TestRanksRecordsToLoggers(t *testing.T) {
	testutil.NeedMPI(t)
	dir := t.TempDir()
	if out, err := launchFit(t, dir, 0, fitReport+"=csv", "GOACCEL_STRAGGLER_EVERY=4"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var steps []string
	for _, r := range readCSVFile(t, dir) {
		if r["kind"] != KindRanks {
			continue
		}
		steps = append(steps, r["step"])
		for _, k := range []string{"eval_rank0_compute_ms", "eval_rank1_compute_ms", "eval_rank0_data_ms", "eval_rank1_data_ms", "eval_slow_rank"} {
			if v, err := strconv.ParseFloat(r[k], 64); err != nil || v < -1 || k != "eval_slow_rank" && v < 0 {
				t.Errorf("ranks record at step %s: %s=%q", r["step"], k, r[k])
			}
		}
	}
	if want := []string{"4", "8", "12", "16", "20", "24"}; !slices.Equal(steps, want) {
		t.Errorf("ranks records at steps %v, want %v", steps, want)
	}
	for _, r := range readRecords(t, dir) {
		if r.Kind == KindRanks {
			t.Fatalf("metrics.jsonl has a ranks record: %+v", r)
		}
	}
}
