package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	stdimage "image"
	"image/color"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/accelerator/acceltest"
	"github.com/goaccel/goaccel/data/image"
	"github.com/goaccel/goaccel/examples/internal/exampletest"
	"github.com/goaccel/goaccel/internal/testutil"
	"github.com/goaccel/goaccel/trainer"
	"github.com/parquet-go/parquet-go"
)

func TestMain(m *testing.M) { exampletest.Main(m, main) }

// encodePNG is m as a PNG file's bytes.
func encodePNG(t testing.TB, m *image.RGB) []byte {
	t.Helper()
	img := stdimage.NewNRGBA(stdimage.Rect(0, 0, m.Width, m.Height))
	for y := range m.Height {
		for x := range m.Width {
			r, g, b := m.At(x, y)
			img.SetNRGBA(x, y, color.NRGBA{r, g, b, 255})
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func write(t testing.TB, path string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeFolder writes n built-in images of seed as PNGs in class folders under root
// (ImageFolder's layout), and returns their paths.
func writeFolder(t testing.TB, root string, n int, seed int64) []string {
	t.Helper()
	var paths []string
	for i, ex := range synthetic(n, seed) {
		p := filepath.Join(root, syntheticClasses[ex.Label], fmt.Sprintf("img_%03d.png", i))
		write(t, p, encodePNG(t, ex.Image))
		paths = append(paths, p)
	}
	return paths
}

// metrics reads a run's records.
func metrics(t *testing.T, dir string) []trainer.Record {
	t.Helper()
	recs, err := trainer.ReadMetrics(filepath.Join(dir, trainer.MetricsFile))
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// checkFolder: a Hugging Face folder the run wrote, with the data's classes in config.json.
func checkFolder(t *testing.T, dir string, classes []string) {
	t.Helper()
	for _, f := range []string{"config.json", "model.safetensors", "preprocessor_config.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("%s lacks %s: %v", dir, f, err)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		ID2Label    map[string]string `json:"id2label"`
		Label2ID    map[string]int    `json:"label2id"`
		ProblemType string            `json:"problem_type"`
	}
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	for i, name := range classes {
		if c.ID2Label[fmt.Sprint(i)] != name || c.Label2ID[name] != i {
			t.Errorf("%s/config.json: class %d is %q (label2id %d), want %q", dir, i, c.ID2Label[fmt.Sprint(i)], c.Label2ID[name], name)
		}
	}
	if c.ProblemType != "single_label_classification" || len(c.ID2Label) != len(classes) {
		t.Errorf("%s/config.json: %d labels, problem_type %q", dir, len(c.ID2Label), c.ProblemType)
	}
}

// TestDefaultRunLearns: with no data and no model the program trains the tiny ViT on the
// built-in images (on one XLA CPU device), learns (well above the 1/6 of chance), writes
// best/ and final/ as Hugging Face folders, and the same flags on the finished run train no
// more.
func TestDefaultRunLearns(t *testing.T) {
	o := defaultOptions()
	o.Backend, o.Devices, o.Workers, o.OutputDir = acceltest.CPUPlugin(t), 1, 1, t.TempDir()
	res, code, err := run(o, io.Discard)
	if err != nil || code != 0 {
		t.Fatal(code, err)
	}
	t.Logf("best validation accuracy %.4f at step %d of %d", res.Best, res.BestStep, res.Steps)
	if res.Best < 0.6 {
		t.Errorf("best validation accuracy %.3f after %d epochs on the built-in images, want >= 0.6 (chance: 0.17)", res.Best, o.Epochs)
	}
	for _, sub := range []string{"best", "final"} {
		checkFolder(t, filepath.Join(o.OutputDir, sub), syntheticClasses)
	}
	weights := func(sub string) []byte {
		b, err := os.ReadFile(filepath.Join(o.OutputDir, sub, "model.safetensors"))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	if same := bytes.Equal(weights("best"), weights("final")); same != (res.BestStep == res.Steps) {
		t.Errorf("best/ (step %d) and final/ (step %d) hold the same weights: %v", res.BestStep, res.Steps, same)
	}
	again, _, err := run(o, io.Discard)
	if err != nil || again.Steps != res.Steps || again.StopReason != "already complete" {
		t.Errorf("the same flags on the finished run: %v, %d steps (%s), want %d and no more training", err, again.Steps,
			again.StopReason, res.Steps)
	}
}

// TestFolderOfPNGs trains on class folders of PNG files (a validation folder beside them),
// with a truncated PNG among the training images that --skip_bad_images leaves out and
// names, and --do_predict classifies a test folder (images in subfolders, of other sizes,
// one broken) into predict_results.jsonl and .csv by file name. Without --skip_bad_images the
// broken image stops the run naming the file. With GOACCEL_TORCH_PYTHON, transformers'
// image-classification pipeline (the Pillow processor) on best/ gives every test image the
// same top label, and the same top 5 scores within 1e-4.
func TestFolderOfPNGs(t *testing.T) {
	root := t.TempDir()
	trainDir, validDir, testDir := filepath.Join(root, "train"), filepath.Join(root, "valid"), filepath.Join(root, "test")
	writeFolder(t, trainDir, 240, 1)
	writeFolder(t, validDir, 60, 2)
	good := synthetic(9, 3)
	for i, ex := range good {
		write(t, filepath.Join(testDir, fmt.Sprintf("part%d", i%2), fmt.Sprintf("photo_%d.PNG", i)), encodePNG(t, ex.Image))
	}
	broken := encodePNG(t, good[0].Image)
	write(t, filepath.Join(trainDir, syntheticClasses[0], "broken.png"), broken[:len(broken)/2])
	write(t, filepath.Join(testDir, "broken.png"), broken[:40])
	write(t, filepath.Join(testDir, "notes.txt"), []byte("not an image"))
	args := []string{"--train_dir", trainDir, "--validation_dir", validDir, "--epochs", "2", "--batch_size", "16",
		"--do_predict", "--test_dir", testDir, "--workers", "1"}

	out := filepath.Join(root, "run")
	log := exampletest.Run(t, nil, append(args, "--skip_bad_images", "--output_dir", out)...)
	if !strings.Contains(log, "broken example(s) of the training data") || !strings.Contains(log, "broken.png") ||
		!strings.Contains(log, "predicted 9 images") || !strings.Contains(log, "(1 skipped)") {
		t.Errorf("the log does not name the skipped images and the 9 predicted:\n%s", log)
	}
	bad := int64(0)
	for _, r := range metrics(t, out) {
		bad += r.BadExamples
	}
	if bad != 2 { // the broken training image, once an epoch
		t.Errorf("metrics.jsonl counts %d bad examples, want 2 (one broken image, two epochs)", bad)
	}
	checkFolder(t, filepath.Join(out, "best"), slices.Sorted(slices.Values(syntheticClasses))) // class folders, sorted
	results := readResults(t, out)
	var files []string
	for _, r := range results {
		files = append(files, r.File)
		if len(r.TopK) != 5 || r.TopK[0].Label != r.Label || r.TopK[0].Score != r.Score || !slices.Contains(syntheticClasses, r.Label) {
			t.Errorf("%s: %+v", r.File, r)
		}
	}
	want := []string{"part0/photo_0.PNG", "part0/photo_2.PNG", "part0/photo_4.PNG", "part0/photo_6.PNG", "part0/photo_8.PNG",
		"part1/photo_1.PNG", "part1/photo_3.PNG", "part1/photo_5.PNG", "part1/photo_7.PNG"}
	if !slices.Equal(files, want) {
		t.Errorf("predicted files %v, want %v", files, want)
	}
	csvText, err := os.ReadFile(filepath.Join(out, "predict_results.csv"))
	if err != nil || !strings.HasPrefix(string(csvText), "file,label,score\npart0/photo_0.PNG,") || strings.Count(string(csvText), "\n") != 10 {
		t.Errorf("predict_results.csv: %v\n%s", err, csvText)
	}

	strict := exampletest.Child(t, append(args, "--output_dir", filepath.Join(root, "strict"), "--backend", "go")...)
	if b, err := strict.CombinedOutput(); err == nil || !strings.Contains(string(b), "broken.png") {
		t.Errorf("a broken image without --skip_bad_images: %v, want an error naming it:\n%s", err, b)
	}

	samePipeline(t, out, testDir, results)
}

// result is a line of predict_results.jsonl.
type result struct {
	File, Label string
	Score       float64
	TopK        []struct {
		Label string
		Score float64
	} `json:"top_k"`
}

// readResults reads a run's predict_results.jsonl.
func readResults(t *testing.T, out string) []result {
	t.Helper()
	lines, err := os.ReadFile(filepath.Join(out, "predict_results.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var results []result
	for line := range strings.SplitSeq(strings.TrimSpace(string(lines)), "\n") {
		var r result
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		results = append(results, r)
	}
	return results
}

// samePipeline: with GOACCEL_TORCH_PYTHON, transformers' image-classification pipeline (the
// Pillow processor) on the run's best/ gives each image of results (files of testDir) the
// same top label and top 5, scores within 1e-4.
func samePipeline(t *testing.T, out, testDir string, results []result) {
	t.Helper()
	agree, largest := pipelineAgreement(t, out, testDir, results, true)
	t.Logf("transformers' pipeline on %s over %d images: the same top label and top 5 (%d agree); largest score difference %.3g",
		filepath.Join(out, "best"), len(results), agree, largest)
}

// pipelineAgreement runs transformers' image-classification pipeline on the run's best/ over
// the files of results and returns how many images get goaccel's top label and the largest
// difference of a top-5 score; with exact, any other top 5 or a score difference over 1e-4 is
// an error.
func pipelineAgreement(t *testing.T, out, testDir string, results []result, exact bool) (agree int, largest float64) {
	t.Helper()
	py := testutil.TorchPython(t, "transformers' image-classification pipeline on best/")
	var ref []struct {
		File string
		Top  []struct {
			Label string
			Score float64
		}
	}
	script := `
import json, os, sys
from transformers import pipeline, AutoImageProcessor
best, root = sys.argv[1], sys.argv[2]
proc = AutoImageProcessor.from_pretrained(best, backend="pil")
clf = pipeline("image-classification", model=best, image_processor=proc)
out = []
for f in json.loads(sys.argv[3]):
    out.append({"file": f, "top": clf(os.path.join(root, f), top_k=5)})
print(json.dumps(out))
`
	var files []string
	for _, r := range results {
		files = append(files, r.File)
	}
	fileList, _ := json.Marshal(files)
	testutil.RunPythonJSON(t, "transformers' pipeline on best/", py, script, &ref, filepath.Join(out, "best"), testDir, string(fileList))
	if len(ref) != len(results) {
		t.Fatalf("transformers classified %d images, goaccel %d", len(ref), len(results))
	}
	for i, r := range ref {
		got := results[i]
		if r.Top[0].Label == got.Label {
			agree++
		} else if exact {
			t.Errorf("%s: transformers' pipeline says %s, goaccel %s", r.File, r.Top[0].Label, got.Label)
		}
		worst := 0.0
		for k := range r.Top {
			if exact && r.Top[k].Label != got.TopK[k].Label {
				t.Errorf("%s: class %d of the top 5 is %s in transformers, %s in goaccel", r.File, k, r.Top[k].Label, got.TopK[k].Label)
			}
			for _, g := range got.TopK { // the same class's score, wherever it ranks
				if g.Label == r.Top[k].Label {
					worst = max(worst, math.Abs(r.Top[k].Score-g.Score))
				}
			}
		}
		if exact && worst > 1e-4 {
			t.Errorf("%s: top-5 scores differ from transformers' by %.3g", r.File, worst)
		}
		largest = max(largest, worst)
	}
	return agree, largest
}

// imageRow is a row of an image table as datasets' Image feature writes it to Parquet: a
// struct of bytes and path, and a string label.
type imageRow struct {
	Image struct {
		Bytes []byte  `parquet:"bytes,optional"`
		Path  *string `parquet:"path,optional"`
	} `parquet:"image"`
	Label string `parquet:"label"`
}

// writeParquet writes n built-in images of seed, PNG-encoded in the image column.
func writeParquet(t *testing.T, path string, n int, seed int64) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := parquet.NewGenericWriter[imageRow](f)
	for _, ex := range synthetic(n, seed) {
		var r imageRow
		r.Image.Bytes, r.Label = encodePNG(t, ex.Image), syntheticClasses[ex.Label]
		if _, err := w.Write([]imageRow{r}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestParquetImageColumn trains on a Parquet file whose image column holds PNG bytes (split
// with --train_val_split) and on a JSON Lines file of paths with a validation file: the
// classes are the label strings, sorted, in best/config.json; --max_train_samples and
// --max_eval_samples bound the images.
func TestParquetImageColumn(t *testing.T) {
	root := t.TempDir()
	train := filepath.Join(root, "train.parquet")
	writeParquet(t, train, 200, 4)
	sorted := slices.Sorted(slices.Values(syntheticClasses))
	out := filepath.Join(root, "parquet")
	log := exampletest.Run(t, nil, "--train_file", train, "--train_val_split", "0.2", "--epochs", "1", "--output_dir", out,
		"--max_train_samples", "100", "--workers", "1")
	if !strings.Contains(log, "training on 100 images, validating on 40") {
		t.Errorf("--max_train_samples 100 of 160 and 40 held out: the log says\n%s", log)
	}
	checkFolder(t, filepath.Join(out, "best"), sorted)

	var lines []string
	for i, ex := range synthetic(60, 5) {
		name := fmt.Sprintf("img/%d.png", i)
		write(t, filepath.Join(root, name), encodePNG(t, ex.Image))
		lines = append(lines, fmt.Sprintf(`{"picture": %q, "y": %q}`, name, syntheticClasses[ex.Label]))
	}
	write(t, filepath.Join(root, "train.jsonl"), []byte(strings.Join(lines[:40], "\n")+"\n"))
	write(t, filepath.Join(root, "valid.jsonl"), []byte(strings.Join(lines[40:], "\n")+"\n"))
	out = filepath.Join(root, "jsonl")
	log = exampletest.Run(t, nil, "--train_file", filepath.Join(root, "train.jsonl"), "--validation_file", filepath.Join(root, "valid.jsonl"),
		"--image_column_name", "picture", "--label_column_name", "y", "--epochs", "1", "--max_eval_samples", "15", "--output_dir", out, "--workers", "1")
	if !strings.Contains(log, "training on 40 images, validating on 15") {
		t.Errorf("JSON Lines: the log says\n%s", log)
	}
	checkFolder(t, filepath.Join(out, "best"), sorted)
}

// stepLosses are the training losses of a run with --logging_steps 1.
func stepLosses(t *testing.T, dir string) []float64 {
	t.Helper()
	var losses []float64
	for _, r := range metrics(t, dir) {
		if r.Kind == trainer.KindTrain {
			losses = append(losses, r.Loss)
		}
	}
	return losses
}

// TestUnderLaunchSameLosses: under goaccel launch --nproc_per_node 2 (1 XLA CPU device a
// rank, MPI between them) the program takes the same steps as one process on 1 device and on
// 2 at the same global batch: the augmentation is drawn by example, not by rank, so the step
// losses agree within 1e-5.
func TestUnderLaunchSameLosses(t *testing.T) {
	plugin := acceltest.CPUPlugin(t)
	root := t.TempDir()
	args := func(dir string) []string {
		return []string{"--backend", plugin, "--global_batch_size", "16", "--max_steps", "6", "--logging_steps", "1",
			"--workers", "1", "--output_dir", dir}
	}
	single, double := filepath.Join(root, "single"), filepath.Join(root, "double")
	exampletest.Run(t, nil, append(args(single), "--devices", "1")...)
	exampletest.Run(t, nil, append(args(double), "--devices", "2")...)
	multi := exampletest.LaunchTwo(t, root, args)
	one, two, launched := stepLosses(t, single), stepLosses(t, double), stepLosses(t, multi)
	if len(one) != 6 || len(two) != 6 || len(launched) != 6 {
		t.Fatalf("step losses: %v on 1 device, %v on 2, %v with 2 processes; want 6 each", one, two, launched)
	}
	for i := range one {
		if math.Abs(one[i]-launched[i]) > 1e-5 || math.Abs(one[i]-two[i]) > 1e-5 {
			t.Errorf("step %d: loss %.7f with 2 processes, %.7f on 2 devices, %.7f on 1", i+1, launched[i], two[i], one[i])
		}
	}
	t.Logf("step losses: 1 device %v, 1 process x 2 devices %v, 2 processes x 1 device %v", one, two, launched)
}

// TestBadFlagsNameTheFlag: a bad value of any flag stops the program with an error naming
// the flag as typed, whichever layer refuses it.
func TestBadFlagsNameTheFlag(t *testing.T) {
	o := defaultOptions()
	names := exampletest.FlagNames(newFlagSet(&o), nil)
	bad, none := exampletest.SharedBadFlags(t, map[string]string{
		"dataset_name": "not/a/repo id", "dataset_config_name": "full", "dataset_revision": "v1", "train_dir": "/nonexistent/train", "validation_dir": "/nonexistent/valid",
		"train_file": "/nonexistent/train.parquet", "validation_file": "/nonexistent/valid.parquet", "test_dir": "/nonexistent/test",
		"image_column_name": "", "label_column_name": "", "train_val_split": "1", "max_train_samples": "-1", "max_eval_samples": "-1",
	})
	none["ignore_mismatched_sizes"] = "a boolean; without --model_name_or_path it is refused naming itself"
	none["skip_bad_images"] = "a boolean: both values are valid"
	none["do_predict"] = "a boolean; without --test_dir it is refused naming itself"
	testutil.BadFlags(t, names, exampletest.ShortRunArgs, bad, none, exampletest.RunChild)
	for flags, want := range map[string]string{
		"--validation_dir d":           "--validation_dir d needs --train_dir",
		"--train_dir a --train_file b": "--train_dir a and --train_file b are both given",
		"--do_predict":                 "--do_predict needs --test_dir",
		"--ignore_mismatched_sizes":    "--ignore_mismatched_sizes needs --model_dir",
	} {
		out, err := exampletest.RunChild(t, append(exampletest.ShortRunArgs(t), strings.Fields(flags)...))
		if err == nil || !strings.Contains(out, want) {
			t.Errorf("%s: %v, want an error saying %q:\n%s", flags, err, want, out)
		}
	}
}

// TestFlags: run_image_classification.py's names, kebab-case spellings and the shared aliases.
func TestFlags(t *testing.T) {
	o := defaultOptions()
	err := newFlagSet(&o).Parse([]string{"--train-dir", "t", "--validation_dir", "v", "--train_val_split", "0.2",
		"--image_column_name", "img", "--label-column-name", "y", "--model_name_or_path", "m", "--ignore_mismatched_sizes",
		"--max_train_samples", "10", "--max-eval-samples", "5", "--skip_bad_images", "--num_train_epochs", "4",
		"--per_device_train_batch_size", "8", "--do_predict", "--test_dir", "x"})
	if err != nil {
		t.Fatal(err)
	}
	want := defaultOptions()
	want.TrainDir, want.ValidationDir, want.TrainValSplit, want.ImageColumnName, want.LabelColumnName = "t", "v", 0.2, "img", "y"
	want.ModelDir, want.IgnoreMismatchedSizes, want.MaxTrainSamples, want.MaxEvalSamples, want.SkipBadImages = "m", true, 10, 5, true
	want.Epochs, want.BatchSize, want.DoPredict, want.TestDir = 4, 8, true, "x"
	if o != want {
		t.Errorf("flags:\n got %+v\nwant %+v", o, want)
	}
}

// TestLoRAMixedPrecisionCheckpointing: the shared flags reach the image model: --use_peft
// trains a LoRA adapter (written beside best/ as PEFT's files, the classifier among the
// modules saved whole), and --mixed_precision bf16 with --gradient_checkpointing trains.
func TestLoRAMixedPrecisionCheckpointing(t *testing.T) {
	root := t.TempDir()
	exampletest.Run(t, nil, "--use_peft", "--max_steps", "3", "--output_dir", filepath.Join(root, "lora"), "--workers", "1")
	b, err := os.ReadFile(filepath.Join(root, "lora", "best", "adapter", "adapter_config.json"))
	if err != nil || !strings.Contains(string(b), `"classifier"`) {
		t.Errorf("best/adapter/adapter_config.json: %v\n%s", err, b)
	}
	log := exampletest.Run(t, nil, "--mixed_precision", "bf16", "--gradient_checkpointing", "--max_steps", "3",
		"--output_dir", filepath.Join(root, "bf16"), "--workers", "1")
	if !strings.Contains(log, "precision bf16") || len(stepLosses(t, filepath.Join(root, "bf16"))) == 0 {
		t.Errorf("bf16 with gradient checkpointing:\n%s", log)
	}
}
