package trainer

import (
	"fmt"
	"math"
	"strings"

	. "github.com/gomlx/gomlx/core/graph"
)

// The learning-rate schedules known by name (Config.Schedule).
const (
	// scheduleConstant keeps the peak learning rate after the warm-up.
	scheduleConstant = "constant"
	// scheduleLinear decays linearly from the peak to 0 over the updates after the warm-up.
	scheduleLinear = "linear"
	// scheduleCosine decays along half a cosine from the peak to 0 after the warm-up.
	scheduleCosine = "cosine"
)

// scheduleNames lists the schedule names accepted by Config.Schedule.
var scheduleNames = []string{scheduleConstant, scheduleLinear, scheduleCosine}

// lrSchedule is the learning-rate schedule of Config.Schedule (its doc has the formulas):
// the rate of each optimizer update as a function of the updates already applied, computed in
// the training graph only (Graph, which Config.prepareOptions hands to
// accelerator.WithLearningRateSchedule; the accelerator counts the updates and sets the rate).
// The trainer reads the rate back from the job (Job.LearningRate), never recomputes it.
type lrSchedule struct {
	Name   string  // one of scheduleNames
	Peak   float64 // η
	Warmup int64   // W
	Total  int64   // T (needed by "linear" and "cosine")
}

// newSchedule checks the name and numbers of a schedule. Names are matched without regard
// to case; unknown names are an error that lists the valid ones.
func newSchedule(name string, peak float64, warmup, total int64) (lrSchedule, error) {
	s := lrSchedule{Name: strings.ToLower(strings.TrimSpace(name)), Peak: peak, Warmup: warmup, Total: total}
	if s.Name == "" {
		s.Name = scheduleConstant
	}
	switch s.Name {
	case scheduleConstant, scheduleLinear, scheduleCosine:
	default:
		return s, fmt.Errorf("trainer: Config.Schedule = %q is not a known learning-rate schedule; valid names: %s",
			name, strings.Join(scheduleNames, ", "))
	}
	if !(peak > 0) || math.IsInf(peak, 0) {
		return s, fmt.Errorf("trainer: Config.LearningRate = %g: must be a positive number (it is the peak rate of "+
			"the schedule and replaces the optimizer's own)", peak)
	}
	if warmup < 0 {
		return s, fmt.Errorf("trainer: Config.WarmupSteps = %d: must be >= 0", warmup)
	}
	if s.Name != scheduleConstant && total <= warmup {
		return s, fmt.Errorf("trainer: schedule %q decays over the updates after the warm-up, but the run has %d "+
			"update(s) and Config.WarmupSteps = %d; lower WarmupSteps or train longer", s.Name, total, warmup)
	}
	return s, nil
}

// Graph returns the schedule as a graph function for accelerator.WithLearningRateSchedule.
func (s lrSchedule) Graph() func(updatesDone *Node) *Node {
	return func(u *Node) *Node {
		peak := Scalar(u.Graph(), u.DType(), s.Peak)
		lr := peak
		span := float64(s.Total - s.Warmup)
		switch s.Name {
		case scheduleLinear:
			lr = Mul(peak, MaxScalar(DivScalar(AddScalar(Neg(u), float64(s.Total)), span), 0))
		case scheduleCosine:
			frac := MinScalar(DivScalar(AddScalar(u, -float64(s.Warmup)), span), 1)
			lr = Mul(peak, MulScalar(OnePlus(Cos(MulScalar(frac, math.Pi))), 0.5))
		}
		if s.Warmup > 0 {
			warm := DivScalar(OnePlus(u), float64(s.Warmup))
			lr = Where(LessThan(u, Scalar(u.Graph(), u.DType(), float64(s.Warmup))), MulScalar(warm, s.Peak), lr)
		}
		return lr
	}
}

// String describes the schedule in one line, for logs.
func (s lrSchedule) String() string {
	out := fmt.Sprintf("%s lr %g", s.Name, s.Peak)
	if s.Warmup > 0 {
		out += fmt.Sprintf(", warm-up %d update(s)", s.Warmup)
	}
	if s.Name != scheduleConstant {
		out += fmt.Sprintf(", to 0 at update %d", s.Total)
	}
	return out
}
