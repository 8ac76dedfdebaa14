package trainer

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progress shows the run on the main process: one bar per epoch on a terminal (step count,
// smoothed loss, examples/s, ETA), or one plain line every interval elsewhere (no escape
// codes), and one line per evaluation in both cases.
type progress struct {
	out      io.Writer
	tty      bool
	interval time.Duration
	epochs   int // 0: unknown (MaxSteps only)

	bar       *progressbar.ProgressBar
	epoch     int
	steps     int // steps of the current epoch
	done      int // steps of the current epoch done
	lastPlain time.Time
	lastDesc  time.Time

	// Smoothed values: exponential moving averages with bias correction.
	loss, lossW   float64
	rate, rateW   float64 // examples per second
	secs, secsW   float64 // seconds per step
	lastStepAt    time.Time
	update        int64
	updateOfTotal int64
}

// smoothing is the weight of the newest value in the moving averages shown.
const smoothing = 0.1

// isTerminal reports whether w writes to a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(interface{ Fd() uintptr })
	return ok && term.IsTerminal(int(f.Fd()))
}

func newProgress(out io.Writer, interval time.Duration, epochs int, totalUpdates int64) *progress {
	return &progress{out: out, tty: isTerminal(out), interval: interval, epochs: epochs, updateOfTotal: totalUpdates}
}

// startEpoch begins the display of an epoch of `steps` steps of which `done` are done already
// (a resumed epoch).
func (p *progress) startEpoch(epoch, done, steps int) {
	p.epoch, p.done, p.steps = epoch, done, steps
	p.loss, p.lossW, p.rate, p.rateW, p.secs, p.secsW = 0, 0, 0, 0, 0, 0
	p.lastStepAt = time.Now()
	p.lastPlain = time.Now()
	if !p.tty {
		return
	}
	p.bar = progressbar.NewOptions(steps,
		progressbar.OptionSetWriter(p.out),
		progressbar.OptionSetDescription(p.epochName()),
		progressbar.OptionShowCount(),
		progressbar.OptionSetPredictTime(false),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionSetTheme(progressbar.Theme{Saucer: "=", SaucerHead: ">", SaucerPadding: " ", BarStart: "[", BarEnd: "]"}),
	)
	if done > 0 {
		_ = p.bar.Set(done)
	}
	_ = p.bar.RenderBlank()
}

func (p *progress) epochName() string {
	if p.epochs > 0 {
		return fmt.Sprintf("epoch %d/%d", p.epoch+1, p.epochs)
	}
	return fmt.Sprintf("epoch %d", p.epoch+1)
}

func ema(avg, weight *float64, v float64) float64 {
	*avg = (1-smoothing)*(*avg) + smoothing*v
	*weight = (1-smoothing)*(*weight) + smoothing
	return *avg / *weight
}

// step records one finished batch: its loss, its real examples and the update count.
func (p *progress) step(loss float64, examples int, update int64) {
	now := time.Now()
	dt := now.Sub(p.lastStepAt).Seconds()
	p.lastStepAt = now
	p.done++
	p.update = update
	ema(&p.loss, &p.lossW, loss)
	if dt > 0 {
		ema(&p.rate, &p.rateW, float64(examples)/dt)
		ema(&p.secs, &p.secsW, dt)
	}
	if p.tty {
		if now.Sub(p.lastDesc) >= 100*time.Millisecond || p.done == p.steps {
			p.lastDesc = now
			p.bar.Describe(p.epochName() + " " + p.stats())
		}
		_ = p.bar.Add(1)
		return
	}
	if now.Sub(p.lastPlain) >= p.interval {
		p.lastPlain = now
		fmt.Fprintf(p.out, "%s step %d/%d (update %s) %s\n", p.epochName(), p.done, p.steps, p.updateString(), p.stats())
	}
}

func (p *progress) updateString() string {
	if p.updateOfTotal > 0 {
		return fmt.Sprintf("%d/%d", p.update, p.updateOfTotal)
	}
	return fmt.Sprint(p.update)
}

// stats is "loss 0.4321 | 1234 ex/s | ETA 1m02s".
func (p *progress) stats() string {
	var parts []string
	if p.lossW > 0 {
		parts = append(parts, "loss "+formatLoss(p.loss/p.lossW))
	}
	if p.rateW > 0 {
		parts = append(parts, fmt.Sprintf("%.0f ex/s", p.rate/p.rateW))
	}
	if p.secsW > 0 && p.steps > p.done {
		eta := time.Duration(float64(p.steps-p.done) * p.secs / p.secsW * float64(time.Second))
		parts = append(parts, "ETA "+eta.Round(time.Second).String())
	}
	return strings.Join(parts, " | ")
}

func formatLoss(v float64) string {
	if math.Abs(v) >= 1e4 || (v != 0 && math.Abs(v) < 1e-3) {
		return fmt.Sprintf("%.3e", v)
	}
	return fmt.Sprintf("%.4f", v)
}

// println prints a line (an evaluation result, a notice) without breaking the bar.
func (p *progress) println(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	if p.tty && p.bar != nil && !p.bar.IsFinished() {
		_ = p.bar.Clear()
		fmt.Fprintln(p.out, line)
		_ = p.bar.RenderBlank()
		return
	}
	fmt.Fprintln(p.out, line)
}

// endEpoch closes the epoch's bar (complete or not) and prints its summary.
func (p *progress) endEpoch(summary string) {
	if p.tty && p.bar != nil {
		if p.done >= p.steps {
			_ = p.bar.Finish()
		} else {
			_ = p.bar.Exit()
		}
		fmt.Fprintln(p.out)
		p.bar = nil
	}
	if summary != "" {
		fmt.Fprintln(p.out, summary)
	}
}
