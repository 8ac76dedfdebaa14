// Package half converts float32 to and from the two 16-bit float formats of mixed precision,
// bfloat16 (8 exponent bits, 7 mantissa bits: float32's range, 3 significant digits) and IEEE
// 754 binary16, "fp16" (5 exponent bits, 10 mantissa bits: 65504 at most, subnormals down to
// 2^-24). Conversions to 16 bits round to nearest, ties to even, as IEEE 754 and the hardware
// conversions do; values beyond fp16's range become ±Inf, Inf stays Inf and NaN stays NaN
// (quiet), so that a loss scaler downstream still sees a non-finite value. Conversions to
// float32 are exact.
package half

import (
	"encoding/binary"
	"math"
	"sync"
	"sync/atomic"
	"unsafe"
)

// BF16 is the bfloat16 nearest to f (ties to even): float32's upper 16 bits, rounded.
func BF16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 { // NaN: keep the sign and the top of the payload, quiet
		return uint16(b>>16) | 0x0040
	}
	b += 0x7fff + (b>>16)&1 // carries into the exponent; the largest values round to Inf
	return uint16(b >> 16)
}

// BF16ToFloat32 is the float32 that h holds (exact).
func BF16ToFloat32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// FP16 is the binary16 nearest to f (ties to even): ±Inf from 65520 (the midpoint between
// 65504 and the next step, 65536), subnormals below 2^-14, ±0 up to 2^-25. It has no
// data-dependent branches, which gradients (normal and subnormal values mixed) would
// mispredict: both roundings are computed and one is picked.
func FP16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	a := b & 0x7fffffff
	// Normal: rebias the exponent (127 -> 15) and round the 13 dropped bits to nearest even;
	// a carry moves into the exponent, as it should.
	n := a - (127-15)<<23
	n = (n + 0xfff + (n>>13)&1) >> 13
	// Subnormal (a < 2^-14): adding 0.5, whose float32 ulp is 2^-24 (fp16's least subnormal),
	// makes the FPU round a to a multiple of 2^-24, nearest even; the mantissa bits are then
	// fp16's subnormal code (1024, the least normal, when it rounds up to 2^-14).
	sub := math.Float32bits(math.Float32frombits(a)+0.5) - 0x3f000000
	subnormal := uint32(int32(a-0x38800000) >> 31) // all ones when a < 2^-14: a mask, not a branch
	h := n ^ (n^sub)&subnormal
	if a >= 0x477ff000 { // 65520 and above, Inf included
		h = 0x7c00
	}
	if a > 0x7f800000 { // NaN: quiet, the top of the payload kept
		h = 0x7e00 | (a>>13)&0x3ff
	}
	return sign | uint16(h)
}

// FP16ToFloat32 is the float32 that h holds (exact).
func FP16ToFloat32(h uint16) float32 {
	if t := fp16Table.Load(); t != nil {
		return t[h]
	}
	return fp16Decode(h)
}

// fp16Decode is FP16ToFloat32 by arithmetic (the table's source).
func fp16Decode(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	case exp == 0 && mant == 0:
		return math.Float32frombits(sign)
	case exp == 0: // subnormal: normalise
		e := uint32(127 - 15 + 1)
		for mant&0x400 == 0 {
			mant <<= 1
			e--
		}
		return math.Float32frombits(sign | e<<23 | (mant&0x3ff)<<13)
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
}

// fp16Table maps every binary16 code to its float32 (256 KiB), built by the first bulk
// decode that runs the Go kernels (not the vector ones): a subnormal's decoding loops, and
// gradients hold many subnormals.
var (
	fp16Table atomic.Pointer[[1 << 16]float32]
	fp16Once  sync.Once
)

func fp16TableReady() *[1 << 16]float32 {
	fp16Once.Do(func() {
		t := new([1 << 16]float32)
		for c := range t {
			t[c] = fp16Decode(uint16(c))
		}
		fp16Table.Store(t)
	})
	return fp16Table.Load()
}

// The bulk passes below are the compressed all-reduce's: four of them per update over every
// gradient. Each runs a kernel on 16-bit words: on amd64 with AVX2 and F16C, vector code 8
// values at a time (kernels_amd64.s), else Go loops with no per-element calls, bounds checks
// or branches on the data (gradients mix normal, subnormal and zero values, which branches
// would mispredict). Both give the scalar functions' bits (TestBulkMatchesScalar and
// TestKernelsMatchScalar check them against each other). On a little-endian machine the
// wire's bytes are the words' own memory; elsewhere, or on an odd address, they go through a
// small buffer of words in blocks.

// EncodeBF16 writes BF16(x[i] * scale) for every i into dst as little-endian pairs of bytes
// (len(dst) >= 2*len(x)).
func EncodeBF16(dst []byte, x []float32, scale float32) { encode(dst, x, scale, encodeBF16) }

// EncodeFP16 is EncodeBF16 for binary16.
func EncodeFP16(dst []byte, x []float32, scale float32) { encode(dst, x, scale, encodeFP16) }

// DecodeBF16 is EncodeBF16's inverse for len(x) values (exact).
func DecodeBF16(x []float32, src []byte) { decode(x, src, decodeBF16) }

// DecodeFP16 is EncodeFP16's inverse for len(x) values (exact).
func DecodeFP16(x []float32, src []byte) { decode(x, src, decodeFP16) }

// DecodeAddBF16 adds the len(sum) values that src holds, as EncodeBF16 wrote them, to sum:
// sum[i] += BF16ToFloat32(code i), in one pass rather than a decode and a sum.
func DecodeAddBF16(sum []float32, src []byte) { decode(sum, src, decodeAddBF16) }

// DecodeAddFP16 is DecodeAddBF16 for binary16.
func DecodeAddFP16(sum []float32, src []byte) { decode(sum, src, decodeAddFP16) }

// block is how many values a pass converts at a time through its buffer of words where it
// cannot use the bytes' own memory.
const block = 512

// words is b's memory as 16-bit words when those words hold b's little-endian pairs of bytes:
// on a little-endian machine, with b starting on an even address (a plain, unaligned access
// faults on some machines). Otherwise it is nil.
func words(b []byte) []uint16 {
	p := unsafe.SliceData(b)
	if len(b) < 2 || binary.NativeEndian.Uint16([]byte{1, 0}) != 1 || uintptr(unsafe.Pointer(p))%2 != 0 {
		return nil
	}
	return unsafe.Slice((*uint16)(unsafe.Pointer(p)), len(b)/2)
}

// encode runs the kernel enc over x into dst (len(dst) >= 2*len(x)).
func encode(dst []byte, x []float32, scale float32, enc func([]uint16, []float32, float32)) {
	dst = dst[:2*len(x)]
	if w := words(dst); w != nil {
		enc(w, x, scale)
		return
	}
	var buf [block]uint16
	for lo := 0; lo < len(x); lo += block {
		n := min(block, len(x)-lo)
		enc(buf[:n], x[lo:lo+n], scale)
		for i, h := range buf[:n] {
			binary.LittleEndian.PutUint16(dst[2*(lo+i):], h)
		}
	}
}

// decode runs the kernel dec over the len(x) codes of src into x (len(src) >= 2*len(x)).
func decode(x []float32, src []byte, dec func([]float32, []uint16)) {
	src = src[:2*len(x)]
	if w := words(src); w != nil {
		dec(x, w)
		return
	}
	var buf [block]uint16
	for lo := 0; lo < len(x); lo += block {
		n := min(block, len(x)-lo)
		for i := range buf[:n] {
			buf[i] = binary.LittleEndian.Uint16(src[2*(lo+i):])
		}
		dec(x[lo:lo+n], buf[:n])
	}
}

// encodeBF16Go is EncodeBF16's kernel in Go: BF16 without its branch, the NaN's code picked
// by a mask.
func encodeBF16Go(w []uint16, x []float32, scale float32) {
	w = w[:len(x)]
	for i, v := range x {
		b := math.Float32bits(v * scale)
		h := (b + 0x7fff + (b>>16)&1) >> 16
		nan := uint32(int32(0x7f800000-b&0x7fffffff) >> 31) // all ones for a NaN
		w[i] = uint16(h ^ (h^(b>>16|0x0040))&nan)
	}
}

// encodeFP16Go is EncodeFP16's kernel in Go: FP16 with its two special cases (beyond 65504,
// NaN) picked by masks too.
func encodeFP16Go(w []uint16, x []float32, scale float32) {
	w = w[:len(x)]
	for i, v := range x {
		b := math.Float32bits(v * scale)
		a := b & 0x7fffffff
		n := a - (127-15)<<23
		n = (n + 0xfff + (n>>13)&1) >> 13
		sub := math.Float32bits(math.Float32frombits(a)+0.5) - 0x3f000000
		h := n ^ (n^sub)&uint32(int32(a-0x38800000)>>31)                    // subnormal: a < 2^-14
		h ^= (h ^ 0x7c00) & uint32(int32(0x477fefff-a)>>31)                 // Inf: a >= 65520
		h ^= (h ^ (0x7e00 | a>>13&0x3ff)) & uint32(int32(0x7f800000-a)>>31) // NaN
		w[i] = uint16(b>>16&0x8000 | h)
	}
}

// decodeBF16Go, decodeAddBF16Go, decodeFP16Go and decodeAddFP16Go are the decoding kernels in
// Go (fp16's by table).
func decodeBF16Go(x []float32, w []uint16) {
	w = w[:len(x)]
	for i := range x {
		x[i] = math.Float32frombits(uint32(w[i]) << 16)
	}
}

func decodeAddBF16Go(sum []float32, w []uint16) {
	w = w[:len(sum)]
	for i := range sum {
		sum[i] += math.Float32frombits(uint32(w[i]) << 16)
	}
}

func decodeFP16Go(x []float32, w []uint16) {
	t := fp16TableReady()
	w = w[:len(x)]
	for i := range x {
		x[i] = t[w[i]]
	}
}

func decodeAddFP16Go(sum []float32, w []uint16) {
	t := fp16TableReady()
	w = w[:len(sum)]
	for i := range sum {
		sum[i] += t[w[i]]
	}
}
