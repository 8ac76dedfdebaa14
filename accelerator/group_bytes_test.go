package accelerator

import (
	"fmt"
	"github.com/goaccel/goaccel/accelerator/internal/collective"
	"slices"
	"strings"
)

// byteBlockContract is blockContract for the byte collectives of the compressed all-reduce,
// AlltoallBytes and AllgatherBlocks (TestBlockCollectives and TestBlockCollectivesOverMPI run
// it on one process, 3 loopback processes and 2 and 3 MPI processes).
func byteBlockContract(g collective.Group) error {
	n, rank := g.Size(), g.Rank()
	const blk = 3 // block r of rank s's send: {s, r, 9}
	send := make([]byte, n*blk)
	for r := range n {
		copy(send[r*blk:], []byte{byte(rank), byte(r), 9})
	}
	recv := make([]byte, n*blk)
	if err := g.AlltoallBytes(send, recv); err != nil {
		return err
	}
	for s := range n {
		if got, want := recv[s*blk:(s+1)*blk], []byte{byte(s), byte(rank), 9}; !slices.Equal(got, want) {
			return fmt.Errorf("AlltoallBytes: the block from rank %d is %v, want %v", s, got, want)
		}
	}
	mine := []byte{byte(rank), 0xAB}
	all := make([]byte, 2*n)
	if err := g.AllgatherBlocks(mine, all); err != nil {
		return err
	}
	for r := range n {
		if got := all[2*r : 2*r+2]; !slices.Equal(got, []byte{byte(r), 0xAB}) {
			return fmt.Errorf("AllgatherBlocks: block %d is %v", r, got)
		}
	}
	if err := g.AlltoallBytes(send, recv[1:]); err == nil || !strings.HasPrefix(err.Error(), "accelerator: AlltoallBytes: ") {
		return fmt.Errorf("AlltoallBytes into a buffer one short: %v, want an error naming it", err)
	}
	if err := g.AllgatherBlocks(mine, all[1:]); err == nil || !strings.HasPrefix(err.Error(), "accelerator: AllgatherBlocks: ") {
		return fmt.Errorf("AllgatherBlocks into a buffer one short: %v, want an error naming it", err)
	}
	if err := g.AlltoallBytes(nil, nil); err != nil {
		return fmt.Errorf("AlltoallBytes of nothing: %w", err)
	}
	return nil
}
