//go:build amd64 && !purego

package half

import "golang.org/x/sys/cpu"

// vector says whether this CPU runs the AVX2 + F16C kernels of kernels_amd64.s (every x86
// CPU since about 2013 does); where it does not, the kernels are the Go loops. The vector
// kernels take a multiple of 8 values; the Go loops do the rest.
var vector = cpu.X86.HasAVX2 && hasF16C()

// hasF16C reports CPUID's F16C bit (the conversions between float32 and binary16).
func hasF16C() bool

//go:noescape
func encodeBF16AVX2(w *uint16, x *float32, n int, scale float32)

//go:noescape
func encodeFP16AVX2(w *uint16, x *float32, n int, scale float32)

//go:noescape
func decodeBF16AVX2(x *float32, w *uint16, n int)

//go:noescape
func decodeAddBF16AVX2(sum *float32, w *uint16, n int)

//go:noescape
func decodeFP16AVX2(x *float32, w *uint16, n int)

//go:noescape
func decodeAddFP16AVX2(sum *float32, w *uint16, n int)

// vectorPart is how many of n values the vector kernels take: none without them, else the
// largest multiple of 8.
func vectorPart(n int) int {
	if !vector {
		return 0
	}
	return n &^ 7
}

func encodeBF16(w []uint16, x []float32, scale float32) {
	w = w[:len(x)]
	if v := vectorPart(len(x)); v > 0 {
		encodeBF16AVX2(&w[0], &x[0], v, scale)
		w, x = w[v:], x[v:]
	}
	encodeBF16Go(w, x, scale)
}

func encodeFP16(w []uint16, x []float32, scale float32) {
	w = w[:len(x)]
	if v := vectorPart(len(x)); v > 0 {
		encodeFP16AVX2(&w[0], &x[0], v, scale)
		w, x = w[v:], x[v:]
	}
	encodeFP16Go(w, x, scale)
}

func decodeBF16(x []float32, w []uint16) {
	w = w[:len(x)]
	if v := vectorPart(len(x)); v > 0 {
		decodeBF16AVX2(&x[0], &w[0], v)
		x, w = x[v:], w[v:]
	}
	decodeBF16Go(x, w)
}

func decodeAddBF16(sum []float32, w []uint16) {
	w = w[:len(sum)]
	if v := vectorPart(len(sum)); v > 0 {
		decodeAddBF16AVX2(&sum[0], &w[0], v)
		sum, w = sum[v:], w[v:]
	}
	decodeAddBF16Go(sum, w)
}

func decodeFP16(x []float32, w []uint16) {
	if !vector {
		decodeFP16Go(x, w)
		return
	}
	w = w[:len(x)]
	if v := vectorPart(len(x)); v > 0 {
		decodeFP16AVX2(&x[0], &w[0], v)
		x, w = x[v:], w[v:]
	}
	for i := range x { // the last few (< 8): by arithmetic, not the table
		x[i] = fp16Decode(w[i])
	}
}

func decodeAddFP16(sum []float32, w []uint16) {
	if !vector {
		decodeAddFP16Go(sum, w)
		return
	}
	w = w[:len(sum)]
	if v := vectorPart(len(sum)); v > 0 {
		decodeAddFP16AVX2(&sum[0], &w[0], v)
		sum, w = sum[v:], w[v:]
	}
	for i := range sum {
		sum[i] += fp16Decode(w[i])
	}
}
