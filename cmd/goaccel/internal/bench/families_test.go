package bench

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/models/auto"
	"github.com/goaccel/goaccel/models/auto/autotest"
	"github.com/goaccel/goaccel/models/deberta"
	"github.com/goaccel/goaccel/models/modernbert"
)

// TestFamilyConfigs: the family works' config.json has the released models' layout at the
// spec's shape, the same text goes to PyTorch, and a shape the family cannot build is refused
// by Validate.
func TestFamilyConfigs(t *testing.T) {
	mb := Works["modernbert"].CPU
	js, err := mb.familyConfig()
	if err != nil {
		t.Fatal(err)
	}
	m, err := modernbert.ParseConfig(js, "modernbert")
	if err != nil {
		t.Fatal(err)
	}
	var global []int
	for i := range m.NumHiddenLayers {
		if m.IsGlobal(i) {
			global = append(global, i)
		}
	}
	if m.HiddenSize != 768 || m.NumHiddenLayers != 22 || m.IntermediateSize != 1152 || m.VocabSize != 50368 ||
		m.LocalAttention != 128 || m.ClassifierPooling != "mean" || m.HiddenActivation != "gelu" || m.NumLabels != 2 ||
		!slices.Equal(global, []int{0, 3, 6, 9, 12, 15, 18, 21}) || m.GlobalRopeTheta != 160000 {
		t.Errorf("modernbert config: %+v, global layers %v", m, global)
	}
	db := Works["deberta"].CPU
	js, err = db.familyConfig()
	if err != nil {
		t.Fatal(err)
	}
	d, err := deberta.ParseConfig(js, "deberta")
	if err != nil {
		t.Fatal(err)
	}
	if d.HiddenSize != 768 || d.NumHiddenLayers != 6 || d.IntermediateSize != 3072 || d.VocabSize != 128100 ||
		d.PositionBuckets != 256 || !d.RelativeAttention || !d.ShareAttKey || d.NormRelEbd != "layer_norm" ||
		!d.Has(deberta.C2P) || !d.Has(deberta.P2C) || d.PositionBiasedInput || d.TypeVocabSize != 0 {
		t.Errorf("deberta config: %+v", d)
	}
	db.Precision, db.Devices = "fp32", 1
	args, err := db.torchArgs()
	if err != nil {
		t.Fatal(err)
	}
	if i := slices.Index(args, "--config"); i < 0 || args[i+1] != string(js) || !slices.Contains(args, "deberta") {
		t.Errorf("torchArgs = %q", args)
	}
	odd := Works["modernbert"].CPU
	odd.Precision, odd.Devices, odd.Hidden, odd.Heads = "fp32", 1, 36, 12 // head width 3: RoPE needs even
	if err := odd.Validate(); err == nil || !strings.Contains(err.Error(), "must be even") {
		t.Errorf("Validate of modernbert with head width 3: %v", err)
	}
}

// TestFamilyWorker runs goaccel's bench worker on a small model of each family on the
// pure-Go backend, in fp32 and bf16: the family's classifier trains on the work's inputs.
func TestFamilyWorker(t *testing.T) {
	for _, work := range Families() {
		for _, precision := range []string{"fp32", "bf16"} {
			t.Run(work+"/"+precision, func(t *testing.T) {
				spec, err := ParseWork(work+":batch=2:seq=16:hidden=16:layers=2:heads=2:ff=32:vocab=64", false) // seq 16: a ViT's side is one 16-pixel patch
				if err != nil {
					t.Fatal(err)
				}
				spec.Precision, spec.Devices, spec.Backend = precision, 1, "go"
				raw, _ := json.Marshal(spec)
				var out bytes.Buffer
				if err := WorkerMain(string(raw), strings.NewReader("run 2\nquit\n"), &out); err != nil {
					t.Fatal(err, out.String())
				}
				var rounds int
				for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
					var ev event
					if err := json.Unmarshal([]byte(line), &ev); err != nil {
						t.Fatalf("line %q: %v", line, err)
					}
					if ev.Event == "round" && ev.Steps == 2 && ev.Loss > 0 {
						rounds++
					}
				}
				if rounds != 1 {
					t.Errorf("worker output:\n%s", out.String())
				}
			})
		}
	}
}

// TestRegisteredFamilyWork: a family registered after the program started (the toy of
// models/auto/autotest, which no bench code names) is a work: ParseWork finds it, its FLOPs
// are the family's count, PyTorch is skipped with the reason, and goaccel's worker trains it.
func TestRegisteredFamilyWork(t *testing.T) {
	if auto.FamilyNamed("toy") == nil {
		if err := auto.Register(autotest.Family); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Contains(Families(), "toy") {
		t.Fatalf("Families() = %v", Families())
	}
	spec, err := ParseWork("toy:batch=2:seq=8:hidden=4:vocab=16", false)
	if err != nil {
		t.Fatal(err)
	}
	spec.Precision, spec.Devices, spec.Backend = "fp32", 1, "go"
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	if got, want := spec.FLOPsPerStep(), 3*2*2.0*4*2; got != want {
		t.Errorf("FLOPsPerStep = %g, want %g (3 x the toy's head)", got, want)
	}
	if _, err := spec.torchArgs(); err == nil || !strings.Contains(err.Error(), "no twin of family toy") {
		t.Errorf("torchArgs of the toy: %v", err)
	}
	raw, _ := json.Marshal(spec)
	var out bytes.Buffer
	if err := WorkerMain(string(raw), strings.NewReader("run 2\nquit\n"), &out); err != nil {
		t.Fatal(err, out.String())
	}
	if !strings.Contains(out.String(), `"round"`) {
		t.Errorf("worker output:\n%s", out.String())
	}
}
