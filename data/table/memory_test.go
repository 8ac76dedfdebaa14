package table

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
)

// memoryBound is the heap growth that a pass over a table may cause, whatever the file size,
// when rows are under 1 MiB (docs/data.md).
const memoryBound = 16 << 20

// streamChildEnv names the file that TestStreamChild streams, in a child process.
const streamChildEnv = "GOACCEL_TABLE_STREAM_FILE"

// TestStreamingMemoryBound writes a CSV, a JSON Lines and a Parquet file, each ten times
// memoryBound (2 MiB with -short), and streams each in a child process that does only that
// (Open's label pass, then one pass of All): the heap grows by less than memoryBound, and the
// child prints its resident memory before and at its peak.
func TestStreamingMemoryBound(t *testing.T) {
	size := int64(10 * memoryBound)
	if testing.Short() {
		size = 2 << 20
	}
	dir := t.TempDir()
	start := time.Now()
	files, rows := writeBigTables(t, dir, size)
	t.Logf("wrote %d rows (%.0f MiB of CSV) in 3 formats in %v (load average %s)", rows, float64(size)/(1<<20),
		time.Since(start).Round(time.Millisecond), loadAverage())
	for _, path := range files {
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestStreamChild$", "-test.v")
		cmd.Env = append(os.Environ(), streamChildEnv+"="+path)
		start := time.Now()
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", filepath.Base(path), err, out)
		}
		var rssBefore, rssPeak, heapGrowth float64
		var n int
		line := lineWith(string(out), "streamed ")
		if _, err := fmt.Sscanf(line, "streamed %d rows: RSS %f MiB before, peak %f MiB; heap growth %f MiB",
			&n, &rssBefore, &rssPeak, &heapGrowth); err != nil {
			t.Fatalf("%s: child output %q: %v\n%s", filepath.Base(path), line, err, out)
		}
		t.Logf("%s (%.0f MiB): %d rows in %v; RSS %.1f MiB before, peak %.1f MiB; heap growth %.1f MiB (bound %d MiB)",
			filepath.Base(path), float64(st.Size())/(1<<20), n, time.Since(start).Round(time.Millisecond),
			rssBefore, rssPeak, heapGrowth, memoryBound>>20)
		if n != rows {
			t.Errorf("%s: streamed %d rows, want %d", filepath.Base(path), n, rows)
		}
		if heapGrowth*(1<<20) > memoryBound {
			t.Errorf("%s: the heap grew by %.1f MiB streaming a %.0f MiB file, bound %d MiB", filepath.Base(path),
				heapGrowth, float64(st.Size())/(1<<20), memoryBound>>20)
		}
	}
}

// TestStreamChild streams the file named by $GOACCEL_TABLE_STREAM_FILE and prints what it
// used; it runs only as TestStreamingMemoryBound's child.
func TestStreamChild(t *testing.T) {
	path := os.Getenv(streamChildEnv)
	if path == "" {
		t.Skip("run by TestStreamingMemoryBound in a child process")
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base, peak := ms.HeapInuse, ms.HeapInuse
	rssBefore := procStatus("VmRSS:")
	tb, err := Open(Spec{TextColumns: []string{"premise", "hypothesis"}, LabelColumn: "label_name"}, path)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, err := range tb.All() {
		if err != nil {
			t.Fatal(err)
		}
		if n++; n%50_000 == 0 {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse)
		}
	}
	runtime.ReadMemStats(&ms)
	peak = max(peak, ms.HeapInuse)
	fmt.Printf("streamed %d rows: RSS %.1f MiB before, peak %.1f MiB; heap growth %.1f MiB\n", n, rssBefore,
		procStatus("VmHWM:"), float64(peak-base)/(1<<20))
}

// writeBigTables writes the same rows, about size bytes of CSV, as big.csv, big.jsonl and
// big.parquet (row groups of 64 Ki rows), and returns their paths and the row count.
func writeBigTables(t *testing.T, dir string, size int64) ([]string, int) {
	t.Helper()
	names := []string{"big.csv", "big.jsonl", "big.parquet"}
	var paths []string
	var files []*os.File
	var bufs []*bufio.Writer
	for _, n := range names {
		f, err := os.Create(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		paths, files, bufs = append(paths, f.Name()), append(files, f), append(bufs, bufio.NewWriterSize(f, 1<<20))
	}
	pw := parquet.NewGenericWriter[row](bufs[2], parquet.MaxRowsPerRowGroup(64<<10))
	fmt.Fprintln(bufs[0], "premise,hypothesis,label,label_name")
	enc := json.NewEncoder(bufs[1])
	labels := []string{"entailment", "neutral", "contradiction"}
	var written int64
	rows := 0
	batch := make([]row, 0, 1024)
	for written < size {
		r := row{Premise: fmt.Sprintf("review %d: a generated movie snippet, long enough to look like the real ones", rows),
			Hypothesis: "the film is " + strings.Repeat("good ", rows%5+1), Label: int64(rows % 3), Name: labels[rows%3]}
		n, _ := fmt.Fprintf(bufs[0], "\"%s\",%s,%d,%s\n", r.Premise, r.Hypothesis, r.Label, r.Name)
		written += int64(n)
		if err := enc.Encode(r); err != nil {
			t.Fatal(err)
		}
		rows++
		if batch = append(batch, r); len(batch) == cap(batch) {
			if _, err := pw.Write(batch); err != nil {
				t.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	if _, err := pw.Write(batch); err != nil {
		t.Fatal(err)
	}
	if err := pw.Close(); err != nil {
		t.Fatal(err)
	}
	for i, f := range files {
		if err := bufs[i].Flush(); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return paths, rows
}

// procStatus reads a field of /proc/self/status in MiB (0 where there is no /proc).
func procStatus(field string) float64 {
	b, _ := os.ReadFile("/proc/self/status")
	var kb float64
	fmt.Sscanf(strings.TrimSpace(strings.TrimPrefix(lineWith(string(b), field), field)), "%f", &kb)
	return kb / 1024
}

// lineWith returns the first line of s that contains sub ("" if none), from sub on.
func lineWith(s, sub string) string {
	for _, l := range strings.Split(s, "\n") {
		if i := strings.Index(l, sub); i >= 0 {
			return l[i:]
		}
	}
	return ""
}

func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}
