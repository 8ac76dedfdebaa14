package trainer

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// Interrupt turns Ctrl-C (SIGINT) and preemption (SIGTERM) into a clean stop: the first
// signal asks the training loop to finish its current step, save a checkpoint and return; a
// second signal ends the process at once, without saving (exit status 130 for SIGINT, 143 for
// SIGTERM, as a shell reports a process killed by them).
//
//	intr := trainer.NotifyInterrupt(os.Stderr)
//	defer intr.Stop()
//	res, err := tr.Fit(train, eval, trainer.Config{..., Interrupt: intr})
//	if res != nil && res.Interrupted { /* say how to resume */ }
//
// A hand-written loop asks Requested between steps. With several processes the decision must
// be agreed by all of them before anyone stops (a launcher delivers the signal to every
// process, so each sees it; the loop stops at the same step only if they check at the same
// place).
type Interrupt struct {
	mu   sync.Mutex
	sig  os.Signal
	ch   chan os.Signal
	done chan struct{}
	out  io.Writer
	exit func(code int)
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
					"quit at once, without saving)\n", SignalName(s))
				continue
			}
			fmt.Fprintf(i.out, "\n%s again: quitting without saving\n", SignalName(s))
			code := 130
			if s == syscall.SIGTERM {
				code = 143
			}
			i.exit(code)
		}
	}
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

// Stop stops catching the signals.
func (i *Interrupt) Stop() {
	if i == nil {
		return
	}
	signal.Stop(i.ch)
	select {
	case <-i.done:
	default:
		close(i.done)
	}
}

// SignalName is "SIGINT" or "SIGTERM" (the signal's String otherwise).
func SignalName(s os.Signal) string {
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
