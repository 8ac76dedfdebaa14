package main

import (
	"bytes"
	"fmt"
	stdimage "image"
	"image/color"
	"image/jpeg"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/examples/internal/exampletest"
	"github.com/goaccel/goaccel/internal/testutil"
)

// transformersFolders are folders transformers wrote (random tiny checkpoints with their
// preprocessor_config.json, 3 classes; scripts/make_vision_fixtures.py and models/vit's
// fixture script), one per image family.
var transformersFolders = map[string]string{
	"vit":      "../../models/vit/testdata/tiny",
	"resnet":   "../../models/resnet/testdata/basic",
	"convnext": "../../models/convnext/testdata/tiny",
	"dinov2":   "../../models/vit/testdata/dinov2",
}

// TestFamiliesFineTune fine-tunes a ViT, a ResNet, a ConvNeXt and a DINOv2 folder written by
// transformers through the program: on a folder of PNGs (6 classes: the 3-class head is
// replaced with --ignore_mismatched_sizes, which the log says) with --do_predict on the
// validation images, and on a Parquet file. Their best/ loads in transformers' pipeline,
// which classifies the images as goaccel did (GOACCEL_TORCH_PYTHON). Without
// --ignore_mismatched_sizes the run stops naming it. ResNet's, ConvNeXt's and DINOv2's runs
// are tier 2 (about 40 s, 110 s and 30 s on the 2-core machine).
func TestFamiliesFineTune(t *testing.T) {
	root := t.TempDir()
	trainDir, validDir := filepath.Join(root, "train"), filepath.Join(root, "valid")
	writeFolder(t, trainDir, 48, 6)
	writeFolder(t, validDir, 12, 7)
	table := filepath.Join(root, "train.parquet")
	writeParquet(t, table, 48, 8)
	for family, folder := range transformersFolders {
		t.Run(family, func(t *testing.T) {
			if family != "vit" {
				testutil.Long(t, "fine-tuning the "+family+" folder twice (tier 1: vit's)")
			}
			out := filepath.Join(root, family)
			log := exampletest.Run(t, nil, "--model_name_or_path", folder, "--ignore_mismatched_sizes", "--train_dir", trainDir,
				"--validation_dir", validDir, "--epochs", "1", "--batch_size", "8", "--do_predict", "--test_dir", validDir,
				"--output_dir", out, "--workers", "1")
			if !strings.Contains(log, "model: "+family+" ") || !strings.Contains(log, "is not loaded: a new head of 6 classes") {
				t.Errorf("the log does not say the %s model and its new head:\n%s", family, log)
			}
			log = exampletest.Run(t, nil, "--model_name_or_path", folder, "--ignore_mismatched_sizes", "--train_file", table,
				"--max_steps", "3", "--batch_size", "8", "--output_dir", filepath.Join(root, family+"-parquet"), "--workers", "1")
			if !strings.Contains(log, "best validation accuracy") {
				t.Errorf("Parquet:\n%s", log)
			}
			samePipeline(t, out, validDir, readResults(t, out)) // last: it skips without the torch venv
		})
	}
	out, err := exampletest.RunChild(t, []string{"--backend", "go", "--model_name_or_path", transformersFolders["vit"],
		"--train_dir", trainDir, "--output_dir", t.TempDir(), "--max_steps", "1"})
	want := "has a head of 3 classes (num_labels in its config.json) and the data 6: add --ignore_mismatched_sizes"
	if err == nil || !strings.Contains(out, want) || !strings.Contains(out, "--model_name_or_path "+transformersFolders["vit"]) {
		t.Errorf("a 3-class head for 6 classes without --ignore_mismatched_sizes: %v, want %q naming the flag as typed:\n%s", err, want, out)
	}
}

// TestJPEGsAgainstPipeline measures, on JPEG files (Go's encoder, quality 75, 4:2:0), how
// often transformers' pipeline on best/ gives goaccel's top label and how far the scores are:
// goaccel decodes JPEG with Go's inverse DCT, within 3 levels of Pillow's libjpeg-turbo
// (docs/images.md), so the pixels in differ slightly; the PNG tests hold the exact case.
func TestJPEGsAgainstPipeline(t *testing.T) {
	testutil.Long(t, "a measurement of the JPEG decoders' effect on predictions (the PNG tests hold the exact case)")
	testutil.TorchPython(t, "transformers' image-classification pipeline on best/")
	root := t.TempDir()
	jpegs := filepath.Join(root, "jpeg")
	for i, ex := range synthetic(40, 9) {
		img := stdimage.NewRGBA(stdimage.Rect(0, 0, ex.Image.Width, ex.Image.Height))
		for y := range ex.Image.Height {
			for x := range ex.Image.Width {
				r, g, b := ex.Image.At(x, y)
				img.SetRGBA(x, y, color.RGBA{r, g, b, 255})
			}
		}
		var buf bytes.Buffer
		if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 75}); err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(jpegs, fmt.Sprintf("%02d.jpg", i)), buf.Bytes())
	}
	out := filepath.Join(root, "run")
	exampletest.Run(t, nil, "--max_steps", "30", "--do_predict", "--test_dir", jpegs, "--output_dir", out, "--workers", "1")
	results := readResults(t, out)
	agree, largest := pipelineAgreement(t, out, jpegs, results, false)
	t.Logf("JPEGs: transformers' pipeline on best/ gives goaccel's top label to %d of %d images; largest top-5 score difference %.3g",
		agree, len(results), largest)
	if agree < len(results)*9/10 {
		t.Errorf("transformers agrees with goaccel on %d of %d JPEGs, want at least 90%%", agree, len(results))
	}
}
