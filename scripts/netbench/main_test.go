package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/goaccel/goaccel/internal/timeline"
)

// TestSummarize: the step's parts are averaged over the steps after the skipped ones and over
// the ranks; the sync is the gap from the end of the gradients execution to the start of apply.
func TestSummarize(t *testing.T) {
	dir := t.TempDir()
	// step k of rank r (times in µs): gradients 0-400, device-to-host 400-450, all-reduce
	// 450-650+100r, apply 700+100r-800+100r; the step ends at 820+100r.
	for r := range 2 {
		var ev []timeline.Event
		for k := range 4 {
			o := float64(k * 10000)
			d := float64(100 * r)
			ev = append(ev,
				timeline.Event{Name: "step", Ph: "X", TS: o, Dur: 820 + d, PID: r},
				timeline.Event{Name: "gradients", Ph: "X", TS: o, Dur: 400, PID: r},
				timeline.Event{Name: "device-to-host", Ph: "X", TS: o + 400, Dur: 50, PID: r},
				timeline.Event{Name: "all-reduce gradients", Ph: "X", TS: o + 450, Dur: 200 + d, PID: r,
					Args: map[string]any{"bytes": 1000}},
				timeline.Event{Name: "apply", Ph: "X", TS: o + 700 + d, Dur: 100, PID: r})
		}
		b, _ := json.Marshal(timeline.File{TraceEvents: ev})
		if err := os.WriteFile(filepath.Join(dir, timeline.RankFile(r)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, err := summarize(dir, 2)
	if err != nil {
		t.Fatal(err)
	}
	near := func(got, want float64) bool { return math.Abs(got-want) < 1e-9 }
	if s.Ranks != 2 || s.Steps != 2 || !near(s.StepMS, 0.87) || !near(s.GradientsMS, 0.4) || !near(s.DeviceToHostMS, 0.05) ||
		!near(s.AllReduceMS, 0.25) || !near(s.SyncMS, 0.35) || !near(s.ApplyMS, 0.1) || s.BytesPerUpdate != 1000 ||
		!near(s.StepMinMS, 0.82) || !near(s.StepMaxMS, 0.92) {
		t.Errorf("summary %+v", s)
	}
	if _, err := summarize(dir, 4); err == nil {
		t.Error("skipping all 4 steps: no error")
	}
}

// TestRing: the ring all-reduce model at 2 nodes is bytes / bandwidth + 2 latencies, and the
// link measured at 2 ranks gives back the bandwidth and latency it was made from.
func TestRing(t *testing.T) {
	bw, lat, bytes := 1.25e8, 1e-4, 9.1e7
	if got := ringS(2, bytes, bw, lat); math.Abs(got-(0.728+2e-4)) > 1e-9 {
		t.Errorf("ringS(2) = %v", got)
	}
	if got := ringS(8, bytes, bw, lat); math.Abs(got-(2*7.0/8*0.728+14e-4)) > 1e-9 {
		t.Errorf("ringS(8) = %v", got)
	}
	m := MPI{SmallS: lat, Bytes: bytes, AllreduceS: ringS(2, bytes, bw, lat)}
	if gbw, glat := m.link(); math.Abs(gbw-bw) > 1 || glat != lat {
		t.Errorf("link() = %v, %v", gbw, glat)
	}
}
