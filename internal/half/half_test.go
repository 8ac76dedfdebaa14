package half

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"testing"
)

// format is one 16-bit format under test.
type format struct {
	name   string
	encode func(float32) uint16
	decode func(uint16) float32
	inf    uint16  // the code of +Inf
	over   float64 // the value that +Inf stands for in nearest (one step past the largest finite)
}

var formats = []format{
	{"bf16", BF16, BF16ToFloat32, 0x7f80, math.Ldexp(1, 128)},
	{"fp16", FP16, FP16ToFloat32, 0x7c00, 65536},
}

// nearest is the reference rounding, by search rather than bit tricks: the code among
// 0..inf whose value (inf's being f.over) is nearest to |x|, the even code on a tie, with x's
// sign. Counting +Inf as the next step past the largest finite value is exactly IEEE 754's
// overflow rule for round-to-nearest-even.
func (f format) nearest(x float32) uint16 {
	val := func(c int) float64 {
		if c == int(f.inf) {
			return f.over
		}
		return float64(f.decode(uint16(c)))
	}
	a := math.Abs(float64(x))
	var sign uint16
	if math.Signbit(float64(x)) {
		sign = 0x8000
	}
	hi := sort.Search(int(f.inf)+1, func(c int) bool { return val(c) >= a })
	if hi > int(f.inf) {
		return sign | f.inf
	}
	if hi == 0 || val(hi) == a {
		return sign | uint16(hi)
	}
	lo := hi - 1
	dl, dh := a-val(lo), val(hi)-a
	if dl < dh || dl == dh && lo%2 == 0 {
		return sign | uint16(lo)
	}
	return sign | uint16(hi)
}

// TestEveryCodeRoundTrips: decoding any of the 65536 codes and encoding it again gives the
// code back (NaNs give a NaN), so a value that was already 16 bit crosses the wire unchanged.
func TestEveryCodeRoundTrips(t *testing.T) {
	for _, f := range formats {
		for c := range 1 << 16 {
			h := uint16(c)
			x := f.decode(h)
			got := f.encode(x)
			if x != x {
				if back := f.decode(got); back == back {
					t.Errorf("%s: NaN code %#04x encodes to %#04x, which is not a NaN", f.name, h, got)
				}
				continue
			}
			if got != h {
				t.Errorf("%s: code %#04x = %g encodes to %#04x", f.name, h, x, got)
			}
		}
	}
}

// TestRoundsToNearestEven compares the encoders with the reference search on every midpoint
// between neighbouring codes (ties: to even), one float32 step either side of it, and a
// million random float32s of every magnitude, subnormal, beyond fp16's range and near
// float32's largest included.
func TestRoundsToNearestEven(t *testing.T) {
	for _, f := range formats {
		var xs []float32
		for c := 0; c < int(f.inf); c++ {
			lo, hi := float64(f.decode(uint16(c))), float64(f.decode(uint16(c+1)))
			if c+1 == int(f.inf) {
				hi = f.over
			}
			mid := float32((lo + hi) / 2) // exact: 16-bit midpoints need at most 12 bits
			xs = append(xs, mid, math.Nextafter32(mid, 0), math.Nextafter32(mid, float32(math.Inf(1))))
		}
		rng := rand.New(rand.NewPCG(1, 2))
		for range 1 << 20 {
			b := rng.Uint32()
			if b&0x7f800000 == 0x7f800000 {
				continue // Inf and NaN: below
			}
			xs = append(xs, math.Float32frombits(b))
		}
		xs = append(xs, 0, 65504, 65519.99, 65520, 1e5, math.MaxFloat32, math.SmallestNonzeroFloat32,
			0x1p-24, 0x1p-25, 0x1.000002p-25, 0x1p-14, 0x1.ffcp-15)
		bad := 0
		for _, x := range xs {
			for _, v := range []float32{x, -x} {
				if got, want := f.encode(v), f.nearest(v); got != want && bad < 10 {
					bad++
					t.Errorf("%s(%g = %#08x) = %#04x, want %#04x (%g)", f.name, v, math.Float32bits(v), got, want, f.decode(want))
				}
			}
		}
	}
}

// TestNonFiniteStaysNonFinite: ±Inf stays ±Inf, NaN stays NaN (any payload, either sign), and
// fp16's overflow is Inf, which a loss scaler reads as an overflow.
func TestNonFiniteStaysNonFinite(t *testing.T) {
	inf := float32(math.Inf(1))
	nans := []float32{float32(math.NaN()), math.Float32frombits(0x7f800001), math.Float32frombits(0xffc00000),
		math.Float32frombits(0x7f8000ff)}
	for _, f := range formats {
		for _, x := range []float32{inf, -inf} {
			if got := f.decode(f.encode(x)); got != x {
				t.Errorf("%s: %g comes back as %g", f.name, x, got)
			}
		}
		for _, x := range nans {
			if got := f.decode(f.encode(x)); got == got {
				t.Errorf("%s: NaN %#08x comes back as %g", f.name, math.Float32bits(x), got)
			}
		}
	}
	for _, x := range []float32{65520, 1e6, math.MaxFloat32} {
		if got := FP16ToFloat32(FP16(-x)); !math.IsInf(float64(got), -1) {
			t.Errorf("fp16(%g) = %g, want -Inf", -x, got)
		}
	}
	if got := FP16ToFloat32(FP16(0x1p-24)); got != 0x1p-24 {
		t.Errorf("fp16's least subnormal 2^-24 comes back as %g", got)
	}
	if got := BF16ToFloat32(BF16(1e38)); math.Abs(float64(got)-1e38)/1e38 > 1.0/256 {
		t.Errorf("bf16(1e38) = %g: bf16 has float32's range", got)
	}
}

// TestBulkMatchesScalar: the bulk encoders and decoders (the compressed all-reduce's) give the
// scalar functions' bits for every code, and for x*scale.
func TestBulkMatchesScalar(t *testing.T) {
	codes := make([]byte, 2<<16)
	for c := range 1 << 16 {
		codes[2*c], codes[2*c+1] = byte(c), byte(c>>8)
	}
	got := make([]float32, 1<<16)
	for _, d := range []struct {
		name   string
		bulk   func([]float32, []byte)
		scalar func(uint16) float32
	}{{"bf16", DecodeBF16, BF16ToFloat32}, {"fp16", DecodeFP16, fp16Decode}} {
		d.bulk(got, codes)
		for c, v := range got {
			if want := d.scalar(uint16(c)); math.Float32bits(v) != math.Float32bits(want) {
				t.Fatalf("%s: code %#04x decodes in bulk to %g, alone to %g", d.name, c, v, want)
			}
		}
	}
	x := []float32{1, -3.5, 1e-7, 7e4, float32(math.Inf(-1)), 0.1}
	enc := make([]byte, 2*len(x))
	for _, e := range []struct {
		name   string
		bulk   func([]byte, []float32, float32)
		scalar func(float32) uint16
	}{{"bf16", EncodeBF16, BF16}, {"fp16", EncodeFP16, FP16}} {
		e.bulk(enc, x, 0.25)
		for i, v := range x {
			if h := uint16(enc[2*i]) | uint16(enc[2*i+1])<<8; h != e.scalar(v*0.25) {
				t.Errorf("%s: %g x 0.25 encodes in bulk to %#04x, alone to %#04x", e.name, v, h, e.scalar(v*0.25))
			}
		}
	}
}

// kernels are the bulk kernels under test: the ones the bulk passes run on this machine (on
// amd64 with AVX2 and F16C, vector code for whole groups of 8 and Go for the rest) and the Go
// loops alone, which other machines run.
var kernels = []struct {
	name             string
	encBF16, encFP16 func([]uint16, []float32, float32)
	decBF16, decFP16 func([]float32, []uint16)
	addBF16, addFP16 func([]float32, []uint16)
}{
	{"used", encodeBF16, encodeFP16, decodeBF16, decodeFP16, decodeAddBF16, decodeAddFP16},
	{"go", encodeBF16Go, encodeFP16Go, decodeBF16Go, decodeFP16Go, decodeAddBF16Go, decodeAddFP16Go},
}

// edgeBits are float32s where a conversion is most likely to go wrong: zeros, float32's
// subnormals, NaNs with various payloads and signs, ±Inf, the largest finite values, bf16's
// and fp16's ties, their last values before Inf and the first that round to it, and fp16's
// normal/subnormal and subnormal/zero boundaries.
var edgeBits = []uint32{
	0, 1, 2, 0x7fffff, 0x400000, 0x800000, // zero, float32 subnormals, least normal
	0x7f800001, 0x7f801fff, 0x7f802000, 0x7fa00000, 0x7fbfffff, 0x7fc00000, 0x7fc00001, 0x7fffffff, // NaNs
	0x7f800000, 0x7f7fffff, 0x7f7f8000, 0x7f7f7fff, 0x7f7e8000, 0x7f7f0000, // Inf, bf16's top
	0x3f808000, 0x3f818000, 0x3f808001, 0x3f807fff, // bf16 ties to even, either side
	0x477fe000, 0x477fefff, 0x477ff000, 0x477ff001, 0x47800000, 0x477fffff, // 65504, around 65520, 65536
	0x38800000, 0x387fffff, 0x387ff000, 0x387fefff, 0x387fe000, // 2^-14 and just below
	0x33800000, 0x33000000, 0x33000001, 0x32ffffff, 0x33400000, 0x33c00000, 0x34200000, // 2^-24, 2^-25, ties
	0x3f800000, 0x3f801000, 0x3f803000, 0x3f801001, 0x3f800fff, // fp16 ties to even at 1
}

// bulkInputs are the float32s the bulk kernels are checked on: the edges with both signs; for
// every exponent, sign and each of the 2^13 patterns of the low bits (those fp16 drops, with
// its ties and sticky bits) a random top of the mantissa, which covers fp16's whole range,
// subnormals included; and random bits. They are shuffled so that every vector lane sees every
// kind, and their count is odd.
func bulkInputs() []float32 {
	rng := rand.New(rand.NewPCG(7, 8))
	var bits []uint32
	for _, b := range edgeBits {
		bits = append(bits, b, b|0x80000000)
	}
	for se := range uint32(512) {
		for low := range uint32(1 << 13) {
			bits = append(bits, se<<23|rng.Uint32N(1<<10)<<13|low)
		}
	}
	for range 1 << 18 {
		bits = append(bits, rng.Uint32())
	}
	rng.Shuffle(len(bits), func(i, j int) { bits[i], bits[j] = bits[j], bits[i] })
	if len(bits)%2 == 0 {
		bits = bits[1:]
	}
	x := make([]float32, len(bits))
	for i, b := range bits {
		x[i] = math.Float32frombits(b)
	}
	return x
}

// TestKernelsMatchScalar: every bulk kernel, and the bulk passes on memory at an even and an
// odd address (which takes the portable path through a buffer), give the scalar functions'
// bits on bulkInputs and on every code, for lengths that are not multiples of the vector
// width, with scales that move values across fp16's range and into Inf; the decode-adds give
// sum + value (NaN where that is NaN: which NaN's payload survives NaN + NaN is the CPU's
// choice of operand order).
func TestKernelsMatchScalar(t *testing.T) {
	x := bulkInputs()
	lengths := []int{1, 3, 7, 9, 15, 17, 1001, len(x)}
	type enc struct {
		name   string
		scalar func(float32) uint16
		kernel func([]uint16, []float32, float32)
		bulk   func([]byte, []float32, float32)
	}
	type dec struct {
		name          string
		scalar        func(uint16) float32
		kernel, add   func([]float32, []uint16)
		bulk, bulkAdd func([]float32, []byte)
	}
	for _, k := range kernels {
		encs := []enc{{"bf16", BF16, k.encBF16, EncodeBF16}, {"fp16", FP16, k.encFP16, EncodeFP16}}
		for _, e := range encs {
			for _, scale := range []float32{1, 0.25, 3, 0x1p-20} {
				want := make([]uint16, len(x))
				for i, v := range x {
					want[i] = e.scalar(v * scale)
				}
				for _, n := range lengths {
					w := make([]uint16, n)
					e.kernel(w, x[:n], scale)
					for i := range n {
						if w[i] != want[i] {
							t.Fatalf("%s %s kernel, %d values x %g: value %d = %#08x encodes to %#04x, alone to %#04x",
								k.name, e.name, n, scale, i, math.Float32bits(x[i]), w[i], want[i])
						}
					}
				}
				if k.name != "used" {
					continue
				}
				for _, off := range []int{0, 1} {
					n := len(x)
					buf := make([]byte, off+2*n+2)
					buf[off+2*n] = 0xa5
					e.bulk(buf[off:], x, scale)
					for i := range n {
						if h := uint16(buf[off+2*i]) | uint16(buf[off+2*i+1])<<8; h != want[i] {
							t.Fatalf("%s bulk at offset %d, x %g: value %d = %#08x encodes to %#04x, alone to %#04x",
								e.name, off, scale, i, math.Float32bits(x[i]), h, want[i])
						}
					}
					if buf[off+2*n] != 0xa5 {
						t.Fatalf("%s bulk at offset %d wrote past its %d values", e.name, off, n)
					}
				}
			}
		}
		decs := []dec{{"bf16", BF16ToFloat32, k.decBF16, k.addBF16, DecodeBF16, DecodeAddBF16},
			{"fp16", fp16Decode, k.decFP16, k.addFP16, DecodeFP16, DecodeAddFP16}}
		codes := make([]uint16, 1<<16+1) // every code, the last one twice, shuffled
		for c := range codes {
			codes[c] = uint16(c)
		}
		rand.New(rand.NewPCG(9, 10)).Shuffle(len(codes), func(i, j int) { codes[i], codes[j] = codes[j], codes[i] })
		sums := x[:len(codes)] // values to add to: every kind of float32, NaNs and Infs included
		same := func(got, want float32) bool {
			return math.Float32bits(got) == math.Float32bits(want) || got != got && want != want
		}
		for _, d := range decs {
			for _, n := range append(lengths[:len(lengths)-1], len(codes)) {
				got := make([]float32, n)
				d.kernel(got, codes[:n])
				for i, c := range codes[:n] {
					if want := d.scalar(c); math.Float32bits(got[i]) != math.Float32bits(want) {
						t.Fatalf("%s %s kernel, %d values: code %#04x decodes to %#08x, alone to %#08x",
							k.name, d.name, n, c, math.Float32bits(got[i]), math.Float32bits(want))
					}
				}
				copy(got, sums)
				d.add(got, codes[:n])
				for i, c := range codes[:n] {
					if want := sums[i] + d.scalar(c); !same(got[i], want) {
						t.Fatalf("%s %s add kernel, %d values: %g + code %#04x = %g, alone %g", k.name, d.name, n, sums[i], c, got[i], want)
					}
				}
			}
			if k.name != "used" {
				continue
			}
			for _, off := range []int{0, 1} {
				n := len(codes)
				buf := make([]byte, off+2*n)
				for i, c := range codes {
					buf[off+2*i], buf[off+2*i+1] = byte(c), byte(c>>8)
				}
				got := make([]float32, n+1)
				got[n] = 7
				d.bulk(got[:n], buf[off:])
				for i, c := range codes {
					if want := d.scalar(c); math.Float32bits(got[i]) != math.Float32bits(want) {
						t.Fatalf("%s bulk at offset %d: code %#04x decodes to %#08x, alone to %#08x", d.name, off, c, math.Float32bits(got[i]), math.Float32bits(want))
					}
				}
				copy(got, sums)
				d.bulkAdd(got[:n], buf[off:])
				for i, c := range codes {
					if want := sums[i] + d.scalar(c); !same(got[i], want) {
						t.Fatalf("%s bulk add at offset %d: %g + code %#04x = %g, alone %g", d.name, off, sums[i], c, got[i], want)
					}
				}
				if got[n] != 7 {
					t.Fatalf("%s bulk at offset %d wrote past its %d values", d.name, off, n)
				}
			}
		}
	}
}

// BenchmarkEncodeDecode times the bulk round trip of 1M float32 through each format, on
// values of magnitude 1 and on gradient-like values of magnitude 1e-6 (subnormal in fp16):
// the per-element cost the compressed all-reduce pays on the host, about 4 passes per update.
func BenchmarkEncodeDecode(b *testing.B) {
	x := make([]float32, 1<<20)
	buf := make([]byte, 2*len(x))
	for _, mag := range []float32{1, 1e-6} {
		rng := rand.New(rand.NewPCG(3, 4))
		for i := range x {
			x[i] = (rng.Float32()*2 - 1) * mag
		}
		for _, f := range []struct {
			name string
			enc  func([]byte, []float32, float32)
			dec  func([]float32, []byte)
		}{{"bf16", EncodeBF16, DecodeBF16}, {"fp16", EncodeFP16, DecodeFP16}} {
			b.Run(fmt.Sprintf("%s/%g", f.name, mag), func(b *testing.B) {
				b.SetBytes(4 * int64(len(x)))
				for b.Loop() {
					f.enc(buf, x, 1)
					f.dec(x, buf)
				}
			})
		}
	}
}

// BenchmarkPass times each bulk pass alone over 1M gradient-like values (magnitudes from 1e-8
// to 1, so fp16 sees normals and subnormals mixed, as scaled gradients do): the encode and the
// decode that the compressed all-reduce runs twice each per update.
func BenchmarkPass(b *testing.B) {
	x := make([]float32, 1<<20)
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range x {
		x[i] = float32(rng.NormFloat64() * math.Pow(10, -8*rng.Float64()))
	}
	buf := make([]byte, 2*len(x))
	out := make([]float32, len(x))
	for _, f := range []struct {
		name string
		enc  func([]byte, []float32, float32)
		dec  func([]float32, []byte)
	}{{"bf16", EncodeBF16, DecodeBF16}, {"fp16", EncodeFP16, DecodeFP16}} {
		b.Run(f.name+"/encode", func(b *testing.B) {
			b.SetBytes(4 * int64(len(x)))
			for b.Loop() {
				f.enc(buf, x, 1)
			}
		})
		f.enc(buf, x, 1)
		b.Run(f.name+"/decode", func(b *testing.B) {
			b.SetBytes(4 * int64(len(x)))
			for b.Loop() {
				f.dec(out, buf)
			}
		})
	}
}
