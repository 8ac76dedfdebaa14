package bench

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/internal/testutil"
)

// imageWorks are the works of the registered image families (none is named here).
func imageWorks(t *testing.T) []string {
	var out []string
	for _, w := range Families() {
		if s, err := ParseWork(w, false); err == nil && s.imageFamily() {
			out = append(out, w)
		}
	}
	if len(out) == 0 {
		t.Fatalf("no image family among the works %v", Families())
	}
	return out
}

// TestImageWorks: every registered image family's CPU work validates at its reference shape
// (a convolutional family has no heads, feed-forward or vocabulary), runs at 224 pixels, is
// labelled by its side, and hands scripts/bench_torch.py the family's config.json as --work
// image (the script's Auto class reads its model_type), with --channels_last only when asked.
func TestImageWorks(t *testing.T) {
	for _, w := range imageWorks(t) {
		s := Works[w].CPU
		s.Precision, s.Devices = "bf16", 1
		if err := s.Validate(); err != nil {
			t.Errorf("%s: Validate: %v", w, err)
			continue
		}
		if s.Seq != imageSide || !strings.Contains(s.Label(), " B8 224px bf16") {
			t.Errorf("%s: seq %d, label %q", w, s.Seq, s.Label())
		}
		args, err := s.torchArgs()
		if err != nil {
			t.Errorf("%s: torchArgs: %v", w, err)
			continue
		}
		i := slices.Index(args, "--config")
		var keys map[string]any
		if i < 0 || json.Unmarshal([]byte(args[i+1]), &keys) != nil || keys["model_type"] == nil ||
			args[slices.Index(args, "--work")+1] != "image" || args[slices.Index(args, "--seq")+1] != "224" {
			t.Errorf("%s: torchArgs = %q", w, args)
		}
		bad := s
		bad.Seq = 1
		if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "image side") {
			t.Errorf("%s at side 1: Validate = %v", w, err)
		}
	}
}

// TestImageWorksTorchTwin (tier 2, the torch venv): scripts/bench_torch.py trains each image
// family's work at a small shape for one step from the config.json bench hands it, NCHW and
// channels_last, fp32 and bf16, and says which layout it ran.
func TestImageWorksTorchTwin(t *testing.T) {
	if testing.Short() {
		t.Skip("tier 2: runs PyTorch")
	}
	py := testutil.TorchPython(t, "scripts/bench_torch.py's image works")
	script, err := filepath.Abs("../../../../scripts/bench_torch.py")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range imageWorks(t) {
		for _, v := range []struct {
			precision string
			cl        bool
		}{{"fp32", false}, {"bf16", true}} {
			s, err := ParseWork(w+":batch=2:seq=32:hidden=32:layers=2:heads=2:ff=64", false)
			if err != nil {
				t.Fatal(err)
			}
			s.Precision, s.Devices, s.Warmup = v.precision, 1, 0
			args, err := s.torchArgs()
			if err != nil {
				t.Fatalf("%s: %v", w, err)
			}
			args = append([]string{script}, append(args, "--device", "cpu", "--threads", "1", "--once", "1")...)
			if v.cl {
				args = append(args, "--channels_last")
			}
			out, err := exec.Command(py, args...).CombinedOutput()
			if err != nil {
				t.Fatalf("%s %s: %v\n%s", w, v.precision, err, out)
			}
			var first, round bool
			for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				var ev struct {
					Event string         `json:"event"`
					Loss  float64        `json:"loss"`
					Info  map[string]any `json:"info"`
				}
				if json.Unmarshal([]byte(line), &ev) != nil {
					continue
				}
				first = first || (ev.Event == "first_step" && ev.Info["channels_last"] == v.cl)
				round = round || (ev.Event == "round" && ev.Loss > 0)
			}
			if !first || !round {
				t.Errorf("%s %s channels_last=%v: output\n%s", w, v.precision, v.cl, out)
			}
		}
	}
}
