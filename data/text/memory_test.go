package text

import (
	"bufio"
	"fmt"
	"github.com/goaccel/goaccel/data"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gomlx/gomlx/core/tensors"
)

// peakRSS returns the process's peak resident set size (VmHWM) in bytes, or 0 where /proc is
// unavailable.
func peakRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			var kb int64
			fmt.Sscanf(strings.TrimSpace(strings.TrimPrefix(line, "VmHWM:")), "%d", &kb)
			return kb << 10
		}
	}
	return 0
}

// writeTSV writes about size bytes of "text<TAB>label" lines to path and returns the number
// of lines.
func writeTSV(t testing.TB, path string, size int64) int {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var written int64
	lines := 0
	for written < size {
		n, _ := fmt.Fprintf(w, "review %d : a generated movie snippet that is long enough to look like the real ones ,\t%d\n",
			lines, lines%2)
		written += int64(n)
		lines++
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return lines
}

// memWatch samples the heap in use while a pass runs.
type memWatch struct {
	base, peak uint64
	ms         runtime.MemStats
}

func newMemWatch() *memWatch {
	runtime.GC()
	m := &memWatch{}
	runtime.ReadMemStats(&m.ms)
	m.base, m.peak = m.ms.HeapInuse, m.ms.HeapInuse
	return m
}

func (m *memWatch) sample() {
	runtime.ReadMemStats(&m.ms)
	m.peak = max(m.peak, m.ms.HeapInuse)
}

// TestStreamingLargeFileKeepsMemoryFlat streams a generated file of 200 MB (1 GB with
// GOACCEL_BIG=1, 20 MB with -short) through a LineFile and through a StreamLoader, and checks
// that the heap stays far below the file size.
func TestStreamingLargeFileKeepsMemoryFlat(t *testing.T) {
	size := int64(200 << 20)
	switch {
	case os.Getenv("GOACCEL_BIG") == "1":
		size = 1 << 30
	case testing.Short():
		size = 20 << 20
	}
	path := filepath.Join(t.TempDir(), "big.tsv")
	start := time.Now()
	lines := writeTSV(t, path, size)
	t.Logf("generated %s: %d MiB, %d lines in %v", filepath.Base(path), size>>20, lines, time.Since(start).Round(time.Millisecond))
	const limit = 64 << 20 // heap growth allowed, whatever the file size

	f, err := OpenLines(path, LabeledTSV(0, 1), LineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m := newMemWatch()
	start = time.Now()
	n, labels := 0, 0
	for ex, err := range f.All() {
		if err != nil {
			t.Fatal(err)
		}
		n++
		labels += ex.Label
		if n%100_000 == 0 {
			m.sample()
		}
	}
	m.sample()
	el := time.Since(start)
	if n != lines || labels != lines/2 {
		t.Fatalf("read %d lines (%d positive), want %d (%d)", n, labels, lines, lines/2)
	}
	t.Logf("LineFile pass: %d lines in %v (%.0f lines/s); heap in use %.1f MiB at start, peak %.1f MiB; peak RSS %.1f MiB",
		n, el.Round(time.Millisecond), float64(n)/el.Seconds(), mib(m.base), mib(m.peak), mib(uint64(peakRSS())))
	if m.peak > m.base+limit {
		t.Errorf("heap grew by %.1f MiB while streaming a %d MiB file", mib(m.peak-m.base), size>>20)
	}

	// The same file through a StreamLoader with 2 replicas and 2 workers (count pass + epoch).
	collate := func(ex []Labeled) ([]*tensors.Tensor, *tensors.Tensor, error) {
		lens, labels := make([]int32, len(ex)), make([]int32, len(ex))
		for i, e := range ex {
			lens[i], labels[i] = int32(len(e.Text)), int32(e.Label)
		}
		return []*tensors.Tensor{tensors.FromValue(lens)}, tensors.FromValue(labels), nil
	}
	m = newMemWatch()
	start = time.Now()
	l, err := data.NewStreamLoader[Labeled](f, data.LoaderConfig[Labeled]{BatchSize: 512, Workers: 2, Collate: collate})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Distribute(2, []int{0, 1}); err != nil {
		t.Fatal(err)
	}
	m.sample()
	real, batches := 0, 0
	for st, err := range l.Epoch() {
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range st.Shards {
			real += b.NumReal()
		}
		batches++
		if batches%100 == 0 {
			m.sample()
		}
	}
	m.sample()
	if real != lines || batches != l.BatchesPerEpoch() {
		t.Fatalf("loader: %d real examples in %d global batches, want %d in %d", real, batches, lines, l.BatchesPerEpoch())
	}
	t.Logf("StreamLoader (2 replicas, 2 workers, count + epoch): %d global batches in %v; heap in use %.1f MiB at start, "+
		"peak %.1f MiB; peak RSS %.1f MiB", batches, time.Since(start).Round(time.Millisecond), mib(m.base), mib(m.peak),
		mib(uint64(peakRSS())))
	if m.peak > m.base+limit {
		t.Errorf("heap grew by %.1f MiB in the stream loader over a %d MiB file", mib(m.peak-m.base), size>>20)
	}
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }
