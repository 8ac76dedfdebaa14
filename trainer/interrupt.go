package trainer

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/goaccel/goaccel/accelerator"
)

// Interrupt turns Ctrl-C (SIGINT) and preemption (SIGTERM) into a clean stop: the first
// signal asks the training loop to finish its current step, save a checkpoint and return; a
// second signal ends the process at once, without saving (exit status 130 for SIGINT, 143 for
// SIGTERM, as a shell reports a process killed by them).
//
//	intr := trainer.NotifyInterrupt(os.Stderr)
//	defer intr.Stop()
//	res, err := tr.Fit(train, eval, trainer.Config{OutputDir: "runs/sst", Epochs: 3, LearningRate: 2e-5, Interrupt: intr})
//	if res != nil && res.Interrupted { /* say how to resume */ }
//
// A hand-written loop asks between steps: Requested with one process, RequestedAnywhere with
// several (so that all stop after the same step). Fit does that after every step.
type Interrupt struct {
	mu       sync.Mutex
	sig      os.Signal
	ch       chan os.Signal
	done     chan struct{}
	stopOnce sync.Once // Stop closes done once, however many goroutines call it
	out      io.Writer
	exit     func(code int)
}

// NotifyInterrupt starts catching SIGINT and SIGTERM; messages go to out (nil: os.Stderr).
// Call Stop to restore the default behaviour.
func NotifyInterrupt(out io.Writer) *Interrupt {
	if out == nil {
		out = os.Stderr
	}
	i := &Interrupt{ch: make(chan os.Signal, 2), done: make(chan struct{}), out: out, exit: os.Exit}
	signal.Notify(i.ch, os.Interrupt, syscall.SIGTERM)
	go i.watch()
	return i
}

func (i *Interrupt) watch() {
	for {
		select {
		case <-i.done:
			return
		case s := <-i.ch:
			i.mu.Lock()
			first := i.sig == nil
			if first {
				i.sig = s
			}
			i.mu.Unlock()
			if first {
				fmt.Fprintf(i.out, "\n%s: finishing the current step and saving a checkpoint (send it again to "+
					"quit at once, without saving)\n", signalName(s))
				continue
			}
			fmt.Fprintf(i.out, "\n%s again: quitting without saving\n", signalName(s))
			i.exit(exitCode(s))
		}
	}
}

// request records sig as if it had been received (first signal only), without a message.
func (i *Interrupt) request(sig os.Signal) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.sig == nil {
		i.sig = sig
	}
}

// RequestedAnywhere is Requested agreed by every process of acc: true on all of them if a
// signal reached any (which then counts as signalled here too). A launcher signals every
// process, but each sees it at its own moment; calling this at the same place of the loop on
// every process makes them all stop after the same step, so none is left waiting in a
// collective. With one process it is Requested.
func (i *Interrupt) RequestedAnywhere(acc *accelerator.Accelerator) (bool, error) {
	here := i.Requested()
	if acc == nil || acc.NumProcesses() == 1 {
		return here, nil
	}
	flag := 0.0
	if here {
		flag = 1
	}
	anywhere, err := acc.Reduce(flag, accelerator.OpMax)
	if err != nil {
		return false, fmt.Errorf("trainer: agreeing on an interrupt with the other processes: %w", err)
	}
	if anywhere > 0 && !here && i != nil {
		i.request(syscall.SIGTERM) // another process was signalled: stop as it does
	}
	return anywhere > 0, nil
}

// Requested reports whether a signal asked the run to stop.
func (i *Interrupt) Requested() bool {
	if i == nil {
		return false
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.sig != nil
}

// Signal returns the first signal received (nil: none).
func (i *Interrupt) Signal() os.Signal {
	if i == nil {
		return nil
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.sig
}

// Stop stops catching the signals. It may be called more than once, from any goroutine.
func (i *Interrupt) Stop() {
	if i == nil {
		return
	}
	i.stopOnce.Do(func() {
		signal.Stop(i.ch)
		close(i.done)
	})
}

// ExitCode is the exit status a program stopped by the signal should end with, as a shell
// reports a program that the signal ended: 130 for SIGINT, 143 for SIGTERM; 0 when no signal
// came.
func (i *Interrupt) ExitCode() int { return exitCode(i.Signal()) }

func exitCode(s os.Signal) int {
	switch s {
	case nil:
		return 0
	case syscall.SIGTERM:
		return 143
	}
	return 130
}

// signalName is "SIGINT" or "SIGTERM" (the signal's String otherwise).
func signalName(s os.Signal) string {
	switch s {
	case os.Interrupt:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	case nil:
		return "no signal"
	}
	return s.String()
}
