package mpi

/*
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// AlltoallAllgatherBlocks is two collectives of bytes run as one: an all-to-all
// (MPI_Ialltoall), which sends block r of send to rank r and receives in block r of recv the
// block that rank r sent to this rank (send and recv hold Size() blocks of len(send)/Size()
// bytes), and an all-gather (MPI_Iallgather), which writes every rank's mine into gathered,
// rank after rank (len(gathered) == Size()*len(mine)). Both are posted before either is
// waited for, so that their transfers share the link instead of taking turns: a pipelined
// compressed all-reduce runs one bucket's all-to-all with an earlier bucket's all-gather. They
// move data of any element type that MPI cannot reduce (16-bit gradients, which their owners
// then sum themselves). The lengths are the same on every rank; a pair of no bytes (send, or
// mine) is left out. The four buffers must not overlap. It fails after Timeout.
func (c *Comm) AlltoallAllgatherBlocks(send, recv, mine, gathered []byte) error {
	if len(send) != len(recv) || len(send)%c.size != 0 {
		return fmt.Errorf("mpi: alltoall+allgather: all-to-all buffers of %d and %d bytes, want the same length, a multiple of %d ranks", len(send), len(recv), c.size)
	}
	if len(gathered) != c.size*len(mine) {
		return fmt.Errorf("mpi: alltoall+allgather: all-gather buffers of %d and %d bytes, want one block of %d and %d ranks x %d", len(mine), len(gathered), len(mine), c.size, len(mine))
	}
	if max(len(send)/c.size, len(mine)) > maxCount {
		return fmt.Errorf("mpi: alltoall+allgather: blocks of %d and %d bytes exceed the %d that one MPI call moves", len(send)/c.size, len(mine), maxCount)
	}
	return c.collective(begin("alltoall+allgather", int64(len(send)+len(mine)), false), 0, func(r *round) error {
		var reqs []C.gs_handle
		var calls []string
		if len(send) > 0 {
			r.pin.Pin(&send[0])
			r.pin.Pin(&recv[0])
			var req C.gs_handle
			if rc := C.gs_ialltoall(unsafe.Pointer(&send[0]), unsafe.Pointer(&recv[0]), C.int(len(send)/c.size), C.GS_BYTE, c.comm, &req); rc != 0 {
				return c.mpiErr(r.op, "MPI_Ialltoall", rc)
			}
			reqs, calls = append(reqs, req), append(calls, "MPI_Ialltoall")
		}
		if len(mine) > 0 {
			r.pin.Pin(&mine[0])
			r.pin.Pin(&gathered[0])
			var req C.gs_handle
			if rc := C.gs_iallgather(unsafe.Pointer(&mine[0]), unsafe.Pointer(&gathered[0]), C.int(len(mine)), C.GS_BYTE, c.comm, &req); rc != 0 {
				return c.mpiErr(r.op, "MPI_Iallgather", rc)
			}
			reqs, calls = append(reqs, req), append(calls, "MPI_Iallgather")
		}
		if len(reqs) == 0 {
			return nil
		}
		return r.wait("", reqs, calls...)
	})
}
