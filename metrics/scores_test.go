package metrics

import "testing"

// nearScores reports whether a and b have the same support and scores within 1e-12.
func nearScores(a, b Scores) bool {
	return near(a.Precision, b.Precision) && near(a.Recall, b.Recall) && near(a.F1, b.F1) && a.Support == b.Support
}

// checkValues checks that a Values map has exactly the keys of want, with their values.
func checkValues(t *testing.T, got, want map[string]float64) {
	t.Helper()
	for key, w := range want {
		if v, ok := got[key]; !ok || !near(v, w) {
			t.Errorf("Values()[%q] = %g (present: %t), want %g", key, v, ok, w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("Values has %d entries, want %d: %v", len(got), len(want), got)
	}
}
