package trainer

import (
	"path/filepath"

	"github.com/goaccel/goaccel/internal/fsutil"
	"github.com/goaccel/goaccel/trainer/curves"
)

// Plot draws the training curves of the run directory dir from its metrics.jsonl (package
// trainer/curves says what the picture shows) and writes curves.png and curves.svg in dir
// (replacing earlier drawings, which are derived files); it returns their paths. Fit and
// Run.Finish call it at the end of a run; `goaccel plot RUN_DIR` calls it on any run.
func Plot(dir string) ([]string, error) {
	records, err := ReadMetrics(filepath.Join(dir, MetricsFile))
	if err != nil {
		return nil, wrapf(err, "plot")
	}
	points := make([]curves.Point, 0, len(records))
	for _, r := range records {
		p := curves.Point{Step: r.Step, Epoch: r.Epoch, Loss: r.Loss, LR: r.LR}
		if r.Kind == KindEval {
			p.Eval = r.Eval
			if p.Eval == nil {
				p.Eval = map[string]float64{}
			}
		}
		points = append(points, p)
	}
	png, svg, err := curves.Draw(points, filepath.Base(filepath.Clean(dir)))
	if err != nil {
		return nil, wrapf(err, "plot %s", dir)
	}
	var out []string
	for _, f := range []struct {
		name string
		data []byte
	}{{CurvesPNG, png}, {CurvesSVG, svg}} {
		path := filepath.Join(dir, f.name)
		if err := fsutil.WriteFileAtomic(path, f.data); err != nil {
			return out, wrapf(err, "plot")
		}
		out = append(out, path)
	}
	return out, nil
}
