package bench

import (
	"encoding/json"
	"fmt"
	"image/color"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Sweep is `goaccel bench --sweep`: one work measured over a grid of sequence lengths and
// per-device batches on one device, and over device counts in one process at a fixed global
// batch, to see how the cost (steps/s, peak memory) and goaccel's ratio to PyTorch grow with
// the work.
type Sweep struct {
	// Seqs and Batches are the grid's sequence lengths and per-device batches (one device).
	Seqs, Batches []int
	// Devices are the device counts of the second part, at GlobalBatch examples of the
	// smallest of Seqs.
	Devices     []int
	GlobalBatch int
	// MaxTokens drops the grid's points with more than that many tokens per device per step
	// (0: none dropped); Specs names them.
	MaxTokens int
}

// Tokens is the spec's tokens per step over all devices (examples for the MLP).
func (s Spec) Tokens() int {
	if s.IsBERT() {
		return s.Batch * s.Seq
	}
	return s.Batch
}

// Specs returns the sweep's specs from base (the work's shape, precision, backend, warm-up):
// the grid in order of sequence length then batch, then the device counts other than 1 (the
// device sweep's one-device point is the grid's point of the same shape when it has one), and
// a line per point dropped by MaxTokens.
func (sw Sweep) Specs(base Spec) (specs []Spec, dropped []string, err error) {
	if !base.IsBERT() {
		return nil, nil, fmt.Errorf("bench: the sweep needs a BERT work (tiny, minilm, base), not %q", base.Work)
	}
	if len(sw.Seqs) == 0 || len(sw.Batches) == 0 {
		return nil, nil, fmt.Errorf("bench: the sweep needs at least one sequence length and one batch")
	}
	seen := map[Spec]bool{}
	add := func(s Spec) error {
		if err := s.Validate(); err != nil {
			return err
		}
		if !seen[s] {
			seen[s] = true
			specs = append(specs, s)
		}
		return nil
	}
	for _, seq := range sw.Seqs {
		for _, b := range sw.Batches {
			s := base
			s.Seq, s.Batch, s.Devices = seq, b, 1
			if sw.MaxTokens > 0 && s.Tokens() > sw.MaxTokens {
				dropped = append(dropped, fmt.Sprintf("L%d B%d (%d tokens per step > --sweep_max_tokens %d)", seq, b, s.Tokens(), sw.MaxTokens))
				continue
			}
			if err := add(s); err != nil {
				return nil, nil, err
			}
		}
	}
	for _, d := range sw.Devices {
		s := base
		s.Seq, s.Batch, s.Devices = slices.Min(sw.Seqs), sw.GlobalBatch, d
		if err := add(s); err != nil {
			return nil, nil, err
		}
	}
	return specs, dropped, nil
}

// sweepRow is one point of the sweep: goaccel's and PyTorch's measurements of one spec, and
// PyTorch's one-device measurement at the same global shape for a point on several devices.
type sweepRow struct {
	spec       Spec
	g, t, tRef *Measurement
}

// sweepRows pairs the measurements by spec, in the order of the specs.
func sweepRows(ms []*Measurement) []sweepRow {
	var rows []sweepRow
	index := map[Spec]int{}
	for _, m := range ms {
		i, ok := index[m.Spec]
		if !ok {
			i = len(rows)
			index[m.Spec] = i
			rows = append(rows, sweepRow{spec: m.Spec})
		}
		switch m.Impl {
		case "goaccel":
			rows[i].g = m
		case "pytorch":
			rows[i].t = m
		}
	}
	for i := range rows {
		one := rows[i].spec
		one.Devices = 1
		if j, ok := index[one]; ok && rows[i].spec.Devices != 1 {
			rows[i].tRef = rows[j].t
		}
	}
	return rows
}

// ok says whether m has figures.
func ok(m *Measurement) bool { return m != nil && m.Error == "" && m.StepsPerS > 0 }

// SweepTable is the sweep's results as a Markdown table (seq, per-device batch, devices,
// tokens per step, steps/s and tokens/s of each framework, the goaccel/PyTorch ratio with its
// per-round range, peak RSS of each), followed by the points dropped and the reasons for any
// missing figure. A point on several devices is compared with PyTorch on one device at the
// same global batch (marked "1-dev"): the PyTorch side drives one device, with all the cores.
func SweepTable(ms []*Measurement, dropped []string) string {
	var b strings.Builder
	b.WriteString("| seq | batch/dev | devices | tokens/step | goaccel steps/s | PyTorch steps/s | goaccel/PyTorch (rounds) | goaccel tokens/s | goaccel peak RSS MB | PyTorch peak RSS MB | CPU s/step goaccel / PyTorch |\n")
	b.WriteString("|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---|\n")
	var notes []string
	f3 := func(m *Measurement) string {
		if !ok(m) {
			return "-"
		}
		return fmt.Sprintf("%.3f", m.StepsPerS)
	}
	rss := func(m *Measurement) string {
		if !ok(m) || m.PeakRSSMB == 0 {
			return "-"
		}
		return fmt.Sprintf("%.0f", m.PeakRSSMB)
	}
	for _, r := range sweepRows(ms) {
		s := r.spec
		ratio, ts, tcol := "-", "-", f3(r.t)
		if ok(r.g) {
			ts = fmt.Sprintf("%.0f", r.g.StepsPerS*float64(s.Tokens()))
		}
		switch {
		case ok(r.g) && ok(r.t):
			ratio = fmt.Sprintf("%.2fx (%.2f-%.2f)", r.g.StepsPerS/r.t.StepsPerS, r.g.RatioMin, r.g.RatioMax)
		case ok(r.g) && ok(r.tRef):
			ratio = fmt.Sprintf("%.2fx 1-dev", r.g.StepsPerS/r.tRef.StepsPerS)
			tcol = f3(r.tRef) + " (1-dev)"
		}
		cpu := func(m *Measurement) string {
			if !ok(m) || m.StepCPUS == 0 {
				return "-"
			}
			return fmt.Sprintf("%.2f", m.StepCPUS)
		}
		fmt.Fprintf(&b, "| %d | %d | %d | %d | %s | %s | %s | %s | %s | %s | %s / %s |\n", s.Seq, s.Batch/s.Devices, s.Devices,
			s.Tokens(), f3(r.g), tcol, ratio, ts, rss(r.g), rss(r.t), cpu(r.g), cpu(r.t))
		for _, m := range []*Measurement{r.g, r.t} {
			if m != nil && m.Error != "" {
				notes = append(notes, fmt.Sprintf("%s %s failed: %s", m.Label, m.Impl, m.Error))
			} else if m != nil && m.Impl == "pytorch" && m.Missing != "" && s.Devices == 1 {
				notes = append(notes, fmt.Sprintf("%s %s: %s", m.Label, m.Impl, m.Missing))
			}
		}
	}
	var backends []string
	for _, m := range ms {
		if be, _ := m.Info["backend"].(string); m.Impl == "goaccel" && be != "" && !slices.Contains(backends, be) {
			backends = append(backends, be)
		}
	}
	if len(backends) > 0 {
		fmt.Fprintf(&b, "\ngoaccel's backend: %s", strings.Join(backends, ", "))
	}
	for _, d := range dropped {
		fmt.Fprintf(&b, "\ndropped: %s", d)
	}
	for _, n := range notes {
		fmt.Fprintf(&b, "\nnote: %s", n)
	}
	b.WriteString("\n")
	return b.String()
}

// RedrawSweep writes sweep.md and sweep.png again in a sweep's run directory from its
// results.jsonl, with the header (the first line of its table.txt) and command given:
// the tables and chart of a finished run with today's SweepTable and SweepChart.
func RedrawSweep(dir, command string, dropped []string, out io.Writer) error {
	raw, err := os.ReadFile(filepath.Join(dir, "results.jsonl"))
	if err != nil {
		return err
	}
	var ms []*Measurement
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		m := &Measurement{}
		if err := json.Unmarshal([]byte(line), m); err != nil {
			return fmt.Errorf("%s: %w", filepath.Join(dir, "results.jsonl"), err)
		}
		ms = append(ms, m)
	}
	table, err := os.ReadFile(filepath.Join(dir, "table.txt"))
	if err != nil {
		return err
	}
	header, _, _ := strings.Cut(string(table), "\n")
	md := header + "\n"
	if command != "" {
		md += "\n`" + command + "`\n"
	}
	md += "\n" + SweepTable(ms, dropped)
	if err := os.WriteFile(filepath.Join(dir, "sweep.md"), []byte(md), 0o644); err != nil {
		return err
	}
	fmt.Fprint(out, md)
	title := "goaccel bench --sweep"
	if f := strings.Fields(header); len(f) > 3 {
		title += ", " + strings.TrimPrefix(header, "goaccel bench ")
	}
	return SweepChart(ms, filepath.Join(dir, "sweep.png"), title)
}

// sweepColors are the lines' colours, one per sequence length.
var sweepColors = []color.Color{
	color.RGBA{R: 31, G: 119, B: 180, A: 255}, color.RGBA{R: 214, G: 39, B: 40, A: 255},
	color.RGBA{R: 44, G: 160, B: 44, A: 255}, color.RGBA{R: 148, G: 103, B: 189, A: 255},
	color.RGBA{R: 255, G: 127, B: 14, A: 255},
}

// SweepChart draws the sweep as a PNG of four panels against tokens per step (log scale):
// steps/s, peak RSS, CPU seconds per step (what a loaded machine's waiting for a core does not
// change) and the goaccel/PyTorch ratio, one line per framework and sequence length
// on one device (goaccel solid, PyTorch dashed), the device counts as labelled points.
func SweepChart(ms []*Measurement, path, title string) error {
	rows := sweepRows(ms)
	var seqs []int
	for _, r := range rows {
		if r.spec.Devices == 1 && !slices.Contains(seqs, r.spec.Seq) {
			seqs = append(seqs, r.spec.Seq)
		}
	}
	slices.Sort(seqs)
	// The axes' ranges are set from the points (a log axis needs a positive range, also in a
	// panel with nothing to draw).
	xmin, xmax, ymin, ymax, rmax := 0.0, 0.0, 0.0, 0.0, 1.2
	for _, r := range rows {
		for _, m := range []*Measurement{r.g, r.t} {
			if !ok(m) {
				continue
			}
			x := float64(r.spec.Tokens())
			if xmin == 0 || x < xmin {
				xmin = x
			}
			if ymin == 0 || m.StepsPerS < ymin {
				ymin = m.StepsPerS
			}
			xmax, ymax = max(xmax, x), max(ymax, m.StepsPerS)
		}
		if ok(r.g) && ok(r.t) {
			rmax = max(rmax, 1.1*r.g.StepsPerS/r.t.StepsPerS)
		}
	}
	if xmin == 0 {
		return fmt.Errorf("no point of the sweep has figures to draw")
	}
	panel := func(title, y string) *plot.Plot {
		p := plot.New()
		p.Title.Text = title
		p.X.Label.Text = "tokens per step (log)"
		p.Y.Label.Text = y
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
		p.X.Min, p.X.Max = xmin/1.3, xmax*1.3
		p.Legend.Top = true
		p.Legend.TextStyle.Font.Size = vg.Points(8)
		return p
	}
	speed := panel("steps/s", "steps/s (log)")
	speed.Y.Scale, speed.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	speed.Y.Min, speed.Y.Max = ymin/1.5, ymax*1.5
	memory := panel("peak RSS", "MB")
	memory.Y.Min = 0
	ratio := panel("goaccel / PyTorch steps/s", "ratio (>1: goaccel faster)")
	ratio.Y.Min, ratio.Y.Max = 0, rmax
	cpu := panel("CPU seconds per step (all threads)", "CPU s/step (log)")
	cpu.Y.Scale, cpu.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	cmin, cmax := 0.0, 0.0
	for _, m := range ms {
		if ok(m) && m.StepCPUS > 0 {
			if cmin == 0 || m.StepCPUS < cmin {
				cmin = m.StepCPUS
			}
			cmax = max(cmax, m.StepCPUS)
		}
	}
	if cmin > 0 {
		cpu.Y.Min, cpu.Y.Max = cmin/1.5, cmax*1.5
	} else {
		cpu.Y.Scale, cpu.Y.Tick.Marker = plot.LinearScale{}, plot.DefaultTicks{}
	}
	memory.Legend.Left, cpu.Legend.Left = true, true
	value := map[string]func(*Measurement) float64{
		"speed":  func(m *Measurement) float64 { return m.StepsPerS },
		"memory": func(m *Measurement) float64 { return m.PeakRSSMB },
		"cpu":    func(m *Measurement) float64 { return m.StepCPUS },
	}
	for i, seq := range seqs {
		c := sweepColors[i%len(sweepColors)]
		for _, impl := range []string{"goaccel", "pytorch"} {
			pts := map[string]plotter.XYs{}
			var rxy plotter.XYs
			for _, r := range rows {
				if r.spec.Seq != seq || r.spec.Devices != 1 {
					continue
				}
				m := r.g
				if impl == "pytorch" {
					m = r.t
				}
				if !ok(m) {
					continue
				}
				x := float64(r.spec.Tokens())
				pts["speed"] = append(pts["speed"], plotter.XY{X: x, Y: value["speed"](m)})
				if m.PeakRSSMB > 0 {
					pts["memory"] = append(pts["memory"], plotter.XY{X: x, Y: value["memory"](m)})
				}
				if m.StepCPUS > 0 {
					pts["cpu"] = append(pts["cpu"], plotter.XY{X: x, Y: value["cpu"](m)})
				}
				if impl == "goaccel" && ok(r.t) {
					rxy = append(rxy, plotter.XY{X: x, Y: r.g.StepsPerS / r.t.StepsPerS})
				}
			}
			name := fmt.Sprintf("%s L%d", impl, seq)
			for key, p := range map[string]*plot.Plot{"speed": speed, "memory": memory, "cpu": cpu} {
				if len(pts[key]) == 0 {
					continue
				}
				if err := addLine(p, pts[key], name, c, impl == "pytorch"); err != nil {
					return err
				}
			}
			if len(rxy) > 0 {
				if err := addLine(ratio, rxy, fmt.Sprintf("L%d", seq), c, false); err != nil {
					return err
				}
			}
		}
	}
	// The device counts: goaccel at the fixed global batch, one point per count.
	for _, r := range rows {
		if r.spec.Devices == 1 || !ok(r.g) {
			continue
		}
		x := float64(r.spec.Tokens())
		name := fmt.Sprintf("goaccel %ddev L%d B%d", r.spec.Devices, r.spec.Seq, r.spec.Batch)
		shape := draw.GlyphDrawer(draw.TriangleGlyph{})
		if r.spec.Devices > 2 {
			shape = draw.SquareGlyph{}
		}
		for _, pv := range []struct {
			p *plot.Plot
			y float64
		}{{speed, r.g.StepsPerS}, {memory, r.g.PeakRSSMB}, {cpu, r.g.StepCPUS}} {
			if pv.y <= 0 {
				continue
			}
			sc, err := plotter.NewScatter(plotter.XYs{{X: x, Y: pv.y}})
			if err != nil {
				return err
			}
			sc.GlyphStyle.Shape, sc.GlyphStyle.Radius = shape, vg.Points(4)
			pv.p.Add(sc)
			pv.p.Legend.Add(name, sc)
		}
		if ok(r.tRef) {
			sc, err := plotter.NewScatter(plotter.XYs{{X: x, Y: r.g.StepsPerS / r.tRef.StepsPerS}})
			if err != nil {
				return err
			}
			sc.GlyphStyle.Shape, sc.GlyphStyle.Radius = shape, vg.Points(4)
			ratio.Add(sc)
			ratio.Legend.Add(fmt.Sprintf("%ddev / PyTorch 1dev", r.spec.Devices), sc)
		}
	}
	one := plotter.NewFunction(func(float64) float64 { return 1 })
	one.Color = color.Gray{Y: 120}
	one.Dashes = []vg.Length{vg.Points(2), vg.Points(2)}
	ratio.Add(one)
	const w, h = 13 * vg.Inch, 9 * vg.Inch
	img := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(96))
	dc := draw.New(img)
	top := dc
	top.Max.Y -= vg.Points(20)
	dc.FillText(draw.TextStyle{Color: color.Black, Font: speed.Title.TextStyle.Font, XAlign: draw.XCenter, YAlign: draw.YTop,
		Handler: speed.Title.TextStyle.Handler}, vg.Point{X: w / 2, Y: h - vg.Points(2)}, title)
	tiles := draw.Tiles{Rows: 2, Cols: 2, PadX: vg.Points(14), PadY: vg.Points(6), PadTop: vg.Points(4), PadBottom: vg.Points(4),
		PadLeft: vg.Points(6), PadRight: vg.Points(10)}
	plots := [][]*plot.Plot{{speed, memory}, {cpu, ratio}}
	canvases := plot.Align(plots, tiles, top)
	for i, row := range plots {
		for j, p := range row {
			p.Draw(canvases[i][j])
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// addLine adds a line with points to p, under name in the legend, dashed when dashed.
func addLine(p *plot.Plot, xys plotter.XYs, name string, c color.Color, dashed bool) error {
	slices.SortFunc(xys, func(a, b plotter.XY) int {
		switch {
		case a.X < b.X:
			return -1
		case a.X > b.X:
			return 1
		}
		return 0
	})
	l, s, err := plotter.NewLinePoints(xys)
	if err != nil {
		return err
	}
	l.Color, s.Color = c, c
	if dashed {
		l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		s.Shape = draw.RingGlyph{}
	} else {
		s.Shape = draw.CircleGlyph{}
	}
	p.Add(l, s)
	p.Legend.Add(name, l, s)
	return nil
}
