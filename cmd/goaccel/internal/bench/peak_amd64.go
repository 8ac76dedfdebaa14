package bench

import "golang.org/x/sys/cpu"

//go:noescape
func fmaLoopAVX512(n int64)

//go:noescape
func fmaLoopAVX2(n int64)

// fmaKernel is the widest FMA loop this CPU runs, its FLOPs per iteration and its name.
func fmaKernel() (loop func(int64), flopsPerIter float64, name string) {
	switch {
	case cpu.X86.HasAVX512F:
		return fmaLoopAVX512, 12 * 16 * 2, "AVX-512 FMA"
	case cpu.X86.HasAVX2 && cpu.X86.HasFMA:
		return fmaLoopAVX2, 12 * 8 * 2, "AVX2 FMA"
	}
	return nil, 0, ""
}
