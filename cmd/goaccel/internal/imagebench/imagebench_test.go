package imagebench

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/data/image"
	"github.com/gomlx/gomlx/core/tensors"
)

// TestCollateWritesTheBatchOnce: the collated tensor holds each image's normalised values in
// NHWC order, and an image of another size is refused naming it.
func TestCollateWritesTheBatchOnce(t *testing.T) {
	ex := []image.Example{
		{Image: &image.RGB{Width: 2, Height: 1, Pix: []uint8{0, 51, 255, 255, 0, 102}}, Label: 3},
		{Image: &image.RGB{Width: 2, Height: 1, Pix: []uint8{255, 255, 255, 0, 0, 0}}, Label: 1},
	}
	ins, labels, err := Collate(ex, imagenet)
	if err != nil {
		t.Fatal(err)
	}
	got := tensors.MustCopyFlatData[float32](ins[0])
	if d := ins[0].Shape().Dimensions; fmt.Sprint(d) != "[2 1 2 3]" {
		t.Fatalf("shape %v", d)
	}
	for i, v := range append(append([]uint8{}, ex[0].Image.Pix...), ex[1].Image.Pix...) {
		c := i % 3
		if want := (float32(v)/255 - imagenet.Mean[c]) / imagenet.Std[c]; got[i] != want {
			t.Fatalf("value %d: %g, want %g", i, got[i], want)
		}
	}
	if l := tensors.MustCopyFlatData[int32](labels); fmt.Sprint(l) != "[3 1]" {
		t.Fatalf("labels %v", l)
	}
	ex[1].Image = &image.RGB{Width: 1, Height: 1, Pix: []uint8{1, 2, 3}}
	ex[1].Source = "b.png"
	if _, _, err := Collate(ex, imagenet); err == nil || !strings.Contains(err.Error(), "b.png: 1x1") {
		t.Fatalf("mixed sizes: %v", err)
	}
}

// TestPipelineFigures prints the pipeline's images/s on the files make_bench_data.py wrote in
// $GOACCEL_IMAGEBENCH (skipped without it), with torchvision's beside them when
// $GOACCEL_TORCH_PYTHON is set, alternating the two $GOACCEL_IMAGEBENCH_ROUNDS times (3 by
// default) and keeping the best of each figure, since the machine is shared:
//
//	GOACCEL_IMAGEBENCH=/tmp/ibench GOACCEL_TORCH_PYTHON=... go test -run TestPipelineFigures -v ./cmd/goaccel/internal/imagebench
func TestPipelineFigures(t *testing.T) {
	dir := os.Getenv("GOACCEL_IMAGEBENCH")
	if dir == "" {
		t.Skip("GOACCEL_IMAGEBENCH (a folder make_bench_data.py wrote) is not set")
	}
	rounds := 3
	if r, err := strconv.Atoi(os.Getenv("GOACCEL_IMAGEBENCH_ROUNDS")); err == nil && r > 0 {
		rounds = r
	}
	workers := runtime.GOMAXPROCS(0)
	py := os.Getenv("GOACCEL_TORCH_PYTHON")
	best := map[string][2]float64{} // what -> best images/s, best images per CPU-second
	var order []string
	note := func(line string) {
		m := figure.FindStringSubmatch(line)
		if m == nil {
			return
		}
		wall, _ := strconv.ParseFloat(m[2], 64)
		cpu, _ := strconv.ParseFloat(m[3], 64)
		b, seen := best[m[1]]
		if !seen {
			order = append(order, m[1])
		}
		best[m[1]] = [2]float64{max(b[0], wall), max(b[1], cpu)}
	}
	for round := range rounds {
		if up, err := exec.Command("uptime").Output(); err == nil {
			t.Logf("round %d, GOMAXPROCS %d; uptime: %s", round+1, workers, strings.TrimSpace(string(up)))
		}
		for _, kind := range []string{CIFAR, PNG32, JPEGCenter, JPEG} {
			r, err := Pipeline(kind, dir, workers, 128)
			if err != nil {
				t.Fatal(err)
			}
			t.Log(r)
			note(r.String())
			if kind == PNG32 || kind == JPEG {
				if r, err = DecodeOnly(kind, dir, workers); err != nil {
					t.Fatal(err)
				}
				t.Log(r)
				note(r.String())
			}
		}
		if py == "" {
			continue
		}
		out, err := exec.Command(py, "pipeline_torch.py", dir, "--workers", "2").CombinedOutput()
		t.Logf("torchvision:\n%s", out)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(out), "\n") {
			note(line)
		}
	}
	var sb strings.Builder
	sb.WriteString("| pipeline | images/s (best of rounds) | images per CPU-second |\n|---|---|---|\n")
	for _, w := range order {
		fmt.Fprintf(&sb, "| %s | %.0f | %.0f |\n", w, best[w][0], best[w][1])
	}
	t.Logf("best of %d rounds:\n%s", rounds, sb.String())
}

// figure is a measurement line: what, images/s, images per CPU-second.
var figure = regexp.MustCompile(`^(.*): \d+ images in [\d.]+ s = (\d+) images/s, (\d+) images per CPU-second$`)
