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
// not apply: a training record has Loss, LR and ExamplesPerSec (and GradNorm when clipping
// is on), an evaluation record has Eval. Non-finite numbers are written as the strings
// "NaN", "Inf" and "-Inf", since JSON has no such numbers.
//
//	{"kind":"train","step":20,"epoch":0.4,"loss":0.6012,"lr":0.0009,"examples_per_s":5120,"time":"2025-...","elapsed_s":3.1}
//	{"kind":"eval","step":50,"epoch":1,"eval":{"accuracy":0.81,"f1":0.80,"loss":0.43},"time":"...","elapsed_s":7.9}
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
	// LossScale is, under MixedPrecision "fp16", the dynamic loss scale after the last
	// update, and SkippedUpdates the updates skipped so far for a non-finite gradient
	// ("loss_scale" and "skipped_updates"); LossScale is 0 (both absent) otherwise.
	LossScale      float64
	SkippedUpdates int64
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

// MarshalJSON writes the record as one JSON object with its fields in a fixed order.
func (r Record) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	kind, _ := json.Marshal(r.Kind)
	fmt.Fprintf(&b, `{"kind":%s,"step":%d,"epoch":%s`, kind, r.Step, jsonNumber(r.Epoch))
	for _, f := range []struct {
		name string
		v    float64
	}{{"loss", r.Loss}, {"lr", r.LR}, {"grad_norm", r.GradNorm}, {"examples_per_s", r.ExamplesPerSec}} {
		if !math.IsNaN(f.v) {
			fmt.Fprintf(&b, `,%q:%s`, f.name, jsonNumber(f.v))
		}
	}
	if r.LossScale > 0 {
		fmt.Fprintf(&b, `,"loss_scale":%s,"skipped_updates":%d`, jsonNumber(r.LossScale), r.SkippedUpdates)
	}
	if len(r.Eval) > 0 {
		names := make([]string, 0, len(r.Eval))
		for k := range r.Eval {
			names = append(names, k)
		}
		slices.Sort(names)
		b.WriteString(`,"eval":{`)
		for i, k := range names {
			if i > 0 {
				b.WriteByte(',')
			}
			key, _ := json.Marshal(k)
			fmt.Fprintf(&b, `%s:%s`, key, jsonNumber(r.Eval[k]))
		}
		b.WriteByte('}')
	}
	t, _ := json.Marshal(r.Time)
	fmt.Fprintf(&b, `,"time":%s,"elapsed_s":%s}`, t, jsonNumber(r.Elapsed))
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
	for _, f := range []struct {
		name string
		dst  *float64
	}{{"epoch", &out.Epoch}, {"loss", &out.Loss}, {"lr", &out.LR}, {"grad_norm", &out.GradNorm},
		{"examples_per_s", &out.ExamplesPerSec}, {"elapsed_s", &out.Elapsed}} {
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
