package trainer

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRecordJSONRoundTrip(t *testing.T) {
	cases := []struct {
		name string
		rec  Record
		json string
	}{
		{"train", Record{Kind: KindTrain, Step: 20, Epoch: 0.5, Loss: 0.25, LR: 1e-3, GradNorm: nan, ExamplesPerSec: 512,
			Time: "t", Elapsed: 1.5},
			`{"kind":"train","step":20,"epoch":0.5,"loss":0.25,"lr":0.001,"examples_per_s":512,"elapsed_s":1.5,"time":"t"}`},
		{"fp16", Record{Kind: KindTrain, Step: 4, Epoch: 0.5, Loss: 0.25, LR: 1e-3, GradNorm: nan, ExamplesPerSec: nan,
			LossScale: 32768, SkippedUpdates: 1, Time: "t", Elapsed: 1.5},
			`{"kind":"train","step":4,"epoch":0.5,"loss":0.25,"lr":0.001,"loss_scale":32768,"skipped_updates":1,"elapsed_s":1.5,"time":"t"}`},
		{"eval", Record{Kind: KindEval, Step: 30, Epoch: 1, Loss: nan, LR: nan, GradNorm: nan, ExamplesPerSec: nan,
			Eval: map[string]float64{"loss": 0.5, "accuracy": 0.75}, Time: "t", Elapsed: 2},
			`{"kind":"eval","step":30,"epoch":1,"elapsed_s":2,"eval":{"accuracy":0.75,"loss":0.5},"time":"t"}`},
		{"non-finite numbers", Record{Kind: KindTrain, Step: 1, Epoch: 0, Loss: math.Inf(1), LR: 0, GradNorm: nan,
			ExamplesPerSec: nan, Eval: map[string]float64{"f1": math.NaN()}, Time: "t"},
			`{"kind":"train","step":1,"epoch":0,"loss":"Inf","lr":0,"elapsed_s":0,"eval":{"f1":"NaN"},"time":"t"}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			raw, err := json.Marshal(c.rec)
			if err != nil {
				t.Fatal(err)
			}
			if string(raw) != c.json {
				t.Errorf("\n got %s\nwant %s", raw, c.json)
			}
			var back Record
			if err := json.Unmarshal(raw, &back); err != nil {
				t.Fatal(err)
			}
			again, _ := json.Marshal(back)
			if string(again) != c.json {
				t.Errorf("round trip gives %s", again)
			}
		})
	}
	var r Record
	if err := json.Unmarshal([]byte(`{"kind":"train","step":1,"loss":"lots"}`), &r); err == nil ||
		!strings.Contains(err.Error(), `field "loss"`) {
		t.Errorf("a bad number: %v", err)
	}
}

func writeLines(t *testing.T, path string, n int, torn bool) {
	t.Helper()
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"kind":"train","step":%d,"epoch":0,"loss":1,"time":"t","elapsed_s":0}`+"\n", i+1)
	}
	if torn {
		b.WriteString(`{"kind":"train","st`)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestMetricsLogKeepsTheCheckpointsRecords(t *testing.T) {
	cases := []struct {
		name        string
		lines       int
		torn        bool
		keep        int
		wantRecords int
		wantNotice  string
	}{
		{"new file", -1, false, 0, 0, ""},
		{"exact", 3, false, 3, 3, ""},
		{"records after the checkpoint are dropped", 5, false, 3, 3, "dropped 2 record(s)"},
		{"a torn last line is dropped", 3, true, 3, 3, "dropped 1 record(s)"},
		{"fewer records than the checkpoint says", 2, false, 3, 2, "has 2 record(s), the checkpoint follows 3"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), MetricsFile)
			if c.lines >= 0 {
				writeLines(t, path, c.lines, c.torn)
			}
			var notices []string
			l, err := openMetrics(path, c.keep, func(f string, a ...any) { notices = append(notices, fmt.Sprintf(f, a...)) })
			if err != nil {
				t.Fatal(err)
			}
			if err := l.Log(Record{Kind: KindEval, Step: 99, Eval: map[string]float64{"x": 1}, Loss: nan, LR: nan,
				GradNorm: nan, ExamplesPerSec: nan}); err != nil {
				t.Fatal(err)
			}
			l.Close()
			recs, err := ReadMetrics(path)
			if err != nil {
				t.Fatal(err)
			}
			if len(recs) != c.wantRecords+1 || recs[len(recs)-1].Step != 99 {
				t.Errorf("%d records after appending one, want %d", len(recs), c.wantRecords+1)
			}
			for i, r := range recs[:len(recs)-1] {
				if r.Step != int64(i+1) {
					t.Errorf("record %d has step %d", i, r.Step)
				}
			}
			got := strings.Join(notices, "\n")
			if (c.wantNotice == "") != (got == "") || !strings.Contains(got, c.wantNotice) {
				t.Errorf("notices %q, want %q", got, c.wantNotice)
			}
		})
	}
}

func TestReadMetricsErrors(t *testing.T) {
	path := filepath.Join(t.TempDir(), MetricsFile)
	writeLines(t, path, 2, true)
	if recs, err := ReadMetrics(path); err != nil || len(recs) != 2 {
		t.Errorf("a torn last line is skipped: %d records, %v", len(recs), err)
	}
	if err := os.WriteFile(path, []byte("{\"kind\":\"train\",\"step\":1}\nnot json\n{\"kind\":\"eval\",\"step\":2}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadMetrics(path); err == nil || !strings.Contains(err.Error(), MetricsFile+":2:") {
		t.Errorf("a bad line in the middle must name file:line, got %v", err)
	}
}

// TestPlotFromMetricsFile draws curves from a handwritten metrics.jsonl, as `goaccel plot`
// does, and checks the files; a file without records is an error.
func TestPlotFromMetricsFile(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	for s := 1; s <= 40; s++ {
		fmt.Fprintf(&b, `{"kind":"train","step":%d,"epoch":%g,"loss":%g,"lr":%g,"time":"t","elapsed_s":%d}`+"\n",
			s, float64(s)/10, 2/math.Sqrt(float64(s)), 1e-3*math.Min(1, float64(s)/5), s)
		if s%10 == 0 {
			fmt.Fprintf(&b, `{"kind":"eval","step":%d,"epoch":%d,"eval":{"accuracy":%g,"f1":%g,"loss":%g},"time":"t","elapsed_s":%d}`+"\n",
				s, s/10, 0.5+float64(s)/100, 0.45+float64(s)/100, 1.5/math.Sqrt(float64(s)), s)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, MetricsFile), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	files, err := Plot(dir)
	if err != nil {
		t.Fatal(err)
	}
	checkCurves(t, files)
	empty := t.TempDir()
	if err := os.WriteFile(filepath.Join(empty, MetricsFile), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Plot(empty); err == nil || !strings.Contains(err.Error(), "no records to draw") {
		t.Errorf("empty metrics: %v", err)
	}
	if _, err := Plot(filepath.Join(empty, "missing")); err == nil || !strings.Contains(err.Error(), MetricsFile) {
		t.Errorf("missing run: %v", err)
	}
}
