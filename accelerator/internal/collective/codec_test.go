package collective

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// benchGradients is the benchmarks' number of gradients: about MiniLM's 22.7M.
const benchGradients = 22_700_000

// miniLMGradients returns benchGradients random gradients (magnitudes 1e-8 to 1, both signs) from seeds s1
// and s2, in three buffers.
func miniLMGradients(s1, s2 uint64) [][]float32 {
	rng := rand.New(rand.NewPCG(s1, s2))
	const n = benchGradients
	grads := make([]float32, n)
	for i := range grads {
		grads[i] = float32(rng.NormFloat64() * math.Pow(10, -8*rng.Float64()))
	}
	return [][]float32{grads[:n/3], grads[n/3 : 2*n/3], grads[2*n/3:]}
}

// BenchmarkCompressorReduce times the compressed all-reduce of MiniLM's 22.7M gradients on
// Solo, whose collectives are copies: what is left is the host's encoding, summing and
// decoding, the part of the compressed all-reduce that the wire does not account for.
func BenchmarkCompressorReduce(b *testing.B) {
	bufs := miniLMGradients(11, 12)
	for _, name := range []string{"bf16", "fp16"} {
		b.Run(name, func(b *testing.B) {
			k := NewCompressor(CodecNamed(name), benchGradients, 1, 0)
			b.SetBytes(4 * benchGradients)
			for b.Loop() {
				if err := k.Reduce(Solo{}, bufs, 1); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// orderGroup is Solo that records the compressed all-reduce's rounds (the all-to-all's and the
// all-gather's bytes) and fails the one numbered failAt (from 1; 0: none).
type orderGroup struct {
	Solo
	calls  []string
	failAt int
}

var errInjected = errors.New("injected failure")

func (o *orderGroup) AlltoallAllgatherBlocks(send, recv, mine, gathered []byte) error {
	o.calls = append(o.calls, fmt.Sprintf("%d+%d", len(send), len(gathered)))
	if len(o.calls) == o.failAt {
		return errInjected
	}
	return o.Solo.AlltoallAllgatherBlocks(send, recv, mine, gathered)
}

// TestCompressorPipelineOrder: 10 elements in buckets of 4, 4 and 2 run the pipeline's rounds in
// the order every process must share (round r: bucket r's all-to-all with bucket r-2's
// all-gather) with each bucket's bytes, and give every element back exactly (one process,
// values exact in 16 bits); one bucket takes two rounds; a round that fails makes Reduce return
// its error; a length other than the compressor's is an error naming both.
func TestCompressorPipelineOrder(t *testing.T) {
	in := []float32{1, -2, 0.5, 3, 0.25, -8, 16, 1.5, -0.75, 6}
	for _, name := range []string{"bf16", "fp16"} {
		k := NewCompressor(CodecNamed(name), len(in), 1, 4)
		g := &orderGroup{}
		bufs := [][]float32{append([]float32(nil), in[:3]...), append([]float32(nil), in[3:]...)}
		if err := k.Reduce(g, bufs, 2); err != nil {
			t.Fatal(err)
		}
		want := "8+0, 8+0, 4+8, 0+8, 0+4"
		if got := strings.Join(g.calls, ", "); got != want {
			t.Errorf("%s: rounds (all-to-all + all-gather bytes) %s, want %s", name, got, want)
		}
		for i, x := range append(bufs[0], bufs[1]...) {
			if x != 2*in[i] {
				t.Errorf("%s: element %d is %g, want %g", name, i, x, 2*in[i])
			}
		}
		one := &orderGroup{}
		if err := NewCompressor(CodecNamed(name), 3, 1, 4).Reduce(one, [][]float32{{1, 2, 3}}, 1); err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(one.calls, ", "); got != "6+0, 0+6" {
			t.Errorf("%s: one bucket: rounds %s, want 6+0, 0+6", name, got)
		}
		for failAt := 1; failAt <= 5; failAt++ {
			g := &orderGroup{failAt: failAt}
			if err := k.Reduce(g, bufs, 1); !errors.Is(err, errInjected) {
				t.Errorf("%s: round %d failing: Reduce returned %v", name, failAt, err)
			}
			if len(g.calls) != failAt {
				t.Errorf("%s: round %d failing: %d rounds ran (%v)", name, failAt, len(g.calls), g.calls)
			}
		}
		err := k.Reduce(g, [][]float32{bufs[1]}, 1)
		if err == nil || !strings.Contains(err.Error(), "given 7 gradient elements, made for 10") {
			t.Errorf("%s: 7 elements to a compressor of 10: %v", name, err)
		}
	}
}

// slowLink is Solo behind a simulated link between 2 processes: each round of
// AlltoallAllgatherBlocks waits for the bytes that would cross it (half of each all-to-all's,
// half of each all-gather's) at bitsPerSecond, both collectives sharing the link.
type slowLink struct {
	Solo
	bitsPerSecond float64
}

func (l slowLink) AlltoallAllgatherBlocks(send, recv, mine, gathered []byte) error {
	bits := 8 * float64(len(send)/2+len(gathered)/2)
	time.Sleep(time.Duration(bits / l.bitsPerSecond * float64(time.Second)))
	return l.Solo.AlltoallAllgatherBlocks(send, recv, mine, gathered)
}

// BenchmarkCompressorPipeline times the compressed all-reduce of MiniLM's 22.7M gradients over
// a simulated link between 2 processes (slowLink at 1 and 10 Gbit/s: 363 and 36 ms of wire per
// update) in one bucket, where the host passes and the wire take turns, and in CompressBucket
// buckets, where they overlap: the second should approach max(host, wire), the first their
// sum. Run it at -cpu 1,2 to see what one core a process does to the overlap.
func BenchmarkCompressorPipeline(b *testing.B) {
	bufs := miniLMGradients(13, 14)
	for _, gbits := range []float64{1, 10} {
		for _, bucket := range []int{benchGradients, 0} {
			name := "one-bucket"
			if bucket == 0 {
				name = "pipelined"
			}
			b.Run(fmt.Sprintf("%gGbit/%s", gbits, name), func(b *testing.B) {
				k := NewCompressor(CodecNamed("bf16"), benchGradients, 1, bucket)
				for b.Loop() {
					if err := k.Reduce(slowLink{bitsPerSecond: gbits * 1e9}, bufs, 1); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
