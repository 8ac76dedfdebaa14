package trainer

import (
	"io"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/goaccel/goaccel/internal/testutil"
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

// TestInterruptSIGTERM: SIGTERM (a preempted job) asks for the same clean stop as Ctrl-C, says
// so, and the program's exit status is then 143, as a shell reports a process killed by it.
func TestInterruptSIGTERM(t *testing.T) {
	out := &testutil.SyncBuffer{}
	intr := NotifyInterrupt(out)
	defer intr.Stop()
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); !intr.Requested(); { // the signal's delivery is the event
		if time.Now().After(deadline) {
			t.Fatal("SIGTERM was not caught within a minute")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if intr.Signal() != syscall.SIGTERM || intr.ExitCode() != 143 {
		t.Errorf("after SIGTERM: signal %v, exit status %d; want SIGTERM and 143", intr.Signal(), intr.ExitCode())
	}
	for deadline := time.Now().Add(time.Minute); !strings.Contains(out.String(), "finishing the current step"); {
		if time.Now().After(deadline) {
			t.Fatalf("no word of the stop: %q", out.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}
