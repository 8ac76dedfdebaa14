package auto

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/internal/testutil"
	"github.com/goaccel/goaccel/models/convnext"
	"github.com/goaccel/goaccel/models/internal/familytest"
	"github.com/goaccel/goaccel/models/lora"
	"github.com/goaccel/goaccel/models/resnet"
)

// convnetFixture is one checkpoint of models/resnet's or models/convnext's fixtures
// (scripts/make_vision_fixtures.py), with its preprocessor_config.json.
type convnetFixture struct {
	pkg, name, family, modelType string
}

var convnetFixtures = []convnetFixture{
	{"resnet", "basic", "resnet", "resnet"}, {"resnet", "bottleneck", "resnet", "resnet"},
	{"convnext", "tiny", "convnext", "convnext"}, {"convnext", "v2", "convnext", "convnextv2"},
}

// run is the fixture's first evaluation run (32x32 images).
func (c convnetFixture) run(t *testing.T) *familytest.ImageRun {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	defer os.Chdir(wd) //nolint:errcheck // back to the package folder
	if err := os.Chdir(filepath.Join("..", c.pkg)); err != nil {
		t.Fatal(err)
	}
	return &familytest.LoadImageFixtures(t, 2).Models[c.name].Runs[0]
}

func (c convnetFixture) dir() string { return filepath.Join("..", c.pkg, "testdata", c.name) }

// TestConvNetFamilies: auto.Load reads the ResNet, ConvNeXt and ConvNeXt-V2 folders
// transformers wrote as image families (facts, the folder's ConvNextImageProcessor, the
// image head for Options' zero head) with transformers' logits; ImageSize sets the
// processor's output; the text options and the token head are refused; SavePretrained writes
// the processor's file beside the model and Load reads the folder back with the same logits.
func TestConvNetFamilies(t *testing.T) {
	for _, c := range convnetFixtures {
		t.Run(c.name, func(t *testing.T) {
			m, err := Load(c.dir(), nil, Options{LoadHead: true})
			if err != nil {
				t.Fatal(err)
			}
			f := m.Network().Config().Facts()
			if m.Family != c.modelType || f.ModelType != c.modelType || f.Inputs != 1 || f.Image == nil || f.Image.Channels != 3 || m.Tokenizer() != nil {
				t.Fatalf("family %q, facts %+v (image %+v)", m.Family, f, f.Image)
			}
			if FamilyOf(c.modelType).Name() != c.family {
				t.Errorf("model_type %s is read by %s", c.modelType, FamilyOf(c.modelType).Name())
			}
			proc, ok := m.Processor.(*ImageProcessor)
			if !ok || proc.Kind() != ConvNextProcessor {
				t.Fatalf("processor %T, want the folder's ConvNextImageProcessor", m.Processor)
			}
			if h, w, _ := proc.OutputSize(); h != 32 || w != 32 {
				t.Errorf("processor output %dx%d, want 32x32", w, h)
			}
			r := c.run(t)
			got := runLogits(t, m, r.Pixels(t))
			d := testutil.MaxAbsDiff(t, "logits", got, r.Logits(t))
			t.Logf("auto.Load's %s %s: logits max abs diff from transformers %.2g", c.family, c.name, d)
			if d > 1e-5 {
				t.Errorf("logits differ from transformers' by %.3g", d)
			}

			sized, err := Load(c.dir(), nil, Options{ImageSize: 40})
			if err != nil {
				t.Fatal(err)
			}
			if h, w, _ := sized.Processor.(*ImageProcessor).OutputSize(); h != 40 || w != 40 {
				t.Errorf("ImageSize 40: processor output %dx%d", w, h)
			}
			for _, bad := range []struct {
				opts Options
				want string
			}{{Options{MaxLen: 64}, "Options.MaxLen"}, {Options{Head: TokenClassification}, "ImageClassification"}} {
				if _, err := Load(c.dir(), nil, bad.opts); err == nil || !strings.Contains(err.Error(), bad.want) {
					t.Errorf("%+v: %v, want an error naming %s", bad.opts, err, bad.want)
				}
			}

			dir := t.TempDir()
			if err := m.SavePretrained(dir); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(dir, ImageProcessorFile)); err != nil {
				t.Errorf("SavePretrained wrote no %s: %v", ImageProcessorFile, err)
			}
			back, err := Load(dir, nil, Options{LoadHead: true})
			if err != nil {
				t.Fatal(err)
			}
			if d := testutil.MaxAbsDiff(t, "logits", runLogits(t, back, r.Pixels(t)), got); d != 0 || strings.Join(back.Labels(), ",") != "cat,dog,bird" {
				t.Errorf("read back: logits differ by %g, labels %q", d, back.Labels())
			}
		})
	}
	if _, err := Load("../convnext/testdata/tiny", nil, Options{ImageSize: 4}); err == nil || !strings.Contains(err.Error(), "image side 4") {
		t.Errorf("ConvNeXt at 4 pixels (patch 4, 2 stages): %v", err)
	}
}

// TestConvNetOptions: Options' dropout, gradient checkpointing and LoRA reach the
// convolutional families: ConvNeXt's drop_path_rate is the dropout, its default LoRA targets
// are pwconv1 and pwconv2 (PEFT has none), and ResNet's are its convolutions (PEFT's
// Conv2d LoRA), every one of them.
func TestConvNetOptions(t *testing.T) {
	rate := 0.3
	m, err := Load("../convnext/testdata/tiny", nil, Options{Dropout: &rate, GradientCheckpointing: true, LoRA: &lora.Config{}})
	if err != nil {
		t.Fatal(err)
	}
	clf := m.Classifier.(*convnext.Classifier)
	if clf.Config.DropPathRate != 0.3 || !clf.Config.GradientCheckpointing {
		t.Errorf("drop_path_rate %g, gradient checkpointing %v", clf.Config.DropPathRate, clf.Config.GradientCheckpointing)
	}
	if a := clf.Adapter(); a == nil || strings.Join(a.Targets(), ",") != "convnext.encoder.stages.0.layers.0.pwconv1,convnext.encoder.stages.0.layers.0.pwconv2,convnext.encoder.stages.0.layers.1.pwconv1,convnext.encoder.stages.0.layers.1.pwconv2,convnext.encoder.stages.1.layers.0.pwconv1,convnext.encoder.stages.1.layers.0.pwconv2" {
		t.Errorf("adapter %v", a)
	}
	r, err := Load("../resnet/testdata/basic", nil, Options{GradientCheckpointing: true})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Classifier.(*resnet.Classifier).Config.GradientCheckpointing {
		t.Error("ResNet: gradient checkpointing not set")
	}
	r, err = Load("../resnet/testdata/basic", nil, Options{LoRA: &lora.Config{}})
	if err != nil {
		t.Fatal(err)
	}
	if a := r.Classifier.(*resnet.Classifier).Adapter(); a == nil || len(a.Targets()) != 9 ||
		a.Targets()[0] != "resnet.embedder.embedder.convolution" || !strings.HasSuffix(a.Targets()[8], ".convolution") {
		t.Errorf("ResNet adapter %v, want the 9 convolutions of the basic fixture", a)
	}
}
