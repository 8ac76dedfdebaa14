package trainer

import (
	"fmt"
	"math"
	"strings"

	. "github.com/gomlx/gomlx/core/graph"
)

// The learning-rate schedules known by name (Config.Schedule).
const (
	// ScheduleConstant keeps the peak learning rate after the warm-up.
	ScheduleConstant = "constant"
	// ScheduleLinear decays linearly from the peak to 0 over the updates after the warm-up.
	ScheduleLinear = "linear"
	// ScheduleCosine decays along half a cosine from the peak to 0 after the warm-up.
	ScheduleCosine = "cosine"
)

// Schedules lists the schedule names accepted by Config.Schedule.
var Schedules = []string{ScheduleConstant, ScheduleLinear, ScheduleCosine}

// Schedule is a learning-rate schedule: the learning rate of each optimizer update as a
// function of the number of updates already applied (u = 0 for the first update).
//
// With peak rate η, W warm-up updates and T updates in the whole run:
//
//	warm-up (u < W):  η · (u+1)/W              (the W-th update reaches η)
//	constant:         η
//	linear:           η · max(0, (T-u)/(T-W))   (η at u = W, η/(T-W) for the last update)
//	cosine:           η · ½(1 + cos(π · min(1, (u-W)/(T-W))))
//
// The rate is computed in the training graph (accelerator.WithLearningRateSchedule), and the
// value used by the last update is the Store variable /optimizers/learning_rate. At is the same
// formula on the host, in float64.
type Schedule struct {
	Name   string  // one of Schedules
	Peak   float64 // η
	Warmup int64   // W
	Total  int64   // T (needed by "linear" and "cosine")
}

// NewSchedule checks the name and numbers of a schedule. Names are matched without regard
// to case; unknown names are an error that lists the valid ones.
func NewSchedule(name string, peak float64, warmup, total int64) (Schedule, error) {
	s := Schedule{Name: strings.ToLower(strings.TrimSpace(name)), Peak: peak, Warmup: warmup, Total: total}
	if s.Name == "" {
		s.Name = ScheduleConstant
	}
	switch s.Name {
	case ScheduleConstant, ScheduleLinear, ScheduleCosine:
	default:
		return s, fmt.Errorf("trainer: Config.Schedule = %q is not a known learning-rate schedule; valid names: %s",
			name, strings.Join(Schedules, ", "))
	}
	if !(peak > 0) || math.IsInf(peak, 0) {
		return s, fmt.Errorf("trainer: Config.LearningRate = %g: must be a positive number (it is the peak rate of "+
			"the schedule and replaces the optimizer's own)", peak)
	}
	if warmup < 0 {
		return s, fmt.Errorf("trainer: Config.WarmupSteps = %d: must be >= 0", warmup)
	}
	if s.Name != ScheduleConstant && total <= warmup {
		return s, fmt.Errorf("trainer: schedule %q decays over the updates after the warm-up, but the run has %d "+
			"update(s) and Config.WarmupSteps = %d; lower WarmupSteps or train longer", s.Name, total, warmup)
	}
	return s, nil
}

// At returns the learning rate of the update made after u updates (u = 0: the first).
func (s Schedule) At(u int64) float64 {
	uf := float64(u)
	if s.Warmup > 0 && u < s.Warmup {
		return s.Peak * (uf + 1) / float64(s.Warmup)
	}
	span := float64(s.Total - s.Warmup)
	switch s.Name {
	case ScheduleLinear:
		return s.Peak * math.Max(0, (float64(s.Total)-uf)/span)
	case ScheduleCosine:
		frac := math.Min(1, (uf-float64(s.Warmup))/span)
		return s.Peak * 0.5 * (1 + math.Cos(math.Pi*frac))
	default:
		return s.Peak
	}
}

// Graph returns the schedule as a graph function for accelerator.WithLearningRateSchedule.
func (s Schedule) Graph() func(updatesDone *Node) *Node {
	return func(u *Node) *Node {
		peak := Scalar(u.Graph(), u.DType(), s.Peak)
		lr := peak
		span := float64(s.Total - s.Warmup)
		switch s.Name {
		case ScheduleLinear:
			lr = Mul(peak, MaxScalar(DivScalar(AddScalar(Neg(u), float64(s.Total)), span), 0))
		case ScheduleCosine:
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
func (s Schedule) String() string {
	out := fmt.Sprintf("%s lr %g", s.Name, s.Peak)
	if s.Warmup > 0 {
		out += fmt.Sprintf(", warm-up %d update(s)", s.Warmup)
	}
	if s.Name != ScheduleConstant {
		out += fmt.Sprintf(", to 0 at update %d", s.Total)
	}
	return out
}
