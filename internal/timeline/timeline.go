// Package timeline records a process's spans (steps, graph executions, collectives, loader
// waits) as Chrome trace events, the JSON that chrome://tracing and Perfetto open, and merges
// the files of a node's ranks into one.
//
// A nil *Recorder is off: Start returns a zero Span and Span.End on it returns at once, so
// the code that records pays one nil check when no timeline is asked for.
package timeline

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"
)

// Event is one complete event ("ph": "X") of the Chrome trace format; TS and Dur are in
// microseconds (TS since the Unix epoch, so that the ranks of a node line up), PID is the rank.
type Event struct {
	Name string         `json:"name"`
	Cat  string         `json:"cat,omitempty"`
	Ph   string         `json:"ph"`
	TS   float64        `json:"ts"`
	Dur  float64        `json:"dur"`
	PID  int            `json:"pid"`
	TID  int            `json:"tid"`
	Args map[string]any `json:"args,omitempty"`
}

// File is the JSON object a recorder writes.
type File struct {
	TraceEvents     []Event `json:"traceEvents"`
	DisplayTimeUnit string  `json:"displayTimeUnit,omitempty"`
}

// Recorder holds one process's events until Close writes them.
type Recorder struct {
	mu     sync.Mutex
	rank   int
	path   string
	events []Event
	// base is when the recorder opened: an event's time stamp is base's wall-clock time plus
	// the monotonic time since base, so that a wall-clock step (NTP) during the run cannot put
	// a span outside the one that holds it (durations are monotonic too).
	base time.Time
}

// RankFile is the name of rank's file in a timeline folder.
func RankFile(rank int) string { return fmt.Sprintf("rank_%d.json", rank) }

// Open returns a recorder for rank that Close writes to dir/rank_<rank>.json, or nil (off)
// when dir is empty. The folder is created.
func Open(dir string, rank int) (*Recorder, error) {
	if dir == "" {
		return nil, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("timeline: Open: %w", err)
	}
	return &Recorder{rank: rank, path: filepath.Join(dir, RankFile(rank)), base: time.Now()}, nil
}

// Span is a span being recorded; End records it. The zero Span records nothing.
type Span struct {
	r     *Recorder
	name  string
	cat   string
	start time.Time
}

// Start begins a span named name in category cat (step, execute, collective, loader,
// compile, checkpoint).
func (r *Recorder) Start(name, cat string) Span {
	if r == nil {
		return Span{}
	}
	return Span{r: r, name: name, cat: cat, start: time.Now()}
}

// End records the span, with args (key, value pairs) shown by the viewer.
func (s Span) End(args ...any) {
	if s.r == nil {
		return
	}
	s.r.Add(s.name, s.cat, s.start, time.Now(), args...)
}

// Add records a span from start to end, with args (key, value pairs).
func (r *Recorder) Add(name, cat string, start, end time.Time, args ...any) {
	if r == nil {
		return
	}
	e := Event{Name: name, Cat: cat, Ph: "X", PID: r.rank,
		TS: r.stamp(start), Dur: micros(end.Sub(start))}
	if len(args) > 1 {
		e.Args = make(map[string]any, len(args)/2)
		for i := 0; i+1 < len(args); i += 2 {
			e.Args[fmt.Sprint(args[i])] = args[i+1]
		}
	}
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

func micros(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

// stamp is t's time stamp in µs: the recorder's opening wall-clock time plus the monotonic
// time from then to t (time.Time.Sub uses the monotonic readings when both times have one).
func (r *Recorder) stamp(t time.Time) float64 {
	if r.base.IsZero() {
		return float64(t.UnixNano()) / 1e3
	}
	return float64(r.base.UnixNano()+t.Sub(r.base).Nanoseconds()) / 1e3
}

// Flush writes the events so far to the recorder's file (atomically: a reader never sees
// half a file).
func (r *Recorder) Flush() error {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	f := File{TraceEvents: append([]Event{meta(r.rank)}, r.events...), DisplayTimeUnit: "ms"}
	r.mu.Unlock()
	if err := writeJSON(r.path, f); err != nil {
		return fmt.Errorf("timeline: Flush: %w", err)
	}
	return nil
}

// Close writes the file; the recorder keeps recording, and a later Close writes again.
func (r *Recorder) Close() error { return r.Flush() }

// Path is the file the recorder writes ("" when off).
func (r *Recorder) Path() string {
	if r == nil {
		return ""
	}
	return r.path
}

// meta names the rank's process in the viewer.
func meta(rank int) Event {
	return Event{Name: "process_name", Ph: "M", PID: rank, Args: map[string]any{"name": fmt.Sprintf("rank %d", rank)}}
}

func writeJSON(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// Read reads a timeline file.
func Read(path string) (File, error) {
	var f File
	b, err := os.ReadFile(path)
	if err != nil {
		return f, fmt.Errorf("timeline: Read: %w", err)
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return f, fmt.Errorf("timeline: Read: %s: %w", path, err)
	}
	return f, nil
}

// Counts returns the number of events of each name.
func (f File) Counts() map[string]int {
	n := map[string]int{}
	for _, e := range f.TraceEvents {
		n[e.Name]++
	}
	return n
}

// NodeFile is the name of node's merged file in a timeline folder.
func NodeFile(node int) string { return fmt.Sprintf("timeline-node%d.json", node) }

// Merge merges the files of ranks first..first+n-1 in dir into dir/timeline-node<node>.json
// (one process per rank, pid = rank) and returns its path. A rank that wrote no file is
// named in the error; the others are still merged.
func Merge(dir string, node, first, n int) (string, error) {
	var all []Event
	var errs []error
	for r := first; r < first+n; r++ {
		f, err := Read(filepath.Join(dir, RankFile(r)))
		if err != nil {
			errs = append(errs, fmt.Errorf("rank %d: %w", r, err))
			continue
		}
		all = append(all, f.TraceEvents...)
	}
	sort.SliceStable(all, func(i, k int) bool { return all[i].PID < all[k].PID })
	out := filepath.Join(dir, NodeFile(node))
	if err := writeJSON(out, File{TraceEvents: all, DisplayTimeUnit: "ms"}); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return out, fmt.Errorf("timeline: Merge: %w", err)
	}
	return out, nil
}
