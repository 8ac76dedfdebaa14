package collective

import (
	"math"
	"math/rand/v2"
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
			k := NewCompressor(CodecNamed(name), n, 1)
			b.SetBytes(4 * n)
			for b.Loop() {
				if err := k.Reduce(Solo{}, bufs, 1); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
