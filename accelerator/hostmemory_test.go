package accelerator

import (
	"strings"
	"syscall"
	"testing"

	"github.com/goaccel/goaccel/internal/blockcache"
	"github.com/goaccel/goaccel/internal/plugins"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/layers"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// TestStepsReuseHostMemory trains a model whose step needs well over 100 MB of XLA
// temporaries (a 1024 x 8192 hidden layer) on the CPU plugin and counts the process's page
// faults over the steps after the first ones: a program that links the block cache in (by
// importing hostmalloc; this test binary imports internal/blockcache itself) gets malloc's
// large blocks kept between steps, so its steps do not fault their temporaries in again. With glibc's defaults each step faults them in afresh: over
// 16,000 faults a step for this model.
func TestStepsReuseHostMemory(t *testing.T) {
	x, y := toyData(1024)
	a := newXLA(t, 1)
	job, err := a.Prepare(model.NewStore(), optimizer.Adam().LearningRate(1e-4).Done(), &fixedSource{x: x, y: y, batch: 1024})
	if err != nil {
		t.Fatal(err)
	}
	gb := firstBatch(t, job)
	step := job.TrainStep(func(s *model.Scope, b GraphBatch) *Node {
		h := Tanh(layers.Dense(s.In("wide"), b.Inputs[0], true, 8192))
		l := CrossEntropy(layers.Dense(s.In("out"), h, true, 3), b.Labels, b.Mask)
		a.Backward(s, l)
		return l
	})
	run := func(n int) {
		for range n {
			l, err := step.Run(gb)
			if err != nil {
				t.Fatal(err)
			}
			mustLoss(t, l)
		}
	}
	run(3) // compile, and the first steps' own allocations
	var before, after syscall.Rusage
	const steps = 5
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &before); err != nil {
		t.Fatal(err)
	}
	run(steps)
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &after); err != nil {
		t.Fatal(err)
	}
	perStep := (after.Minflt - before.Minflt) / steps
	t.Logf("%d page faults per step; block cache %+v", perStep, blockcache.Read())
	// One 32 MB activation alone is 8,192 pages of 4 KiB. Measured on the development
	// machine: 16,500 a step with glibc's defaults, 3,400 with the cache, 3,300 with
	// GOACCEL_HOST_MALLOC=keep's settings (what remains is not malloc's).
	if perStep > 8192 {
		t.Errorf("%d page faults per training step: the step's temporaries are faulted in afresh every step", perStep)
	}
}

// TestHostMemoryNote: the plan line says what importing hostmalloc gains exactly where it
// gains it (XLA's CPU plugin on Linux) and only while the program has not imported it.
func TestHostMemoryNote(t *testing.T) {
	cpu := Info{Backend: "xla", Plugin: Plugin{Kind: plugins.CPU}}
	for _, c := range []struct {
		name    string
		info    Info
		goos    string
		optedIn bool
		want    bool
	}{
		{"cpu plugin, not imported", cpu, "linux", false, true},
		{"cpu plugin, imported", cpu, "linux", true, false},
		{"cuda plugin", Info{Backend: "xla", Plugin: Plugin{Kind: plugins.CUDA}}, "linux", false, false},
		{"pure Go", Info{Backend: "go"}, "linux", false, false},
		{"not Linux", cpu, "darwin", false, false},
	} {
		note := hostMemoryNote(c.info, c.goos, c.optedIn)
		if got := strings.Contains(note, `import _ "github.com/goaccel/goaccel/hostmalloc"`) && strings.Contains(note, "docs/hostmalloc.md"); got != c.want || (note != "") != c.want {
			t.Errorf("%s: note %q", c.name, note)
		}
	}
}

// TestNewChecksHostMalloc: accelerator.New refuses a $GOACCEL_HOST_MALLOC that is none of
// unset, system and keep, naming the variable and the valid values, whether or not the block
// cache is linked into the program (the check is Go's, not the cache's C).
func TestNewChecksHostMalloc(t *testing.T) {
	for _, v := range []string{"bogus", "systemd", "system2"} {
		t.Run(v, func(t *testing.T) {
			t.Setenv("GOACCEL_HOST_MALLOC", v)
			a, err := New(Config{Backend: "go", Quiet: true})
			if err == nil {
				a.Close()
				t.Fatalf("GOACCEL_HOST_MALLOC=%s: New succeeded (block cache linked: %v)", v, blockcache.Linked)
			}
			for _, want := range []string{"accelerator: New: ", `$GOACCEL_HOST_MALLOC="` + v + `"`, `"system" or "keep"`} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("GOACCEL_HOST_MALLOC=%s: error %q does not say %q", v, err, want)
				}
			}
		})
	}
	for _, v := range []string{"", "system", " Keep "} {
		t.Setenv("GOACCEL_HOST_MALLOC", v)
		a, err := New(Config{Backend: "go", Quiet: true})
		if err != nil {
			t.Fatalf("GOACCEL_HOST_MALLOC=%q: %v", v, err)
		}
		a.Close()
	}
}
