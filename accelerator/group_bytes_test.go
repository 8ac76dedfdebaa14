package accelerator

import (
	"fmt"
	"github.com/goaccel/goaccel/accelerator/internal/collective"
	"slices"
	"strings"
)

// byteBlockContract is blockContract for the byte collectives of the compressed all-reduce,
// AlltoallAllgatherBlocks: both halves together, each alone, nothing, and bad lengths
// (TestBlockCollectives and TestBlockCollectivesOverMPI run it on one process, 3 loopback
// processes and 2 and 3 MPI processes).
func byteBlockContract(g collective.Group) error {
	n, rank := g.Size(), g.Rank()
	const blk = 3 // block r of rank s's send: {s, r, 9}
	send := make([]byte, n*blk)
	for r := range n {
		copy(send[r*blk:], []byte{byte(rank), byte(r), 9})
	}
	mine := []byte{byte(rank), 0xAB}
	check := func(what string, recv, all []byte) error {
		for s := range len(recv) / blk {
			if got, want := recv[s*blk:(s+1)*blk], []byte{byte(s), byte(rank), 9}; !slices.Equal(got, want) {
				return fmt.Errorf("%s: the all-to-all's block from rank %d is %v, want %v", what, s, got, want)
			}
		}
		for r := range len(all) / 2 {
			if got := all[2*r : 2*r+2]; !slices.Equal(got, []byte{byte(r), 0xAB}) {
				return fmt.Errorf("%s: the all-gather's block %d is %v", what, r, got)
			}
		}
		return nil
	}
	recv, all := make([]byte, n*blk), make([]byte, 2*n)
	if err := g.AlltoallAllgatherBlocks(send, recv, mine, all); err != nil {
		return err
	}
	if err := check("both", recv, all); err != nil {
		return err
	}
	recv, all = make([]byte, n*blk), make([]byte, 2*n)
	if err := g.AlltoallAllgatherBlocks(send, recv, nil, nil); err != nil {
		return err
	}
	if err := g.AlltoallAllgatherBlocks(nil, nil, mine, all); err != nil {
		return err
	}
	if err := check("one at a time", recv, all); err != nil {
		return err
	}
	if err := g.AlltoallAllgatherBlocks(send, recv[1:], mine, all); err == nil || !strings.HasPrefix(err.Error(), "accelerator: AlltoallAllgatherBlocks: ") {
		return fmt.Errorf("an all-to-all into a buffer one short: %v, want an error naming it", err)
	}
	if err := g.AlltoallAllgatherBlocks(send, recv, mine, all[1:]); err == nil || !strings.HasPrefix(err.Error(), "accelerator: AlltoallAllgatherBlocks: ") {
		return fmt.Errorf("an all-gather into a buffer one short: %v, want an error naming it", err)
	}
	if err := g.AlltoallAllgatherBlocks(nil, nil, nil, nil); err != nil {
		return fmt.Errorf("nothing: %w", err)
	}
	return nil
}
