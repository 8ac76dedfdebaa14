package lora

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// testBase is a two-layer model with BERT's names: query, key, value per layer, a pooler,
// and a two-tensor head.
func testBase() Base {
	b := Base{ModelType: "bert", TaskType: SeqCls}
	for _, l := range []string{"0", "1"} {
		for _, m := range []string{"attention.self.query", "attention.self.key", "attention.self.value", "intermediate.dense"} {
			b.Linears = append(b.Linears, Linear{Module: "bert.encoder.layer." + l + "." + m, In: 4, Out: 4})
			b.Frozen = append(b.Frozen, Tensor{"bert.encoder.layer." + l + "." + m + ".weight", []int{4, 4}})
		}
	}
	b.Linears = append(b.Linears, Linear{Module: "bert.pooler.dense", In: 4, Out: 4})
	b.Head = []Tensor{{"classifier.weight", []int{2, 4}}, {"classifier.bias", []int{2}}}
	return b
}

// TestTargetsAsPEFTMatches: a target module matches a layer whose name equals it or ends with
// "." and it (PEFT's rule), so "query" and "self.query" take both layers' queries, "dense"
// the feed-forward layers and the pooler, and "uery" nothing; the defaults are PEFT's.
func TestTargetsAsPEFTMatches(t *testing.T) {
	for _, c := range []struct {
		targets []string
		want    int
	}{{nil, 4}, {[]string{"query"}, 2}, {[]string{"self.query", "attention.self.query"}, 2},
		{[]string{"dense"}, 3}, {[]string{"bert.pooler.dense"}, 1}, {[]string{"query", "key", "value"}, 6}} {
		a, err := New(Config{TargetModules: c.targets}, testBase())
		if err != nil {
			t.Fatalf("%q: %v", c.targets, err)
		}
		if len(a.Targets()) != c.want {
			t.Errorf("targets %q adapt %q, want %d layers", c.targets, a.Targets(), c.want)
		}
	}
	_, err := New(Config{TargetModules: []string{"uery"}}, testBase())
	var te *TargetError
	if !errors.As(err, &te) || !strings.Contains(err.Error(), `"attention.self.query"`) || !strings.Contains(err.Error(), `"bert.pooler.dense"`) {
		t.Errorf("target uery: got %v, want a TargetError listing the layers", err)
	}
	a, _ := New(Config{}, testBase())
	if c := a.Config(); c.R != 8 || c.Alpha != 8 || c.Dropout != 0 || !slices.Equal(c.TargetModules, []string{"query", "value"}) || c.Scale() != 1 {
		t.Errorf("zero Config: %+v, want PEFT's r=8, lora_alpha=8, query and value", c)
	}
	if n := a.NumTrainable(); n != 4*8*(4+4)+2*4+2 {
		t.Errorf("NumTrainable %d", n)
	}
	for _, dt := range []string{"q_lin", "v_lin"} {
		if !slices.Contains(DefaultTargetModules("distilbert"), dt) {
			t.Errorf("distilbert's defaults %q lack %s", DefaultTargetModules("distilbert"), dt)
		}
	}
	if _, err := New(Config{}, Base{ModelType: "gpt2", TaskType: SeqCls}); err == nil {
		t.Error("a model_type without defaults and no TargetModules gave no error")
	}
}

// TestValidate: bad values are refused naming PEFT's key.
func TestValidate(t *testing.T) {
	for _, c := range []struct {
		cfg Config
		key string
	}{{Config{R: -1}, "r ="}, {Config{Alpha: -2}, "lora_alpha"}, {Config{Alpha: math.Inf(1)}, "lora_alpha"},
		{Config{Dropout: 1}, "lora_dropout"}, {Config{Dropout: math.NaN()}, "lora_dropout"}, {Config{TargetModules: []string{"query."}}, "query."}} {
		if err := c.cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.key) {
			t.Errorf("%+v: got %v, want an error naming %s", c.cfg, err, c.key)
		}
	}
}

// TestReadConfigRefuses: adapter_config.json values goaccel does not compute are refused
// naming the key.
func TestReadConfigRefuses(t *testing.T) {
	good := `{"peft_type": "LORA", "task_type": "SEQ_CLS", "r": 4, "lora_alpha": 8, "lora_dropout": 0.1, "target_modules": ["value", "query"], "bias": "none"}`
	for _, c := range []struct{ from, to, key string }{
		{`"LORA"`, `"IA3"`, "peft_type"}, {`"bias": "none"`, `"bias": "all"`, "bias"},
		{`["value", "query"]`, `".*query"`, "target_modules"}, {`"r": 4`, `"r": 4, "use_dora": true`, "use_dora"},
		{`"r": 4`, `"r": 4, "use_rslora": true`, "use_rslora"}, {`"r": 4`, `"r": 4, "rank_pattern": {"query": 2}`, "rank_pattern"},
		{`"r": 4`, `"r": 4, "fan_in_fan_out": true`, "fan_in_fan_out"}, {`"r": 4`, `"r": 0`, "r ="},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, ConfigFile), []byte(strings.Replace(good, c.from, c.to, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadConfig(dir); err == nil || !strings.Contains(err.Error(), c.key) {
			t.Errorf("%s -> %s: got %v, want an error naming %s", c.from, c.to, err, c.key)
		}
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, ConfigFile), []byte(good), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := ReadConfig(dir)
	if err != nil || s.Config.R != 4 || s.Config.Alpha != 8 || s.Config.Dropout != 0.1 || !slices.Equal(s.Config.TargetModules, []string{"query", "value"}) || s.TaskType != SeqCls {
		t.Errorf("ReadConfig: %+v, %v", s, err)
	}
}

// TestFoldIn: W + scale·B·A on a 2x3 weight with r = 2.
func TestFoldIn(t *testing.T) {
	w := []float32{1, 2, 3, 4, 5, 6}
	a := []float32{1, 0, 1, 0, 1, 0} // [2, 3]
	b := []float32{1, 2, 3, 4}       // [2, 2]
	foldIn(w, a, b, Linear{In: 3, Out: 2}, 2, 0.5)
	// B·A = [[1, 2, 1], [3, 4, 3]]
	if want := []float32{1.5, 3, 3.5, 5.5, 7, 7.5}; !slices.Equal(w, want) {
		t.Errorf("foldIn: %v, want %v", w, want)
	}
}

// TestConvTargets: ConvLayers lists a Store's HWIO kernels (square, four-dimensional
// "M.weight") as convolutions; a target module matches them as it matches linear layers, A
// [r, in, k, k] and B [out, r, 1, 1] count in NumTrainable, and a target that names neither
// a convolution nor a linear layer is a TargetError listing the convolutions.
func TestConvTargets(t *testing.T) {
	tensors := []Tensor{
		{"resnet.embedder.embedder.convolution.weight", []int{7, 7, 3, 8}},
		{"resnet.embedder.embedder.normalization.weight", []int{8}},
		{"resnet.encoder.stages.0.layers.0.shortcut.convolution.weight", []int{1, 1, 8, 16}},
		{"resnet.encoder.stages.0.layers.0.layer.0.convolution.weight", []int{3, 3, 8, 16}},
	}
	b := Base{ModelType: "resnet", TaskType: ImageCls, Frozen: tensors, Convs: ConvLayers(tensors),
		Head: []Tensor{{"classifier.1.weight", []int{2, 16}}, {"classifier.1.bias", []int{2}}}}
	if len(b.Convs) != 3 || b.Convs[0] != (Conv{Module: "resnet.embedder.embedder.convolution", In: 3, Out: 8, Kernel: 7}) {
		t.Fatalf("ConvLayers: %+v", b.Convs)
	}
	for _, c := range []struct {
		targets []string
		want    int
	}{{nil, 3}, {[]string{"shortcut.convolution"}, 1}, {[]string{"layer.0.convolution", "embedder.convolution"}, 2}} {
		a, err := New(Config{R: 2, TargetModules: c.targets}, b)
		if err != nil {
			t.Fatalf("%q: %v", c.targets, err)
		}
		if len(a.Targets()) != c.want {
			t.Errorf("targets %q adapt %q, want %d convolutions", c.targets, a.Targets(), c.want)
		}
	}
	a, _ := New(Config{R: 2}, b)
	if n := a.NumTrainable(); n != 2*(3*49+8)+2*(8+16)+2*(8*9+16)+2*16+2 {
		t.Errorf("NumTrainable %d", n)
	}
	_, err := New(Config{TargetModules: []string{"normalization"}}, b)
	var te *TargetError
	if !errors.As(err, &te) || !strings.Contains(err.Error(), `"normalization"`) || !strings.Contains(err.Error(), `"shortcut.convolution"`) {
		t.Errorf("target normalization: got %v, want a TargetError listing the convolutions", err)
	}
}
