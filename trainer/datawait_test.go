package trainer

import (
	"bytes"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/goaccel/goaccel/accelerator"
	"github.com/goaccel/goaccel/data"
	"github.com/goaccel/goaccel/internal/timeline"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// TestFitReportsDataWait: a collate that blocks until the test releases it makes every
// training step from the second on wait for its batch (Workers 0: the batch is built when
// asked for). The wait each step's record reports (metrics.jsonl's data_wait_s, logging every
// step) is at least the time that step's collate was blocked, the run's log ends with a
// "waited for data" line whose seconds are at least the blocked total, and the timeline's
// "loader wait" spans add up to at least as much. The blocked times are measured where the
// collate blocks, on a channel the test's releaser only closes after it saw the collate
// enter, so the bounds hold whatever the machine's speed.
func TestFitReportsDataWait(t *testing.T) {
	tl := filepath.Join(t.TempDir(), "timeline")
	acc, err := accelerator.New(accelerator.Config{Backend: cpuPlugin(t), Devices: 1, Quiet: true, Seed: 7, Timeline: tl})
	if err != nil {
		t.Fatal(err)
	}
	defer acc.Close()

	var (
		mu      sync.Mutex
		step    int64                       // the updates done, from OnStep
		blocked = map[int64]time.Duration{} // step -> the time its batch's collate was blocked
	)
	entered := make(chan chan struct{})
	go func() { // the releaser: lets each blocked collate go a little after it entered
		for release := range entered {
			time.Sleep(20 * time.Millisecond)
			close(release)
		}
	}()
	defer close(entered)
	slow := func(ex []example) ([]*tensors.Tensor, *tensors.Tensor, error) {
		mu.Lock()
		s := step
		mu.Unlock()
		if s >= 1 { // the batch of step s+1, asked for inside the training loop
			release := make(chan struct{})
			start := time.Now()
			entered <- release
			<-release
			mu.Lock()
			blocked[s+1] += time.Since(start)
			mu.Unlock()
		}
		return collateToy(ex)
	}
	loader, err := data.NewLoader(toyExamples(24, 0), data.LoaderConfig[example]{BatchSize: 4, Collate: slow})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := New(acc, model.NewStore(), optimizer.Adam().Done(), toyTask(8))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	dir := filepath.Join(t.TempDir(), "run")
	cfg := Config{OutputDir: dir, Epochs: 1, LearningRate: 0.01, LogEvery: 1, Output: &out, DisableCheckpoints: true}
	cfg.Callbacks.OnStep = func(ev StepEvent) error {
		mu.Lock()
		step = ev.Step
		mu.Unlock()
		return nil
	}
	if _, err := tr.Fit(loader, nil, cfg); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	acc.Close()

	var total time.Duration
	for _, d := range blocked {
		total += d
	}
	if len(blocked) != 5 {
		t.Fatalf("collate blocked for steps %v, want steps 2-6", blocked)
	}
	seen := 0
	for _, r := range readRecords(t, dir) {
		if r.Kind != KindTrain {
			continue
		}
		seen++
		if want := blocked[r.Step].Seconds(); !(r.DataWait >= want) {
			t.Errorf("step %d: data_wait_s %g, want >= %g (its collate was blocked that long)", r.Step, r.DataWait, want)
		}
	}
	if seen != 6 {
		t.Errorf("%d training records, want 6", seen)
	}
	m := regexp.MustCompile(`waited for data: ([0-9.]+)% of step time \(([0-9.]+) s of ([0-9.]+) s`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no \"waited for data: X%% of step time (W s of S s ...\" line in the run's log:\n%s", out.String())
	}
	pct, _ := strconv.ParseFloat(m[1], 64)
	wait, _ := strconv.ParseFloat(m[2], 64)
	steps, _ := strconv.ParseFloat(m[3], 64)
	if wait < total.Seconds()-0.0005 || steps < wait || pct <= 0 || pct > 100 {
		t.Errorf("log line %q: want a wait >= %.4f s (blocked in collate), within the step time, as a percentage in (0, 100]",
			m[0], total.Seconds())
	}
	f, err := timeline.Read(filepath.Join(tl, timeline.RankFile(0)))
	if err != nil {
		t.Fatal(err)
	}
	var spans time.Duration
	for _, e := range f.TraceEvents {
		if e.Name == "loader wait" {
			spans += time.Duration(e.Dur * 1e3)
		}
	}
	if spans < total {
		t.Errorf("the timeline's loader wait spans add up to %v, want >= %v", spans, total)
	}
}
