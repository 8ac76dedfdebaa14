//go:build !amd64

package bench

// fmaKernel: there is no FMA loop for this architecture (the peak is not measured).
func fmaKernel() (loop func(int64), flopsPerIter float64, name string) { return nil, 0, "" }
