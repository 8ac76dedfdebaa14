package accelerator

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/goaccel/goaccel/internal/testutil"
)

// benchStepOnly, set for a "bench" worker, makes it time the steps only (no all-reduce
// bandwidth rounds).
const benchStepOnly = "GOACCEL_BENCH_STEP_ONLY"

// zero1Env tells a "zero1" worker which case of zero1Cases to train and for how many updates:
// "<index>:<updates>".
const zero1Env = "GOACCEL_TEST_ZERO1"

var zero1MPIBert = flag.Bool("zero1.mpi_bert", false, "TestZero1OverMPI: train the tiny BERT over MPI too")

// zero1Worker is a rank of TestZero1OverMPI: a case of the sharded tests under the Sharding
// of its environment.
func zero1Worker(a *Accelerator) error {
	var i, updates int
	if _, err := fmt.Sscanf(os.Getenv(zero1Env), "%d:%d", &i, &updates); err != nil {
		return fmt.Errorf("$%s: %w", zero1Env, err)
	}
	res, err := zero1Cases[i].run(a, 2*updates, zero1Opts()...)
	if err != nil {
		return err
	}
	return writeRankResult(a, res)
}

// TestZero1OverMPI is TestZero1MatchesUnsharded with real processes and MPI: 2 processes x 2
// XLA CPU devices under GOACCEL_SHARDING=zero1 train the MLP (30 updates), and with
// -zero1.mpi_bert the tiny BERT too (10; 30 with -zero1.bert_updates 30: a minute more, and
// TestZero1MatchesUnsharded trains it over loopback processes), with Adam, clipping and
// accumulation over 2, to the losses and variables of one unsharded device, every rank with
// the same variables, and each device holds at most (weights + gradients + state / 2) x 1.05.
func TestZero1OverMPI(t *testing.T) {
	t.Parallel()
	testutil.NeedMPI(t)
	for i, c := range zero1Cases {
		if c.name == "bert" && !*zero1MPIBert {
			t.Logf("the tiny BERT over MPI runs with -zero1.mpi_bert (over loopback processes: TestZero1MatchesUnsharded)")
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			ref, err := c.run(newXLA(t, 1), 2**c.updates, zero1Opts()...)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			start := time.Now()
			err, out := launchWorkers(t, "zero1", 2, 4, workerOut+"="+dir, "GOACCEL_TIMEOUT=3m", "GOACCEL_SHARDING=zero1",
				fmt.Sprintf("%s=%d:%d", zero1Env, i, *c.updates))
			if err != nil {
				t.Fatalf("launch: %v\n%s", err, out)
			}
			res := make([]zero1Result, 2)
			for r := range res {
				readRankResult(t, dir, r, out, &res[r])
			}
			loss, param, ranks := zero1Worst(ref, res)
			if loss > equivTol || param > equivTol || ranks != 0 {
				t.Errorf("zero1 over MPI 2x2: max |loss diff| %g, max |param diff| %g from unsharded 1x1 (tolerance %g); ranks differ by %g",
					loss, param, equivTol, ranks)
			}
			zero1CheckBytes(t, "zero1 over MPI 2x2", ref, res)
			t.Logf("zero1 over MPI 2x2 (%s), %d updates: max |loss diff| %.2g, max |param diff| %.2g from unsharded 1x1; ranks identical",
				time.Since(start).Round(time.Millisecond), *c.updates, loss, param)
		})
	}
}

// BenchmarkZero1Processes prints the step rate of BenchmarkProcesses' MLP (512 -> 4 x 1024 ->
// 10, Adam, global batch 256) on 2 processes x 1 device, unsharded and under zero1, launched
// alternately, rounds times each, and the ratio of the medians:
//
//	go test ./accelerator -run '^$' -bench Zero1Processes -benchtime 1x
func BenchmarkZero1Processes(b *testing.B) {
	testutil.NeedMPI(b)
	const rounds = 5
	rate := map[string][]float64{}
	for range rounds {
		for _, sharding := range []string{"no", "zero1"} {
			dir := b.TempDir()
			err, out := launchWorkers(b, "bench", 2, 2, workerOut+"="+dir, "GOACCEL_BENCH_STEPS="+strconv.Itoa(*benchSteps),
				benchStepOnly+"=1", "GOACCEL_SHARDING="+sharding)
			if err != nil {
				b.Fatalf("launch: %v\n%s", err, out)
			}
			f := readBench(b, dir, out)
			rate[sharding] = append(rate[sharding], f.StepsPerSec)
			b.Logf("  %-5s %6.2f steps/s, sync %.1f%% of the step, %.1f MB reduced per step", sharding, f.StepsPerSec, 100*f.SyncShare, float64(f.SyncBytes)/1e6)
		}
	}
	no, z := median(rate["no"]), median(rate["zero1"])
	b.Logf("MLP 512->4x1024->10, Adam, global batch 256, 2 processes x 1 device, %d timed steps, median of %d alternating launches: "+
		"unsharded %.2f steps/s, zero1 %.2f steps/s: step time zero1/unsharded %.3fx", *benchSteps, rounds, no, z, no/z)
	fmt.Printf("zero1: unsharded %.2f steps/s, zero1 %.2f steps/s, step time ratio %.3f\n", no, z, no/z)
}
