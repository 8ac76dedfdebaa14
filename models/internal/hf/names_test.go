package hf

import "testing"

// TestNames: a family's VarPath and HFName turn dots into scope separators and back, and say
// false for names and paths outside its modules or that no tensor name gives.
func TestNames(t *testing.T) {
	n := Names{Modules: []string{"deberta", "pooler", "classifier"}}
	for _, c := range []struct{ name, path string }{
		{"deberta.encoder.layer.0.attention.self.query_proj.weight", "/deberta/encoder/layer/0/attention/self/query_proj/weight"},
		{"classifier.bias", "/classifier/bias"},
	} {
		if got, ok := n.VarPath(c.name); !ok || got != c.path {
			t.Errorf("VarPath(%q) = %q, %v; want %q", c.name, got, ok, c.path)
		}
		for _, p := range []string{c.path, c.path[1:]} {
			if got, ok := n.HFName(p); !ok || got != c.name {
				t.Errorf("HFName(%q) = %q, %v; want %q", p, got, ok, c.name)
			}
		}
	}
	for _, name := range []string{"cls.predictions.bias", "deberta", "deberta..weight", "deberta/x.weight", "pooler.dense.", ""} {
		if got, ok := n.VarPath(name); ok {
			t.Errorf("VarPath(%q) = %q, true; want false", name, got)
		}
	}
	for _, path := range []string{"/optimizer/adam/m", "/deberta", "/deberta//x", "/pooler/dense.x/weight", "/classifier/", ""} {
		if got, ok := n.HFName(path); ok {
			t.Errorf("HFName(%q) = %q, true; want false", path, got)
		}
	}
}
