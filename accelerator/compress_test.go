package accelerator

import (
	"fmt"
	"github.com/goaccel/goaccel/accelerator/internal/collective"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/internal/envvar"
	"github.com/goaccel/goaccel/internal/half"
	"github.com/goaccel/goaccel/internal/testutil"
)

// compressTol is how far a compressed run's losses may stray from the exact run's (issue 20).
const compressTol = 1e-3

// wireCounter counts the bytes this process hands to the gradients' collectives.
type wireCounter struct {
	collective.Group
	exact, alltoall, allgather int64
}

func (c *wireCounter) AllreduceSum(bufs [][]float32) error {
	for _, b := range bufs {
		c.exact += 4 * int64(len(b))
	}
	return c.Group.AllreduceSum(bufs)
}

func (c *wireCounter) AlltoallAllgatherBlocks(send, recv, mine, gathered []byte) error {
	c.alltoall += int64(len(send))
	c.allgather += int64(len(gathered))
	return c.Group.AlltoallAllgatherBlocks(send, recv, mine, gathered)
}

// compressedRanks runs the topology tests' program (30 Adam updates, accumulation 2,
// clipping) on 2 loopback processes of 1 device under GOACCEL_GRADIENT_COMPRESSION=codec and
// returns each rank's result, stats and wire counts.
func compressedRanks(t *testing.T, codec string) ([]toyResult, []StepStats, []*wireCounter) {
	t.Setenv(envvar.GradientCompression.Name, codec)
	counters := make([]*wireCounter, 2)
	stats := make([]StepStats, 2)
	res := runProcessesWrapped(t, 2, 1, func(r int, g collective.Group) collective.Group {
		counters[r] = &wireCounter{Group: g}
		return counters[r]
	}, func(a *Accelerator) (toyResult, error) {
		res, st, err := topoRun(a)
		stats[a.ProcessIndex()] = st
		return res, err
	})
	return res, stats, counters
}

// TestCompressedAllreduce: 2 processes, 30 Adam updates of the toy MLP under bf16 and fp16
// compression: every batch's loss within 1e-3 of the exact run's, every rank's variables (and
// losses) bit-identical, and the bytes of each update halved: StepStats.SyncBytes is the 16-bit
// buffer (the 195 gradients padded to 2 chunks of 98), which is what the all-to-all carried,
// against 4 bytes per gradient in the exact all-reduce.
func TestCompressedAllreduce(t *testing.T) {
	exact, exactStats, exactWire := compressedRanks(t, "no")
	const params = 8*16 + 16 + 16*3 + 3 // the toy MLP's variables
	if exactStats[0].SyncBytes != 4*params {
		t.Fatalf("exact run: SyncBytes %d, want %d", exactStats[0].SyncBytes, 4*params)
	}
	if exactWire[0].alltoall != 0 {
		t.Errorf("the exact run used the compressed path (%d bytes in all-to-alls)", exactWire[0].alltoall)
	}
	for _, codec := range []string{"bf16", "fp16"} {
		t.Run(codec, func(t *testing.T) {
			ranks, stats, wire := compressedRanks(t, codec)
			worstLoss, worstParam := 0.0, 0.0
			for r, got := range ranks {
				for i := range got.losses {
					worstLoss = math.Max(worstLoss, math.Abs(got.losses[i]-exact[0].losses[i]))
					if got.losses[i] != ranks[0].losses[i] {
						t.Errorf("rank %d's loss of batch %d is %.9g, rank 0's %.9g", r, i+1, got.losses[i], ranks[0].losses[i])
					}
				}
				for name, p := range got.params {
					worstParam = math.Max(worstParam, maxDiff(p, exact[0].params[name]))
					if d := maxDiff(p, ranks[0].params[name]); d != 0 || len(p) != len(ranks[0].params[name]) {
						t.Errorf("rank %d's %s differs from rank 0's by %g: the processes drifted apart", r, name, d)
					}
				}
				st, w := stats[r], wire[r]
				const want = 2 * 2 * ((params + 1) / 2) // 2 bytes x 2 chunks of ceil(195/2)
				if st.SyncBytes != want || 2*st.SyncBytes > exactStats[r].SyncBytes+4 {
					t.Errorf("rank %d: SyncBytes %d, want %d (half of the exact %d, plus the padding)", r, st.SyncBytes, want, exactStats[r].SyncBytes)
				}
				if w.alltoall != int64(st.Updates)*st.SyncBytes || w.allgather != w.alltoall || w.exact != 0 {
					t.Errorf("rank %d: %d updates sent %d bytes in all-to-alls and %d in all-gathers and %d in float32 all-reduces, "+
						"want %d and %d and 0", r, st.Updates, w.alltoall, w.allgather, w.exact, int64(st.Updates)*st.SyncBytes, int64(st.Updates)*st.SyncBytes)
				}
				if wantAll := int64(st.Updates)*(st.SyncBytes+16) + int64(16*st.Updates*(topoAccum-1)); st.SyncedBytes != wantAll {
					t.Errorf("rank %d: SyncedBytes %d, want %d", r, st.SyncedBytes, wantAll)
				}
			}
			if worstLoss > compressTol {
				t.Errorf("max |loss diff| %g from the exact run: want at most %g", worstLoss, compressTol)
			}
			t.Logf("%s: %d updates, %d bytes per update (exact: %d); max |loss diff| %.2g, max |param diff| %.2g from the exact run",
				codec, stats[0].Updates, stats[0].SyncBytes, exactStats[0].SyncBytes, worstLoss, worstParam)
		})
	}
}

// TestGradientCompressionValues: the values New accepts, from the Config and from the
// environment, and the errors for an unknown one (naming the valid ones) and for Verify.
func TestGradientCompressionValues(t *testing.T) {
	for _, c := range []struct{ cfg, env, want string }{
		{"", "", ""}, {"no", "fp16", ""}, {"BF16", "", "bf16"}, {"", "fp16", "fp16"}, {"fp16", "bf16", "fp16"},
	} {
		t.Setenv(envvar.GradientCompression.Name, c.env)
		got, err := gradientCompression(c.cfg)
		name := ""
		if got != nil {
			name = got.Name()
		}
		if err != nil || name != c.want {
			t.Errorf("GradientCompression %q, $%s %q: %q, %v; want %q", c.cfg, envvar.GradientCompression.Name, c.env, name, err, c.want)
		}
	}
	t.Setenv(envvar.GradientCompression.Name, "int8")
	for _, cfg := range []string{"fp8", ""} {
		_, err := gradientCompression(cfg)
		if err == nil || !strings.Contains(err.Error(), `"no", "bf16" and "fp16"`) {
			t.Errorf("GradientCompression %q: %v, want an error naming the valid values", cfg, err)
		}
		if cfg == "" && !strings.Contains(fmt.Sprint(err), "$"+envvar.GradientCompression.Name) {
			t.Errorf("an unknown $%s: %v, want an error naming the variable", envvar.GradientCompression.Name, err)
		}
	}
	if _, err := newAccelerator(Config{GradientCompression: "bf16", Verify: 1}, processInfo{worldSize: 1}, collective.Solo{}); err == nil ||
		!strings.Contains(err.Error(), "Verify") {
		t.Errorf("bf16 compression with Verify: %v, want an error naming Verify", err)
	}
}

// TestCompressorReduce runs the compressed all-reduce alone on 3 loopback processes (1000
// elements in 2 buffers: in one bucket, 3 chunks of 334, 2 elements of padding; in buckets of
// 7 and of 128 elements, each padded, buckets across the buffers' boundary, and the pipeline's
// collectives interleaved across buckets): every process ends with the
// same bits; each sum is within the error bound of docs/semantics.md of the exact (float64)
// sum; an Inf on one process, a NaN on another and an fp16 sum beyond 65504 come out
// non-finite on every process.
func TestCompressorReduce(t *testing.T) {
	t.Parallel()
	const procs, n = 3, 1000
	inputs := make([][]float32, procs)
	for r := range inputs {
		inputs[r] = make([]float32, n)
		for i := range inputs[r] {
			// magnitudes from 1e-9 to 1e3, both signs, different on every process
			e := float64((i*7+r*13)%13) - 9
			inputs[r][i] = float32(math.Pow(10, e) * math.Sin(float64(i*procs+r+1)))
		}
	}
	inputs[0][10] = float32(math.Inf(1))
	inputs[1][11] = float32(math.NaN())
	inputs[0][12], inputs[1][12], inputs[2][12] = 3e4, 3e4, 3e4 // fp16: 9e4 > 65504
	for _, run := range []struct {
		codec  *collective.Codec
		bucket int
	}{{collective.CodecNamed("bf16"), 0}, {collective.CodecNamed("fp16"), 0}, {collective.CodecNamed("bf16"), 7}, {collective.CodecNamed("fp16"), 128}} {
		codec := run.codec
		t.Run(fmt.Sprintf("%s/bucket%d", codec.Name(), run.bucket), func(t *testing.T) {
			u := math.Ldexp(1, -8) // unit roundoff: 8 significant bits
			tiny := 0.0            // absolute error of values below the least normal
			if codec.Name() == "fp16" {
				u, tiny = math.Ldexp(1, -11), (procs+1)*math.Ldexp(1, -25)
			}
			lb := newLoopback(procs)
			out := make([][]float32, procs)
			errs := make(chan error, procs)
			for r := range procs {
				go func() {
					bufs := [][]float32{append([]float32(nil), inputs[r][:300]...), append([]float32(nil), inputs[r][300:]...)}
					k := collective.NewCompressor(codec, n, procs, run.bucket)
					err := k.Reduce(lb.member(r), bufs, 1)
					out[r] = append(bufs[0], bufs[1]...)
					errs <- err
				}()
			}
			for range procs {
				if err := <-errs; err != nil {
					t.Fatal(err)
				}
			}
			worst := 0.0
			for i := range n {
				var sum, abs float64
				for r := range procs {
					sum += float64(inputs[r][i])
					abs += math.Abs(float64(inputs[r][i]))
				}
				for r := range procs {
					if math.Float32bits(out[r][i]) != math.Float32bits(out[0][i]) {
						t.Fatalf("%s: element %d is %g on rank %d, %g on rank 0", codec.Name(), i, out[r][i], r, out[0][i])
					}
				}
				got := float64(out[0][i])
				switch {
				case i == 10 || i == 11:
					if !math.IsInf(got, 0) && !math.IsNaN(got) {
						t.Errorf("%s: element %d (an Inf or a NaN on one process) sums to %g", codec.Name(), i, got)
					}
					continue
				case i == 12 && codec.Name() == "fp16":
					if !math.IsInf(got, 1) {
						t.Errorf("fp16: 3 x 3e4 sums to %g, want +Inf (beyond 65504)", got)
					}
					continue
				}
				bound := u*(math.Abs(sum)+1.01*abs) + procs*math.Ldexp(1, -24)*abs + tiny
				if d := math.Abs(got - sum); d > bound {
					t.Errorf("%s: element %d: %g, exact %g: error %g beyond the bound %g", codec.Name(), i, got, sum, d, bound)
				} else if abs > 1e-3 { // in fp16's normal range
					worst = max(worst, d/(math.Abs(sum)+abs))
				}
			}
			t.Logf("%s: largest error / (|sum| + sum of |x|) = %.3g above 1e-3 (unit roundoff %.3g)", codec.Name(), worst, u)
		})
	}
}

// TestCompressorRoundsOnceEachWay: on 3 loopback processes and 400003 elements in 3 buffers,
// in one bucket (chunks large enough for the host passes to run on several goroutines) and in
// 3 buckets of at most 150001 (the pipeline), every element is exactly round16(sum in rank
// order of float32(round16(x_p x scale))), on every process: the buckets do not change a bit.
func TestCompressorRoundsOnceEachWay(t *testing.T) {
	t.Parallel()
	const procs, n = 3, 400003
	const scale = 0.125
	inputs := make([][]float32, procs)
	for r := range inputs {
		rng := rand.New(rand.NewPCG(uint64(r), 9))
		inputs[r] = make([]float32, n)
		for i := range inputs[r] {
			inputs[r][i] = float32(rng.NormFloat64() * math.Pow(10, float64(rng.IntN(8))-5))
		}
	}
	for _, c := range []struct {
		codec *collective.Codec
		enc   func(float32) uint16
		dec   func(uint16) float32
	}{{collective.CodecNamed("bf16"), half.BF16, half.BF16ToFloat32}, {collective.CodecNamed("fp16"), half.FP16, half.FP16ToFloat32}} {
		t.Run(c.codec.Name(), func(t *testing.T) {
			for _, bucket := range []int{0, 150001} {
				lb := newLoopback(procs)
				out := make([][]float32, procs)
				errs := make(chan error, procs)
				for r := range procs {
					go func() {
						out[r] = append([]float32(nil), inputs[r]...)
						bufs := [][]float32{out[r][:1000], out[r][1000:250000], out[r][250000:]}
						errs <- collective.NewCompressor(c.codec, n, procs, bucket).Reduce(lb.member(r), bufs, scale)
					}()
				}
				for range procs {
					if err := <-errs; err != nil {
						t.Fatal(err)
					}
				}
				for i := range n {
					var s float32
					for r := range procs {
						s += c.dec(c.enc(inputs[r][i] * scale))
					}
					want := math.Float32bits(c.dec(c.enc(s)))
					for r := range procs {
						if got := math.Float32bits(out[r][i]); got != want {
							t.Fatalf("%s, buckets of %d: element %d on rank %d is %g, want %g", c.codec.Name(), bucket, i, r, out[r][i], math.Float32frombits(want))
						}
					}
				}
			}
		})
	}
}

// TestCompressedOverMPI is TestCompressedAllreduce with real processes, MPI's all-to-all and
// all-gather between them, the compression set by $GOACCEL_GRADIENT_COMPRESSION for the
// launched program: 2 processes x 1 device, 30 Adam updates, losses within 1e-3 of one
// process's exact run, every rank identical, 392 bytes per update instead of 780.
func TestCompressedOverMPI(t *testing.T) {
	testutil.Long(t, "the 16-bit all-reduce over a real MPI launch (tier 1: TestCompressedAllreduce checks both codecs over in-process ranks; internal/mpi tests the MPI collectives)")
	t.Parallel()
	testutil.NeedMPI(t)
	ref, _, err := topoRun(newXLA(t, 1))
	if err != nil {
		t.Fatal(err)
	}
	for _, codec := range []string{"bf16", "fp16"} {
		dir := t.TempDir()
		err, out := launchWorkers(t, "topology", 2, 2, workerOut+"="+dir, "GOACCEL_TIMEOUT=3m",
			envvar.GradientCompression.Name+"="+codec)
		if err != nil {
			t.Fatalf("launch under %s: %v\n%s", codec, err, out)
		}
		worstLoss := 0.0
		ranks := make([]topoResult, 2)
		for r := range ranks {
			readRankResult(t, dir, r, out, &ranks[r])
			got := ranks[r]
			for i := range ref.losses {
				worstLoss = math.Max(worstLoss, math.Abs(got.Losses[i]-ref.losses[i]))
			}
			for name, p := range got.Params {
				if d := maxDiff(p, ranks[0].Params[name]); d != 0 {
					t.Errorf("%s: rank %d's %s differs from rank 0's by %g", codec, r, name, d)
				}
			}
			if st := got.Stats; st.SyncBytes != 392 || st.SyncedBytes != int64(st.Updates)*(392+16)+int64(16*st.Updates*(topoAccum-1)) {
				t.Errorf("%s: rank %d: SyncBytes %d, SyncedBytes %d in %d updates; want 392 per update (780 exact)", codec, r, st.SyncBytes, st.SyncedBytes, st.Updates)
			}
		}
		if worstLoss > compressTol {
			t.Errorf("%s over MPI: max |loss diff| %g from the exact 1x1 run, want at most %g", codec, worstLoss, compressTol)
		}
		t.Logf("%s over MPI, 2x1: %d updates, max |loss diff| %.2g from the exact 1x1 run", codec, ranks[0].Stats.Updates, worstLoss)
	}
}

// BenchmarkCompression prints, in one run, BenchmarkProcesses' 2-process MLP (512 -> 4 x 1024
// -> 10, Adam, global batch 256, 2 processes x 1 XLA CPU device, MPI) under each
// GOACCEL_GRADIENT_COMPRESSION, exact first and last (the machine's drift): steps/s, the share
// of the step spent in the gradients' all-reduce (with the 16-bit encoding and decoding) and
// its bytes per update:
//
//	go test ./accelerator -run '^$' -bench Compression -benchtime 1x
//
// It prints figures; it asserts nothing about speed.
func BenchmarkCompression(b *testing.B) {
	testutil.NeedMPI(b)
	for _, codec := range []string{"no", "bf16", "fp16", "no"} {
		dir := b.TempDir()
		err, out := launchWorkers(b, "bench", 2, 2, workerOut+"="+dir, fmt.Sprintf("GOACCEL_BENCH_STEPS=%d", *benchSteps),
			"GOACCEL_BENCH_ACCUM=1", envvar.GradientCompression.Name+"="+codec)
		if err != nil {
			b.Fatalf("launch: %v\n%s", err, out)
		}
		f := readBench(b, dir, out)
		b.Logf("2 processes x 1 device, compression %-4s: %6.2f steps/s; gradient all-reduce %4.1f%% of the step (%.1f MB per update)",
			codec, f.StepsPerSec, 100*f.SyncShare, float64(f.SyncBytes)/1e6)
	}
}
