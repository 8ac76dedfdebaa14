package accelerator

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/goaccel/goaccel/data"
	"github.com/goaccel/goaccel/internal/timeline"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/layers"
	"github.com/gomlx/gomlx/ml/layers/activation"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

var (
	benchHostSteps = flag.Int("bench.hoststeps", 8, "BenchmarkHostApply: timed updates")
	benchHostShard = flag.String("bench.hostshard", "", "BenchmarkHostApply: Config.Sharding (\"\" or zero1)")
)

// BenchmarkHostApply times the host part of the multi-process step at MiniLM's gradient size:
// 2 loopback processes x 1 XLA CPU device train 1536 -> 4096 -> 4096 -> 10 (23.1M float32
// parameters, 92 MB of gradients, Adam, global batch 16) and it prints, from rank 0's
// timeline, the medians per update of: the gradients graph, device-to-host, the all-reduce,
// the host gap between the all-reduce and the apply graph, and the apply graph's span (which
// includes taking its inputs to the device):
//
//	go test ./accelerator -run '^$' -bench HostApply -benchtime 1x
//
// It prints figures; it asserts nothing about speed.
func BenchmarkHostApply(b *testing.B) {
	dir := b.TempDir()
	steps := *benchHostSteps
	runProcessesConfig(b, 2, 1, func(c *Config) {
		c.Timeline = dir
		c.Sharding = *benchHostShard
	}, nil, func(a *Accelerator) (struct{}, error) {
		job, err := a.Prepare(model.NewStore(), optimizer.Adam().LearningRate(1e-4).Done(), nil)
		if err != nil {
			return struct{}{}, err
		}
		train := job.TrainStep(func(s *model.Scope, b GraphBatch) *Node {
			x := activation.Relu(layers.Dense(s.In("hidden_0"), b.Inputs[0], true, 4096))
			x = activation.Relu(layers.Dense(s.In("hidden_1"), x, true, 4096))
			l := CrossEntropy(layers.Dense(s.In("out"), x, true, 10), b.Labels, b.Mask)
			a.Backward(s, l)
			return l
		})
		per := 16 / a.NumReplicas()
		rng := rand.New(rand.NewPCG(uint64(a.ProcessIndex()), 3))
		for range steps + 2 {
			gb := &data.GlobalBatch{Shards: []*data.Batch{randomShard(rng, per, 1536)}}
			l, err := train.Run(gb)
			if err != nil {
				return struct{}{}, err
			}
			if _, err := l.Value(); err != nil {
				return struct{}{}, err
			}
		}
		return struct{}{}, nil
	})
	f, err := timeline.Read(filepath.Join(dir, timeline.RankFile(0)))
	if err != nil {
		b.Fatal(err)
	}
	spans := map[string][]float64{}
	var collEnd float64 // end of the update's last collective before apply
	for _, e := range f.TraceEvents {
		switch {
		case e.Name == "all-reduce gradients" || e.Name == "reduce-scatter gradients":
			collEnd = e.TS + e.Dur
			spans["all-reduce"] = append(spans["all-reduce"], e.Dur/1e3)
		case e.Name == "apply":
			spans["host gap"] = append(spans["host gap"], (e.TS-collEnd)/1e3)
			spans["apply"] = append(spans["apply"], e.Dur/1e3)
		case e.Name == "gradients" || e.Name == "device-to-host" || e.Name == "step":
			spans[e.Name] = append(spans[e.Name], e.Dur/1e3)
		}
	}
	// The first two updates compile and warm up: their spans are left out.
	med := func(name string) float64 {
		xs := spans[name]
		if len(xs) > steps {
			xs = xs[len(xs)-steps:]
		}
		return median(xs)
	}
	out := "hostapply:"
	for _, name := range []string{"step", "gradients", "device-to-host", "all-reduce", "host gap", "apply"} {
		out += fmt.Sprintf(" %s %.1f ms;", name, med(name))
	}
	b.Logf("23.1M parameters, 2 loopback processes x 1 device, medians of %d updates (rank 0)", steps)
	fmt.Println(out)
}
