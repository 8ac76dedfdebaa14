package collective

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestSoloIsTheIdentity: on one process every collective leaves its data as it is (or copies
// it where a block collective has two buffers), and Agree agrees.
func TestSoloIsTheIdentity(t *testing.T) {
	var g Group = Solo{}
	bufs := [][]float32{{1, 2}, {3}}
	if err := g.AllreduceSum(bufs); err != nil || bufs[0][1] != 2 || bufs[1][0] != 3 {
		t.Errorf("AllreduceSum: %v %v", bufs, err)
	}
	recv := make([]float32, 2)
	if err := g.ReduceScatterSum([]float32{4, 5}, recv); err != nil || recv[0] != 4 || recv[1] != 5 {
		t.Errorf("ReduceScatterSum: %v %v", recv, err)
	}
	if err := g.ReduceScatterSum([]float32{4, 5, 6}, recv); err == nil || !strings.Contains(err.Error(), "want 2") {
		t.Errorf("ReduceScatterSum with 3 elements for 1 x 2: %v", err)
	}
	if err := Agree(g, "a value", 7); err != nil {
		t.Errorf("Agree: %v", err)
	}
}

// TestTimedAccountsSuccessOnly: Do adds every collective's time, and its bytes only when it
// succeeded.
func TestTimedAccountsSuccessOnly(t *testing.T) {
	var sync time.Duration
	var bytes int64
	tm := Timed{Sync: &sync, Bytes: &bytes}
	if err := tm.Do("ok", 100, 1, func() error { time.Sleep(time.Millisecond); return nil }); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	if err := tm.Do("fails", 50, 0, func() error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("Do returned %v, want the collective's error", err)
	}
	if bytes != 100 || sync < time.Millisecond {
		t.Errorf("bytes %d (want 100), sync %s (want >= 1ms)", bytes, sync)
	}
}

// TestReducersMean: on one process the exact mean is the sums divided by the window plus the
// weight, the loss and weight come back summed, and the compressed mean agrees to 16 bits;
// both report the bytes their all-reduce sends.
func TestReducersMean(t *testing.T) {
	var sync time.Duration
	var sent int64
	tm := Timed{Sync: &sync, Bytes: &sent}
	grads := [][]float32{{6, -3}, {1.5}}
	ls, w, err := Exact{}.Mean(tm, Solo{}, grads, 12, 3, 1)
	if err != nil || ls != 12 || w != 3 {
		t.Fatalf("Exact.Mean: %g, %g, %v", ls, w, err)
	}
	if want := []float32{1.5, -0.75}; grads[0][0] != want[0] || grads[0][1] != want[1] || grads[1][0] != 0.375 {
		t.Errorf("Exact.Mean left %v, want the sums / 4", grads)
	}
	if sent != 4*3+8 || (Exact{}).Bytes(3, 1) != 12 {
		t.Errorf("Exact sent %d bytes (want 20), Bytes %d (want 12)", sent, Exact{}.Bytes(3, 1))
	}
	for _, name := range []string{"bf16", "fp16"} {
		c := Compressed(CodecNamed(name))
		grads := [][]float32{{6, -3}, {1.5}}
		if _, _, err := c.Mean(tm, Solo{}, grads, 12, 3, 1); err != nil {
			t.Fatal(err)
		}
		if grads[0][0] != 1.5 || grads[0][1] != -0.75 || grads[1][0] != 0.375 { // exact in 16 bits
			t.Errorf("%s: Compressed.Mean left %v", name, grads)
		}
		if got, want := c.Bytes(3, 2), NewCompressor(CodecNamed(name), 3, 2, 0).Bytes(); got != want || got != 8 {
			t.Errorf("%s: Bytes(3, 2) = %d, the compressor sends %d, want 8", name, got, want)
		}
		// Buckets of 4, 4 and 2 elements over 3 processes: chunks of 2, 2 and 1, 30 bytes.
		if got, want := CompressedBytes(10, 3, 4), NewCompressor(CodecNamed(name), 10, 3, 4).Bytes(); got != want || got != 30 {
			t.Errorf("%s: CompressedBytes(10, 3, 4) = %d, the compressor sends %d, want 30", name, got, want)
		}
	}
	if CodecNamed("int8") != nil {
		t.Error("CodecNamed(int8) is not nil")
	}
}
