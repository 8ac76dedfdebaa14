// Package curves draws the curves of a training run: one column of panels over the same x
// axis, the optimizer step, with the epoch ends marked by dotted vertical lines — the training
// loss (from step 1) with the evaluation loss, if any; the other evaluation metrics, each in
// its own colour, dash pattern and marker; and a short learning-rate panel, left out when the
// rate is constant (its value is then in the title). Each panel's legend is to the right of
// its data. trainer.Plot draws a run directory's metrics.jsonl with it (Fit and trainer.Run at
// the end of a run, `goaccel plot RUN_DIR` on any run).
package curves

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Point is one record of a run as the picture uses it: a training record (Loss and LR; NaN
// where not measured) or, when Eval is not nil, an evaluation (its metrics by name).
type Point struct {
	Step  int64
	Epoch float64 // the training progress in epochs; whole numbers mark the epoch ends
	Loss  float64
	LR    float64
	Eval  map[string]float64
}

// Draw draws the points of the run called title as a PNG and an SVG picture.
func Draw(points []Point, title string) (pngData, svgData []byte, err error) {
	fig, err := newFigure(points, title)
	if err != nil {
		return nil, nil, fmt.Errorf("curves: %w", err)
	}
	width, height := fig.size()
	png := vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(width, height), vgimg.UseDPI(110),
		vgimg.UseBackgroundColor(color.White))}
	svg := vgsvg.New(width, height)
	var out [2][]byte
	for i, canvas := range []vg.CanvasWriterTo{png, svg} {
		fig.draw(draw.New(canvas))
		var buf bytes.Buffer
		if _, err := canvas.WriteTo(&buf); err != nil {
			return nil, nil, fmt.Errorf("curves: encoding the picture: %w", err)
		}
		out[i] = buf.Bytes()
	}
	return out[0], out[1], nil
}

// figure is the picture: panels one above the other, each with its legend at its right.
type figure struct {
	title  string
	panels []*panel
	epochs []float64 // steps at which an epoch ended
}

// panel is one plot of the figure.
type panel struct {
	plot   *plot.Plot
	legend plot.Legend // drawn to the right of the data
	weight float64     // share of the figure's height
	curves []*series
	styles []int // plotutil colour, dash and marker index of each curve
}

// Layout of the figure.
const (
	figureWidth  = 9 * vg.Inch
	legendWidth  = 1.9 * vg.Inch
	panelHeight  = 2.6 * vg.Inch // for weight 1
	titleHeight  = 0.4 * vg.Inch
	figureMargin = 2 * vg.Millimeter
)

func (f *figure) size() (vg.Length, vg.Length) {
	h := titleHeight + 2*figureMargin
	for _, p := range f.panels {
		h += vg.Length(p.weight) * panelHeight
	}
	return figureWidth, h
}

// series is one named curve.
type series struct {
	name string
	xys  plotter.XYs
}

func (s *series) add(x, y float64) {
	if !math.IsNaN(y) && !math.IsInf(y, 0) {
		s.xys = append(s.xys, plotter.XY{X: x, Y: y})
	}
}

// newFigure builds the panels from the points.
func newFigure(records []Point, run string) (*figure, error) {
	trainLoss := &series{name: "train loss"}
	lr := &series{name: "learning rate"}
	evals := map[string]*series{}
	fig := &figure{title: run}
	maxStep := 0.0
	for _, r := range records {
		x := float64(r.Step)
		maxStep = math.Max(maxStep, x)
		if r.Epoch >= 1 && r.Epoch == math.Trunc(r.Epoch) && !slices.Contains(fig.epochs, x) {
			fig.epochs = append(fig.epochs, x)
		}
		if r.Eval == nil {
			trainLoss.add(x, r.Loss)
			lr.add(x, r.LR)
		}
		for name, v := range r.Eval {
			s, ok := evals[name]
			if !ok {
				s = &series{name: "eval " + name}
				evals[name] = s
			}
			s.add(x, v)
		}
	}
	names := make([]string, 0, len(evals))
	for n := range evals {
		names = append(names, n)
	}
	slices.Sort(names)
	var lossCurves, metricCurves []*series
	for _, n := range names {
		if strings.Contains(strings.ToLower(n), "loss") {
			lossCurves = append(lossCurves, evals[n])
		} else {
			metricCurves = append(metricCurves, evals[n])
		}
	}
	if len(trainLoss.xys)+len(lossCurves)+len(metricCurves)+len(lr.xys) == 0 {
		return nil, fmt.Errorf("no records to draw (metrics.jsonl is empty)")
	}
	constantLR := len(lr.xys) > 0 && slices.IndexFunc(lr.xys, func(p plotter.XY) bool { return p.Y != lr.xys[0].Y }) < 0
	if constantLR {
		fig.title += fmt.Sprintf(" (constant learning rate %s)", formatTick(lr.xys[0].Y))
	}
	add := func(ylabel string, weight float64, first *series, curves []*series) error {
		if first != nil && len(first.xys) > 0 {
			curves = append([]*series{first}, curves...)
		}
		if len(curves) == 0 {
			return nil
		}
		p, err := newPanel(ylabel, weight, curves, fig.epochs, first != nil && len(first.xys) > 0)
		if err != nil {
			return err
		}
		fig.panels = append(fig.panels, p)
		return nil
	}
	if err := add("loss", 1, trainLoss, lossCurves); err != nil {
		return nil, err
	}
	if err := add("evaluation", 1, nil, metricCurves); err != nil {
		return nil, err
	}
	if len(lr.xys) > 0 && !constantLR {
		if err := add("learning rate", 0.55, lr, nil); err != nil {
			return nil, err
		}
	}
	// One x axis for all: from step 0 to the last step, labelled on the bottom panel only.
	for i, p := range fig.panels {
		p.plot.X.Min, p.plot.X.Max = 0, math.Max(maxStep, 1)
		if i < len(fig.panels)-1 {
			p.plot.X.Label.Text = ""
			p.plot.X.Tick.Marker = cleanTicks{integers: true, unlabelled: true}
		}
	}
	return fig, nil
}

// newPanel draws curves on one plot: a grid, the epoch ends, the curves (the first one solid
// when solidFirst, the others each with its own colour, dashes and markers), and a legend to
// be drawn outside.
func newPanel(ylabel string, weight float64, curves []*series, epochs []float64, solidFirst bool) (*panel, error) {
	p := plot.New()
	p.X.Label.Text = "step (optimizer updates); dotted lines: epoch ends"
	p.Y.Label.Text = ylabel
	for _, ax := range []*plot.Axis{&p.X, &p.Y} {
		ax.Label.TextStyle.Font.Size = vg.Points(11)
		ax.Tick.Label.Font.Size = vg.Points(10)
		ax.Tick.Marker = cleanTicks{}
	}
	p.X.Tick.Marker = cleanTicks{integers: true}
	p.Add(plotter.NewGrid())
	pn := &panel{plot: p, legend: plot.NewLegend(), weight: weight}
	pn.legend.Left, pn.legend.Top = true, true
	pn.legend.TextStyle.Font.Size = vg.Points(10)
	for i, c := range curves {
		l, err := plotter.NewLine(c.xys)
		if err != nil {
			return nil, fmt.Errorf("curve %q: %w", c.name, err)
		}
		l.Width = vg.Points(1.6)
		style := i
		if !solidFirst {
			style = i + 1 // the solid colour 0 is the training loss's
		}
		l.Color = plotutil.Color(style)
		if style > 0 {
			l.Dashes = plotutil.Dashes(style)
		}
		p.Add(l)
		thumbs := []plot.Thumbnailer{l}
		if style > 0 || len(c.xys) < 30 { // sparse curves (evaluations) get markers
			s, err := plotter.NewScatter(c.xys)
			if err != nil {
				return nil, fmt.Errorf("curve %q: %w", c.name, err)
			}
			s.Color = l.Color
			s.Shape = plotutil.Shape(style)
			s.Radius = vg.Points(3)
			p.Add(s)
			thumbs = append(thumbs, s)
		}
		pn.legend.Add(c.name, thumbs...)
		pn.curves, pn.styles = append(pn.curves, c), append(pn.styles, style)
	}
	for _, e := range epochs {
		p.Add(&vline{x: e})
	}
	// A flat curve would get gonum's default ±1 range around its value, which hides small
	// values such as 2e-5 at "0": give it a range of its own.
	if p.Y.Min == p.Y.Max {
		v := p.Y.Min
		pad := math.Abs(v) * 0.5
		if pad == 0 {
			pad = 1
		}
		p.Y.Min, p.Y.Max = v-pad, v+pad
	}
	return pn, nil
}

// vline is a dotted grey vertical line across a panel at step x (an epoch end).
type vline struct{ x float64 }

// Plot draws the line.
func (v *vline) Plot(c draw.Canvas, p *plot.Plot) {
	x := c.X(p.X.Norm(v.x))
	c.StrokeLine2(draw.LineStyle{Color: color.Gray{Y: 120}, Width: vg.Points(1),
		Dashes: []vg.Length{vg.Points(2), vg.Points(3)}}, x, c.Min.Y, x, c.Max.Y)
}

// cleanTicks are gonum's default ticks with labels without needless decimals ("0.7", not
// "0.700"; "20", not "20.0"), on a step axis only whole numbers, and no labels at all on the
// x axes of the upper panels (the bottom panel's labels serve the column).
type cleanTicks struct{ integers, unlabelled bool }

// Ticks returns the ticks between min and max.
func (t cleanTicks) Ticks(min, max float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(min, max)
	out := ticks[:0]
	for _, tk := range ticks {
		if t.integers && tk.Value != math.Trunc(tk.Value) {
			continue
		}
		switch {
		case t.unlabelled && tk.Label != "":
			tk.Label = " " // a major tick (grid line) without text
		case tk.Label != "":
			tk.Label = formatTick(tk.Value)
		}
		out = append(out, tk)
	}
	return out
}

// formatTick is the shortest text of v at 4 significant digits: 0.7, 20, 2e-05.
func formatTick(v float64) string {
	if math.Abs(v) < 1e-12 {
		return "0"
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// draw lays the panels out in one column: the data areas share their left and right edges,
// so the steps line up, and each legend sits to the right of its panel.
func (f *figure) draw(dc draw.Canvas) {
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	top := dc.Max.Y - figureMargin
	title := draw.TextStyle{Color: color.Black, Font: plot.DefaultFont, Handler: plot.DefaultTextHandler,
		XAlign: draw.XCenter, YAlign: draw.YTop}
	title.Font.Size = vg.Points(13)
	dc.FillText(title, vg.Point{X: (dc.Min.X + dc.Max.X) / 2, Y: top}, f.title)
	top -= titleHeight
	left, right := dc.Min.X+figureMargin, dc.Max.X-figureMargin-legendWidth
	// The widest y axis decides where every panel's data starts.
	var inset vg.Length
	for _, p := range f.panels {
		c := draw.Crop(dc, 0, 0, 0, 0)
		c.Min.X, c.Max.X = left, right
		inset = max(inset, p.plot.DataCanvas(c).Min.X-left)
	}
	for _, p := range f.panels {
		h := vg.Length(p.weight) * panelHeight
		c := dc
		c.Rectangle = vg.Rectangle{Min: vg.Point{X: left, Y: top - h}, Max: vg.Point{X: right, Y: top}}
		own := p.plot.DataCanvas(c).Min.X - left
		c.Min.X += inset - own
		p.plot.Draw(c)
		data := p.plot.DataCanvas(c)
		lc := dc
		lc.Rectangle = vg.Rectangle{Min: vg.Point{X: right + 3*vg.Millimeter, Y: data.Min.Y},
			Max: vg.Point{X: dc.Max.X - figureMargin, Y: data.Max.Y}}
		p.legend.Draw(lc)
		top -= h
	}
}
