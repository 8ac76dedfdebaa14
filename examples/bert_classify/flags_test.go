package main

import (
	"strings"
	"testing"
)

// TestFlags: Hugging Face's names, kebab-case spellings and the earlier --lr; an unknown flag
// is pflag's error (main adds "--help lists the flags").
func TestFlags(t *testing.T) {
	o := defaultOptions()
	err := newFlagSet(&o).Parse([]string{"--batch-size", "8", "--max-steps", "30", "--learning_rate", "3e-5",
		"--weight-decay", "0.01", "--model_dir", "m", "--data-dir", "d", "--epochs", "2", "--max_len", "32", "--dropout", "0",
		"--seed", "7", "--test_size", "0.2", "--logging-steps", "1", "--train_file", "t.parquet", "--validation-file", "v.csv",
		"--text_column_names", "a,b", "--label_column_name", "y", "--text_column_delimiter", " [SEP] "})
	if err != nil {
		t.Fatal(err)
	}
	want := options{DataDir: "d", ModelDir: "m", MixedPrecision: "no", Epochs: 2, MaxSteps: 30, BatchSize: 8, MaxLen: 32,
		Workers: 2, LearningRate: 3e-5, TestSize: 0.2, WeightDecay: 0.01, Seed: 7, ReportTo: "jsonl", LoggingSteps: 1,
		TrainFile: "t.parquet", ValidationFile: "v.csv", TextColumnNames: "a,b", LabelColumnName: "y", TextColumnDelimiter: " [SEP] "}
	if o != want {
		t.Errorf("flags:\n got %+v\nwant %+v", o, want)
	}
	o = defaultOptions()
	if err := newFlagSet(&o).Parse([]string{"--lr", "0.5"}); err != nil || o.LearningRate != 0.5 {
		t.Errorf("--lr: %v, learning rate %g", err, o.LearningRate)
	}
	o = defaultOptions()
	if err := newFlagSet(&o).Parse([]string{"--batchsize", "1"}); err == nil || !strings.Contains(err.Error(), "batchsize") {
		t.Errorf("--batchsize: %v, want pflag's unknown-flag error", err)
	}
}
