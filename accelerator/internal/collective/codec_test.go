package collective

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// BenchmarkCompressorReduce times the compressed all-reduce of MiniLM's 22.7M gradients on
// Solo, whose collectives are copies: what is left is the host's encoding, summing and
// decoding, the part of the compressed all-reduce that the wire does not account for.
func BenchmarkCompressorReduce(b *testing.B) {
	const n = 22_700_000
	rng := rand.New(rand.NewPCG(11, 12))
	grads := make([]float32, n)
	for i := range grads {
		grads[i] = float32(rng.NormFloat64() * math.Pow(10, -8*rng.Float64()))
	}
	bufs := [][]float32{grads[:n/3], grads[n/3 : 2*n/3], grads[2*n/3:]}
	for _, name := range []string{"bf16", "fp16"} {
		b.Run(name, func(b *testing.B) {
			k := NewCompressor(CodecNamed(name), n, 1, 0)
			b.SetBytes(4 * n)
			for b.Loop() {
				if err := k.Reduce(Solo{}, bufs, 1); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// orderGroup is Solo that records the compressed all-reduce's collectives, by kind and bytes,
// and fails the one numbered failAt (from 1; 0: none).
type orderGroup struct {
	Solo
	calls  []string
	failAt int
}

var errInjected = errors.New("injected failure")

func (o *orderGroup) record(kind string, n int) error {
	o.calls = append(o.calls, fmt.Sprintf("%s %d", kind, n))
	if len(o.calls) == o.failAt {
		return errInjected
	}
	return nil
}

func (o *orderGroup) AlltoallBytes(send, recv []byte) error {
	if err := o.record("alltoall", len(send)); err != nil {
		return err
	}
	return o.Solo.AlltoallBytes(send, recv)
}

func (o *orderGroup) AllgatherBlocks(mine, recv []byte) error {
	if err := o.record("allgather", len(recv)); err != nil {
		return err
	}
	return o.Solo.AllgatherBlocks(mine, recv)
}

// TestCompressorPipelineOrder: 10 elements in buckets of 4 run the pipeline's collectives in
// the order every process must share (all-to-all of bucket b, then all-gather of bucket b-1)
// with each bucket's bytes, and give every element back exactly (one process, values exact in
// 16 bits); a collective that fails makes Reduce return its error; a length other than the
// compressor's is an error naming both.
func TestCompressorPipelineOrder(t *testing.T) {
	in := []float32{1, -2, 0.5, 3, 0.25, -8, 16, 1.5, -0.75, 6}
	for _, name := range []string{"bf16", "fp16"} {
		k := NewCompressor(CodecNamed(name), len(in), 1, 4)
		g := &orderGroup{}
		bufs := [][]float32{append([]float32(nil), in[:3]...), append([]float32(nil), in[3:]...)}
		if err := k.Reduce(g, bufs, 2); err != nil {
			t.Fatal(err)
		}
		want := "alltoall 8, alltoall 8, allgather 8, alltoall 4, allgather 8, allgather 4"
		if got := strings.Join(g.calls, ", "); got != want {
			t.Errorf("%s: collectives %s, want %s", name, got, want)
		}
		for i, x := range append(bufs[0], bufs[1]...) {
			if x != 2*in[i] {
				t.Errorf("%s: element %d is %g, want %g", name, i, x, 2*in[i])
			}
		}
		for failAt := 1; failAt <= 6; failAt++ {
			g := &orderGroup{failAt: failAt}
			if err := k.Reduce(g, bufs, 1); !errors.Is(err, errInjected) {
				t.Errorf("%s: collective %d failing: Reduce returned %v", name, failAt, err)
			}
			if len(g.calls) != failAt {
				t.Errorf("%s: collective %d failing: %d collectives ran (%v)", name, failAt, len(g.calls), g.calls)
			}
		}
		err := k.Reduce(g, [][]float32{bufs[1]}, 1)
		if err == nil || !strings.Contains(err.Error(), "given 7 gradient elements, made for 10") {
			t.Errorf("%s: 7 elements to a compressor of 10: %v", name, err)
		}
	}
}
