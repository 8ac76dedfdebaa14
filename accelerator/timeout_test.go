package accelerator

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/goaccel/goaccel/internal/testutil"
	"github.com/gomlx/gomlx/ml/model"
)

// TestTimeoutFromEnvironment: $GOACCEL_TIMEOUT takes a Go duration or a number of seconds,
// anything else is an error naming it, Config.Timeout wins over it, and the former name
// $GOACCEL_COLLECTIVE_TIMEOUT is an error naming the new one.
func TestTimeoutFromEnvironment(t *testing.T) {
	cases := []struct {
		env, old string
		cfg      time.Duration
		want     time.Duration
		err      string
	}{
		{env: "", want: 30 * time.Minute},
		{env: "90s", want: 90 * time.Second},
		{env: "30m", want: 30 * time.Minute},
		{env: "90", want: 90 * time.Second},
		{env: "2.5", want: 2500 * time.Millisecond},
		{env: "90", cfg: time.Minute, want: time.Minute},
		{env: "0", err: `$GOACCEL_TIMEOUT="0" is not a positive duration`},
		{env: "-5s", err: `$GOACCEL_TIMEOUT="-5s" is not a positive duration`},
		{env: "soon", err: `$GOACCEL_TIMEOUT="soon" is not a positive duration such as "90s" or "30m", or a number of seconds`},
		{env: "soon", cfg: time.Minute, err: `$GOACCEL_TIMEOUT="soon"`}, // checked even when unused
		{old: "90s", err: `$GOACCEL_COLLECTIVE_TIMEOUT="90s" is no longer read: set $GOACCEL_TIMEOUT`},
		{old: "90s", env: "90s", err: `$GOACCEL_COLLECTIVE_TIMEOUT="90s" is no longer read: set $GOACCEL_TIMEOUT`},
	}
	for _, c := range cases {
		t.Setenv("GOACCEL_TIMEOUT", c.env)
		t.Setenv("GOACCEL_COLLECTIVE_TIMEOUT", c.old)
		a, err := New(Config{Backend: "go", Quiet: true, Timeout: c.cfg})
		if c.err != "" {
			if err == nil {
				a.Close()
				t.Errorf("GOACCEL_TIMEOUT=%q GOACCEL_COLLECTIVE_TIMEOUT=%q: New succeeded, want an error with %q", c.env, c.old, c.err)
			} else if !strings.Contains(err.Error(), c.err) || !strings.HasPrefix(err.Error(), "accelerator: ") {
				t.Errorf("GOACCEL_TIMEOUT=%q GOACCEL_COLLECTIVE_TIMEOUT=%q: error %q, want one with %q", c.env, c.old, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("GOACCEL_TIMEOUT=%q, Timeout %s: %v", c.env, c.cfg, err)
			continue
		}
		if a.timeout != c.want {
			t.Errorf("GOACCEL_TIMEOUT=%q, Timeout %s: timeout %s, want %s", c.env, c.cfg, a.timeout, c.want)
		}
		a.Close()
	}
}

// TestGradientTimeoutNamesTheBatch: over MPI, a rank that stays away from the 4th batch of
// epoch 1 makes the other fail in the gradient all-reduce after $GOACCEL_TIMEOUT (given in
// bare seconds: the value reaches the MPI layer, which has no timeout of its own for it),
// with an error that names epoch 1, batch 4 and the missing rank, and wraps ErrTimeout.
func TestGradientTimeoutNamesTheBatch(t *testing.T) {
	testutil.NeedMPI(t)
	_, out := launchStalled(t, "stall", "GOACCEL_TIMEOUT=3")
	for _, want := range []string{"all-reducing the gradients (epoch 1, batch 4)", "timed out after 3s", "rank 1 never arrived",
		"rank 0: the error wraps accelerator.ErrTimeout"} {
		if !strings.Contains(out, want) {
			t.Errorf("rank 0's error does not say %q:\n%s", want, out)
		}
	}
}

// stallWorker trains the toy model over 2 processes, rank 1 sleeping $GOACCEL_TEST_BARRIER_DELAY
// before the 4th batch of the first epoch.
func stallWorker(a *Accelerator) error {
	x, y := toyData(48)
	job, err := a.Prepare(model.NewStore(), sgd(0.1), &fixedSource{x: x, y: y, batch: 4})
	if err != nil {
		return err
	}
	train := toyTrainStep(a, job)
	for gb, err := range job.Batches() {
		if err != nil {
			return err
		}
		if a.ProcessIndex() == 1 && gb.Index == 3 {
			d, _ := time.ParseDuration(os.Getenv(workerDelay))
			time.Sleep(d)
		}
		if _, err := train.Run(gb); err != nil {
			if errors.Is(err, ErrTimeout) {
				fmt.Printf("rank %d: the error wraps accelerator.ErrTimeout\n", a.ProcessIndex())
			}
			return err
		}
	}
	return nil
}
