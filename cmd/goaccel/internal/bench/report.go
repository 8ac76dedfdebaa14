package bench

import (
	"fmt"
	"image/color"
	"strings"
	"text/tabwriter"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// Table formats the measurements as a fixed-width table, one row per framework and spec,
// followed by the reasons for any missing comparison.
func Table(ms []*Measurement) string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "work\timpl\tsteps/s\texamples/s\tCPU s/step\tfirst step: process\tprepare\tCPU s\tpeak RSS MB\tdevice MB\tratio\tper-round ratios\t")
	var notes []string
	for _, m := range ms {
		if m.Error != "" {
			fmt.Fprintf(tw, "%s\t%s\tfailed\t\t\t\t\t\t\t\t\t\t\n", m.Label, m.Impl)
			notes = append(notes, fmt.Sprintf("%s %s: %s", m.Label, m.Impl, m.Error))
			continue
		}
		if m.StepsPerS == 0 {
			if m.Missing != "" {
				fmt.Fprintf(tw, "%s\t%s\t-\t\t\t\t\t\t\t\t\t\t\n", m.Label, m.Impl)
				notes = append(notes, fmt.Sprintf("%s %s: %s", m.Label, m.Impl, m.Missing))
			}
			continue
		}
		dev := "-"
		if m.DevicePeakMB != nil {
			dev = fmt.Sprintf("%.0f", *m.DevicePeakMB)
		}
		ratio, spread := "-", ""
		if m.Ratio > 0 {
			ratio = fmt.Sprintf("%.2fx %s", m.Ratio, m.RatioTo)
			spread = fmt.Sprintf("%.2f-%.2f", m.RatioMin, m.RatioMax)
		} else if m.Missing != "" && m.RatioTo != "" {
			ratio = "n/a"
		}
		if m.BaselineRatio > 0 {
			spread += fmt.Sprintf(" (%.2fx baseline)", m.BaselineRatio)
		}
		fmt.Fprintf(tw, "%s\t%s\t%.3f\t%.1f\t%.2f\t%.1f s\t%.1f s\t%.1f\t%.0f\t%s\t%s\t%s\t\n", m.Label, m.Impl, m.StepsPerS,
			m.ExamplesPerS, m.StepCPUS, m.StartToFirstS, m.PrepareToFirstS, m.FirstStepCPUS, m.PeakRSSMB, dev, ratio, spread)
	}
	tw.Flush()
	for _, n := range notes {
		fmt.Fprintln(&b, "  note:", n)
	}
	return b.String()
}

// Chart draws a bar chart of the ratios (goaccel over PyTorch, and the pure-Go backend over
// XLA where measured) into path (PNG or SVG, by extension), with a line at 1.0.
func Chart(ms []*Measurement, path, machine string) error {
	var labels []string
	var vs plotter.Values
	for _, m := range ms {
		if m.Ratio > 0 {
			labels = append(labels, fmt.Sprintf("%s\n%s/%s", m.Label, m.Impl, m.RatioTo))
			vs = append(vs, m.Ratio)
		}
	}
	p := plot.New()
	p.Title.Text = "goaccel bench: throughput ratio (steps/s)"
	p.X.Label.Text = machine
	p.Y.Label.Text = "ratio (>1: goaccel faster)"
	if len(vs) == 0 {
		p.Title.Text += ": no ratios (see table.txt)"
		return p.Save(6*vg.Inch, 3*vg.Inch, path)
	}
	bars, err := plotter.NewBarChart(vs, vg.Points(28))
	if err != nil {
		return err
	}
	bars.Color = color.RGBA{R: 60, G: 110, B: 180, A: 255}
	p.Add(bars)
	one := plotter.NewFunction(func(float64) float64 { return 1 })
	one.Color = color.RGBA{R: 200, A: 255}
	one.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(one)
	p.NominalX(labels...)
	p.Y.Min = 0
	width := vg.Length(max(6, 1.5+1.6*float64(len(vs)))) * vg.Inch
	return p.Save(width, 4*vg.Inch, path)
}
