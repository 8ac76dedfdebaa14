package metrics

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
)

// TestRegressionHandComputed checks the figures against values worked out by hand (and
// matching scikit-learn's and scipy's).
func TestRegressionHandComputed(t *testing.T) {
	tests := []struct {
		name                    string
		preds, targets          []float64
		real                    []bool
		count                   int
		mse, mae                float64
		pearson, spearman       float64
		pearsonErr, spearmanErr string // the reason, when undefined
	}{
		{
			// Errors 0 1 -1 0; deviations of both from 2.5: -1.5 -0.5 0.5 1.5 and -1.5 0.5 -0.5
			// 1.5: Σxy = 2.25-0.25-0.25+2.25 = 4, Σx² = Σy² = 5, r = 0.8; the ranks are the values.
			name: "godoc example", preds: []float64{1, 2, 3, 4}, targets: []float64{1, 3, 2, 4},
			count: 4, mse: 0.5, mae: 0.5, pearson: 0.8, spearman: 0.8,
		},
		{
			// Target ranks 1 2.5 2.5 4, deviations -1.5 0 0 1.5: Σxy = 4.5, Σx² = 5, Σy² = 4.5,
			// ρ = 4.5/√22.5 = 3/√10. Target deviations from 2.25: -1.25 -0.25 -0.25 1.75:
			// Σxy = 1.875+0.125-0.125+2.625 = 4.5, Σy² = 4.75, r = 4.5/√23.75.
			name: "tied targets", preds: []float64{1, 2, 3, 4}, targets: []float64{1, 2, 2, 4},
			count: 4, mse: 0.25, mae: 0.25, pearson: 4.5 / math.Sqrt(23.75), spearman: 3 / math.Sqrt(10),
		},
		{
			name: "padding is skipped, whatever it holds", preds: []float64{1, math.NaN(), 2, 3, 4, 1e300},
			targets: []float64{1, 7, 3, 2, 4, math.Inf(1)}, real: []bool{true, false, true, true, true, false},
			count: 4, mse: 0.5, mae: 0.5, pearson: 0.8, spearman: 0.8,
		},
		{
			name: "two examples", preds: []float64{1, 2}, targets: []float64{5, -5},
			count: 2, mse: (16 + 49) / 2.0, mae: 5.5, pearson: -1, spearman: -1,
		},
		{
			name: "one example", preds: []float64{1}, targets: []float64{3}, count: 1, mse: 4, mae: 2,
			pearsonErr: "1 example(s), need at least 2", spearmanErr: "1 example(s), need at least 2",
		},
		{
			name: "constant targets", preds: []float64{1, 2, 3}, targets: []float64{0.1, 0.1, 0.1},
			count: 3, mse: (0.81 + 3.61 + 8.41) / 3, mae: (0.9 + 1.9 + 2.9) / 3,
			pearsonErr: "all 3 targets equal 0.1, a zero variance", spearmanErr: "all 3 targets equal 0.1",
		},
		{
			name: "constant predictions", preds: []float64{2, 2}, targets: []float64{1, 3},
			count: 2, mse: 1, mae: 1, pearsonErr: "all 2 predictions equal 2", spearmanErr: "all 2 predictions equal 2",
		},
		{
			// Large, close values: deviations are taken from the means before multiplying.
			name: "offset by 1e9", preds: []float64{1e9 + 1, 1e9 + 2, 1e9 + 3, 1e9 + 4}, targets: []float64{1, 3, 2, 4},
			count: 4, mse: math.NaN(), mae: math.NaN(), pearson: 0.8, spearman: 0.8,
		},
		{
			name: "empty", count: 0, mse: math.NaN(), mae: math.NaN(),
			pearsonErr: "0 example(s)", spearmanErr: "0 example(s)",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var r Regression
			if err := r.Add(tc.preds, tc.targets, tc.real); err != nil {
				t.Fatal(err)
			}
			if r.Count() != tc.count {
				t.Errorf("count %d, want %d", r.Count(), tc.count)
			}
			for _, f := range []struct {
				name      string
				got, want float64
			}{{"mse", r.MSE(), tc.mse}, {"mae", r.MAE(), tc.mae}} {
				if tc.count == 0 && !math.IsNaN(f.got) {
					t.Errorf("%s of no example = %g, want NaN", f.name, f.got)
				}
				if !math.IsNaN(f.want) && !near(f.got, f.want) {
					t.Errorf("%s = %.17g, want %.17g", f.name, f.got, f.want)
				}
			}
			for _, c := range []struct {
				name    string
				get     func() (float64, error)
				want    float64
				wantErr string
			}{{"Pearson", r.Pearson, tc.pearson, tc.pearsonErr}, {"Spearman", r.Spearman, tc.spearman, tc.spearmanErr}} {
				got, err := c.get()
				if c.wantErr != "" {
					if !math.IsNaN(got) || !errors.Is(err, ErrUndefinedCorrelation) || !strings.Contains(err.Error(), c.wantErr) ||
						!strings.HasPrefix(err.Error(), "metrics: Regression."+c.name+": correlation undefined: ") {
						t.Errorf("%s = %g, %v; want NaN and an error with %q", c.name, got, err, c.wantErr)
					}
					if v := r.Values()[strings.ToLower(c.name)]; !math.IsNaN(v) {
						t.Errorf("Values()[%q] = %g, want NaN", strings.ToLower(c.name), v)
					}
					continue
				}
				if err != nil || !near(got, c.want) {
					t.Errorf("%s = %.17g, %v; want %.17g", c.name, got, err, c.want)
				}
			}
		})
	}
}

func TestRanks(t *testing.T) {
	for _, tc := range []struct{ x, want []float64 }{
		{[]float64{10, 20, 20, 5}, []float64{2, 3.5, 3.5, 1}},
		{[]float64{3, 3, 3}, []float64{2, 2, 2}},
		{[]float64{-1, 0, -0.0, 2, 0}, []float64{1, 3, 3, 5, 3}}, // -0 == 0
		{nil, []float64{}},
	} {
		if got := ranks(tc.x); !slices.Equal(got, tc.want) {
			t.Errorf("ranks(%v) = %v, want %v", tc.x, got, tc.want)
		}
	}
}

func TestRegressionErrorsValuesString(t *testing.T) {
	var r Regression
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"lengths", r.Add([]float64{1}, []float64{1, 2}, nil), "Regression.Add: 1 predictions but 2 targets"},
		{"mask length", r.Add([]float64{1}, []float64{1}, []bool{true, true}), "1 predictions but 2 mask values"},
		{"NaN prediction", r.Add([]float64{1, math.NaN()}, []float64{1, 2}, nil), "example 1: prediction NaN is not finite"},
		{"infinite target", r.Add([]float64{1, 2}, []float64{math.Inf(-1), 2}, nil), "example 0: target -Inf is not finite"},
	} {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, tc.err, tc.want)
		}
	}
	if r.Count() != 0 {
		t.Fatal("a failed Add added examples")
	}
	if err := r.Add([]float64{1, 2, 3}, []float64{1, 3, 2}, nil); err != nil {
		t.Fatal(err)
	}
	var other Regression
	_ = other.Add([]float64{4}, []float64{4}, nil)
	r.Merge(&other)
	checkValues(t, r.Values(), map[string]float64{"count": 4, "mse": 0.5, "mae": 0.5, "pearson": 0.8, "spearman": 0.8})
	if s := r.String(); s != "n=4 mse=0.5000 mae=0.5000 pearson=0.8000 spearman=0.8000" {
		t.Errorf("String() = %q", s)
	}
	r.Reset()
	_ = r.Add([]float64{1, 2}, []float64{3, 3}, nil)
	want := "n=2 mse=2.5000 mae=1.5000 pearson=NaN (all 2 targets equal 3, a zero variance) spearman=NaN (all 2 targets equal 3, a zero variance)"
	if s := r.String(); s != want {
		t.Errorf("String() = %q, want %q", s, want)
	}
}
