package accelerator

import (
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/internal/testutil"
	"github.com/goaccel/goaccel/internal/timeline"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// timelineSteps is the number of training steps the "timeline" worker runs.
const timelineSteps = 20

// timelineResult is what a rank of the "timeline" worker writes: its TrainStep's stats.
type timelineResult struct{ Stats StepStats }

// timelineWorker trains the toy model timelineSteps steps (reading each loss, so that Total is
// the steps' real time), evaluates once and waits for everyone, with the timeline that
// $GOACCEL_TIMELINE asks for.
func timelineWorker(a *Accelerator) error {
	x, y := toyData(48)
	job, err := a.Prepare(model.NewStore(), optimizer.Adam().LearningRate(0.01).Done(), &fixedSource{x: x, y: y, batch: 16 / a.NumReplicas()})
	if err != nil {
		return err
	}
	train := toyTrainStep(a, job)
	for done := 0; done < timelineSteps; {
		for gb, err := range job.Batches() {
			if err != nil {
				return err
			}
			l, err := train.Run(gb)
			if err != nil {
				return err
			}
			if _, err := l.Value(); err != nil {
				return err
			}
			if done++; done == timelineSteps {
				break
			}
		}
	}
	if _, err := job.Evaluate(&fixedSource{x: x, y: y, batch: 2}, job.EvalStep(func(s *model.Scope, b GraphBatch) []*Node {
		return []*Node{Reshape(Slice(b.Inputs[0], AxisRange(), AxisElem(0)), -1)}
	})); err != nil {
		return err
	}
	if err := a.WaitForEveryone(); err != nil {
		return err
	}
	return writeRankResult(a, timelineResult{Stats: train.Stats()})
}

// toyTrainStep is the toy MLP's training step (cross-entropy) on job.
func toyTrainStep(a *Accelerator, job *Job) *TrainStep {
	return job.TrainStep(func(s *model.Scope, b GraphBatch) *Node {
		l := CrossEntropy(mlpLogits(s, b.Inputs[0]), b.Labels, b.Mask)
		a.Backward(s, l)
		return l
	})
}

// TestTimelineOverMPI: 2 processes x 20 steps with GOACCEL_TIMELINE set write valid Chrome
// trace JSON per rank: 20 step spans, every graph execution and all-reduce inside a step, the
// waits for the next batch, gathers and barriers outside them, the step spans summing to
// TrainStep.Stats().Total (within 5%). The launcher merges its node's ranks (pid = rank) into
// timeline-node<N>.json and prints its path: one file for 1 node x 2 processes, one per node
// (and it says so) for 2 nodes x 1.
func TestTimelineOverMPI(t *testing.T) {
	testutil.NeedMPI(t)
	for _, layout := range []struct{ nodes, procs int }{{1, 2}, {2, 1}} {
		t.Run(fmt.Sprintf("%d nodes x %d", layout.nodes, layout.procs), func(t *testing.T) {
			dir, tl := t.TempDir(), filepath.Join(t.TempDir(), "timeline")
			err, out := launchNodes(t, "timeline", layout.nodes, layout.procs, layout.procs,
				workerOut+"="+dir, "GOACCEL_TIMELINE="+tl, "GOACCEL_TIMEOUT=3m")
			if err != nil {
				t.Fatalf("launch: %v\n%s", err, out)
			}
			if layout.nodes > 1 && !strings.Contains(out, "each node writes its own") {
				t.Errorf("with %d nodes the launcher does not say that each node writes its own timeline:\n%s", layout.nodes, out)
			}
			for r := range layout.nodes * layout.procs {
				var res timelineResult
				readRankResult(t, dir, r, out, &res)
				f, err := timeline.Read(filepath.Join(tl, timeline.RankFile(r)))
				if err != nil {
					t.Fatalf("rank %d: %v", r, err)
				}
				checkTimeline(t, r, f, res.Stats)
			}
			for node := range layout.nodes {
				merged := filepath.Join(tl, timeline.NodeFile(node))
				if !strings.Contains(out, merged) {
					t.Errorf("the launcher did not print node %d's merged timeline %s:\n%s", node, merged, out)
				}
				f, err := timeline.Read(merged)
				if err != nil {
					t.Fatal(err)
				}
				steps := map[int]int{}
				for _, e := range f.TraceEvents {
					if e.Name == "step" {
						steps[e.PID]++
					}
				}
				want := map[int]int{}
				for r := node * layout.procs; r < (node+1)*layout.procs; r++ {
					want[r] = timelineSteps
				}
				if !maps.Equal(steps, want) {
					t.Errorf("node %d's timeline has step spans per pid %v, want %v", node, steps, want)
				}
			}
		})
	}
}

// checkTimeline checks rank's events against its TrainStep's stats.
func checkTimeline(t *testing.T, rank int, f timeline.File, stats StepStats) {
	t.Helper()
	var steps []timeline.Event
	names := map[string]int{}
	for _, e := range f.TraceEvents {
		if e.Ph != "M" && e.PID != rank {
			t.Errorf("rank %d: event %s has pid %d", rank, e.Name, e.PID)
		}
		names[e.Name]++
		if e.Name == "step" {
			steps = append(steps, e)
		}
	}
	t.Logf("rank %d: spans %v", rank, names)
	if len(steps) != timelineSteps || stats.Batches != timelineSteps {
		t.Fatalf("rank %d: %d step spans, %d batches in Stats; want %d", rank, len(steps), stats.Batches, timelineSteps)
	}
	for _, want := range []string{"compile", "gradients", "device-to-host", "all-reduce gradients", "all-reduce buckets", "apply", "loader wait", "gather", "barrier"} {
		if names[want] == 0 {
			t.Errorf("rank %d: no %q span", rank, want)
		}
	}
	const slack = 1 // µs: the float rounding of the timestamps
	inStep := func(e timeline.Event) bool {
		for _, s := range steps {
			if e.TS >= s.TS-slack && e.TS+e.Dur <= s.TS+s.Dur+slack {
				return true
			}
		}
		return false
	}
	overlapsStep := func(e timeline.Event) bool {
		for _, s := range steps {
			if e.TS+slack < s.TS+s.Dur && s.TS+slack < e.TS+e.Dur {
				return true
			}
		}
		return false
	}
	var total float64
	for _, s := range steps {
		total += s.Dur
	}
	for _, e := range f.TraceEvents {
		switch {
		case e.Cat == "execute" || strings.HasPrefix(e.Name, "all-reduce"):
			if !inStep(e) {
				t.Errorf("rank %d: %s at %.0f µs (%.0f µs) is not inside a step", rank, e.Name, e.TS, e.Dur)
			}
		case e.Name == "loader wait" || e.Name == "barrier" || e.Name == "gather":
			if overlapsStep(e) {
				t.Errorf("rank %d: %s at %.0f µs overlaps a step", rank, e.Name, e.TS)
			}
		}
		if strings.HasPrefix(e.Name, "all-reduce") {
			if b, ok := e.Args["bytes"].(float64); !ok || b <= 0 {
				t.Errorf("rank %d: %s has bytes %v", rank, e.Name, e.Args["bytes"])
			}
		}
	}
	// Each gradient all-reduce holds its buckets, whose bytes add up to its own (the loss and
	// its weight, 8 bytes, travel in the last bucket).
	for _, ar := range f.TraceEvents {
		if ar.Name != "all-reduce gradients" {
			continue
		}
		var bucketBytes float64
		for _, b := range f.TraceEvents {
			if b.Name == "all-reduce buckets" && b.TS >= ar.TS-slack && b.TS+b.Dur <= ar.TS+ar.Dur+slack {
				bucketBytes += b.Args["bytes"].(float64)
			}
		}
		if bucketBytes != ar.Args["bytes"].(float64) {
			t.Errorf("rank %d: the buckets inside the all-reduce at %.0f µs hold %.0f bytes, the all-reduce %v", rank, ar.TS, bucketBytes, ar.Args["bytes"])
		}
	}
	want := float64(stats.Total.Microseconds())
	if math.Abs(total-want) > 0.05*want {
		t.Errorf("rank %d: the step spans sum to %.0f µs, Stats().Total is %.0f µs (more than 5%% apart)", rank, total, want)
	}
	t.Logf("rank %d: step spans %.1f ms, Stats().Total %.1f ms", rank, total/1e3, want/1e3)
}

// TestTimelineOff: without Config.Timeline or $GOACCEL_TIMELINE, a run writes no timeline and
// TimelineSpan allocates nothing.
func TestTimelineOff(t *testing.T) {
	t.Setenv("GOACCEL_TIMELINE", "")
	dir := t.TempDir()
	t.Chdir(dir)
	a := newXLA(t, 1)
	if a.tl != nil {
		t.Fatalf("the timeline is on (%s) with neither Config.Timeline nor GOACCEL_TIMELINE", a.tl.Path())
	}
	if n := testing.AllocsPerRun(100, func() { a.TimelineSpan("collate", "loader")() }); n != 0 {
		t.Errorf("TimelineSpan allocates %v times with the timeline off", n)
	}
	trainToy(t, a, sgd(0.5), 2)
	a.Close()
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("a run without a timeline wrote %v", ents)
	}
}

// TestTimelineConfig: Config.Timeline in one process records the steps (the inGraph strategy:
// one execute span per step, inside it) to rank_0.json at Close.
func TestTimelineConfig(t *testing.T) {
	dir := t.TempDir()
	a, err := New(Config{Backend: cpuPlugin(t), Devices: 2, Quiet: true, Timeline: dir})
	if err != nil {
		t.Fatal(err)
	}
	trainToy(t, a, sgd(0.5), 3)
	a.TimelineSpan("collate", "loader")("examples", 16)
	a.Close()
	f, err := timeline.Read(filepath.Join(dir, timeline.RankFile(0)))
	if err != nil {
		t.Fatal(err)
	}
	names := f.Counts()
	if names["step"] != 3 || names["compile"] != 1 || names["execute"] != 3 || names["collate"] != 1 {
		t.Errorf("spans %v; want 3 steps, 1 compile (the memory plan's, before the first execution), 3 execute and the user's collate", names)
	}
}
