package mpi

/*
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"time"
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
// copies. Up to 8 of these all-reduces are in flight at once. bucketBytes <= 0 means
// DefaultBucketBytes; the fusion buffer (kept for the next call) holds two buckets, or all the
// small tensors when they take less.
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
	var total int64
	for _, t := range tensors {
		total += 4 * int64(len(t))
	}
	return c.collective(begin("allreduce-fused", total, false), 0, func(r *round) error {
		q := &inFlight{r: r}
		var buf []float32 // fusion buffer: room for two buckets, or for all the small tensors
		if small > 0 {
			buf = c.fusionBuffer(min(small, 2*bucket))
			r.pin.Pin(&buf[0])
		}
		off, filled, placed, nb := 0, 0, 0, 0 // current bucket: buf[off:off+filled]
		var members [][]float32
		postBucket := func() error {
			if filled == 0 {
				return nil
			}
			nb++
			fused, ms := buf[off:off+filled], members
			what := fmt.Sprintf("bucket %d: %d tensors, %d bytes", nb, len(ms), filled*4)
			err := q.post(what, unsafe.Pointer(&fused[0]), filled, func() {
				for _, t := range ms {
					if mean {
						divide(t, fused[:len(t)], n)
					} else {
						copy(t, fused)
					}
					fused = fused[len(t):]
				}
			})
			off, filled, members = off+filled, 0, nil
			return err
		}
		for i, t := range tensors {
			switch {
			case len(t) == 0:
			case len(t) >= limit:
				r.pin.Pin(&t[0])
				for lo := 0; lo < len(t); lo += maxCount {
					part := t[lo:min(lo+maxCount, len(t))]
					what := fmt.Sprintf("tensor %d: %d bytes", i, len(t)*4)
					err := q.post(what, unsafe.Pointer(&part[0]), len(part), func() {
						if mean {
							divide(part, part, n)
						}
					})
					if err != nil {
						return err
					}
				}
			default:
				if filled+len(t) > bucket {
					if err := postBucket(); err != nil {
						return err
					}
				}
				if filled == 0 && off+min(bucket, small-placed) > len(buf) {
					// No room for the next bucket: the ones in flight must finish first.
					if err := q.wait(); err != nil {
						return err
					}
					off = 0
				}
				copy(buf[off+filled:], t)
				filled += len(t)
				placed += len(t)
				members = append(members, t)
			}
		}
		if err := postBucket(); err != nil {
			return err
		}
		return q.wait()
	})
}

// OnBuckets sets f to be told, after each group of AllreduceFused's all-reduces in flight
// completes, which buckets and tensors they were, their bytes, and when the first was posted
// and the last completed (for a timeline). It runs on the MPI thread; nil (the default)
// turns it off. Set it before the collectives that it should see.
func (c *Comm) OnBuckets(f func(buckets string, bytes int64, start, end time.Time)) { c.onBuckets = f }

// maxInFlight is the most all-reduces AllreduceFused keeps posted at once. Measured on the
// cmd/goaccel/internal/bench/mlp gradients (2 ranks on 2 loaded cores, medians of 21 rounds): one at a time
// took 1.3-1.6x the time of one MPI_Allreduce of the same bytes, 8 in flight 1.1x, fusing them
// all into one bucket 1.8-2.2x.
const maxInFlight = 8

// inFlight is the list of AllreduceFused's posted all-reduces (sum, in place, float32).
type inFlight struct {
	r     *round
	reqs  []C.gs_handle
	whats []string
	done  []func()
	since time.Time // the first post since the last wait (only with an OnBuckets observer)
	bytes int64     // bytes posted since the last wait
}

// post starts an all-reduce of n floats at p; done runs once it completed. When maxInFlight
// are posted, it waits for them all.
func (q *inFlight) post(what string, p unsafe.Pointer, n int, done func()) error {
	var req C.gs_handle
	if rc := C.gs_iallreduce(nil, p, C.int(n), C.GS_FLOAT, C.GS_SUM, q.r.c.comm, &req); rc != 0 {
		return q.r.c.mpiErr(q.r.op+" ("+what+")", "MPI_Iallreduce", rc)
	}
	if q.r.c.onBuckets != nil {
		if len(q.reqs) == 0 {
			q.since = time.Now()
		}
		q.bytes += 4 * int64(n)
	}
	q.reqs = append(q.reqs, req)
	q.whats = append(q.whats, what)
	q.done = append(q.done, done)
	if len(q.reqs) >= maxInFlight {
		return q.wait()
	}
	return nil
}

// wait waits for every posted all-reduce and runs their done functions.
func (q *inFlight) wait() error {
	if len(q.reqs) == 0 {
		return nil
	}
	if err := q.r.wait(" ("+strings.Join(q.whats, ", ")+")", q.reqs, "MPI_Iallreduce"); err != nil {
		return err
	}
	for _, f := range q.done {
		f()
	}
	if obs := q.r.c.onBuckets; obs != nil {
		obs(strings.Join(q.whats, ", "), q.bytes, q.since, time.Now())
		q.bytes = 0
	}
	q.reqs, q.whats, q.done = q.reqs[:0], q.whats[:0], q.done[:0]
	return nil
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
