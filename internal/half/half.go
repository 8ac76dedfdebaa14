// Package half converts float32 to and from the two 16-bit float formats of mixed precision,
// bfloat16 (8 exponent bits, 7 mantissa bits: float32's range, 3 significant digits) and IEEE
// 754 binary16, "fp16" (5 exponent bits, 10 mantissa bits: 65504 at most, subnormals down to
// 2^-24). Conversions to 16 bits round to nearest, ties to even, as IEEE 754 and the hardware
// conversions do; values beyond fp16's range become ±Inf, Inf stays Inf and NaN stays NaN
// (quiet), so that a loss scaler downstream still sees a non-finite value. Conversions to
// float32 are exact.
package half

import "math"

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

// FP16 is the binary16 nearest to f (ties to even): ±Inf beyond 65520 (the midpoint between
// 65504 and the next step, 65536), subnormals below 2^-14, ±0 below 2^-25.
func FP16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23) & 0xff
	mant := b & 0x7fffff
	if exp == 0xff {
		if mant != 0 {
			return sign | 0x7e00 | uint16(mant>>13) // NaN, quiet
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15 // the binary16 biased exponent
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e <= 0 { // subnormal (or zero) in binary16: units of 2^-24
		if e < -10 {
			return sign // below half of the least subnormal, 2^-25
		}
		m := mant | 0x800000
		shift := uint(14 - e)
		h := m >> shift
		rem, halfway := m&(1<<shift-1), uint32(1)<<(shift-1)
		if rem > halfway || rem == halfway && h&1 == 1 {
			h++ // may become 0x400, the least normal: right
		}
		return sign | uint16(h)
	}
	h := uint32(e)<<10 | mant>>13
	if rem := mant & 0x1fff; rem > 0x1000 || rem == 0x1000 && h&1 == 1 {
		h++ // carries into the exponent; 65520 and above round to Inf (0x7c00)
	}
	return sign | uint16(h)
}

// FP16ToFloat32 is the float32 that h holds (exact).
func FP16ToFloat32(h uint16) float32 {
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
