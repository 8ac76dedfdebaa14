//go:build amd64 && !purego

#include "textflag.h"

// The vector kernels of the bulk passes (kernels_amd64.go): AVX2 and F16C, 8 values an
// iteration, n > 0 a multiple of 8. Each gives the bits of the Go kernel of half.go.

// BCAST broadcasts the 32-bit constant c into every lane of register y (through AX and x).
#define BCAST(c, x, y) MOVL $c, AX; VMOVD AX, x; VPBROADCASTD x, y

// func hasF16C() bool
TEXT ·hasF16C(SB), NOSPLIT, $0-1
	MOVL $1, AX
	XORL CX, CX
	CPUID
	SHRL $29, CX
	ANDL $1, CX
	MOVB CX, ret+0(FP)
	RET

// func encodeBF16AVX2(w *uint16, x *float32, n int, scale float32)
// b = bits(x*scale); h = (b + 0x7fff + (b>>16)&1) >> 16, or for a NaN b>>16 | 0x40.
TEXT ·encodeBF16AVX2(SB), NOSPLIT, $0-28
	MOVQ w+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSS scale+24(FP), Y15
	BCAST(0x7fff, X14, Y14)
	BCAST(1, X13, Y13)
	BCAST(0x7fffffff, X12, Y12)
	BCAST(0x7f800000, X11, Y11)
	BCAST(0x40, X10, Y10)
bf16enc:
	VMULPS (SI), Y15, Y0       // b
	VPSRLD $16, Y0, Y1         // b>>16
	VPAND Y13, Y1, Y2          // its lowest bit: ties to even
	VPADDD Y14, Y0, Y3
	VPADDD Y2, Y3, Y3
	VPSRLD $16, Y3, Y3         // rounded
	VPOR Y10, Y1, Y4           // the quiet NaN
	VPAND Y12, Y0, Y5          // |b|
	VPCMPGTD Y11, Y5, Y5       // NaN: |b| > Inf's bits
	VPBLENDVB Y5, Y4, Y3, Y3
	VPACKUSDW Y3, Y3, Y3       // words 0-3 in qword 0, words 4-7 in qword 2
	VPERMQ $0x08, Y3, Y3
	VMOVDQU X3, (DI)
	ADDQ $32, SI
	ADDQ $16, DI
	SUBQ $8, CX
	JNZ bf16enc
	VZEROUPPER
	RET

// func encodeFP16AVX2(w *uint16, x *float32, n int, scale float32)
// F16C's conversion, rounding to nearest even (immediate 0): overflow to Inf, subnormals,
// NaNs quiet with the payload's top, as FP16.
TEXT ·encodeFP16AVX2(SB), NOSPLIT, $0-28
	MOVQ w+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSS scale+24(FP), Y15
fp16enc:
	VMULPS (SI), Y15, Y0
	VCVTPS2PH $0, Y0, X1
	VMOVDQU X1, (DI)
	ADDQ $32, SI
	ADDQ $16, DI
	SUBQ $8, CX
	JNZ fp16enc
	VZEROUPPER
	RET

// func decodeBF16AVX2(x *float32, w *uint16, n int)
TEXT ·decodeBF16AVX2(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ n+16(FP), CX
bf16dec:
	VPMOVZXWD (SI), Y0
	VPSLLD $16, Y0, Y0
	VMOVDQU Y0, (DI)
	ADDQ $16, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JNZ bf16dec
	VZEROUPPER
	RET

// func decodeAddBF16AVX2(sum *float32, w *uint16, n int)
TEXT ·decodeAddBF16AVX2(SB), NOSPLIT, $0-24
	MOVQ sum+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ n+16(FP), CX
bf16add:
	VPMOVZXWD (SI), Y0
	VPSLLD $16, Y0, Y0
	VMOVUPS (DI), Y1
	VADDPS Y0, Y1, Y1          // sum + value, as sum[i] += value
	VMOVUPS Y1, (DI)
	ADDQ $16, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JNZ bf16add
	VZEROUPPER
	RET

// FP16DEC leaves in Y0 the float32s of the 8 codes at (SI): F16C's conversion, whose NaNs
// are quiet, with bit 22 then set back to the code's bit 9 in NaN lanes, so that a signalling
// NaN keeps its bits as fp16Decode gives them. Needs Y14 = 0x7fff, Y13 = 0x7c00,
// Y12 = 0x400000.
#define FP16DEC \
	VCVTPH2PS (SI), Y0; \
	VPMOVZXWD (SI), Y1; \
	VPAND Y14, Y1, Y2; \
	VPCMPGTD Y13, Y2, Y2; \
	VPSLLD $13, Y1, Y3; \
	VPXOR Y0, Y3, Y3; \
	VPAND Y12, Y3, Y3; \
	VPAND Y2, Y3, Y3; \
	VPXOR Y3, Y0, Y0

// func decodeFP16AVX2(x *float32, w *uint16, n int)
TEXT ·decodeFP16AVX2(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ n+16(FP), CX
	BCAST(0x7fff, X14, Y14)
	BCAST(0x7c00, X13, Y13)
	BCAST(0x400000, X12, Y12)
fp16dec:
	FP16DEC
	VMOVUPS Y0, (DI)
	ADDQ $16, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JNZ fp16dec
	VZEROUPPER
	RET

// func decodeAddFP16AVX2(sum *float32, w *uint16, n int)
TEXT ·decodeAddFP16AVX2(SB), NOSPLIT, $0-24
	MOVQ sum+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ n+16(FP), CX
	BCAST(0x7fff, X14, Y14)
	BCAST(0x7c00, X13, Y13)
	BCAST(0x400000, X12, Y12)
fp16add:
	FP16DEC
	VMOVUPS (DI), Y1
	VADDPS Y0, Y1, Y1
	VMOVUPS Y1, (DI)
	ADDQ $16, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JNZ fp16add
	VZEROUPPER
	RET
