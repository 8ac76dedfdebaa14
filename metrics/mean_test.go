package metrics

import (
	"math"
	"strings"
	"testing"
)

func TestMean(t *testing.T) {
	var m Mean
	if m.Value() != 0 || m.Weight() != 0 || m.String() != "0.0000" {
		t.Errorf("zero Mean: %g %g %q", m.Value(), m.Weight(), m.String())
	}
	m.Add(1)
	m.Add(2)
	if err := m.AddWeighted(4, 2); err != nil { // (1 + 2 + 8) / 4
		t.Fatal(err)
	}
	if err := m.AddMasked([]float64{5, 100, math.NaN()}, []bool{true, false, false}); err != nil {
		t.Fatal(err)
	}
	if want := (1 + 2 + 8 + 5) / 5.0; m.Value() != want || m.Weight() != 5 {
		t.Errorf("Value %g weight %g, want %g 5", m.Value(), m.Weight(), want)
	}
	if m.String() != "3.2000" {
		t.Errorf("String %q", m.String())
	}
	other := Mean{}
	other.Add(9)
	m.Merge(other)
	if m.Value() != 25.0/6 || m.Weight() != 6 {
		t.Errorf("after Merge: %g %g", m.Value(), m.Weight())
	}
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"negative weight", m.AddWeighted(1, -1), "invalid weight"},
		{"NaN value", m.AddWeighted(math.NaN(), 1), "non-finite"},
		{"mask length", m.AddMasked([]float64{1}, []bool{true, true}), "1 values but 2 mask values"},
		{"infinite real value", m.AddMasked([]float64{1, math.Inf(1)}, nil), "example 1: non-finite"},
	} {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, tc.err, tc.want)
		}
	}
	if m.Weight() != 6 {
		t.Errorf("failed adds changed the weight to %g", m.Weight())
	}
	m.Reset()
	if m.Weight() != 0 || m.Value() != 0 {
		t.Error("Reset did not empty the mean")
	}
}
