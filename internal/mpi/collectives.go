package mpi

/*
#include "shim.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"time"
	"unsafe"
)

// Op is a reduction operation.
type Op int

// The reductions of Allreduce*. Their values are shim.h's GS_SUM, GS_MAX and GS_MIN.
const (
	Sum Op = 1
	Max Op = 2
	Min Op = 3
)

// The Go and C values must agree: these fail to compile otherwise.
var (
	_ [Sum - C.GS_SUM]struct{}
	_ [C.GS_SUM - Sum]struct{}
	_ [Max - C.GS_MAX]struct{}
	_ [C.GS_MAX - Max]struct{}
	_ [Min - C.GS_MIN]struct{}
	_ [C.GS_MIN - Min]struct{}
)

// String names the operation.
func (o Op) String() string {
	switch o {
	case Sum:
		return "sum"
	case Max:
		return "max"
	case Min:
		return "min"
	}
	return fmt.Sprintf("Op(%d)", int(o))
}

// maxCount is the most elements one MPI call moves (MPI counts are C ints); larger buffers go
// in several calls.
const maxCount = 1 << 30

// trackAllLimit is the largest job in which every rank tells every other one that it arrived
// at a collective, so that any rank's timeout names the missing ranks. In larger jobs the ranks
// tell rank 0 only (2(n-1) messages per collective instead of n(n-1)), and only rank 0 can name them.
// A Comm holds it as trackAll, which tests lower.
const trackAllLimit = 64

// ErrTimeout is wrapped by every error of a collective that ran out of time (see TimeoutError).
var ErrTimeout = errors.New("collective timed out")

// TimeoutError is the error of a collective that did not complete within its timeout. After it
// the job is broken: every later collective fails, and Exit aborts the job.
type TimeoutError struct {
	// Op names the collective, with its sequence number (the count of collectives before it,
	// equal on every rank of a correct program), e.g. "barrier #12".
	Op string
	// Rank and Size are this process's rank and the job's size.
	Rank, Size int
	// After is the timeout that ran out.
	After time.Duration
	// Tracked says whether this rank knew of every other rank's arrival; Missing is only
	// complete when it is (always in jobs of at most 64 ranks, on rank 0 in larger ones).
	Tracked bool
	// Missing lists the ranks that never arrived at this collective, as far as this rank knows.
	// Empty with Tracked: every rank arrived but the operation did not complete.
	Missing []int
}

// Error says what timed out, where, and which ranks never arrived.
func (e *TimeoutError) Error() string {
	var why string
	switch {
	case !e.Tracked:
		why = "rank 0's error names the ranks that never arrived"
	case len(e.Missing) == 0:
		why = "every rank arrived but the operation did not complete (a rank may have died or hung inside it)"
	case len(e.Missing) == 1:
		why = fmt.Sprintf("rank %d never arrived", e.Missing[0])
	default:
		s := make([]string, len(e.Missing))
		for i, r := range e.Missing {
			s[i] = fmt.Sprint(r)
		}
		why = fmt.Sprintf("ranks %s never arrived", strings.Join(s, ", "))
	}
	return fmt.Sprintf("mpi: %s: timed out after %v on rank %d of %d: %s", e.Op, e.After, e.Rank, e.Size, why)
}

// Unwrap makes errors.Is(err, ErrTimeout) true.
func (e *TimeoutError) Unwrap() error { return ErrTimeout }

// round is one collective call in progress on the MPI thread: its arrival messages, its
// deadline, and the Go memory pinned while MPI holds it.
type round struct {
	c        *Comm
	op       string // "allreduce #3"
	timeout  time.Duration
	deadline time.Time
	pin      runtime.Pinner

	recv, send         []C.gs_handle // arrival messages from / to peers
	recvDone, sendDone []C.int
	recvFrom           []int
	tracked            bool
}

// collective runs body on the MPI thread as the collective e (see begin), recorded in the
// Comm's ring of its last collectives: it first posts the arrival messages, under
// GOACCEL_DEBUG exchanges e's description with every rank (see verify), and then body posts
// and waits for its data operations through round.run. A failure or a timeout breaks the
// Comm; a timeout also writes the hang report (WriteHangReport).
func (c *Comm) collective(e *call, timeout time.Duration, body func(r *round) error) error {
	name := e.op
	err := c.do(func() error {
		c.mu.Lock()
		if c.finalized {
			c.mu.Unlock()
			return fmt.Errorf("mpi: %s: MPI is finalized", name)
		}
		if c.broken != nil {
			err := c.broken
			c.mu.Unlock()
			return fmt.Errorf("%w; %s refused: the job is broken", err, name)
		}
		seq := c.seq
		c.seq++
		if timeout <= 0 {
			timeout = c.timeout
		}
		c.push(e, seq)
		c.mu.Unlock()

		r := &round{c: c, op: fmt.Sprintf("%s #%d", name, seq), timeout: timeout, deadline: time.Now().Add(timeout)}
		defer r.pin.Unpin()
		c.armAlarms()
		err := r.postArrivals(arrivalTag(seq, e))
		if err == nil && c.debug {
			err = r.verify(e)
		}
		if err == nil {
			err = body(r)
		}
		if err == nil {
			err = r.wait("", nil) // the arrival messages still in flight
		}
		c.mu.Lock()
		c.finish(e, err)
		if err != nil {
			c.broken = err
		}
		c.mu.Unlock()
		return err
	})
	if errors.Is(err, ErrTimeout) && e.state == "timed out" {
		_, _ = c.WriteHangReport(err.Error())
		_ = c.do(func() error { c.soundAlarm(); return nil }) // the others write theirs
	}
	return err
}

// opCodes numbers the collectives for arrivalTag.
var opCodes = []string{"barrier", "broadcast", "allgather", "allreduce", "allreduce-fused", "reduce-scatter", "alltoall+allgather"}

// arrivalTag is the tag of collective seq's arrival messages: it encodes the sequence number
// and the operation, so that ranks that call different collectives at the same sequence
// number (one skipped an Evaluate) never see each other arrive and both time out at the
// collective they called, even where MPI itself matched the mismatched operations. Tags stay
// within 32767, the least MPI_TAG_UB that MPI guarantees.
func arrivalTag(seq uint32, e *call) int {
	code := 0 // every collective is in the list; 8 codes fit
	for i, op := range opCodes {
		if op == e.op {
			code = i
		}
	}
	if e.op == "allgather" && !e.varies {
		code = len(opCodes) // AllgatherFloat32, not AllgatherBytes
	}
	return int(seq%4000)*8 + code + 1
}

// postArrivals posts the zero-byte "arrived" messages of this round, with tag.
func (r *round) postArrivals(tag int) error {
	c := r.c
	if c.size == 1 {
		r.tracked = true
		return nil
	}
	all := c.size <= c.trackAll
	r.tracked = all || c.rank == 0
	for p := 0; p < c.size; p++ {
		if p == c.rank {
			continue
		}
		if all || c.rank == 0 {
			var req C.gs_handle
			if rc := C.gs_irecv0(C.int(p), C.int(tag), c.comm, &req); rc != 0 {
				return c.mpiErr(r.op, "MPI_Irecv (arrival message)", rc)
			}
			r.recv = append(r.recv, req)
			r.recvFrom = append(r.recvFrom, p)
		}
		if all || p == 0 {
			var req C.gs_handle
			if rc := C.gs_isend0(C.int(p), C.int(tag), c.comm, &req); rc != 0 {
				return c.mpiErr(r.op, "MPI_Isend (arrival message)", rc)
			}
			r.send = append(r.send, req)
		}
	}
	r.recvDone = make([]C.int, len(r.recv))
	r.sendDone = make([]C.int, len(r.send))
	return nil
}

// run posts one data operation (post fills in its request) and waits for it.
func (r *round) run(what, call string, post func(req *C.gs_handle) C.int) error {
	var req C.gs_handle
	if rc := post(&req); rc != 0 {
		return r.c.mpiErr(r.op+what, call, rc)
	}
	return r.wait(what, []C.gs_handle{req}, call)
}

// wait waits for the data requests and, alongside, the arrival messages, until r.deadline. It
// waits in slices of at most alarmPoll, and between slices answers another rank's alarm
// (see alarm) by writing this rank's hang report.
func (r *round) wait(what string, data []C.gs_handle, call ...string) error {
	nd, nr := len(data), len(r.recv)
	n := nd + nr + len(r.send)
	if n == 0 {
		return nil
	}
	reqs := make([]C.gs_handle, 0, n)
	reqs = append(append(append(reqs, data...), r.recv...), r.send...)
	done := make([]C.int, nd, n)
	done = append(append(done, r.recvDone...), r.sendDone...)
	var failed C.int
	var rc C.int
	for {
		remaining := time.Until(r.deadline)
		slice := min(max(remaining, 0), alarmPoll)
		rc = C.gs_wait(&reqs[0], &done[0], C.int(n), C.int(nd), C.int(nr), C.double(slice.Seconds()), &failed)
		if rc != C.GS_TIMEOUT || remaining <= alarmPoll {
			break
		}
		r.c.answerAlarms()
	}
	copy(r.recv, reqs[nd:nd+nr])
	copy(r.recvDone, done[nd:nd+nr])
	copy(r.send, reqs[nd+nr:])
	copy(r.sendDone, done[nd+nr:])
	switch rc {
	case 0:
		return nil
	case C.GS_TIMEOUT:
		e := &TimeoutError{Op: r.op + what, Rank: r.c.rank, Size: r.c.size, After: r.timeout, Tracked: r.tracked}
		for i, d := range r.recvDone {
			if d == 0 {
				e.Missing = append(e.Missing, r.recvFrom[i])
			}
		}
		return e
	}
	name := "MPI_Test"
	if int(failed) < nd && len(call) > 0 {
		name = "MPI_Test of " + call[min(int(failed), len(call)-1)]
	} else if int(failed) >= nd {
		name = "MPI_Test of an arrival message"
	}
	return r.c.mpiErr(r.op+what, name, rc)
}

// allreduce reduces n elements of type dt at p, in place, in chunks of maxCount.
func (r *round) allreduce(what string, p unsafe.Pointer, n, elem int, dt C.int, op Op) error {
	for off := 0; off < n; off += maxCount {
		cnt := min(maxCount, n-off)
		q := unsafe.Add(p, off*elem)
		err := r.run(what, "MPI_Iallreduce", func(req *C.gs_handle) C.int {
			return C.gs_iallreduce(nil, q, C.int(cnt), dt, C.int(op), r.c.comm, req)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// AllreduceFloat32 replaces buf, on every rank, by the element-wise reduction (Sum, Max or Min)
// of all ranks' bufs. Every rank must pass the same length. It fails after Timeout.
func (c *Comm) AllreduceFloat32(buf []float32, op Op) error {
	return allreduceSlice(c, buf, op, C.GS_FLOAT)
}

// AllreduceFloat64 is AllreduceFloat32 for float64.
func (c *Comm) AllreduceFloat64(buf []float64, op Op) error {
	return allreduceSlice(c, buf, op, C.GS_DOUBLE)
}

// AllreduceInt64 is AllreduceFloat32 for int64: the tool for decisions every rank must agree
// on, e.g. the Max of a "stop now" flag, or the Sum of example counts.
func (c *Comm) AllreduceInt64(buf []int64, op Op) error {
	return allreduceSlice(c, buf, op, C.GS_INT64)
}

func allreduceSlice[T float32 | float64 | int64](c *Comm, buf []T, op Op, dt C.int) error {
	if op != Sum && op != Max && op != Min {
		return fmt.Errorf("mpi: allreduce: unknown reduction %v", op)
	}
	return c.collective(begin("allreduce", int64(len(buf))*int64(unsafe.Sizeof(*new(T))), false), 0, func(r *round) error {
		if len(buf) == 0 {
			return nil
		}
		r.pin.Pin(&buf[0])
		return r.allreduce("", unsafe.Pointer(&buf[0]), len(buf), int(unsafe.Sizeof(buf[0])), dt, op)
	})
}

// Broadcast copies root's buf into every other rank's buf. Every rank must pass the same length.
func (c *Comm) Broadcast(buf []byte, root int) error {
	if root < 0 || root >= c.size {
		return fmt.Errorf("mpi: broadcast: root %d out of range [0, %d)", root, c.size)
	}
	return c.collective(begin("broadcast", int64(len(buf)), false), 0, func(r *round) error {
		if len(buf) == 0 {
			return nil
		}
		r.pin.Pin(&buf[0])
		for off := 0; off < len(buf); off += maxCount {
			cnt := min(maxCount, len(buf)-off)
			q := unsafe.Pointer(&buf[off])
			err := r.run("", "MPI_Ibcast", func(req *C.gs_handle) C.int {
				return C.gs_ibcast(q, C.int(cnt), C.GS_BYTE, C.int(root), c.comm, req)
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// AllgatherBytes returns every rank's mine, indexed by rank; the lengths may differ between
// ranks (the lengths are exchanged first). The total must stay under 2 GiB. The returned slices
// share one buffer; out[c.Rank()] is a copy of mine.
func (c *Comm) AllgatherBytes(mine []byte) ([][]byte, error) {
	var out [][]byte
	err := c.collective(begin("allgather", int64(len(mine)), true), 0, func(r *round) error {
		n := c.size
		send := []int64{int64(len(mine))}
		sizes := make([]int64, n)
		r.pin.Pin(&send[0])
		r.pin.Pin(&sizes[0])
		err := r.run(" (sizes)", "MPI_Iallgather", func(req *C.gs_handle) C.int {
			return C.gs_iallgather(unsafe.Pointer(&send[0]), unsafe.Pointer(&sizes[0]), 1, C.GS_INT64, c.comm, req)
		})
		if err != nil {
			return err
		}
		counts := make([]C.int, n)
		displs := make([]C.int, n)
		var total int64
		for i, s := range sizes {
			if total+s > math.MaxInt32 {
				return fmt.Errorf("mpi: %s: %d bytes from %d ranks exceed MPI's 2 GiB limit of one all-gather", r.op, total+s, n)
			}
			counts[i], displs[i] = C.int(s), C.int(total)
			total += s
		}
		buf := make([]byte, total)
		var sp, rp unsafe.Pointer
		if len(mine) > 0 {
			r.pin.Pin(&mine[0])
			sp = unsafe.Pointer(&mine[0])
		}
		if total > 0 {
			r.pin.Pin(&buf[0])
			rp = unsafe.Pointer(&buf[0])
		}
		r.pin.Pin(&counts[0])
		r.pin.Pin(&displs[0])
		err = r.run("", "MPI_Iallgatherv", func(req *C.gs_handle) C.int {
			return C.gs_iallgatherv(sp, C.int(len(mine)), rp, &counts[0], &displs[0], c.comm, req)
		})
		if err != nil {
			return err
		}
		out = make([][]byte, n)
		for i := range out {
			a, b := int(displs[i]), int(displs[i])+int(counts[i])
			out[i] = buf[a:b:b]
		}
		return nil
	})
	return out, err
}

// ReduceScatterFloat32 sums send element-wise over all ranks and leaves this rank's block of the
// sums in recv (MPI_Ireduce_scatter_block): send holds Size() blocks of len(recv) elements,
// block r going to rank r, so that len(send) == Size()*len(recv) on every rank. It is the
// gradient step of sharded training (each rank keeps the sums of its shard). Every rank must
// pass the same lengths; send and recv must not overlap. It fails after Timeout.
func (c *Comm) ReduceScatterFloat32(send, recv []float32, op Op) error {
	if op != Sum && op != Max && op != Min {
		return fmt.Errorf("mpi: reduce-scatter: unknown reduction %v", op)
	}
	return c.blocks("reduce-scatter", "MPI_Ireduce_scatter_block", send, recv, len(recv), func(s, r unsafe.Pointer, req *C.gs_handle) C.int {
		return C.gs_ireduce_scatter_block(s, r, C.int(len(recv)), C.GS_FLOAT, C.int(op), c.comm, req)
	})
}

// AllgatherFloat32 writes every rank's mine into recv, rank after rank (MPI_Iallgather):
// len(recv) == Size()*len(mine), the same lengths on every rank. It is the parameter step of
// sharded training (every rank gets all the shards). It fails after Timeout.
func (c *Comm) AllgatherFloat32(mine, recv []float32) error {
	return c.blocks("allgather", "MPI_Iallgather", mine, recv, len(mine), func(s, r unsafe.Pointer, req *C.gs_handle) C.int {
		return C.gs_iallgather(s, r, C.int(len(mine)), C.GS_FLOAT, c.comm, req)
	})
}

// blocks runs a collective that moves one block of n elements per rank from send to recv, of
// which one holds Size() blocks: it checks the lengths, pins both and posts it with post.
func (c *Comm) blocks(name, call string, send, recv []float32, n int, post func(s, r unsafe.Pointer, req *C.gs_handle) C.int) error {
	if long := max(len(send), len(recv)); long != c.size*n || min(len(send), len(recv)) != n {
		return fmt.Errorf("mpi: %s: buffers of %d and %d elements, want one block of %d and %d ranks x %d", name, len(send), len(recv), n, c.size, n)
	}
	if n > maxCount {
		return fmt.Errorf("mpi: %s: blocks of %d elements exceed the %d that one MPI call moves", name, n, maxCount)
	}
	return c.collective(begin(name, 4*int64(len(send)), false), 0, func(r *round) error {
		if n == 0 {
			return nil
		}
		r.pin.Pin(&send[0])
		r.pin.Pin(&recv[0])
		return r.run("", call, func(req *C.gs_handle) C.int {
			return post(unsafe.Pointer(&send[0]), unsafe.Pointer(&recv[0]), req)
		})
	})
}

// Barrier returns when every rank has called Barrier. If that takes longer than timeout (0
// means Timeout) it returns a *TimeoutError naming the ranks that never arrived, and the Comm
// is broken (Exit then aborts the job).
func (c *Comm) Barrier(timeout time.Duration) error {
	return c.collective(begin("barrier", 0, false), timeout, func(r *round) error {
		return r.run("", "MPI_Ibarrier", func(req *C.gs_handle) C.int {
			return C.gs_ibarrier(c.comm, req)
		})
	})
}

// AllreduceRaw is one blocking MPI_Allreduce (sum, in place) with none of the package's
// machinery (no timeout, no buckets, no arrival messages): the reference that benchmarks
// compare AllreduceFused with. Not for training code: a missing rank makes it wait forever.
func (c *Comm) AllreduceRaw(buf []float32) error {
	return c.do(func() error {
		if rc := C.gs_allreduce(nil, unsafe.Pointer(&buf[0]), C.int(len(buf)), C.GS_FLOAT, C.GS_SUM, c.comm); rc != 0 {
			return c.mpiErr("allreduce (raw)", "MPI_Allreduce", rc)
		}
		return nil
	})
}

// allgatherBytes gathers every rank's mine (the same length everywhere) into all, rank after
// rank, within the round: GOACCEL_DEBUG's exchange.
// It waits for the exchange alone, not for the arrival messages: those never come from a rank
// that called another collective (arrivalTag), which is what the exchange is to report. When it
// times out, the arrival messages are tested once more to name the ranks that never came.
func (r *round) allgatherBytes(what string, mine, all []byte) error {
	r.pin.Pin(&mine[0])
	r.pin.Pin(&all[0])
	recv, recvDone, send, sendDone := r.recv, r.recvDone, r.send, r.sendDone
	r.recv, r.recvDone, r.send, r.sendDone = nil, nil, nil, nil
	err := r.run(what, "MPI_Iallgather", func(req *C.gs_handle) C.int {
		return C.gs_iallgather(unsafe.Pointer(&mine[0]), unsafe.Pointer(&all[0]), C.int(len(mine)), C.GS_BYTE, r.c.comm, req)
	})
	r.recv, r.recvDone, r.send, r.sendDone = recv, recvDone, send, sendDone
	if errors.Is(err, ErrTimeout) {
		if werr := r.wait(what, nil); werr != nil {
			return werr // the deadline has passed: one test of the arrivals, naming the missing
		}
	}
	return err
}
