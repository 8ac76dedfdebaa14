package mpi

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// BenchmarkAllreduce prints the bandwidth of AllreduceFused against one raw MPI_Allreduce of the
// same bytes, measured in the same 2-rank job, alternating rounds:
//
//	go test ./internal/mpi -run '^$' -bench Allreduce -benchtime 1x
//
// GOACCEL_MPI_BENCH_BIG=1 adds 440 MB (110M floats, a BERT-base's gradients).
func BenchmarkAllreduce(b *testing.B) { benchJob(b, 2, "bench") }

// benchJob runs child on n ranks and prints what it printed.
func benchJob(b *testing.B, n int, child string) {
	lib := mpiLib(b)
	out, rc := mpirun(b, lib, n, child)
	if rc != 0 || !strings.Contains(out, "rank 0: ok") {
		b.Fatalf("mpiexec rc %d:\n%s", rc, out)
	}
	fmt.Print(out)
}

// BenchmarkBroadcast prints the time of a 440 MB Broadcast on 4 ranks (more ranks than this
// machine's 2 cores: the case MPICH's shared-memory collectives spun on before Init set the
// MPIR_CVAR_*_POSIX_INTRA_ALGORITHM variables).
func BenchmarkBroadcast(b *testing.B) { benchJob(b, 4, "bench-bcast") }

func childBenchBcast(c *Comm) int {
	k := &checker{c: c}
	buf := make([]byte, 440<<20)
	if c.Rank() == 0 {
		for i := range buf {
			buf[i] = byte(i)
		}
	}
	for r := range 3 {
		k.check("barrier", c.Barrier(0))
		t0 := time.Now()
		k.check("broadcast", c.Broadcast(buf, 0))
		if c.Rank() == 0 {
			d := time.Since(t0)
			fmt.Printf("broadcast of 440 MB to %d ranks, round %d: %v (%.2f GB/s)\n", c.Size(), r, d.Round(time.Millisecond), float64(len(buf))/d.Seconds()/1e9)
		}
	}
	if buf[12345] != byte(12345%256) {
		k.failf("broadcast: wrong bytes")
	}
	return k.done()
}

func childBench(c *Comm) int {
	k := &checker{c: c}
	type benchCase struct {
		name    string
		tensors []int
	}
	many := make([]int, 100)
	for i := range many {
		many[i] = 10000
	}
	cases := []benchCase{
		{"4 MB, 100 tensors of 40 KB (all fused)", many},
		// cmd/goaccel/internal/bench/mlp's defaults: 512 inputs, 4 hidden layers of 1024, 10 outputs.
		{"14 MB, cmd/goaccel/internal/bench/mlp's 10 gradients", []int{512 * 1024, 1024, 1024 * 1024, 1024, 1024 * 1024, 1024, 1024 * 1024, 1024, 1024 * 10, 10}},
		{"44 MB, a wider MLP's 8 gradients", []int{4096 * 2048, 2048, 2048 * 1024, 1024, 1024 * 512, 512, 512 * 10, 10}},
	}
	if os.Getenv("GOACCEL_MPI_BENCH_BIG") != "" {
		cases = append(cases, benchCase{"440 MB, 110M floats in 4 tensors", []int{50e6, 50e6, 10e6 - 1000, 1000}})
	}
	const rounds = 15
	if c.Rank() == 0 {
		fmt.Printf("%s, %d ranks (%d local), %d rounds, algorithm bandwidth = bytes / time, medians; fused/raw = median of the rounds' ratios\n", c.Version(), c.Size(), c.LocalSize(), rounds)
	}
	for _, bc := range cases {
		tensors := make([][]float32, len(bc.tensors))
		total := 0
		for i, s := range bc.tensors {
			tensors[i] = make([]float32, s)
			total += s
		}
		flat := make([]float32, total)
		var fusedT, rawT, flatT, meanT []time.Duration
		for r := -1; r < rounds; r++ { // round -1 warms up
			k.check("barrier", c.Barrier(0))
			t0 := time.Now()
			k.check("fused", c.AllreduceFused(tensors, false, 0))
			t1 := time.Now()
			k.check("barrier", c.Barrier(0))
			t2 := time.Now()
			k.check("raw", c.AllreduceRaw(flat))
			t3 := time.Now()
			k.check("barrier", c.Barrier(0))
			t4 := time.Now()
			k.check("flat", c.AllreduceFloat32(flat, Sum))
			t5 := time.Now()
			k.check("barrier", c.Barrier(0))
			t6 := time.Now()
			k.check("fused mean", c.AllreduceFused(tensors, true, 0))
			t7 := time.Now()
			if r >= 0 {
				meanT = append(meanT, t7.Sub(t6))
				fusedT = append(fusedT, t1.Sub(t0))
				rawT = append(rawT, t3.Sub(t2))
				flatT = append(flatT, t5.Sub(t4))
			}
		}
		if k.bad > 0 {
			return 1
		}
		if c.Rank() == 0 {
			// The ratio is the median of each round's ratio: robust to load that drifts between rounds.
			ratios := make([]float64, rounds)
			for i := range ratios {
				ratios[i] = rawT[i].Seconds() / fusedT[i].Seconds()
			}
			slices.Sort(ratios)
			slices.Sort(fusedT)
			slices.Sort(rawT)
			slices.Sort(flatT)
			slices.Sort(meanT)
			fm, rm, flm, mm := fusedT[rounds/2], rawT[rounds/2], flatT[rounds/2], meanT[rounds/2]
			gbs := func(d time.Duration) float64 { return float64(total*4) / d.Seconds() / 1e9 }
			fmt.Printf("%-40s fused %5.2f GB/s (%v)  raw MPI_Allreduce %5.2f GB/s (%v)  fused/raw %.0f%%  [fused with mean %5.2f GB/s; one AllreduceFloat32 %5.2f GB/s]\n",
				bc.name, gbs(fm), fm.Round(10*time.Microsecond), gbs(rm), rm.Round(10*time.Microsecond), 100*ratios[rounds/2], gbs(mm), gbs(flm))
		}
	}
	return k.done()
}
