// Command image_classify fine-tunes an image classifier with the flags of Hugging Face's
// run_image_classification.py: a folder of class folders (--train_dir, --validation_dir or
// --train_val_split), or Parquet / JSON Lines files with an image column (--train_file,
// --validation_file), a model of any image family models/auto has (--model_name_or_path: ViT,
// ConvNeXt, ResNet...), RandomResizedCrop and RandomHorizontalFlip for training and the
// model's own image processor for evaluation, data-parallel over every device goaccel finds
// and every process under goaccel launch. The loop is trainer.Fit with the shared training
// flags (trainer/args): schedules, accumulation, mixed precision, LoRA, gradient
// checkpointing, checkpoints and resume, --report_to, the best model by exact gathered
// accuracy.
//
//	go run ./examples/image_classify                                   # built-in images, a tiny ViT
//	go run ./examples/image_classify --train_dir ~/data/pets/train --validation_dir ~/data/pets/val \
//	    --model_name_or_path models-cache/vit-base-patch16-224 --ignore_mismatched_sizes
//	go run ./examples/image_classify --train_file 'train-*.parquet' --image_column_name image
//	go run ./examples/image_classify --dataset_name org/pets --model_name_or_path google/vit-base-patch16-224 \
//	    --ignore_mismatched_sizes                                     # both from the Hugging Face Hub
//	go run ./examples/image_classify --train_dir d --do_predict --test_dir unlabelled/
//
// The run directory (--output_dir, printed first) gets config.json, metrics.jsonl,
// checkpoints/, best/ and final/ (Hugging Face folders: config.json with id2label, label2id
// and problem_type, model.safetensors, preprocessor_config.json, which
// AutoModelForImageClassification and AutoImageProcessor load) and curves.png/svg; with
// --do_predict, predict_results.jsonl and .csv. docs/image_classify.md has the flags and the
// decisions.
package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/goaccel/goaccel/accelerator"
	"github.com/goaccel/goaccel/data"
	"github.com/goaccel/goaccel/data/image"
	"github.com/goaccel/goaccel/data/table"
	_ "github.com/goaccel/goaccel/hostmalloc" // GOACCEL_HOST_MALLOC=keep: glibc keeps XLA's freed memory for reuse
	"github.com/goaccel/goaccel/models/auto"
	"github.com/goaccel/goaccel/trainer"
	"github.com/goaccel/goaccel/trainer/args"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	flag "github.com/spf13/pflag"
)

// options are the program's flags: the shared training flags (trainer/args) and
// run_image_classification.py's own, with goaccel's additions.
type options struct {
	args.Training
	DatasetName, DatasetConfigName, DatasetRevision             string
	TrainDir, ValidationDir, TestDir, TrainFile, ValidationFile string
	ImageColumnName, LabelColumnName                            string
	TrainValSplit                                               float64
	MaxTrainSamples, MaxEvalSamples                             int
	IgnoreMismatchedSizes, SkipBadImages                        bool
}

func defaultOptions() options {
	o := options{Training: args.Defaults(), TrainValSplit: 0.15, ImageColumnName: "image", LabelColumnName: "label"}
	o.BatchSize = 32
	return o
}

func newFlagSet(o *options) *flag.FlagSet {
	fs := args.NewFlagSet("image_classify", nil)
	o.AddFlags(fs)
	fs.Lookup("model_dir").Usage = "Hugging Face folder (config.json, model.safetensors, preprocessor_config.json) or Hub id found in the local Hugging Face cache of an image model whose model_type models/auto reads (also --model_name_or_path); empty: a tiny ViT built here"
	fs.Lookup("learning_rate").Usage = "peak learning rate of Adam (also --lr); 0: 5e-5 (the Trainer's) with --model_name_or_path, 1e-3 for the tiny built-in ViT"
	fs.Lookup("patience").Usage = "stop after this many evaluations without a better validation accuracy (0: never)"
	fs.Lookup("workers").Usage = "goroutines that decode, augment and collate images ahead of training"
	fs.Lookup("do_predict").Usage = "after training, classify --test_dir's images with best/ and write predict_results.jsonl and .csv (file names, top 5 labels) into the run directory"
	fs.StringVar(&o.DatasetName, "dataset_name", "", "a data set of the Hugging Face Hub (org/name[@revision]) of Parquet or JSON Lines files with an image column: its train split (and validation, if any) downloaded as datasets finds them (data/table.FromHub), read as --train_file and --validation_file")
	fs.StringVar(&o.DatasetConfigName, "dataset_config_name", "", "with --dataset_name: its configuration (empty: the default one)")
	fs.StringVar(&o.DatasetRevision, "dataset_revision", "", "with --dataset_name: the branch, tag or commit (default main)")
	fs.StringVar(&o.TrainDir, "train_dir", "", "folder of class folders (torchvision's ImageFolder: the first folder below is the label), or of images with a metadata.jsonl/.csv (imagefolder)")
	fs.StringVar(&o.ValidationDir, "validation_dir", "", "validation images, as --train_dir, with its classes; empty: --train_val_split of the training images")
	fs.StringVar(&o.TrainFile, "train_file", "", "Parquet or JSON Lines file(s) with an image column (Hugging Face's Image feature, or paths) and a label column: comma-separated, globs allowed")
	fs.StringVar(&o.ValidationFile, "validation_file", "", "file(s) to evaluate on, as --train_file; empty: --train_val_split of the training rows")
	fs.StringVar(&o.TestDir, "test_dir", "", "folder of images (at any depth) to classify with --do_predict")
	fs.StringVar(&o.ImageColumnName, "image_column_name", o.ImageColumnName, "the image column of --train_file")
	fs.StringVar(&o.LabelColumnName, "label_column_name", o.LabelColumnName, "the label column of --train_file: integers or strings, numbered in sorted order (best/config.json names them, id2label)")
	fs.Float64Var(&o.TrainValSplit, "train_val_split", o.TrainValSplit, "fraction of the training images held out for validation when no validation folder or file is given")
	fs.IntVar(&o.MaxTrainSamples, "max_train_samples", 0, "train on at most this many images, drawn with --seed (0: all)")
	fs.IntVar(&o.MaxEvalSamples, "max_eval_samples", 0, "evaluate on at most this many images, drawn with --seed (0: all)")
	fs.BoolVar(&o.IgnoreMismatchedSizes, "ignore_mismatched_sizes", false, "a model whose head has another number of classes than the data gets a new head (its old one is not loaded), as transformers' ignore_mismatched_sizes")
	fs.BoolVar(&o.SkipBadImages, "skip_bad_images", false, "leave out images that do not decode (truncated, corrupt, not an image, too large), counted and named in the log, instead of stopping")
	return fs
}

func main() {
	o := defaultOptions()
	args.Main("image_classify", newFlagSet(&o), &o.Training, nil, func() (int, error) {
		_, code, err := run(o, os.Stdout)
		return code, err
	})
}

// run is the whole program: the data, the model and its processor, the loaders (training
// augmentation keyed by example, the processor's evaluation pipeline), then trainer.Fit, the
// final folder and the predictions. It returns Fit's result and the exit code.
func run(o options, out io.Writer) (*trainer.Result, int, error) {
	if err := o.Check(); err != nil {
		return nil, 0, err
	}
	if err := checkFlags(o); err != nil {
		return nil, 0, err
	}
	var testFiles []string
	if o.DoPredict { // listed before training: a bad folder stops the run before it starts
		var err error
		if testFiles, err = listImages(o.TestDir); err != nil {
			return nil, 0, fmt.Errorf("--test_dir: %w", err)
		}
	}
	train, valid, classes, err := loadData(o)
	if err != nil {
		return nil, 0, err
	}
	session, err := o.Start("image_classify", out) // the loggers, the accelerator, the run directory, Ctrl-C
	if err != nil {
		return nil, 0, err
	}
	defer session.Close()
	acc, dir, intr := session.Acc, session.Dir, session.Interrupt

	acc.Printf("%d classes: %s", len(classes), strings.Join(classes, ", "))
	m, proc, err := loadModel(acc, o, classes)
	if err != nil {
		return nil, 0, err
	}
	params := m.Classifier.NumParameters()
	h, w, _ := proc.OutputSize()
	acc.Printf("model: %s (model_type in config.json), %d parameters; %s, %dx%d images", m.Family, params, proc.Kind(), w, h)
	if msg := acc.SlowBackendWarning(params); msg != "" {
		acc.Printf("%s", msg)
	}
	// With --skip_bad_images a broken image is masked out by the loaders; Fit's log and records
	// count and name them (bad_examples).
	cfg := data.LoaderConfig[image.Example]{BatchSize: o.BatchSize, GlobalBatchSize: o.GlobalBatchSize, Seed: o.Seed,
		Workers: o.Workers, Collate: collate(proc.Process)}
	validLoader, err := data.NewLoader[image.Example](valid, cfg)
	if err != nil {
		return nil, 0, args.NameFlags(err)
	}
	augmentation := proc.Augmentation() // RandomResizedCrop to the model's size, RandomHorizontalFlip
	cfg.Shuffle, cfg.Collate = true, collate(proc.ProcessAugmented)
	cfg.Augment = func(ex image.Example, key data.ExampleKey) (image.Example, error) {
		img, err := augmentation.Apply(ex.Image, key.Rand()) // drawn from (seed, epoch, example): any topology
		if err != nil {
			return ex, fmt.Errorf("%s: %w", ex.Source, err)
		}
		ex.Image = img
		return ex, nil
	}
	trainLoader, err := data.NewLoader[image.Example](train, cfg)
	if err != nil {
		return nil, 0, args.NameFlags(err)
	}
	opt, err := o.Optimizer()
	if err != nil {
		return nil, 0, err
	}
	// The batch's mask goes to the model after its pixels: BatchNorm (ResNet's) leaves the
	// padding slots of a last batch out of its statistics; families without batch statistics
	// read the pixels only.
	task := trainer.SingleLabelClassificationOfBatch(m.NumLabels(), func(s *model.Scope, b accelerator.GraphBatch) *Node {
		return m.Logits(s, append(slices.Clip(b.Inputs), b.Mask))
	})
	tr, err := trainer.New(acc, m.Classifier, opt, task)
	if err != nil {
		return nil, 0, err
	}
	acc.Printf("training on %d images, validating on %d", train.Len(), valid.Len())
	res, err := tr.Fit(trainLoader, validLoader, fitConfig(o, dir, out, intr, session.Loggers, m))
	if err != nil {
		return nil, 0, args.NameFlags(err)
	}
	if res.Interrupted {
		return res, intr.ExitCode(), nil
	}
	acc.Printf("best validation accuracy %.4f (step %d of %d); best model (a Hugging Face folder) in %s", res.Best,
		res.BestStep, res.Steps, res.BestCheckpoint)
	if acc.IsMainProcess() && res.StopReason != "already complete" {
		final := filepath.Join(dir, "final")
		if err := m.SavePretrained(final); err != nil {
			return res, 0, fmt.Errorf("writing the final model: %w", err)
		}
		acc.Printf("final model in %s", final)
	}
	if o.DoPredict && acc.IsMainProcess() {
		if err := predict(acc, o, res.BestCheckpoint, dir, testFiles); err != nil {
			return res, 0, fmt.Errorf("--do_predict: %w", err)
		}
	}
	return res, 0, acc.WaitForEveryone()
}

// checkFlags refuses flags that go together only with others, or that the program does not
// read yet, before anything is loaded.
func checkFlags(o options) error {
	d := defaultOptions()
	switch {
	case o.DatasetName == "" && o.DatasetConfigName != "":
		return fmt.Errorf("--dataset_config_name %s needs --dataset_name", o.DatasetConfigName)
	case o.DatasetName == "" && o.DatasetRevision != "":
		return fmt.Errorf("--dataset_revision %s needs --dataset_name", o.DatasetRevision)
	case o.DatasetName != "" && (o.TrainDir != "" || o.TrainFile != ""):
		return fmt.Errorf("--dataset_name %s and --train_dir or --train_file are both given: give one", o.DatasetName)
	case o.TrainDir != "" && o.TrainFile != "":
		return fmt.Errorf("--train_dir %s and --train_file %s are both given: give one", o.TrainDir, o.TrainFile)
	case o.ValidationDir != "" && o.TrainDir == "":
		return fmt.Errorf("--validation_dir %s needs --train_dir", o.ValidationDir)
	case o.ValidationFile != "" && o.TrainFile == "" && o.DatasetName == "":
		return fmt.Errorf("--validation_file %s needs --train_file", o.ValidationFile)
	case o.TrainFile == "" && o.DatasetName == "" && (o.ImageColumnName != d.ImageColumnName || o.LabelColumnName != d.LabelColumnName):
		return fmt.Errorf("--image_column_name %q, --label_column_name %q: the columns of --train_file or --dataset_name, neither given",
			o.ImageColumnName, o.LabelColumnName)
	case o.ImageColumnName == "" || o.LabelColumnName == "":
		return fmt.Errorf("--image_column_name %q, --label_column_name %q: a column name is empty", o.ImageColumnName, o.LabelColumnName)
	case !(o.TrainValSplit >= 0 && o.TrainValSplit < 1):
		return fmt.Errorf("--train_val_split %g: want a fraction in [0, 1)", o.TrainValSplit)
	case o.MaxTrainSamples < 0 || o.MaxEvalSamples < 0:
		return fmt.Errorf("--max_train_samples %d, --max_eval_samples %d: want 0 (all) or more", o.MaxTrainSamples, o.MaxEvalSamples)
	case o.DoPredict && o.TestDir == "":
		return fmt.Errorf("--do_predict needs --test_dir: the images to classify")
	case !o.DoPredict && o.TestDir != "":
		return fmt.Errorf("--test_dir %s is read by --do_predict only: add --do_predict", o.TestDir)
	case o.IgnoreMismatchedSizes && o.ModelDir == "":
		return fmt.Errorf("--ignore_mismatched_sizes needs --model_dir (also --model_name_or_path; the tiny built-in ViT gets the data's head)")
	}
	return nil
}

// loadData opens the training and validation images: two folders, two sets of table files,
// one of either split with --train_val_split, or the built-in set; then --max_train_samples
// and --max_eval_samples. classes are the label names, by class id.
func loadData(o options) (train, valid data.Dataset[image.Example], classes []string, err error) {
	if o.DatasetName != "" {
		if o.TrainFile, o.ValidationFile, err = hubDataset(o); err != nil {
			return nil, nil, nil, err
		}
	}
	switch {
	case o.TrainDir != "":
		f, err := image.OpenFolder(o.TrainDir, image.FolderOptions{SkipBad: o.SkipBadImages})
		if err != nil {
			return nil, nil, nil, fmt.Errorf("--train_dir: %w", err)
		}
		train, classes = f, f.Classes
		if o.ValidationDir != "" {
			if valid, err = image.OpenFolder(o.ValidationDir, image.FolderOptions{Classes: classes, SkipBad: o.SkipBadImages}); err != nil {
				return nil, nil, nil, fmt.Errorf("--validation_dir: %w", err)
			}
		}
	case o.TrainFile != "":
		spec := table.Spec{ImageColumn: o.ImageColumnName, LabelColumn: o.LabelColumnName, Problem: table.SingleLabel}
		t, err := openTable("--train_file", o.TrainFile, spec, o.SkipBadImages)
		if err != nil {
			return nil, nil, nil, err
		}
		train, classes = t, t.Classes
		if o.ValidationFile != "" {
			spec.Labels = t.Labels // the training files' classes
			if valid, err = openTable("--validation_file", o.ValidationFile, spec, o.SkipBadImages); err != nil {
				return nil, nil, nil, err
			}
		}
	default:
		train, valid, classes = synthetic(600, o.Seed), synthetic(120, o.Seed+1), syntheticClasses
	}
	if valid == nil {
		t, v, err := data.Split(train, o.TrainValSplit, o.Seed)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("--train_val_split: %w", err)
		}
		if v.Len() == 0 {
			return nil, nil, nil, fmt.Errorf("--train_val_split %g of %d images leaves none to validate on", o.TrainValSplit, train.Len())
		}
		train, valid = t, v
	}
	return sample(train, o.MaxTrainSamples, o.Seed), sample(valid, o.MaxEvalSamples, o.Seed), classes, nil
}

// hubDataset is --dataset_name's train and validation files (comma-separated; the
// validation ones "" when it has no such split, or when --validation_file is given), downloaded
// into the Hugging Face cache (offline: found there).
func hubDataset(o options) (trainFiles, validationFiles string, err error) {
	splits, err := table.FromHub(context.Background(), table.HubDataset{Name: o.DatasetName, Config: o.DatasetConfigName,
		Revision: o.DatasetRevision, CacheDir: o.CacheDir, Token: o.Token, Progress: os.Stderr})
	if err != nil {
		return "", "", fmt.Errorf("--dataset_name %s: %w", o.DatasetName, err)
	}
	if len(splits["train"]) == 0 {
		return "", "", fmt.Errorf("--dataset_name %s: no train split (its splits: %s)", o.DatasetName,
			strings.Join(slices.Sorted(maps.Keys(splits)), ", "))
	}
	validationFiles = o.ValidationFile
	if validationFiles == "" {
		validationFiles = strings.Join(splits["validation"], ",")
	}
	return strings.Join(splits["train"], ","), validationFiles, nil
}

// openTable opens the files of flag (comma-separated, globs) as one image table of
// single-label classification.
func openTable(flagName, list string, spec table.Spec, skipBad bool) (*image.Table, error) {
	files, err := table.Glob(list)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flagName, err)
	}
	t, err := image.OpenTable(spec, image.TableOptions{SkipBad: skipBad}, files...)
	if err != nil {
		return nil, fmt.Errorf("%s: %s", flagName, strings.ReplaceAll(err.Error(), "Spec.Problem", "the label column (run_image_classification.py's task is single-label classification)"))
	}
	return t, nil
}

// sample is at most n examples of ds (all when n is 0 or more than it has), drawn with the
// seed as run_image_classification.py's shuffle(seed).select(range(n)) draws them, listed in
// the dataset's order.
func sample(ds data.Dataset[image.Example], n int, seed int64) data.Dataset[image.Example] {
	if n == 0 || n >= ds.Len() {
		return ds
	}
	perm := rand.New(rand.NewPCG(uint64(seed), 0x73656c656374)).Perm(ds.Len()) // "select"
	picked := slices.Clone(perm[:n])
	slices.Sort(picked)
	return data.Subset[image.Example]{Dataset: ds, Indices: picked}
}

// loadModel is the classifier and its image processor: a folder's (any image family, by
// model_type) with a head of the data's classes, or a tiny ViT built here for the built-in
// set. A folder's head of as many classes is loaded (transformers loads it, the data's names
// replacing the folder's); of another number, --ignore_mismatched_sizes gives a new one.
func loadModel(acc *accelerator.Accelerator, o options, classes []string) (m *auto.Model, proc *auto.ImageProcessor, err error) {
	defer func() { err = o.NameTargets(err) }()
	opts := auto.Options{NumLabels: len(classes), Labels: classes, GradientCheckpointing: o.GradientCheckpointing,
		ProblemType: "single_label_classification"}
	if opts.Dropout, err = o.DropoutRate(); err != nil {
		return nil, nil, err
	}
	if opts.LoRA, err = o.LoRA(); err != nil {
		return nil, nil, err
	}
	if o.ModelDir == "" {
		m, err = tinyViT(opts)
	} else {
		m, err = loadFolder(acc, o, opts)
	}
	if err != nil {
		return nil, nil, err
	}
	proc, ok := m.Processor.(*auto.ImageProcessor)
	if !ok {
		return nil, nil, fmt.Errorf("--model_dir %s: a %s model, whose processor (%s) takes no images", o.ModelDir, m.Family, m.Processor.Kind())
	}
	return m, proc, nil
}

// loadFolder loads --model_name_or_path with the data's classes (see loadModel).
func loadFolder(acc *accelerator.Accelerator, o options, opts auto.Options) (*auto.Model, error) {
	info, err := auto.Inspect(o.ModelDir)
	if err != nil {
		return nil, fmt.Errorf("--model_dir %s: %w", o.ModelDir, err)
	}
	hasHead, err := hasImageHead(info.Dir)
	if err != nil {
		return nil, fmt.Errorf("--model_dir %s: %w", o.ModelDir, err)
	}
	switch {
	case hasHead && info.NumLabels == len(opts.Labels):
		opts.LoadHead = true
		if info.Labels != nil && !slices.Equal(info.Labels, opts.Labels) {
			acc.Printf("--model_dir %s: its head's %d classes are loaded and renamed by class id to the data's (%s... for %s...)",
				o.ModelDir, info.NumLabels, opts.Labels[0], info.Labels[0])
		}
	case hasHead && !o.IgnoreMismatchedSizes:
		return nil, fmt.Errorf("--model_dir %s has a head of %d classes (num_labels in its config.json) and the data %d: "+
			"add --ignore_mismatched_sizes for a new head of %d classes", o.ModelDir, info.NumLabels, len(opts.Labels), len(opts.Labels))
	case hasHead:
		acc.Printf("--ignore_mismatched_sizes: the classification head of %s (%d classes) is not loaded: a new head of %d classes, "+
			"newly initialized, as transformers does when the shapes do not match", o.ModelDir, info.NumLabels, len(opts.Labels))
	default:
		acc.Printf("--model_dir %s has no classification head (a backbone): a new head of %d classes", o.ModelDir, len(opts.Labels))
	}
	m, err := auto.Load(o.ModelDir, model.NewStore(), opts)
	if err != nil {
		return nil, fmt.Errorf("--model_dir %s: %w", o.ModelDir, err)
	}
	if m.Dir != o.ModelDir {
		acc.Printf("--model_dir %s: the Hugging Face cache's %s", o.ModelDir, m.Dir)
	}
	return m, nil
}

// hasImageHead says whether folder dir's config.json names an image classifier in its
// architectures (ViTForImageClassification...), whose head a checkpoint then holds.
func hasImageHead(dir string) (bool, error) {
	b, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		return false, err
	}
	var c struct {
		Architectures []string `json:"architectures"`
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return false, fmt.Errorf("parsing %s: %w", filepath.Join(dir, "config.json"), err)
	}
	return slices.ContainsFunc(c.Architectures, func(a string) bool { return strings.HasSuffix(a, "ForImageClassification") }), nil
}

// tinyViTConfig is the built-in model: a ViT of 32x32 images in 8x8 patches (16 and the CLS
// token), 2 layers of width 48.
const tinyViTConfig = `{"model_type": "vit", "image_size": 32, "patch_size": 8, "num_channels": 3, "hidden_size": 48,
  "num_hidden_layers": 2, "num_attention_heads": 3, "intermediate_size": 96, "hidden_act": "gelu",
  "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0, "layer_norm_eps": 1e-12, "qkv_bias": true,
  "initializer_range": 0.02}`

// tinyViT builds the built-in ViT with ViTImageProcessor's settings at 32x32.
func tinyViT(opts auto.Options) (*auto.Model, error) {
	vit := auto.FamilyOf("vit")
	if vit == nil {
		return nil, fmt.Errorf("the built-in tiny ViT needs the vit family, which models/auto does not have (it has %s)",
			strings.Join(auto.Families(), ", "))
	}
	cfg, err := vit.ParseConfig([]byte(tinyViTConfig), "the built-in tiny ViT's config")
	if err != nil {
		return nil, err
	}
	proc, err := auto.NewImageProcessor(auto.ViTProcessor)
	if err != nil {
		return nil, err
	}
	if err := proc.SetOutputSize(32); err != nil {
		return nil, err
	}
	return auto.NewImageModel(cfg, model.NewStore(), proc, opts)
}

// fitConfig is the run for trainer.Fit: the shared flags, the best model by validation
// accuracy written as a Hugging Face folder, this program's other flags in config.json.
func fitConfig(o options, dir string, out io.Writer, intr *trainer.Interrupt, loggers []trainer.Logger, m *auto.Model) trainer.Config {
	lr := 1e-3 // the tiny model trained from scratch
	if o.ModelDir != "" {
		lr = 5e-5 // the Trainer's default, run_image_classification.py's
	}
	extra := map[string]any{"dataset_name": o.DatasetName, "dataset_config_name": o.DatasetConfigName,
		"dataset_revision": o.DatasetRevision, "train_dir": o.TrainDir, "validation_dir": o.ValidationDir, "train_file": o.TrainFile,
		"validation_file": o.ValidationFile, "image_column_name": o.ImageColumnName, "label_column_name": o.LabelColumnName,
		"train_val_split": o.TrainValSplit, "max_train_samples": o.MaxTrainSamples, "max_eval_samples": o.MaxEvalSamples,
		"ignore_mismatched_sizes": o.IgnoreMismatchedSizes, "skip_bad_images": o.SkipBadImages, "labels": m.Labels()}
	return o.Fit(dir, lr, "accuracy", trainer.Config{Output: out, Interrupt: intr, Loggers: loggers, Extra: extra,
		SaveBest: m.SavePretrained})
}

// collate makes a batch of examples with process (the processor's evaluation pipeline, or
// its float half for augmented images): the pixels [B, H, W, 3] and the class ids.
func collate(process func([]*image.RGB) ([]*tensors.Tensor, error)) data.CollateFunc[image.Example] {
	return func(batch []image.Example) ([]*tensors.Tensor, *tensors.Tensor, error) {
		imgs, ids := make([]*image.RGB, len(batch)), make([]int, len(batch))
		for i, ex := range batch {
			imgs[i], ids[i] = ex.Image, ex.Label
		}
		inputs, err := process(imgs)
		if err != nil {
			return nil, nil, fmt.Errorf("a batch of %s...: %w", batch[0].Source, err)
		}
		labels, err := data.ClassLabels(ids, func(i int) string { return batch[i].Source })
		return inputs, labels, err
	}
}

// listImages lists the image files below dir at any depth (image.Extensions, any case),
// sorted by path.
func listImages(dir string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && slices.Contains(image.Extensions, strings.ToLower(filepath.Ext(path))) {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: no images (files ending in %s)", dir, strings.Join(image.Extensions, " "))
	}
	slices.Sort(files)
	return files, nil
}

// predict classifies files with the best model (bestDir, loaded with its head) as
// transformers' image-classification pipeline does and writes predict_results.jsonl (per
// image: its file, relative to --test_dir, the top label and score, the top 5) and
// predict_results.csv into dir. With --skip_bad_images an image that does not decode is
// left out and named; without, it is an error.
func predict(acc *accelerator.Accelerator, o options, bestDir, dir string, files []string) error {
	m, err := auto.Load(bestDir, model.NewStore(), auto.Options{LoadHead: true})
	if err != nil {
		return err
	}
	batch := max(o.BatchSize, 1)
	p, err := auto.NewImagePredictor(m, acc.Backend(), batch, auto.DefaultTopK)
	if err != nil {
		return err
	}
	var jsonl, csvOut strings.Builder
	w := csv.NewWriter(&csvOut)
	_ = w.Write([]string{"file", "label", "score"})
	done, skipped := 0, 0
	for start := 0; start < len(files); start += batch {
		var imgs []*image.RGB
		var names []string
		for _, f := range files[start:min(start+batch, len(files))] {
			img, err := image.Load(f)
			if err != nil && o.SkipBadImages {
				acc.Printf("skipped: %v", err)
				skipped++
				continue
			} else if err != nil {
				return err
			}
			rel, _ := filepath.Rel(o.TestDir, f)
			imgs, names = append(imgs, img), append(names, filepath.ToSlash(rel))
		}
		if len(imgs) == 0 {
			continue
		}
		preds, err := p.Predict(imgs)
		if err != nil {
			return err
		}
		for i, pr := range preds {
			top := make([]map[string]any, len(pr.TopK))
			for k, ls := range pr.TopK {
				top[k] = map[string]any{"label": ls.Label, "score": ls.Score}
			}
			line, err := json.Marshal(map[string]any{"file": names[i], "label": pr.Label, "score": pr.Score, "top_k": top})
			if err != nil {
				return err
			}
			jsonl.Write(append(line, '\n'))
			_ = w.Write([]string{names[i], pr.Label, strconv.FormatFloat(pr.Score, 'g', -1, 64)})
		}
		done += len(preds)
	}
	if w.Flush(); w.Error() != nil {
		return w.Error()
	}
	for name, content := range map[string]string{"predict_results.jsonl": jsonl.String(), "predict_results.csv": csvOut.String()} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	acc.Printf("predicted %d images of %s with %s (%d skipped): %s", done, o.TestDir, bestDir, skipped,
		filepath.Join(dir, "predict_results.jsonl"))
	return nil
}
