package trainer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
)

// Record kinds in metrics.jsonl.
const (
	KindTrain = "train" // a training record: mean loss since the last one, lr, examples/s
	KindEval  = "eval"  // an evaluation: the task's metrics over the evaluation set
)

// Record is one line of metrics.jsonl. Optional numbers are absent (NaN in Go) when they do
// not apply: a training record has Loss, LR, ExamplesPerSec and DataWait (and GradNorm when
// clipping is on), an evaluation record has Eval. Non-finite numbers are written as the strings
// "NaN", "Inf" and "-Inf", since JSON has no such numbers.
//
//	{"kind":"train","step":20,"epoch":0.4,"loss":0.6012,"lr":0.0009,"examples_per_s":5120,"data_wait_s":0.02,"elapsed_s":3.1,"time":"2025-..."}
//	{"kind":"eval","step":50,"epoch":1,"elapsed_s":7.9,"eval":{"accuracy":0.81,"f1":0.80,"loss":0.43},"time":"..."}
type Record struct {
	Kind string
	// Step is the number of optimizer updates done.
	Step int64
	// Epoch is the training progress in epochs (1 = the end of the first epoch).
	Epoch float64
	// Loss is the mean training loss of the batches since the previous training record.
	Loss float64
	// LR is the learning rate of the last update, read from /optimizers/learning_rate.
	LR float64
	// GradNorm is the global gradient norm before clipping of the last update.
	GradNorm float64
	// ExamplesPerSec is the training throughput since the previous training record.
	ExamplesPerSec float64
	// DataWait is the time in seconds this process's training steps waited for their
	// batches since the previous training record ("data_wait_s"): the loader's Next, the
	// reading, augmenting and collating it did not finish ahead of the step. A training
	// record has it; it is absent (NaN) elsewhere, and 0 means absent too.
	DataWait float64
	// LossScale is, under MixedPrecision "fp16", the dynamic loss scale after the last
	// update, and SkippedUpdates the updates skipped so far for a non-finite gradient
	// ("loss_scale" and "skipped_updates"); LossScale is 0 (both absent) otherwise.
	LossScale      float64
	SkippedUpdates int64
	// BadExamples is the number of examples this process's training loader left out as
	// broken (data.Skip: an undecodable image with SkipBad) since the previous training
	// record ("bad_examples"); 0 is absent. The run's log names them.
	BadExamples int64
	// Eval holds the evaluation metrics.
	Eval map[string]float64
	// Time is the wall-clock time of the record (RFC 3339).
	Time string
	// Elapsed is the run's wall time in seconds when the record was made, summed over
	// resumed sessions.
	Elapsed float64
}

// nan is the "absent" value of Record's optional numbers.
var nan = math.NaN()

func jsonNumber(v float64) string {
	switch {
	case math.IsNaN(v):
		return `"NaN"`
	case math.IsInf(v, 1):
		return `"Inf"`
	case math.IsInf(v, -1):
		return `"-Inf"`
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// field is one number of a record, as every writer of records names it: key in
// metrics.jsonl (inside its "eval" object for an evaluation metric), csvColumn in
// metrics.csv and tensorBoardTag in the event file.
type field struct {
	// key is the metrics.jsonl name: "loss", or an evaluation metric's own name.
	key string
	// eval is set for an evaluation metric, written inside metrics.jsonl's "eval" object.
	eval bool
	// integer is set for a count, written without a fraction or exponent.
	integer bool
	v       float64
}

// csvColumn is f's column in metrics.csv: its key, "eval_<name>" for an evaluation metric.
func (f field) csvColumn() string {
	if f.eval {
		return "eval_" + f.key
	}
	return f.key
}

// tensorBoardTag is f's scalar tag in the event file of a record of kind kind: "<kind>/<key>".
func (f field) tensorBoardTag(kind string) string {
	if kind == "" {
		kind = "record"
	}
	return kind + "/" + f.key
}

// fields lists r's numbers other than its step, in the order metrics.jsonl writes them,
// leaving out absent ones (NaN; loss_scale and skipped_updates when LossScale is 0;
// bad_examples when 0). It is
// the one list that the JSON writer, CSVLogger and TensorBoardLogger all write, so that a
// number added to Record reaches every file.
func (r Record) fields() []field {
	var out []field
	add := func(f field) {
		if !math.IsNaN(f.v) {
			out = append(out, f)
		}
	}
	add(field{key: "epoch", v: r.Epoch})
	add(field{key: "loss", v: r.Loss})
	add(field{key: "lr", v: r.LR})
	add(field{key: "grad_norm", v: r.GradNorm})
	add(field{key: "examples_per_s", v: r.ExamplesPerSec})
	if r.DataWait > 0 {
		add(field{key: "data_wait_s", v: r.DataWait})
	}
	if r.LossScale > 0 {
		add(field{key: "loss_scale", v: r.LossScale})
		add(field{key: "skipped_updates", integer: true, v: float64(r.SkippedUpdates)})
	}
	if r.BadExamples > 0 {
		add(field{key: "bad_examples", integer: true, v: float64(r.BadExamples)})
	}
	add(field{key: "elapsed_s", v: r.Elapsed})
	names := make([]string, 0, len(r.Eval))
	for k := range r.Eval {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		// An evaluation's NaN (an undefined F1) is written, as it was measured.
		out = append(out, field{key: k, eval: true, v: r.Eval[k]})
	}
	return out
}

// MarshalJSON writes the record as one JSON object with its fields in a fixed order: kind,
// step, the numbers of Record.fields (an evaluation's inside "eval"), time.
func (r Record) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	kind, _ := json.Marshal(r.Kind)
	fmt.Fprintf(&b, `{"kind":%s,"step":%d`, kind, r.Step)
	inEval := false
	for _, f := range r.fields() {
		if f.eval && !inEval {
			b.WriteString(`,"eval":{`)
			inEval = true
		} else {
			b.WriteByte(',')
		}
		key, _ := json.Marshal(f.key)
		if f.integer {
			fmt.Fprintf(&b, `%s:%d`, key, int64(f.v))
		} else {
			fmt.Fprintf(&b, `%s:%s`, key, jsonNumber(f.v))
		}
	}
	if inEval {
		b.WriteByte('}')
	}
	t, _ := json.Marshal(r.Time)
	fmt.Fprintf(&b, `,"time":%s}`, t)
	return b.Bytes(), nil
}

// UnmarshalJSON reads a record written by MarshalJSON; absent numbers become NaN.
func (r *Record) UnmarshalJSON(data []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	num := func(name string) (float64, error) {
		v, ok := raw[name]
		if !ok || string(v) == "null" {
			return nan, nil
		}
		return parseNumber(v)
	}
	out := Record{}
	if err := json.Unmarshal(raw["kind"], &out.Kind); err != nil {
		return fmt.Errorf("field \"kind\": %w", err)
	}
	if v, ok := raw["step"]; ok {
		if err := json.Unmarshal(v, &out.Step); err != nil {
			return fmt.Errorf("field \"step\": %w", err)
		}
	}
	if v, ok := raw["time"]; ok {
		_ = json.Unmarshal(v, &out.Time)
	}
	if v, ok := raw["loss_scale"]; ok {
		x, err := parseNumber(v)
		if err != nil {
			return fmt.Errorf("field \"loss_scale\": %w", err)
		}
		out.LossScale = x
		if err := json.Unmarshal(raw["skipped_updates"], &out.SkippedUpdates); err != nil {
			return fmt.Errorf("field \"skipped_updates\": %w", err)
		}
	}
	if v, ok := raw["bad_examples"]; ok {
		if err := json.Unmarshal(v, &out.BadExamples); err != nil {
			return fmt.Errorf("field \"bad_examples\": %w", err)
		}
	}
	for _, f := range []struct {
		name string
		dst  *float64
	}{{"epoch", &out.Epoch}, {"loss", &out.Loss}, {"lr", &out.LR}, {"grad_norm", &out.GradNorm},
		{"examples_per_s", &out.ExamplesPerSec}, {"data_wait_s", &out.DataWait}, {"elapsed_s", &out.Elapsed}} {
		v, err := num(f.name)
		if err != nil {
			return fmt.Errorf("field %q: %w", f.name, err)
		}
		*f.dst = v
	}
	if v, ok := raw["eval"]; ok {
		var ev map[string]json.RawMessage
		if err := json.Unmarshal(v, &ev); err != nil {
			return fmt.Errorf("field \"eval\": %w", err)
		}
		out.Eval = make(map[string]float64, len(ev))
		for k, rv := range ev {
			x, err := parseNumber(rv)
			if err != nil {
				return fmt.Errorf("field eval.%s: %w", k, err)
			}
			out.Eval[k] = x
		}
	}
	*r = out
	return nil
}

func parseNumber(v json.RawMessage) (float64, error) {
	var x float64
	if err := json.Unmarshal(v, &x); err == nil {
		return x, nil
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return 0, fmt.Errorf("%s is not a number", v)
	}
	switch s {
	case "NaN":
		return math.NaN(), nil
	case "Inf", "+Inf":
		return math.Inf(1), nil
	case "-Inf":
		return math.Inf(-1), nil
	}
	return 0, fmt.Errorf("%q is not a number", s)
}

// ReadMetrics reads the records of a metrics.jsonl file. A line that does not parse is an
// error naming the file and line, except a last line without its newline, which is what a
// crash in the middle of a write leaves and is skipped.
func ReadMetrics(path string) ([]Record, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []Record
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	line := 0
	for sc.Scan() {
		line++
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		var r Record
		if err := json.Unmarshal(text, &r); err != nil {
			if !bytes.HasSuffix(raw, []byte("\n")) && isLastLine(raw, line) {
				break
			}
			return nil, fmt.Errorf("%s:%d: %v", path, line, err)
		}
		out = append(out, r)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return out, nil
}

// isLastLine reports whether line (1-based) is the last line of raw.
func isLastLine(raw []byte, line int) bool {
	return bytes.Count(raw, []byte("\n"))+1 == line
}
