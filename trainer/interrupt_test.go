package trainer

import (
	"io"
	"sync"
	"testing"
)

// TestInterruptStopConcurrent calls Stop from many goroutines at once: each must return
// (closing the watcher's channel once), none may panic with "close of closed channel".
func TestInterruptStopConcurrent(t *testing.T) {
	for round := 0; round < 2000; round++ {
		intr := NotifyInterrupt(io.Discard)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for g := 0; g < 32; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				intr.Stop()
			}()
		}
		close(start)
		wg.Wait()
		select {
		case <-intr.done:
		default:
			t.Fatalf("round %d: after Stop the watcher was not told to end", round)
		}
		intr.Stop() // once more, after the others: still fine
	}
}
