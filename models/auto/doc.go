// Package auto loads a Hugging Face sequence-classification folder of any family goaccel
// has, chosen by config.json's model_type, as transformers' AutoModelForSequenceClassification
// and AutoTokenizer do: one Load, one Model, so that a program fine-tunes, evaluates,
// exports and resumes BERT, RoBERTa, XLM-RoBERTa, DistilBERT, ELECTRA, ModernBERT and
// DeBERTa-v2/v3 the same way. Each family stays in its own package (models/bert,
// models/modernbert, models/deberta); this package is the registry that maps model_type to
// it (Families): each family implements one interface, Family (read a config, load a folder
// into a Network and its Processor, name its reference model for the bench), and Load applies
// Options (head, labels, problem type, dropout, gradient checkpointing, LoRA) the same way to
// every family. The built-in ones are one line each in families.go; a program's own family
// joins with Register, as transformers' AutoModel.register (docs/families.md, and the toy of
// package autotest).
//
// A family's input processor (Processor) turns raw inputs into the model's inputs: for text a
// Tokenizer (Model.Tokenizer), whose Process the loader's collator calls
// (text.Collator(m.Tokenizer().Process)); the labels are the task's (data.ClassLabels,
// data.ValueLabels), so an image processor is a BatchProcessor of images with no text code.
//
// A folder is named by its path, or by a Hub id ("answerdotai/ModernBERT-base") that is
// found, without network, in the local Hugging Face cache as transformers finds it offline
// (Resolve).
//
// # Typical use
//
//	m, err := auto.Load("answerdotai/ModernBERT-base", model.NewStore(), auto.Options{MaxLen: 128, NumLabels: 2})
//	if err != nil {
//		return err
//	}
//	loader, err := data.NewLoader(train, data.LoaderConfig[text.Labeled]{BatchSize: 32, Shuffle: true, Collate: text.Collator(m.Tokenizer().Process)})
//	if err != nil {
//		return err
//	}
//	tr, err := trainer.New(acc, m.Classifier, opt, trainer.SingleLabelClassification(m.NumLabels(), m.Logits))
//	if err != nil {
//		return err
//	}
//	res, err := tr.Fit(loader, testLoader, trainer.Config{SaveBest: m.SavePretrained})
//
// (model is GoMLX's github.com/gomlx/gomlx/ml/model.) m.Classifier is what the accelerator
// prepares (its Store holds the weights); m.Logits takes the tokenizer's inputs in every
// family; m.SavePretrained writes a folder that transformers' Auto classes load, tokenizer
// included.
//
// # Predictions
//
// NewPredictor classifies texts as transformers' text-classification pipeline does;
// NewPredictorOf classifies any input through a BatchProcessor of it (an image processor's
// images, say) the same way, with no text code involved; NewTokenPredictor finds the entities of texts with a token-classification head as its
// token-classification ("ner") pipeline does, with the same aggregation strategies:
//
//	m, err := auto.Load("best", model.NewStore(), auto.Options{Head: auto.TokenClassification, LoadHead: true})
//	if err != nil {
//		return err
//	}
//	p, err := auto.NewTokenPredictor(m, acc.Backend(), 32, auto.AggregateSimple)
//	if err != nil {
//		return err
//	}
//	entities, err := p.Predict([]string{"Angela Merkel met Emmanuel Macron in Berlin"})
//	if err != nil {
//		return err
//	}
//	for _, e := range entities[0] { // e.g. PER, "Angela Merkel", 0, 13, 0.98
//		fmt.Println(e.Entity, e.Word, e.Start, e.End, e.Score)
//	}
package auto
