package trainer

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/goaccel/goaccel/internal/fsutil"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Plot draws the training curves of the run directory dir from its metrics.jsonl: the
// training loss (and the evaluation loss, if any), the other evaluation metrics, and the
// learning rate, each against the step, one panel above the other. It writes curves.png and
// curves.svg in dir (replacing earlier drawings, which are derived files) and returns their
// paths. Fit calls it at the end; `goaccel plot RUN_DIR` calls it on any run.
func Plot(dir string) ([]string, error) {
	records, err := ReadMetrics(filepath.Join(dir, MetricsFile))
	if err != nil {
		return nil, fmt.Errorf("trainer: plot: %w", err)
	}
	panels, err := curvePanels(records, filepath.Base(filepath.Clean(dir)))
	if err != nil {
		return nil, fmt.Errorf("trainer: plot %s: %w", dir, err)
	}
	const width = 8 * vg.Inch
	height := vg.Length(len(panels)) * 3 * vg.Inch
	png := vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(width, height), vgimg.UseDPI(110),
		vgimg.UseBackgroundColor(color.White))}
	svg := vgsvg.New(width, height)
	var out []string
	for _, c := range []struct {
		name   string
		canvas vg.CanvasWriterTo
	}{{CurvesPNG, png}, {CurvesSVG, svg}} {
		drawPanels(panels, draw.New(c.canvas))
		var buf bytes.Buffer
		if _, err := c.canvas.WriteTo(&buf); err != nil {
			return out, fmt.Errorf("trainer: plot: encoding %s: %w", c.name, err)
		}
		path := filepath.Join(dir, c.name)
		if err := fsutil.WriteFileAtomic(path, buf.Bytes()); err != nil {
			return out, fmt.Errorf("trainer: %w", err)
		}
		out = append(out, path)
	}
	return out, nil
}

// drawPanels lays the panels out in one column with aligned axes.
func drawPanels(panels []*plot.Plot, dc draw.Canvas) {
	grid := make([][]*plot.Plot, len(panels))
	for i, p := range panels {
		grid[i] = []*plot.Plot{p}
	}
	tiles := draw.Tiles{Rows: len(panels), Cols: 1, PadX: vg.Millimeter, PadY: 4 * vg.Millimeter,
		PadTop: 2 * vg.Millimeter, PadBottom: 2 * vg.Millimeter, PadLeft: 2 * vg.Millimeter, PadRight: 4 * vg.Millimeter}
	canvases := plot.Align(grid, tiles, dc)
	for i, p := range panels {
		p.Draw(canvases[i][0])
	}
}

// series is one named curve.
type series struct {
	name   string
	xys    plotter.XYs
	points bool // draw markers (sparse series such as evaluations)
}

func (s *series) add(x, y float64) {
	if !math.IsNaN(y) && !math.IsInf(y, 0) {
		s.xys = append(s.xys, plotter.XY{X: x, Y: y})
	}
}

// curvePanels builds the panels from the records.
func curvePanels(records []Record, run string) ([]*plot.Plot, error) {
	trainLoss := &series{name: "train loss"}
	lr := &series{name: "learning rate"}
	evals := map[string]*series{}
	for _, r := range records {
		x := float64(r.Step)
		switch r.Kind {
		case KindTrain:
			trainLoss.add(x, r.Loss)
			lr.add(x, r.LR)
		case KindEval:
			for name, v := range r.Eval {
				s, ok := evals[name]
				if !ok {
					s = &series{name: "eval " + name, points: true}
					evals[name] = s
				}
				s.add(x, v)
			}
		}
	}
	names := make([]string, 0, len(evals))
	for n := range evals {
		names = append(names, n)
	}
	slices.Sort(names)
	var lossCurves, metricCurves []*series
	if len(trainLoss.xys) > 0 {
		lossCurves = append(lossCurves, trainLoss)
	}
	for _, n := range names {
		if strings.Contains(strings.ToLower(n), "loss") {
			lossCurves = append(lossCurves, evals[n])
		} else {
			metricCurves = append(metricCurves, evals[n])
		}
	}
	if len(lossCurves)+len(metricCurves)+len(lr.xys) == 0 {
		return nil, fmt.Errorf("%s has no records to draw", MetricsFile)
	}
	var panels []*plot.Plot
	add := func(title, ylabel string, curves []*series) error {
		if len(curves) == 0 {
			return nil
		}
		p, err := panel(title, ylabel, curves)
		if err != nil {
			return err
		}
		panels = append(panels, p)
		return nil
	}
	if err := add("Loss", "loss", lossCurves); err != nil {
		return nil, err
	}
	if err := add("Evaluation", "metric", metricCurves); err != nil {
		return nil, err
	}
	if len(lr.xys) > 0 {
		if err := add("Learning rate", "learning rate", []*series{lr}); err != nil {
			return nil, err
		}
	}
	panels[0].Title.Text = fmt.Sprintf("%s: %s", run, panels[0].Title.Text)
	return panels, nil
}

// panel draws curves on one plot with a title, axis labels, a grid and a legend.
func panel(title, ylabel string, curves []*series) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = vg.Points(13)
	p.X.Label.Text = "step (optimizer updates)"
	p.Y.Label.Text = ylabel
	for _, ax := range []*plot.Axis{&p.X, &p.Y} {
		ax.Label.TextStyle.Font.Size = vg.Points(11)
		ax.Tick.Label.Font.Size = vg.Points(10)
	}
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	p.Legend.TextStyle.Font.Size = vg.Points(10)
	for i, c := range curves {
		if len(c.xys) == 0 {
			continue
		}
		col := plotutil.Color(i)
		l, err := plotter.NewLine(c.xys)
		if err != nil {
			return nil, fmt.Errorf("curve %q: %w", c.name, err)
		}
		l.Color = col
		l.Width = vg.Points(1.5)
		p.Add(l)
		if c.points {
			s, err := plotter.NewScatter(c.xys)
			if err != nil {
				return nil, fmt.Errorf("curve %q: %w", c.name, err)
			}
			s.Color = col
			s.Shape = draw.CircleGlyph{}
			s.Radius = vg.Points(2.5)
			p.Add(s)
			p.Legend.Add(c.name, l, s)
		} else {
			p.Legend.Add(c.name, l)
		}
	}
	// A flat curve (a constant learning rate) would get gonum's default ±1 range around its
	// value, which hides small values such as 2e-5 at "0": give it a range of its own.
	if p.Y.Min == p.Y.Max {
		v := p.Y.Min
		pad := math.Abs(v) * 0.5
		if pad == 0 {
			pad = 1
		}
		p.Y.Min, p.Y.Max = v-pad, v+pad
	}
	return p, nil
}
