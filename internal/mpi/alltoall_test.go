package mpi

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func init() { children["alltoall"] = childAlltoall }

// TestAlltoallAllgatherBlocks runs AlltoallAllgatherBlocks on 2 and 3 ranks, both halves
// together and each alone: every all-to-all block lands at its rank, every all-gather block in
// rank order, and bad lengths are errors naming the collective.
func TestAlltoallAllgatherBlocks(t *testing.T) { runOnRanks(t, "alltoall", 2, 3) }

func childAlltoall(c *Comm) int {
	k := &checker{c: c}
	rank, n := c.Rank(), c.Size()
	// Block r of rank s's send holds 5 bytes {s, r, s, r, 7}; rank s's all-gather block 3
	// bytes {s, 0xAB, 2s}.
	const blk = 5
	send := make([]byte, n*blk)
	for r := range n {
		copy(send[r*blk:], []byte{byte(rank), byte(r), byte(rank), byte(r), 7})
	}
	mine := []byte{byte(rank), 0xAB, byte(2 * rank)}
	verify := func(what string, recv, all []byte) {
		for s := range len(recv) / blk {
			if got, want := recv[s*blk:(s+1)*blk], []byte{byte(s), byte(rank), byte(s), byte(rank), 7}; !slices.Equal(got, want) {
				k.failf("%s: all-to-all block from rank %d = %v, want %v", what, s, got, want)
			}
		}
		for r := range len(all) / 3 {
			if got := all[3*r : 3*r+3]; !slices.Equal(got, []byte{byte(r), 0xAB, byte(2 * r)}) {
				k.failf("%s: all-gather block %d = %v", what, r, got)
			}
		}
	}
	recv, all := make([]byte, n*blk), make([]byte, 3*n)
	if k.check("alltoall+allgather", c.AlltoallAllgatherBlocks(send, recv, mine, all)) {
		verify("both", recv, all)
	}
	recv, all = make([]byte, n*blk), make([]byte, 3*n)
	if k.check("alltoall alone", c.AlltoallAllgatherBlocks(send, recv, nil, nil)) {
		verify("all-to-all alone", recv, nil)
	}
	if k.check("allgather alone", c.AlltoallAllgatherBlocks(nil, nil, mine, all)) {
		verify("all-gather alone", nil, all)
	}
	k.check("nothing", c.AlltoallAllgatherBlocks(nil, nil, nil, nil))
	if err := c.AlltoallAllgatherBlocks(send[:len(send)-1], recv[:len(recv)-1], nil, nil); err == nil || !strings.Contains(err.Error(), "mpi: alltoall+allgather: all-to-all buffers") {
		k.failf("an all-to-all of a length that is not a multiple of the ranks: %v, want an error naming it", err)
	}
	if err := c.AlltoallAllgatherBlocks(send, recv, mine, all[1:]); err == nil || !strings.Contains(err.Error(), "mpi: alltoall+allgather: all-gather buffers") {
		k.failf("an all-gather into a buffer one short: %v, want an error naming it", err)
	}
	k.check("barrier", c.Barrier(10*time.Second))
	return k.done()
}
