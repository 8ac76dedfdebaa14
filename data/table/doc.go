// Package table reads classification datasets from files with named columns: CSV (a header
// row, quoted fields, any delimiter: .csv, .tsv), JSON Lines (.jsonl, .json: one object per line)
// and Parquet (.parquet, the format of the Hugging Face Hub's data set conversions). The user
// names the input column(s) and the label column (Spec); Open returns the files, one or many (a
// data set's shards), as one data.Stream of text.Labeled examples that never holds a file in
// memory: data.NewStreamLoader serves it as is, data.Collect loads it to shuffle. OpenImages
// reads an image column instead of text columns (Hugging Face's Image feature, or paths) as a
// data.Stream of ImageRow, with the same label rules; package data/image decodes it (image.OpenTable).
//
//	files, err := table.Glob("data/train-*.parquet")
//	train, err := table.Open(table.Spec{TextColumns: []string{"sentence"}, LabelColumn: "label"}, files...)
//	valid, err := table.Open(table.Spec{TextColumns: []string{"sentence"}, LabelColumn: "label",
//	    Labels: train.Labels()}, "validation.parquet") // the training files' label map
//	loader, err := data.NewStreamLoader[text.Labeled](train, data.LoaderConfig[text.Labeled]{BatchSize: 32, Collate: tok.Collate})
//
// # Labels
//
// A label is an integer, a string or a boolean; the label map (Labels) numbers the distinct
// labels of the training files from 0 in sorted order: numerically when every label is an
// integer (so the ids 0..N-1 of a Hub data set's ClassLabel column stay as they are), else
// by Unicode code point, as Python's sorted() orders strings. Hugging Face's
// run_classification.py sorts the labels too, but always as strings ("10" before "2"): with
// integer labels the two orders differ from 11 classes on. The map is written with the run
// (examples/bert_classify records it in config.json), and a label not in it is an error.
//
// # Problems: single-label, multi-label, regression
//
// The label column says what is learned (Table.Problem, Hugging Face's problem_type), as
// run_classification.py decides from a data set's label feature, unless Spec.Problem says:
//
//   - a list (a JSON Lines array, a Parquet LIST column, of strings, integers or booleans), or a string split by
//     Spec.LabelDelimiter ("toxic|insult"): MultiLabel. The label map numbers the distinct
//     classes of all lists in sorted order; each example's text.Labeled.Values holds one 0/1
//     flag per class. An empty list, a class named twice or a class outside the map is an
//     error.
//   - a float (a JSON number with a fraction or an exponent, a Parquet float or double, or,
//     in CSV, every label a number and some written as floats: "0.5", "1.0", as pandas
//     reads them): Regression. Values holds the one value; NaN, infinities and text are
//     errors. There is no label map.
//   - anything else: SingleLabel, the class id in text.Labeled.Label.
//
// Validation files take the training files' map and problem (Spec.Labels, Spec.Problem).
//
// # Errors
//
// Bad input is an error that names the file, the row and the column: "train.csv:7: row 6,
// column "label": ..." for CSV and JSON Lines (file:line, then the data row, counted from 1
// without the header), "train.parquet: row group 0, row 1234, column "label": ..." for
// Parquet (row groups counted from 0, as pyarrow does, rows from 1 over the whole file). A
// missing column lists the columns the file has; so does a CSV row with another number of
// fields than the header. An empty or blank text, a null, a label not in the map, a truncated
// or corrupt Parquet file and invalid UTF-8 are errors too.
//
// # Memory
//
// A pass holds one row at a time: for CSV and JSON Lines at most MaxRowBytes (16 MiB by
// default) per row, for Parquet one decoded page of each column read (only the named columns
// are read; pyarrow writes pages of at most 1 MiB) and their dictionaries. Open's pass that
// builds the label map holds the distinct labels (at most MaxLabels). docs/data.md has the
// resident memory measured while streaming files ten times the bound.
package table
