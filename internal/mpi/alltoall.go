package mpi

/*
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// AlltoallBytes sends block r of send to rank r and receives, in block r of recv, the block
// that rank r sent to this rank (MPI_Ialltoall of bytes): send and recv both hold Size() blocks
// of len(send)/Size() bytes, the same length on every rank. It moves data of any element type
// that MPI cannot reduce, e.g. the 16-bit gradient chunks of a compressed all-reduce, whose
// owners then sum them themselves. send and recv must not overlap. It fails after Timeout.
func (c *Comm) AlltoallBytes(send, recv []byte) error {
	if len(send) != len(recv) || len(send)%c.size != 0 {
		return fmt.Errorf("mpi: alltoall: buffers of %d and %d bytes, want the same length, a multiple of %d ranks", len(send), len(recv), c.size)
	}
	n := len(send) / c.size
	return c.byteBlocks("alltoall", "MPI_Ialltoall", send, recv, func(s, r unsafe.Pointer, req *C.gs_handle) C.int {
		return C.gs_ialltoall(s, r, C.int(n), C.GS_BYTE, c.comm, req)
	})
}

// AllgatherBlocks writes every rank's mine into recv, rank after rank (MPI_Iallgather of
// bytes): len(recv) == Size()*len(mine), the same lengths on every rank. Unlike AllgatherBytes
// it exchanges no lengths first: one MPI call. It fails after Timeout.
func (c *Comm) AllgatherBlocks(mine, recv []byte) error {
	if len(recv) != c.size*len(mine) {
		return fmt.Errorf("mpi: allgather: buffers of %d and %d bytes, want one block of %d and %d ranks x %d", len(mine), len(recv), len(mine), c.size, len(mine))
	}
	return c.byteBlocks("allgather", "MPI_Iallgather", mine, recv, func(s, r unsafe.Pointer, req *C.gs_handle) C.int {
		return C.gs_iallgather(s, r, C.int(len(mine)), C.GS_BYTE, c.comm, req)
	})
}

// byteBlocks runs a collective of byte blocks whose lengths the caller checked: it pins both
// buffers and posts it with post.
func (c *Comm) byteBlocks(name, call string, send, recv []byte, post func(s, r unsafe.Pointer, req *C.gs_handle) C.int) error {
	if max(len(send), len(recv))/c.size > maxCount {
		return fmt.Errorf("mpi: %s: blocks of %d bytes exceed the %d that one MPI call moves", name, max(len(send), len(recv))/c.size, maxCount)
	}
	return c.collective(begin(name, int64(len(send)), false), 0, func(r *round) error {
		if len(send) == 0 {
			return nil
		}
		r.pin.Pin(&send[0])
		r.pin.Pin(&recv[0])
		return r.run("", call, func(req *C.gs_handle) C.int {
			return post(unsafe.Pointer(&send[0]), unsafe.Pointer(&recv[0]), req)
		})
	})
}
