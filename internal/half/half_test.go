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
