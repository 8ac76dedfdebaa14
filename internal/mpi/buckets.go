package mpi

/*
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"runtime"
	"sync"
	"unsafe"
)

// DirectBytes is the size from which AllreduceFused reduces a tensor in place, unfused: 1 MiB.
const DirectBytes = 1 << 20

// DefaultBucketBytes is the size of a fusion bucket when AllreduceFused is given none: 25 MiB,
// PyTorch DDP's default bucket_cap_mb.
const DefaultBucketBytes = 25 << 20

// AllreduceFused sums tensors (one slice per variable, typically gradients) element-wise across
// ranks, in place, and with mean divides the sums by Size. It is the gradient sync of
// data-parallel training, with DDP's buckets (Horovod's tensor fusion): small tensors are copied,
// in order, into a fused buffer of at most bucketBytes and reduced with one MPI_Iallreduce per
// full buffer, so that a model of many small variables does not pay MPI's per-call latency for
// each. A tensor of at least DirectBytes (or bucketBytes, when that is smaller) is reduced in
// place on its own: its transfer already dwarfs the latency, and fusing it would only add two
// copies. bucketBytes <= 0 means DefaultBucketBytes.
//
// The result equals AllreduceFloat32(t, Sum) on each tensor (then, with mean, t[i] /=
// float32(Size())) bit for bit whenever the MPI library adds each element's contributions in an
// order that does not depend on the message length: always with 2 ranks (a+b == b+a), and with
// MPICH 5.0.2 on 3 ranks as the package tests check. Every rank must pass the same number of
// tensors with the same lengths, in the same order. The whole call is one collective: it fails
// after Timeout with an error naming the bucket or tensor that did not complete.
//
// Performance: the copies of small tensors cost memory bandwidth, which on one machine is also
// what the all-reduce itself costs (see BenchmarkAllreduce). Dividing for mean is one more pass
// over every element (spread over GOMAXPROCS goroutines for large tensors); a caller that can
// scale the gradients earlier (e.g. in the graph that computes them) should do so and pass
// mean=false.
func (c *Comm) AllreduceFused(tensors [][]float32, mean bool, bucketBytes int) error {
	if bucketBytes <= 0 {
		bucketBytes = DefaultBucketBytes
	}
	limit := max(1, min(bucketBytes, DirectBytes)/4) // elements of the smallest unfused tensor
	bucket := max(1, bucketBytes/4)                  // elements per bucket
	small := 0                                       // elements of the tensors that are fused
	for _, t := range tensors {
		if len(t) < limit {
			small += len(t)
		}
	}
	n := float32(c.size)
	return c.collective("allreduce-fused", 0, func(r *round) error {
		var fused []float32 // the bucket buffer, allocated at first use
		var members [][]float32
		filled, nb := 0, 0
		flush := func() error {
			if filled == 0 {
				return nil
			}
			nb++
			what := fmt.Sprintf(" (bucket %d: %d tensors, %d bytes)", nb, len(members), filled*4)
			if err := r.allreduce(what, unsafe.Pointer(&fused[0]), filled, 4, C.GS_FLOAT, Sum); err != nil {
				return err
			}
			off := 0
			for _, t := range members {
				src := fused[off : off+len(t)]
				if mean {
					divide(t, src, n)
				} else {
					copy(t, src)
				}
				off += len(t)
			}
			members, filled = members[:0], 0
			return nil
		}
		for i, t := range tensors {
			switch {
			case len(t) == 0:
			case len(t) >= limit:
				r.pin.Pin(&t[0])
				what := fmt.Sprintf(" (tensor %d: %d bytes)", i, len(t)*4)
				if err := r.allreduce(what, unsafe.Pointer(&t[0]), len(t), 4, C.GS_FLOAT, Sum); err != nil {
					return err
				}
				if mean {
					divide(t, t, n)
				}
			default:
				if filled+len(t) > bucket {
					if err := flush(); err != nil {
						return err
					}
				}
				if fused == nil {
					fused = c.fusionBuffer(min(bucket, small))
					r.pin.Pin(&fused[0])
				}
				copy(fused[filled:], t)
				filled += len(t)
				members = append(members, t)
			}
		}
		return flush()
	})
}

// divide sets dst[i] = src[i] / n, on several goroutines when the slices are large: on a machine
// with more cores than local ranks this pass would otherwise cost as much as the all-reduce.
func divide(dst, src []float32, n float32) {
	const piece = 1 << 18 // elements a goroutine is worth starting for
	parts := min(runtime.GOMAXPROCS(0), len(src)/piece)
	if parts <= 1 {
		for i, v := range src {
			dst[i] = v / n
		}
		return
	}
	var wg sync.WaitGroup
	step := (len(src) + parts - 1) / parts
	for lo := 0; lo < len(src); lo += step {
		hi := min(lo+step, len(src))
		wg.Go(func() { divide(dst[lo:hi], src[lo:hi], n) })
	}
	wg.Wait()
}

// fusionBuffer returns the Comm's fusion buffer, grown to at least n elements. Only the MPI
// thread calls it, so it needs no lock.
func (c *Comm) fusionBuffer(n int) []float32 {
	if cap(c.fused) < n {
		c.fused = make([]float32, n)
	}
	return c.fused[:n]
}
