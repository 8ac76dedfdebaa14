package progress

import (
	"fmt"
	"io"
	"iter"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/goaccel/goaccel/data"
	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// Config describes the run a Bar shows.
type Config struct {
	// Epochs is the number of epochs of the run (0: not known, the run ends by TotalSteps).
	Epochs int
	// BatchesPerEpoch is the number of batches (global batches) of one epoch.
	BatchesPerEpoch int
	// TotalSteps is the number of optimizer steps of the whole run, the end of the total ETA
	// (0: not known; no total ETA).
	TotalSteps int64
	// GradientAccumulation is the number of batches per optimizer step; 0 means 1.
	GradientAccumulation int
	// PlainInterval is how often a plain line is printed when the output is not a terminal;
	// 0 means 10 s. The first batch of an epoch is always reported.
	PlainInterval time.Duration
}

// Bar shows a training run while it runs: on a terminal, one progress bar per epoch
// (batches, smoothed loss, examples/s, the epoch's and the whole run's ETA) and one per
// evaluation; elsewhere (a log file, CI, a pipe) a plain line every PlainInterval, without
// escape codes. The run's ETA counts the optimizer steps left up to TotalSteps and the
// evaluations still to come, at the speeds measured so far. trainer.Fit shows its runs
// with one (its default trainer.Display); a hand-written loop uses it the same way:
//
//	prog := progress.New(os.Stdout, progress.Config{Epochs: 3,
//	    BatchesPerEpoch: src.BatchesPerEpoch(), TotalSteps: total})
//	for epoch := range 3 {
//	    prog.StartEpoch(epoch, 0, step)
//	    for gb, err := range job.Batches() {
//	        ...
//	        prog.Batch(loss, examples, step)
//	    }
//	    prog.EndEpoch("")
//	    res, err := job.Evaluate(prog.Evaluating(testLoader), evalStep)
//	    prog.Println("epoch %d: accuracy %.4f", epoch+1, accuracy)
//	}
//
// A Bar is for one goroutine. Give it io.Discard on the processes that are not the main
// one.
type Bar struct {
	out      io.Writer
	tty      bool
	cfg      Config
	bar      *progressbar.ProgressBar
	epoch    int   // 0-based epoch shown
	batches  int   // batches of the current epoch in this display (bar total)
	done     int   // of which done
	step     int64 // optimizer steps done in the run
	startAt  int64 // steps done when this session started measuring
	lastLine time.Time
	lastDesc time.Time
	lastAt   time.Time

	// Smoothed values: exponential moving averages with bias correction.
	loss, lossW float64
	rate, rateW float64 // examples per second
	secs, secsW float64 // seconds per batch

	skipped   int64   // updates skipped by fp16's loss scaling (shown when > 0)
	started   bool    // an epoch was started (the first one announces itself in plain mode)
	evalSecs  float64 // duration of the last evaluation (0: none yet)
	evalCount int     // evaluations done in this session
}

// smoothing is the weight of the newest value in the moving averages shown.
const smoothing = 0.1

// IsTerminal reports whether w writes to a terminal (progress bars) rather than to a file
// or a pipe (plain lines).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(interface{ Fd() uintptr })
	return ok && term.IsTerminal(int(f.Fd()))
}

// New returns a Bar writing to out.
func New(out io.Writer, cfg Config) *Bar {
	if cfg.GradientAccumulation <= 0 {
		cfg.GradientAccumulation = 1
	}
	if cfg.PlainInterval <= 0 {
		cfg.PlainInterval = 10 * time.Second
	}
	return &Bar{out: out, tty: IsTerminal(out), cfg: cfg}
}

// StartEpoch begins the display of epoch (0-based), of which batchesDone batches are done
// already (a resumed epoch), after stepsDone optimizer steps of the run. Under TotalSteps the
// bar of the last epoch ends where the run does.
func (p *Bar) StartEpoch(epoch, batchesDone int, stepsDone int64) {
	p.epoch, p.done, p.step = epoch, batchesDone, stepsDone
	p.startAt = stepsDone
	p.batches = p.cfg.BatchesPerEpoch
	if p.cfg.TotalSteps > 0 {
		left := (p.cfg.TotalSteps - stepsDone) * int64(p.cfg.GradientAccumulation)
		p.batches = int(min(int64(p.batches), int64(batchesDone)+max(left, 0)))
	}
	p.loss, p.lossW, p.rate, p.rateW, p.secs, p.secsW = 0, 0, 0, 0, 0, 0
	p.lastAt = time.Now()
	p.lastLine = time.Time{}
	if !p.tty {
		if !p.started {
			// The first batch of a session also compiles the step: say that training started.
			fmt.Fprintf(p.out, "%s: training from step %s (the first batch also compiles the training step)\n",
				p.epochName(), p.stepString())
		}
		p.started = true
		return
	}
	p.started = true
	p.bar = newBar(p.out, p.batches, p.epochName())
	if batchesDone > 0 {
		_ = p.bar.Set(batchesDone)
	}
	_ = p.bar.RenderBlank()
}

func newBar(out io.Writer, total int, desc string) *progressbar.ProgressBar {
	return progressbar.NewOptions(total,
		progressbar.OptionSetWriter(out),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionShowCount(),
		progressbar.OptionSetPredictTime(false),
		progressbar.OptionSetWidth(25),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionSetTheme(progressbar.Theme{Saucer: "=", SaucerHead: ">", SaucerPadding: " ", BarStart: "[", BarEnd: "]"}),
	)
}

func (p *Bar) epochName() string {
	if p.cfg.Epochs > 0 {
		return fmt.Sprintf("epoch %d/%d", p.epoch+1, p.cfg.Epochs)
	}
	return fmt.Sprintf("epoch %d", p.epoch+1)
}

func ema(avg, weight *float64, v float64) {
	*avg = (1-smoothing)*(*avg) + smoothing*v
	*weight = (1-smoothing)*(*weight) + smoothing
}

// Batch records one finished batch: its loss, its real examples (all processes) and the
// optimizer steps done after it.
func (p *Bar) Batch(loss float64, examples int, step int64) {
	now := time.Now()
	dt := now.Sub(p.lastAt).Seconds()
	p.lastAt = now
	first := p.lossW == 0
	p.done++
	p.step = step
	ema(&p.loss, &p.lossW, loss)
	// The first batch of a session includes the compilation: it is not a speed.
	if dt > 0 && !first {
		ema(&p.rate, &p.rateW, float64(examples)/dt)
		ema(&p.secs, &p.secsW, dt)
	}
	if p.tty {
		if now.Sub(p.lastDesc) >= 100*time.Millisecond || p.done == p.batches {
			p.lastDesc = now
			p.bar.Describe(p.epochName() + " " + p.stats())
		}
		_ = p.bar.Add(1)
		return
	}
	if p.lastLine.IsZero() || now.Sub(p.lastLine) >= p.cfg.PlainInterval || p.done == p.batches {
		p.lastLine = now
		fmt.Fprintf(p.out, "%s batch %d/%d, step %s: %s\n", p.epochName(), p.done, p.batches, p.stepString(), p.stats())
	}
}

// SetSkippedUpdates sets the number of optimizer updates skipped so far by fp16's dynamic
// loss scaling (a non-finite gradient); the line shows it once it is above 0.
func (p *Bar) SetSkippedUpdates(n int64) { p.skipped = n }

func (p *Bar) stepString() string {
	if p.cfg.TotalSteps > 0 {
		return fmt.Sprintf("%d/%d", p.step, p.cfg.TotalSteps)
	}
	return fmt.Sprint(p.step)
}

// stats is "loss 0.4321 | 1234 ex/s | ETA 1m02s, run 5m10s", with "| 2 skipped" after the
// loss once fp16's loss scaling skipped updates.
func (p *Bar) stats() string {
	var parts []string
	if p.lossW > 0 {
		parts = append(parts, "loss "+FormatLoss(p.loss/p.lossW))
	}
	if p.skipped > 0 {
		parts = append(parts, fmt.Sprintf("%d skipped", p.skipped))
	}
	if p.rateW > 0 {
		parts = append(parts, fmt.Sprintf("%.0f ex/s", p.rate/p.rateW))
	}
	if eta, ok := p.epochETA(); ok {
		s := "ETA " + FormatDuration(eta)
		if run, ok := p.runETA(); ok && (p.cfg.TotalSteps-p.step)*int64(p.cfg.GradientAccumulation) > int64(p.batches-p.done) {
			s += ", run " + FormatDuration(run)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " | ")
}

func (p *Bar) secsPerBatch() (float64, bool) {
	if p.secsW == 0 {
		return 0, false
	}
	return p.secs / p.secsW, true
}

func (p *Bar) epochETA() (time.Duration, bool) {
	spb, ok := p.secsPerBatch()
	if !ok || p.done >= p.batches {
		return 0, false
	}
	return seconds(float64(p.batches-p.done) * spb), true
}

// runETA estimates the time left in the whole run: the batches up to TotalSteps at the
// measured speed, plus the evaluations still to come (one per epoch end and one at the end)
// at the duration of the last one. ok is false before the speed or the run's length is known.
func (p *Bar) runETA() (time.Duration, bool) {
	spb, ok := p.secsPerBatch()
	if !ok || p.cfg.TotalSteps <= 0 {
		return 0, false
	}
	k := int64(p.cfg.GradientAccumulation)
	left := max(p.cfg.TotalSteps-p.step, 0) * k
	eta := float64(left) * spb
	if p.evalSecs > 0 && p.cfg.BatchesPerEpoch > 0 {
		// Evaluations at the epoch ends between now and the end, the last one included.
		batchesDone := p.step * k
		end := p.cfg.TotalSteps * k
		bpe := int64(p.cfg.BatchesPerEpoch)
		evals := end/bpe - batchesDone/bpe
		if end%bpe != 0 {
			evals++ // the run ends mid-epoch and evaluates there
		}
		eta += float64(evals) * p.evalSecs
	}
	return seconds(eta), true
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// FormatDuration is "45s", "3m05s" or "1h02m": a duration as the bar shows it.
func FormatDuration(d time.Duration) string {
	d = d.Round(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

// FormatLoss is a loss as the bar shows it: 4 decimals, or 4 digits with an exponent for
// very large or small values.
func FormatLoss(v float64) string {
	if math.Abs(v) >= 1e4 || (v != 0 && math.Abs(v) < 1e-3) {
		return fmt.Sprintf("%.3e", v)
	}
	return fmt.Sprintf("%.4f", v)
}

// Println prints a line (an evaluation result, a notice) without breaking the bar.
func (p *Bar) Println(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	if p.tty && p.bar != nil && !p.bar.IsFinished() {
		_ = p.bar.Clear()
		fmt.Fprintln(p.out, line)
		_ = p.bar.RenderBlank()
		return
	}
	fmt.Fprintln(p.out, line)
}

// EndEpoch closes the epoch's bar (complete or not) and prints summary unless it is empty.
func (p *Bar) EndEpoch(summary string) {
	if p.tty && p.bar != nil {
		if p.done >= p.batches {
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

// Evaluating wraps an evaluation source so that the pass Job.Evaluate makes over it is shown
// (a bar "eval" on a terminal, plain lines elsewhere), and its duration counts in the run's
// ETA:
//
//	res, err := job.Evaluate(prog.Evaluating(testLoader), evalStep)
func (p *Bar) Evaluating(src data.Source) data.Source {
	return &evalSource{Source: src, p: p}
}

// evalSource is a data.Source that reports its batches to a Bar.
type evalSource struct {
	data.Source
	p *Bar
}

// Epoch yields the wrapped source's batches, showing them.
func (s *evalSource) Epoch() iter.Seq2[*data.GlobalBatch, error] {
	return func(yield func(*data.GlobalBatch, error) bool) {
		p := s.p
		total := s.Source.BatchesPerEpoch()
		start, last := time.Now(), time.Now()
		var bar *progressbar.ProgressBar
		if p.tty {
			bar = newBar(p.out, total, "eval")
			_ = bar.RenderBlank()
		}
		done := 0
		defer func() {
			if bar != nil {
				_ = bar.Finish()
				_ = bar.Clear()
			}
			if done == total {
				p.evalSecs = time.Since(start).Seconds()
				p.evalCount++
			}
		}()
		for gb, err := range s.Source.Epoch() {
			if !yield(gb, err) || err != nil {
				return
			}
			// The batch has been evaluated when the consumer asks for the next one.
			done++
			if bar != nil {
				_ = bar.Add(1)
			} else if now := time.Now(); now.Sub(last) >= p.cfg.PlainInterval && done < total {
				last = now
				fmt.Fprintf(p.out, "eval batch %d/%d (%s)\n", done, total, FormatDuration(now.Sub(start)))
			}
		}
	}
}

// EvalSummary is what EvalLine prints about one evaluation.
type EvalSummary struct {
	Step  int64
	Epoch float64
	// Metrics are all the metrics (metrics.jsonl has them all; the line shows Headline and
	// the loss).
	Metrics map[string]float64
	// Headline is the metric shown first (BestMetric); empty: the first by name.
	Headline string
	// Improved, Best and BestStep describe the best Headline so far (Best NaN: not tracked).
	Improved bool
	Best     float64
	BestStep int64
	// Examples is the size of the evaluation set; Duration the time the evaluation took.
	Examples int
	Duration time.Duration
}

// EvalLine formats an evaluation for the terminal in at most 100 columns: the headline
// metric first, how it compares with the best so far, the examples and the time. The other
// metrics are in metrics.jsonl (and on the curves), not on the line:
//
//	eval step 1200, epoch 2: accuracy 0.8557 (best so far) | 1067 examples, 25.1s
func EvalLine(e EvalSummary) string {
	head := e.Headline
	if _, ok := e.Metrics[head]; !ok {
		names := make([]string, 0, len(e.Metrics))
		for k := range e.Metrics {
			names = append(names, k)
		}
		slices.Sort(names)
		head = ""
		if len(names) > 0 {
			head = names[0]
		}
	}
	line := fmt.Sprintf("eval step %d, epoch %s:", e.Step, formatEpoch(e.Epoch))
	if head != "" {
		line += fmt.Sprintf(" %s %.4f", head, e.Metrics[head])
		switch {
		case e.Improved:
			line += " (best so far)"
		case !math.IsNaN(e.Best):
			line += fmt.Sprintf(" (best %.4f at step %d)", e.Best, e.BestStep)
		}
	}
	took := fmt.Sprintf("%.1fs", e.Duration.Seconds())
	if e.Duration >= time.Minute {
		took = FormatDuration(e.Duration)
	}
	return line + fmt.Sprintf(" | %d examples, %s", e.Examples, took)
}

// formatEpoch is "2" at an epoch's end, "1.37" within one.
func formatEpoch(e float64) string {
	if e == math.Trunc(e) {
		return fmt.Sprintf("%d", int64(e))
	}
	return fmt.Sprintf("%.2f", e)
}
