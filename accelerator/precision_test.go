package accelerator

import (
	"bytes"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/accelerator/internal/precision"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

type dtypeModel struct {
	store *model.Store
	got   dtypes.DType
}

func (m *dtypeModel) Store() *model.Store                  { return m.store }
func (m *dtypeModel) SetComputeDType(d dtypes.DType) error { m.got = d; return nil }

func TestMixedPrecisionIsHandedToTheModel(t *testing.T) {
	t.Parallel()
	a, err := New(Config{Backend: "go", MixedPrecision: "bf16", Quiet: true})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if a.Info().Precision != "bf16" || a.ComputeDType() != dtypes.BFloat16 || !strings.Contains(a.Plan(), "precision bf16") {
		t.Errorf("precision %q, compute dtype %s, plan %q", a.Info().Precision, a.ComputeDType(), a.Plan())
	}
	m := &dtypeModel{store: model.NewStore()}
	if _, err := a.Prepare(m, optimizer.Adam().Done(), nil); err != nil {
		t.Fatal(err)
	}
	if m.got != dtypes.BFloat16 {
		t.Errorf("model got compute dtype %s, want BFloat16", m.got)
	}
	// A model without SetComputeDType is cast by goaccel (TestMixedPrecisionLayersModel).
	job, err := a.Prepare(model.NewStore(), optimizer.Adam().Done(), nil)
	if err != nil || job.autocast != dtypes.BFloat16 {
		t.Errorf("a model without SetComputeDType: autocast %s, error %v; want BFloat16, nil", job.autocast, err)
	}
	if job, err := a.Prepare(m, optimizer.Adam().Done(), nil); err != nil || job.autocasting() {
		t.Errorf("a model with SetComputeDType: autocasting %v, error %v; want its own casting", job.autocasting(), err)
	}
}

// TestPlanLineSaysHalfPrecisionIsSlowerOnXLACPU: the plan line a user of XLA's CPU plugin sees with
// MixedPrecision "bf16" says that bf16 is slower than fp32 there and where the figures are
// when the CPU has no bfloat16 dot instructions, and nothing of the kind when it has them;
// with "fp16" it says so on every CPU; on the pure-Go backend bf16 and fp16 say so too; fp32
// says nothing of the kind on either.
func TestPlanLineSaysHalfPrecisionIsSlowerOnXLACPU(t *testing.T) {
	plugin := cpuPlugin(t)
	slow := !precision.CPUHasBF16Dots()
	t.Logf("this CPU has bfloat16 dot instructions: %v", !slow)
	for _, c := range []struct {
		backend, precision string
		warned             bool
	}{{plugin, "bf16", slow}, {plugin, "BF16", slow}, {plugin, "fp16", true}, {plugin, "no", false},
		{"go", "bf16", true}, {"go", "fp16", true}, {"go", "no", false}} {
		var out bytes.Buffer
		a, err := New(Config{Backend: c.backend, MixedPrecision: c.precision, Output: &out})
		if err != nil {
			t.Fatal(err)
		}
		a.Close()
		plan := lastLineWith(out.String(), "; precision ")
		warned := strings.Contains(plan, "slower than fp32") && strings.Contains(plan, "docs/performance.md")
		if plan == "" || warned != c.warned {
			t.Errorf("backend %q, MixedPrecision %q: plan line %q; want the caveat: %v\n(output %q)",
				c.backend, c.precision, plan, c.warned, out.String())
		}
	}
}
