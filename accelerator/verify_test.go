package accelerator

import (
	"github.com/goaccel/goaccel/accelerator/internal/collective"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/internal/envvar"
)

// TestVerifyPasses: with GOACCEL_VERIFY=1 (every update checked), the topology tests' program
// (accumulation 2, clipping at 0.5, Adam) runs its 30 updates on 2 processes x 2 devices and
// on 1 process x 4 devices without a mismatch, and computes what it computes unchecked.
func TestVerifyPasses(t *testing.T) {
	ref, _, err := topoRun(newXLA(t, 1))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(envvar.Verify.Name, "1")
	got, _, err := topoRun(newXLA(t, 4))
	if err != nil {
		t.Fatalf("1x4 with Verify: %v", err)
	}
	compareTopology(t, "1x4, verified", ref, []toyResult{got})
	ranks := runProcesses(t, 2, 2, func(a *Accelerator) (toyResult, error) {
		if a.verify != 1 {
			t.Errorf("rank %d: $GOACCEL_VERIFY=1 gave Verify %d", a.ProcessIndex(), a.verify)
		}
		res, _, err := topoRun(a)
		return res, err
	})
	compareTopology(t, "2x2, verified", ref, ranks)
}

// TestVerifyCatchesAWrongReduction: two faults in the all-reduce, made on purpose, are caught
// at step 1 on every process, with the variable named: one variable's gradients left out of
// the all-reduce (each process keeps its own), and one process sending its mean gradient
// instead of its sum weighted by its real examples (2 processes x 2 devices, accumulation 2).
func TestVerifyCatchesAWrongReduction(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name               string
		skipBucket, rank   int
		wantVariableOfSkip bool
	}{{"one bucket not reduced", 1, 0, true}, {"one process not weighted", 0, 2, false}} {
		t.Run(c.name, func(t *testing.T) {
			wrap := func(rank int, g collective.Group) collective.Group {
				switch {
				case c.skipBucket > 0:
					return skipVariable{Group: g, i: c.skipBucket - 1}
				case c.rank == rank+1:
					return &unweighted{Group: g}
				}
				return g
			}
			type result struct {
				err     error
				skipped string
			}
			res := runProcessesWrapped(t, 2, 2, wrap, func(a *Accelerator) (result, error) {
				a.verify = 1
				_, _, err := topoRun(a)
				return result{err: err}, nil
			})
			for r, got := range res {
				if got.err == nil {
					t.Fatalf("rank %d: the run succeeded; want Verify to fail it at step 1", r)
				}
				msg := got.err.Error()
				if !strings.Contains(msg, "Verify: step 1: variable /") || !strings.Contains(msg, "differs from the one-device update") {
					t.Errorf("rank %d: %v; want Verify's error at step 1 naming a variable", r, got.err)
				}
				if c.wantVariableOfSkip && !strings.Contains(msg, "variable /hidden/dense/weights ") {
					t.Errorf("rank %d: %v; want it to name the variable whose bucket was skipped (/hidden/dense/weights, the first trainable variable)", r, got.err)
				}
				t.Logf("rank %d: %v", r, got.err)
			}
		})
	}
}

// TestVerifyBadSettings: a negative Config.Verify and a $GOACCEL_VERIFY that is not a count are
// errors naming them.
func TestVerifyBadSettings(t *testing.T) {
	if _, err := verifyEvery(-1); err == nil || !strings.Contains(err.Error(), "Verify=-1") {
		t.Errorf("Verify=-1: %v; want an error naming it", err)
	}
	t.Setenv(envvar.Verify.Name, "often")
	if _, err := verifyEvery(0); err == nil || !strings.Contains(err.Error(), `$GOACCEL_VERIFY="often"`) {
		t.Errorf("GOACCEL_VERIFY=often: %v; want an error naming it", err)
	}
	t.Setenv(envvar.Verify.Name, "-2")
	if _, err := verifyEvery(0); err == nil || !strings.Contains(err.Error(), "GOACCEL_VERIFY=-2") {
		t.Errorf("GOACCEL_VERIFY=-2: %v; want an error naming it", err)
	}
	t.Setenv(envvar.Verify.Name, "5")
	if n, err := verifyEvery(0); n != 5 || err != nil {
		t.Errorf("GOACCEL_VERIFY=5: %d, %v", n, err)
	}
	if n, err := verifyEvery(2); n != 2 || err != nil {
		t.Errorf("Verify=2 with GOACCEL_VERIFY=5: %d, %v; want Config.Verify to win", n, err)
	}
}
