package mpi

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func init() { children["alltoall"] = childAlltoall }

// TestAlltoallAndByteBlocks runs AlltoallBytes and AllgatherBlocks on 2 and 3 ranks: every
// block lands at its rank, in rank order, and bad lengths are errors naming the collective.
func TestAlltoallAndByteBlocks(t *testing.T) { runOnRanks(t, "alltoall", 2, 3) }

func childAlltoall(c *Comm) int {
	k := &checker{c: c}
	rank, n := c.Rank(), c.Size()
	// Block r of rank s's send holds 5 bytes {s, r, s, r, 7}.
	const blk = 5
	send := make([]byte, n*blk)
	for r := range n {
		copy(send[r*blk:], []byte{byte(rank), byte(r), byte(rank), byte(r), 7})
	}
	recv := make([]byte, n*blk)
	if k.check("alltoall", c.AlltoallBytes(send, recv)) {
		for s := range n {
			if got, want := recv[s*blk:(s+1)*blk], []byte{byte(s), byte(rank), byte(s), byte(rank), 7}; !slices.Equal(got, want) {
				k.failf("alltoall: block from rank %d = %v, want %v", s, got, want)
			}
		}
	}
	if err := c.AlltoallBytes(send[:len(send)-1], recv[:len(recv)-1]); err == nil || !strings.Contains(err.Error(), "mpi: alltoall: ") {
		k.failf("alltoall of a length that is not a multiple of the ranks: %v, want an error naming it", err)
	}
	k.check("alltoall of nothing", c.AlltoallBytes(nil, nil))

	mine := []byte{byte(rank), 0xAB, byte(2 * rank)}
	all := make([]byte, 3*n)
	if k.check("allgather blocks", c.AllgatherBlocks(mine, all)) {
		for r := range n {
			if got := all[3*r : 3*r+3]; !slices.Equal(got, []byte{byte(r), 0xAB, byte(2 * r)}) {
				k.failf("allgather blocks: block %d = %v", r, got)
			}
		}
	}
	if err := c.AllgatherBlocks(mine, all[1:]); err == nil || !strings.Contains(err.Error(), "mpi: allgather: ") {
		k.failf("allgather blocks into a buffer one short: %v, want an error naming it", err)
	}
	k.check("barrier", c.Barrier(10*time.Second))
	return k.done()
}
