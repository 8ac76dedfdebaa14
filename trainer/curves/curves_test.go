package curves

import (
	"bytes"
	"math"
	"strings"
	"testing"
)

// curveRecords is a short run: 2 epochs of 10 steps, training records at step 1 and every 5
// steps, evaluations (accuracy, f1, loss) at the epoch ends, a learning rate that is constant
// or decays.
func curveRecords(constantLR bool) []Point {
	nan := math.NaN()
	var recs []Point
	for _, step := range []int64{1, 5, 10, 15, 20} {
		lr := 1e-3
		if !constantLR {
			lr = 1e-3 * float64(20-step) / 20
		}
		recs = append(recs, Point{Step: step, Epoch: float64(step) / 10, Loss: 1 / float64(step), LR: lr})
		if step%10 == 0 {
			recs = append(recs, Point{Step: step, Epoch: float64(step) / 10, Loss: nan, LR: nan,
				Eval: map[string]float64{"accuracy": 0.8, "f1": 0.7, "loss": 0.5}})
		}
	}
	return recs
}

// TestCurvesStructure checks the picture's structure, not its pixels: the panels share one x
// axis (optimizer steps, from 0, labelled once at the bottom), the epoch ends are marked, the
// training loss starts at step 1, each evaluation metric has its own colour or dash pattern
// and a legend entry (drawn outside the data), tick labels have no needless decimals, and the
// learning-rate panel is small, or left out (its value in the title) when the rate is constant.
func TestCurvesStructure(t *testing.T) {
	fig, err := newFigure(curveRecords(false), "run")
	if err != nil {
		t.Fatal(err)
	}
	if len(fig.panels) != 3 {
		t.Fatalf("%d panels, want loss, evaluation and learning rate", len(fig.panels))
	}
	for i, p := range fig.panels {
		if p.plot.X.Min != 0 || p.plot.X.Max != 20 {
			t.Errorf("panel %d: x axis [%g, %g], want the shared [0, 20]", i, p.plot.X.Min, p.plot.X.Max)
		}
		if labelled := p.plot.X.Label.Text != ""; labelled != (i == len(fig.panels)-1) {
			t.Errorf("panel %d: x label %q; only the bottom panel names the axis", i, p.plot.X.Label.Text)
		}
		if !p.legend.Left || p.plot.Legend.Top {
			t.Errorf("panel %d: the legend is not the outside one", i)
		}
		seen := map[int]bool{}
		for _, st := range p.styles {
			if seen[st] {
				t.Errorf("panel %d: two curves share style %d", i, st)
			}
			seen[st] = true
		}
	}
	if want := []float64{10, 20}; len(fig.epochs) != 2 || fig.epochs[0] != want[0] || fig.epochs[1] != want[1] {
		t.Errorf("epoch ends at %v, want %v", fig.epochs, want)
	}
	if !strings.Contains(fig.panels[2].plot.Y.Label.Text, "learning rate") || fig.panels[2].weight >= fig.panels[0].weight {
		t.Errorf("the learning-rate panel is not the small last one: %q weight %g", fig.panels[2].plot.Y.Label.Text,
			fig.panels[2].weight)
	}
	names := func(p *panel) (out []string) {
		for _, c := range p.curves {
			out = append(out, c.name)
		}
		return out
	}
	if got := strings.Join(names(fig.panels[0]), ", "); got != "train loss, eval loss" {
		t.Errorf("loss panel curves: %s", got)
	}
	if got := strings.Join(names(fig.panels[1]), ", "); got != "eval accuracy, eval f1" {
		t.Errorf("evaluation panel curves: %s", got)
	}
	if x := fig.panels[0].curves[0].xys[0].X; x != 1 {
		t.Errorf("the training loss starts at step %g, want 1", x)
	}

	for _, tk := range (cleanTicks{}).Ticks(0.6, 0.75) {
		if strings.HasSuffix(tk.Label, "0") && strings.Contains(tk.Label, ".") {
			t.Errorf("tick label %q has a needless decimal", tk.Label)
		}
	}
	for _, tk := range (cleanTicks{integers: true}).Ticks(0, 3) {
		if tk.Value != math.Trunc(tk.Value) {
			t.Errorf("step tick at %g", tk.Value)
		}
	}

	fig, err = newFigure(curveRecords(true), "run")
	if err != nil {
		t.Fatal(err)
	}
	if len(fig.panels) != 2 || !strings.Contains(fig.title, "constant learning rate 0.001") {
		t.Errorf("constant rate: %d panels, title %q; want no rate panel and the rate in the title", len(fig.panels), fig.title)
	}
}

// TestDrawEncodes: Draw gives a PNG and an SVG picture of the points.
func TestDrawEncodes(t *testing.T) {
	png, svg, err := Draw(curveRecords(false), "run")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(png, []byte("\x89PNG")) || !bytes.Contains(svg, []byte("<svg")) {
		t.Errorf("Draw: %d bytes of PNG (%q...), %d of SVG", len(png), png[:min(8, len(png))], len(svg))
	}
}
